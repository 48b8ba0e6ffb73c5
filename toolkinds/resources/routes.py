"""Admins' resources' REST routes: every published kind's (`api/published.py`), and a test read of its own."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import Admin, ServicesDep
from api.paths import ADMIN_API
from api.problems import documented
from api.published import PublishedApi, published_routes
from application.context import REST
from application.queries import call_context
from toolkinds.resources.kind import ResourceKind
from toolkinds.resources.schemas import ReadRequest, ResourceCreate, ResourceUpdate, public

router = published_routes(APIRouter(prefix=f"{ADMIN_API}/resources", tags=["resources"]),
                          PublishedApi(ResourceKind, noun="resource", one="resource", create=ResourceCreate, update=ResourceUpdate,
                                       public=public))


@router.post("/{id}/test", responses=documented(400, 404))
async def test_resource(id: str, body: ReadRequest, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Read the resource (its draft, or its published version) at `uri`, as `resources/read` would; nothing is saved."""
    kind = services.toolbox.kind(ResourceKind)
    context = call_context(principal, REST)
    return await kind.test(principal.tenant, id, {"uri": body.uri}, context, services.toolbox, draft=body.draft)
