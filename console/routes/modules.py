"""The code modules list (seed 004): search, state, role and used-by filters with facet counts,
ordering and paging, all server side; the filters live in the URL, so a link reproduces the view.
Each row shows what the module does, its state, its role and how many modules use it."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from api import queries
from console.routing import ConsoleRoute
from console.security import Reader
from domain.model import STATES
from projections.interface import ORDER_FIELDS

router = APIRouter(prefix="/console/modules", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 20
ROLES = {"tool": True, "library": False}
# The orderings the page offers, by their column's label.
ORDERINGS = {"id": "Name", "description": "What it does", "state": "State", "role": "Role"}
assert set(ORDERINGS) == set(ORDER_FIELDS)
DEFAULTS = {"orderBy": "id", "ascending": "true", "offset": 0}


def _link(filters: dict[str, Any], **changes: Any) -> str:
    """The list's URL for `filters` changed by `changes`, without the parameters at their default."""
    merged = {**filters, **changes}
    kept = {k: v for k, v in merged.items() if v not in (None, "") and DEFAULTS.get(k) != v}
    return "/console/modules" + ("?" + urlencode(kept) if kept else "")


@router.get("")
def module_list(
    request: Request,
    visitor: Reader,
    search: Annotated[str, Query(max_length=200)] = "",
    state: Annotated[str, Query(pattern="^(|" + "|".join(STATES) + ")$")] = "",
    role: Annotated[str, Query(pattern="^(|tool|library)$")] = "",
    usedBy: Annotated[str, Query(max_length=200)] = "",
    orderBy: Annotated[str, Query(pattern="^(" + "|".join(ORDER_FIELDS) + ")$")] = "id",
    ascending: bool = True,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    services = request.app.state.services
    filters = {"search": search.strip(), "state": state, "role": role, "usedBy": usedBy.strip(),
               "orderBy": orderBy, "ascending": "true" if ascending else "false"}
    page = queries.list_modules(
        services, visitor.principal.tenant, search=filters["search"] or None, state=state or None,
        tool=ROLES.get(role), used_by=filters["usedBy"] or None, offset=offset, limit=PAGE_SIZE,
        order_by=orderBy, ascending=ascending, count_users=True,
    )
    last = max(0, (page.total - 1) // PAGE_SIZE * PAGE_SIZE)
    paging = {
        "offset": offset, "size": PAGE_SIZE, "total": page.total,
        "number": offset // PAGE_SIZE + 1, "pages": max(1, -(-page.total // PAGE_SIZE)),
        "previous": _link(filters, offset=min(last, max(0, offset - PAGE_SIZE))) if offset > 0 else None,
        "next": _link(filters, offset=offset + PAGE_SIZE) if offset + PAGE_SIZE < page.total else None,
    }
    columns = [
        {"field": field, "label": label, "current": orderBy == field,
         "sort": ("ascending" if ascending else "descending") if orderBy == field else None,
         # a column's header orders by it; the current column's header reverses the order
         "link": _link(filters, orderBy=field, ascending="false" if orderBy == field and ascending else "true", offset=0)}
        for field, label in ORDERINGS.items()
    ]
    # htmx's filter form swaps only #results; any other request (a link, a reload, htmx restoring
    # history) gets the whole page
    fragment = (request.headers.get("hx-request") == "true" and request.headers.get("hx-target") == "results"
                and request.headers.get("hx-history-restore-request") != "true")
    return request.app.state.console_pages.render(
        request, "modules/_results.html" if fragment else "modules/list.html",
        fragment=fragment, filters=filters, page=page, paging=paging, states=STATES, columns=columns, orderings=ORDERINGS,
        filtered=any(filters[k] for k in ("search", "state", "role", "usedBy")),
        link=lambda **c: _link(filters, offset=0, **c),
    )
