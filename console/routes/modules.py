"""The code modules list (seed 004): search, state, role and used-by filters with facet counts and
paging, all server side; the filters live in the URL, so a link reproduces the view."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api import queries
from console.routing import ConsoleRoute
from console.security import Reader
from domain.model import STATES

router = APIRouter(prefix="/console/modules", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 20
ROLES = {"tool": True, "library": False}


def _link(filters: dict[str, Any], **changes: Any) -> str:
    merged = {**filters, **changes}
    return "/console/modules?" + urlencode({k: v for k, v in merged.items() if v not in (None, "", 0)})


@router.get("")
def module_list(
    request: Request,
    visitor: Reader,
    search: str = "",
    state: Annotated[str, Query(pattern="^(|" + "|".join(STATES) + ")$")] = "",
    role: Annotated[str, Query(pattern="^(|tool|library)$")] = "",
    usedBy: str = "",
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    services = request.app.state.services
    filters = {"search": search.strip(), "state": state, "role": role, "usedBy": usedBy.strip()}
    page = queries.list_modules(
        services, visitor.principal.tenant, search=filters["search"] or None, state=state or None,
        tool=ROLES.get(role), used_by=filters["usedBy"] or None, offset=offset, limit=PAGE_SIZE,
    )
    paging = {
        "offset": offset, "size": PAGE_SIZE, "total": page.total,
        "previous": _link(filters, offset=max(0, offset - PAGE_SIZE)) if offset > 0 else None,
        "next": _link(filters, offset=offset + PAGE_SIZE) if offset + PAGE_SIZE < page.total else None,
    }
    template = "modules/_results.html" if request.headers.get("hx-request") == "true" and request.headers.get("hx-target") == "results" else "modules/list.html"
    return request.app.state.console_pages.render(
        request, template, filters=filters, page=page, paging=paging, states=STATES,
        clear_link=_link({}, ), link=lambda **c: _link(filters, offset=0, **c),
    )
