"""The tool catalog (docs/rest-api.md): every kind of tool in one list, with R15's resolution shown."""

# No `from __future__ import annotations`: the route's `callType` annotation names this call's
# `call_types`, which FastAPI could not resolve from a string.
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from application import queries
from api.deps import Reader, ServicesDep
from api.presenters import tool_out
from api.problems import documented
from api.schemas import ToolOut
from api.paths import ADMIN_API
from domain.errors import InvalidInput, Violation

# A page of the catalog: 100 tools unless asked, at most 1,000 (issue 15: no answer grows with the tenant).
DEFAULT_LIMIT = 100
MAX_LIMIT = 1_000


def router_for(call_types: Sequence[str]) -> APIRouter:
    """The catalog's router; `callType` accepts the call types of the service's kinds."""
    router = APIRouter(prefix=f"{ADMIN_API}/tools", tags=["tool catalog"])

    @router.get("", response_model=list[ToolOut], responses=documented(400))
    def list_tools(
        request: Request,
        response: Response,
        services: ServicesDep,
        principal: Reader,
        callType: Annotated[str | None, Query(pattern="^(" + "|".join(call_types) + ")$")] = None,
        tag: str | None = None,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="how many tools a page holds at most")] = DEFAULT_LIMIT,
        cursor: Annotated[str | None, Query(description="where the page starts: the `next` link's cursor of the previous page")] = None,
    ) -> list[dict[str, Any]]:
        """A page of every tool of every kind (code modules, plans, native and external MCP tools,
        …), by name; while more follow, a `Link` header (`rel="next"`) gives the next page's URL."""
        try:
            after = queries.after_cursor(cursor)
        except ValueError as error:
            raise InvalidInput([Violation("cursor", "page", str(error))]) from None
        entries, more = queries.tools(services, principal.tenant, call_type=callType, tag=tag, after=after, limit=limit)
        if more and entries:
            following = request.url.include_query_params(cursor=queries.cursor_after(entries[-1].name))
            response.headers["Link"] = f'<{following}>; rel="next"'
        return [tool_out(entry) for entry in entries]

    return router
