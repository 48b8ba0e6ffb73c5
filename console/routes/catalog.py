"""The tool catalog (DESIGN §3; seed 004): every tool of every kind, as GET /api/v1/admin/tools
lists them, filtered by call type, tag and a search, all server side and in the URL. R15 is shown:
where two tools share a name, the one a call reaches and the ones it shadows."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response

from api import queries
from api.routes.catalog import tool_out
from console.routing import ConsoleRoute
from console.security import Reader

router = APIRouter(prefix="/console/tools", route_class=ConsoleRoute, include_in_schema=False)

# Where a tool of a kind has its own page in the console.
PAGES = {"CODE": "/console/modules/{}", "PLAN": "/console/plans/{}"}


def page_of(call_type: str, name: str) -> str | None:
    template = PAGES.get(call_type)
    return template.format(name) if template else None


@router.get("")
def tool_catalog(request: Request, visitor: Reader, callType: str = "", tag: str = "", search: str = "") -> Response:
    services = request.app.state.services
    tenant = visitor.principal.tenant
    call_types = services.toolbox.call_types
    filters = {"callType": callType if callType in call_types else "", "tag": tag.strip(), "search": search.strip()}
    everything = services.toolbox.entries(tenant)
    entries = queries.tools(services, tenant, call_type=filters["callType"] or None, tag=filters["tag"] or None,
                            search=filters["search"] or None)
    # R15: for each shared name, the call types that lose to the winner.
    losers: dict[str, list[str]] = {}
    for entry in everything:
        if entry.shadowed_by is not None:
            losers.setdefault(entry.name, []).append(entry.call_type)
    rows: list[dict[str, Any]] = [
        {**tool_out(e), "schemaText": json.dumps(e.input_schema, indent=2, ensure_ascii=False), "page": page_of(e.call_type, e.name), "winsOver": losers.get(e.name, []) if e.shadowed_by is None else []}
        for e in entries
    ]
    tags = sorted({t for e in everything for t in e.tags})
    return request.app.state.console_pages.render(
        request, "tools/list.html", rows=rows, filters=filters, call_types=call_types, tags=tags,
        total=len(everything), filtered=any(filters.values()),
        playground=lambda name: "/console/playground?" + urlencode({"tool": name}),
    )
