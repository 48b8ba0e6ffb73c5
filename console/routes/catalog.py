"""The tool catalog (docs/rest-api.md; docs/kinds/code-modules.md): every tool of every kind, as GET /api/v1/admin/tools
lists them, filtered by call type, tag and a search, all server side and in the URL, a page of
`PAGE_SIZE` at a time (the next page's cursor in the URL too). R15 is shown:
where two tools share a name, the one a call reaches and the ones it shadows."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response

from application import queries
from api.presenters import tool_out
from console.routing import ConsoleRoute
from console.security import Reader

router = APIRouter(prefix="/console/tools", route_class=ConsoleRoute, include_in_schema=False)

# How many tools one page of the catalog screen shows.
PAGE_SIZE = 100

def page_of(plugins: Any, call_type: str, name: str) -> str | None:
    """Where a tool has its own page in the console: its kind says (`KindPlugin.page`)."""
    template = next((plugin.page for plugin in plugins if plugin.call_type == call_type), None)
    return template.format(name) if template else None


@router.get("")
def tool_catalog(request: Request, visitor: Reader, callType: str = "", tag: str = "", search: str = "", cursor: str = "") -> Response:
    services = request.app.state.services
    tenant = visitor.principal.tenant
    call_types = services.toolbox.call_types
    filters = {"callType": callType if callType in call_types else "", "tag": tag.strip(), "search": search.strip()}
    try:
        after = queries.after_cursor(cursor)
    except ValueError:
        after = None  # a cursor edited by hand starts at the first page
    entries, more = queries.tools(services, tenant, call_type=filters["callType"] or None, tag=filters["tag"] or None,
                                  search=filters["search"] or None, after=after, limit=PAGE_SIZE)
    rows: list[dict[str, Any]] = [
        {**tool_out(e), "schemaText": json.dumps(e.input_schema, indent=2, ensure_ascii=False), "page": page_of(services.plugins, e.call_type, e.group or e.name),
         # R15: the call types a winner shadows.
         "winsOver": [h.call_type for h in services.toolbox.holders(tenant, e.name)[1:]] if e.shadowed_by is None else []}
        for e in entries
    ]
    everything = services.toolbox.entries(tenant)
    tags = sorted({t for e in everything for t in e.tags})
    following = None
    if more and entries:
        following = "/console/tools?" + urlencode({**{k: v for k, v in filters.items() if v}, "cursor": queries.cursor_after(entries[-1].name)})
    return request.app.state.console_pages.render(
        request, "tools/list.html", rows=rows, filters=filters, call_types=call_types, tags=tags,
        total=len(everything), filtered=any(filters.values()), paged=bool(after) or more, following=following,
        playground=lambda name: "/console/playground?" + urlencode({"tool": name}),
    )
