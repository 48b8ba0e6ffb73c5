"""The Calls page and a tool's activity (docs/calls.md, docs/console.md "Calls"), for admins and auditors.

The Calls page is the call log of the tenant, newest first, as GET /api/v1/admin/calls reads it:
filtered by tool, caller, outcome, way in and days, a page at a time (the cursor is the last row's
place in the log, `before`); the filters and the cursor are the URL's, and htmx swaps only the
table, as the audit viewer does. Each call links to its tool, and a code module's call to the
version it ran (in the module's history).

A tool's activity is the fragment each tool's page asks for once it is shown (`hx-trigger="load"`,
a plain link without JavaScript): its last 24 hours by hour and 7 days by day, calls, errors, p50
and p95 duration and top callers, as small inline SVG charts (`console/charts.py`), from bounded
queries of the call log (`application/call_activity.py`)."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import RedirectResponse, Response

from application.call_log import CallFilter
from console import charts
from console.routes.catalog import OUTCOME_WORDS, outcome_words, page_of
from console.routing import ConsoleRoute
from console.security import Reader, Refused, Writer
from domain import calls
from domain.calls import iso
from domain.users import actor_of

router = APIRouter(prefix="/console/calls", route_class=ConsoleRoute, include_in_schema=False)

SIZES = (25, 50, 100)
PAGE_SIZE = 50
# The ways in, as the page names them.
VIA_WORDS = {calls.REST: "REST", calls.MCP: "MCP", calls.PLAN: "A plan's step", calls.PLAYGROUND: "Playground",
             calls.TEST: "A module's Test"}
_VIA_PATTERN = "^(|" + "|".join(calls.VIAS) + ")$"
# At most this many names (a File Search tool's capabilities) in one tool's activity.
MAX_NAMES = 20


def _day(value: str, field: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{field}: a date like 2026-12-31 is expected, not “{value}”.") from None


def _link(filters: dict[str, str], **changes: str | int | None) -> str:
    kept = {k: v for k, v in {**filters, **changes}.items() if v not in (None, "")}
    return "/console/calls" + ("?" + urlencode(kept) if kept else "")


def caller_words(record: dict[str, Any]) -> dict[str, Any]:
    """Who called, as the page says it: a person's name (their id in the title), else the token's name;
    the token id, the OAuth client and the plan beside it."""
    person = actor_of(record.get("caller"))
    return {"name": person["name"] if person else (record.get("caller") or "—"),
            "how": f"signed in via {person['via']}" if person else None,
            "token": record.get("caller_token"), "client": record.get("caller_client"), "plan": record.get("plan")}


def tool_links(services: Any, tenant: str, record: dict[str, Any]) -> tuple[str | None, str | None]:
    """The page of the tool a call reached, and of the version it ran (a code module's version, in
    its history); None for a tool that is no longer there (a module's history stays)."""
    name, kind, version = record.get("tool"), record.get("kind"), record.get("version")
    if not name or not kind:
        return None, None
    if kind == "CODE":
        page = f"/console/modules/{name}"
        return page, (f"{page}/history#version-{version}" if version is not None else None)
    entry = services.toolbox.entry_as_read(tenant, name)
    if entry is None or entry.call_type != kind:
        return None, None
    return page_of(services.plugins, kind, entry.group or entry.name), None


def row_of(services: Any, tenant: str, record: dict[str, Any]) -> dict[str, Any]:
    page, version_page = tool_links(services, tenant, record)
    return {**record, "captured": record.get("captured"), "who": caller_words(record), "page": page, "versionPage": version_page,
            "words": outcome_words(record["outcome"]), "ok": record["outcome"] == calls.OK,
            "viaWords": VIA_WORDS.get(record["via"], record["via"]), "duration": charts.millis(record.get("duration_ms"))}


@router.get("")
async def calls_page(
    request: Request,
    visitor: Reader,
    tool: Annotated[str, Query(max_length=200)] = "",
    caller: Annotated[str, Query(max_length=200)] = "",
    outcome: Annotated[str, Query(max_length=100)] = "",
    via: Annotated[str, Query(pattern=_VIA_PATTERN)] = "",
    since: Annotated[str, Query(max_length=10)] = "",
    until: Annotated[str, Query(max_length=10)] = "",
    before: Annotated[int | None, Query(ge=1)] = None,
    size: Annotated[int, Query(ge=10, le=100)] = PAGE_SIZE,
) -> Response:
    shown = {"tool": tool.strip(), "caller": caller.strip(), "outcome": outcome.strip(), "via": via, "since": since,
             "until": until, "size": str(size) if size != PAGE_SIZE else ""}
    services = request.app.state.services
    tenant = visitor.principal.tenant
    try:
        first, last = _day(since, "From"), _day(until, "To")
        if first and last and last < first:
            raise ValueError("To: the last day comes on or after the first (From).")
    except ValueError as refusal:
        return _render(request, shown, size, [], None, before, error=str(refusal), status=400)
    where = CallFilter(
        tool=shown["tool"] or None, caller=shown["caller"] or None, outcome=shown["outcome"] or None, via=via or None,
        since=iso(datetime.combine(first, time(), timezone.utc).timestamp()) if first else None,
        # "to" a day includes that whole day
        until=iso(datetime.combine(last + timedelta(days=1), time(), timezone.utc).timestamp()) if last else None,
    )
    records, more = await run_in_threadpool(services.toolbox.call_log.page, tenant, where, before=before, limit=size)
    rows = [row_of(services, tenant, record) for record in records]
    older = records[-1]["position"] if more and records else None
    return _render(request, shown, size, rows, older, before)


def _render(request: Request, shown: dict[str, str], size: int, rows: list[dict[str, Any]], older: int | None,
            before: int | None, *, error: str = "", status: int = 200) -> Response:
    fragment = (request.headers.get("hx-request") == "true" and request.headers.get("hx-target") == "calls-results"
                and request.headers.get("hx-history-restore-request") != "true")
    outcomes = [(calls.OK, "ok"), *((k, v) for k, v in OUTCOME_WORDS.items() if k != calls.OK)]
    if shown["outcome"] and shown["outcome"] not in OUTCOME_WORDS:
        outcomes.append((shown["outcome"], outcome_words(shown["outcome"])))
    return request.app.state.console_pages.render(
        request, "calls/_results.html" if fragment else "calls/page.html", status=status,
        filters=shown, sizes=SIZES, size=size, rows=rows, error=error, vias=list(VIA_WORDS.items()), outcomes=outcomes,
        filtered=any(v for k, v in shown.items() if k != "size"),
        older=_link(shown, before=older) if older else None,
        newest=_link(shown) if before is not None else None,
    )


@router.get("/activity")
async def tool_activity(
    request: Request,
    visitor: Reader,
    tool: Annotated[str, Query(min_length=1, max_length=200)],
    name: Annotated[list[str] | None, Query(max_length=MAX_NAMES)] = None,
) -> Response:
    """One tool's last 24 hours and 7 days, the fragment its page shows; `name`: the names its calls
    are recorded under when they are not the tool's (a File Search tool's capabilities)."""
    names = [n for n in (name or []) if n and len(n) <= 200][:MAX_NAMES]
    return await _activity(request, visitor, tool, names)


@router.post("/capture")
async def switch_capture(request: Request, visitor: Writer) -> Response:
    """Value capture of one tool switched on (with its cap) or off, from its activity card; answers
    the card again (htmx), or leads back to the tool's calls."""
    form = await request.form()
    tool = str(form.get("tool", "")).strip()
    services = request.app.state.services
    tenant = visitor.principal.tenant
    if not tool or services.toolbox.entry(tenant, tool) is None:
        raise Refused(404, f"There is no tool {tool!r} in this organization.", title="Not found")
    error = ""
    if str(form.get("capture", "")) == "on":
        text = str(form.get("maxBytes", "")).strip()
        cap = int(text) if text.isdigit() else 0
        if not 1 <= cap <= calls.CAPTURE_MAX_BYTES:
            error = f"Bytes kept of each value: a whole number from 1 to {calls.CAPTURE_MAX_BYTES:,}."
        else:
            await run_in_threadpool(services.toolbox.call_log.set_capture, tenant, tool, cap, visitor.principal.name)
    elif any(row["tool"] == tool for row in services.toolbox.call_log.captures(tenant)):
        await run_in_threadpool(services.toolbox.call_log.set_capture, tenant, tool, None, visitor.principal.name)
    if request.headers.get("hx-request") != "true":
        return RedirectResponse("/console/calls?" + urlencode({"tool": tool}), status_code=303)
    return await _activity(request, visitor, tool, [], error=error, status=400 if error else 200)


async def _activity(request: Request, visitor: Any, tool: str, names: list[str], *, error: str = "", status: int = 200) -> Response:
    services = request.app.state.services
    activity = await run_in_threadpool(services.toolbox.call_log.activity, visitor.principal.tenant, tool, names)
    windows = []
    if activity is not None:
        for window, what in ((activity.day, "hour"), (activity.week, "day")):
            windows.append({"window": window, "bars": charts.bars(window.buckets, what), "lines": charts.lines(window.buckets, what),
                            "callers": charts.shares(window.callers), "p50": charts.millis(window.p50), "p95": charts.millis(window.p95),
                            "peak": charts.millis(max((b.p95 for b in window.buckets if b.p95 is not None), default=None))})
    # value capture is switched per tool: offered on a tool's own card, not on a File Search tool's
    capture = None if names or activity is None else next(
        (row for row in services.toolbox.call_log.captures(visitor.principal.tenant) if row["tool"] == tool), None)
    return request.app.state.console_pages.render(
        request, "calls/_activity.html", status=status, tool=tool, windows=windows, on=activity is not None,
        calls_link="/console/calls?" + urlencode({"tool": tool}) if not names else "/console/calls",
        capture=capture, capturable=not names and activity is not None, capture_error=error,
        capture_max=calls.CAPTURE_MAX_BYTES,
    )
