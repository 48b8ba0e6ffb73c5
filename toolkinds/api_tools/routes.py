"""Admin REST API of API URL tools (docs/kinds/api-url-tools.md): `/api/v1/admin/api-tools`.

Every change is live (no draft) and an event of the tool's own aggregate: `GET /{id}/history` shows
them and `GET /{id}?asOf=` the tool as it stood. Those routes are every configured kind's
(`api/configured.py`); this module adds the kind's own: `POST /{id}/test` is the Playground, one
call through exactly the path MCP uses, answered with the request as sent (secrets replaced), the
status, the bytes read, the time and the output.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body
from starlette.concurrency import run_in_threadpool

from api.configured import ConfiguredApi, configured_routes
from api.deps import Admin, ServicesDep
from api.paths import ADMIN_API
from api.presenters import execution_out
from api.problems import documented
from application.context import REST
from application.queries import call_context
from application.toolbox import answered
from toolkinds.api_tools.kind import ApiToolKind
from toolkinds.api_tools.schemas import ApiToolBody, ApiToolCreate, ApiToolTestCall, public

API = ConfiguredApi(ApiToolKind, noun="API URL tool", one="api_tool", body=ApiToolBody, create=ApiToolCreate, public=public)
router = configured_routes(APIRouter(prefix=f"{ADMIN_API}/api-tools", tags=["API URL tools"]), API)


@router.post("/{id}/test", responses=documented(400, 404))
async def test_api_tool(id: str, services: ServicesDep, principal: Admin,
                        body: ApiToolTestCall = Body(default_factory=ApiToolTestCall)) -> dict[str, Any]:
    """The Playground: one call with these arguments through the path MCP uses (enabled or not);
    the request as sent with every secret replaced, the status, the bytes read, the time, the output."""
    result, trace = await run_in_threadpool(
        lambda: API.kind_of(services).test(principal.tenant, id, body.arguments, call_context(principal, REST)))
    return {**trace.as_dict(), **execution_out(answered(result))}
