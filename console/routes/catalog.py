"""The Tools home (docs/console.md; issue 31): "New tool", which offers the three kinds an admin makes
(code modules, API URL tools, File Search tools), each with when to pick it, and leads to that kind's
New page; and the catalog: every tool of every kind, as GET /api/v1/admin/tools lists them, with its
kind in words, whether it is enabled and callable in chat, and the MCP servers it is on; filtered by
kind, tag and a search, all server side and in the URL (the form also asks as the admin types, and
the rows alone are swapped in), a page of `PAGE_SIZE` at a time (the next page's cursor in the URL
too). Where two tools share a name, the one a call reaches and the ones it shadows are shown.

Each tool's last call comes from the call log (docs/calls.md): when, and its outcome in words,
read for the whole page in one query (`CallLog.last_calls`), never one per row."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response

from application import queries
from console.language import kind_words
from api.presenters import tool_out
from domain.callers import SERVER
from console.routing import ConsoleRoute
from console.security import Reader

router = APIRouter(prefix="/console/tools", route_class=ConsoleRoute, include_in_schema=False)

# How many tools one page of the catalog screen shows.
PAGE_SIZE = 100


def new_kinds(plugins: Any, present: Any = None) -> list[dict[str, str]]:
    """What "New tool" offers: each kind an admin makes here (`KindPlugin.new`), when to pick it, and
    its New page, in the registry's order; only the kinds in `present` when it is given."""
    return [{"callType": p.call_type, "title": (p.words or p.call_type)[:1].upper() + (p.words or p.call_type)[1:],
             "noun": p.words or p.call_type, "href": p.new.path, "when": p.new.when}
            for p in plugins if p.new is not None and (present is None or p.call_type in present)]


def page_of(plugins: Any, call_type: str, name: str) -> str | None:
    """Where a tool has its own page in the console: its kind says (`KindPlugin.page`)."""
    template = next((plugin.page for plugin in plugins if plugin.call_type == call_type), None)
    return template.format(name) if template else None


# A call's outcome (`ok`, or its error's type) as the admin reads it in the catalog.
OUTCOME_WORDS = {
    "ok": "ok",
    "runtime": "failed: the code threw an error",
    "syntax": "failed: the code does not parse",
    "timeout": "failed: it ran out of time",
    "memory": "failed: it ran out of memory",
    "stack": "failed: it recursed too deep",
    "crash": "failed: the sandbox stopped it",
    "result": "failed: its result could not be answered",
    "link": "failed: an import could not be loaded",
    "config": "failed: the tool is not set up",
    "auth": "failed: the upstream refused its credentials",
    "http": "failed: the upstream answered an error",
    "response": "failed: the upstream's answer could not be read",
    "egress": "failed: the request was not allowed out",
    "connect": "failed: the upstream could not be reached",
    "mcp": "failed: the MCP server answered an error",
    "plan": "failed: a step of the plan failed",
    "input": "refused: the input does not fit",
    "unavailable": "failed: the tool could not run",
    "invalid-input": "refused: the arguments do not fit its parameters",
    "tool-not-found": "refused: not callable by that caller",
    "rate-limited": "refused: the caller was over its rate",
    "sandbox-busy": "refused: the sandbox was busy",
    "tenant-busy": "refused: the organization's sandbox share was taken",
    "sandbox-unavailable": "refused: code execution is off",
    "sandbox-not-configured": "refused: code execution is off",
    "quota-exceeded": "refused: over a quota",
}


def outcome_words(outcome: str) -> str:
    """`OUTCOME_WORDS`, or, for an outcome it does not know, the error's type as words."""
    return OUTCOME_WORDS.get(outcome) or f"failed: {outcome.replace('-', ' ').replace('_', ' ')}"


def servers_by_tool(services: Any, tenant: str) -> dict[str, list[str]]:
    """The MCP servers each name is attached to (a File Search tool's name stands for its capabilities)."""
    on: dict[str, list[str]] = {}
    for server in sorted(services.records.list(tenant, SERVER), key=lambda r: r["id"]):
        for name in server["tools"]:
            on.setdefault(name, []).append(server["id"])
    return on


@router.get("/new")
def new_tool(request: Request, visitor: Reader) -> Response:
    """The chooser: the kinds an admin makes, each leading to its New page."""
    services = request.app.state.services
    return request.app.state.console_pages.render(
        request, "tools/new.html", kinds=new_kinds(services.plugins, set(services.toolbox.call_types)))


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
    on = servers_by_tool(services, tenant)
    last = services.toolbox.call_log.last_calls(tenant, [e.name for e in entries])
    rows: list[dict[str, Any]] = [
        {**tool_out(e), "schemaText": json.dumps(e.input_schema, indent=2, ensure_ascii=False), "page": page_of(services.plugins, e.call_type, e.group or e.name),
         "kind": kind_words(e.call_type), "servers": sorted(set(on.get(e.name, []) + (on.get(e.group, []) if e.group else []))),
         "shadowedByKind": kind_words(e.shadowed_by) if e.shadowed_by else None,
         "lastCall": _last_call(last.get(e.name)) if e.shadowed_by is None else None,
         # R15: the kinds a winner shadows.
         "winsOver": [kind_words(h.call_type) for h in services.toolbox.holders(tenant, e.name)[1:]] if e.shadowed_by is None else []}
        for e in entries
    ]
    everything = services.toolbox.entries(tenant)
    tags = sorted({t for e in everything for t in e.tags})
    following = None
    if more and entries:
        following = "/console/tools?" + urlencode({**{k: v for k, v in filters.items() if v}, "cursor": queries.cursor_after(entries[-1].name)})
    return request.app.state.console_pages.render(
        request, "tools/list.html", rows=rows, filters=filters, kinds=[(t, kind_words(t)) for t in call_types], tags=tags,
        total=len(everything), filtered=any(filters.values()), paged=bool(after) or more, following=following,
        playground=lambda name: "/console/playground?" + urlencode({"tool": name}),
    )


def _last_call(record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {"at": record["at"], "outcome": record["outcome"], "ok": record["outcome"] == "ok",
            "words": outcome_words(record["outcome"]), "via": record["via"]}
