"""The audit viewer and the audit export (docs/rules.md B5, docs/security.md, docs/console.md "Audit").

The viewer is a filterable, paged table of the tenant's events, newest first (`console.audit_log`
reads them backwards from a cursor, a page at a time); the filters and the cursor are the URL's, so
a view can be shared, and htmx swaps only the table and pushes the URL. A row's change opens below
it (`/console/audit/events/{position}`), read from that event and its aggregate's earlier ones.

The download streams exactly what GET /api/v1/admin/audit/export answers (`api.presenters.audit_download`),
as an attachment. Admins and auditors."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta, timezone
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Path, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response, StreamingResponse

from api import presenters
from console import audit_log
from console.routing import ConsoleRoute
from console.security import Reader, Refused

router = APIRouter(prefix="/console/audit", route_class=ConsoleRoute, include_in_schema=False)

# The page sizes offered (any from 10 to 100 is read).
SIZES = (10, 25, 50, 100)
_KIND_PATTERN = "^(|" + "|".join(value for value, _ in audit_log.KINDS) + ")$"


class BadFilter(ValueError):
    """A filter a person gave that cannot be read: its message names the field."""


def _day(value: str, field: str) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise BadFilter(f"{field}: a date like 2026-12-31 is expected, not “{value}”.") from None


def _link(filters: dict[str, str], **changes: str | int | None) -> str:
    kept = {k: v for k, v in {**filters, **changes}.items() if v not in (None, "")}
    return "/console/audit" + ("?" + urlencode(kept) if kept else "")


@router.get("")
async def audit_page(
    request: Request,
    visitor: Reader,
    kind: Annotated[str, Query(pattern=_KIND_PATTERN)] = "",
    name: Annotated[str, Query(max_length=200)] = "",
    who: Annotated[str, Query(max_length=200)] = "",
    since: Annotated[str, Query(max_length=10)] = "",
    until: Annotated[str, Query(max_length=10)] = "",
    before: Annotated[int | None, Query(ge=1)] = None,
    size: Annotated[int, Query(ge=10, le=100)] = audit_log.PAGE_SIZE,
) -> Response:
    shown = {"kind": kind, "name": name.strip(), "who": who.strip(), "since": since, "until": until,
             "size": str(size) if size != audit_log.PAGE_SIZE else ""}
    try:
        first, last = _day(since, "From"), _day(until, "To")
        if first and last and last < first:
            raise BadFilter("To: the last day comes on or after the first (From).")
    except BadFilter as refusal:
        # said where the table would be (the part the filters swap), with the form kept as typed
        return _render(request, shown, size, audit_log.Page([], None, 0), {}, None, error=str(refusal), status=400)
    filters = audit_log.Filters(
        kind=kind, name=name.strip(), who=who.strip(),
        since=datetime.combine(first, time(), timezone.utc) if first else None,
        # "to" a day includes that whole day
        until=datetime.combine(last + timedelta(days=1), time(), timezone.utc) if last else None,
    )
    services = request.app.state.services
    reader = audit_log.Reader(services, visitor.principal.tenant)
    page = await run_in_threadpool(reader.page, filters, before, size)
    page.rows, links = await run_in_threadpool(audit_log.annotated, services, visitor.principal.tenant, page.rows)
    return _render(request, shown, size, page, links, before)


def _render(request: Request, shown: dict[str, str], size: int, page: audit_log.Page, links: dict[tuple[str, str], str],
            before: int | None, *, error: str = "", status: int = 200) -> Response:
    # htmx's filter form swaps only #audit-results; any other request (a link, a reload, htmx
    # restoring history) gets the whole page
    fragment = (request.headers.get("hx-request") == "true" and request.headers.get("hx-target") == "audit-results"
                and request.headers.get("hx-history-restore-request") != "true")
    return request.app.state.console_pages.render(
        request, "audit/_results.html" if fragment else "audit/page.html", status=status,
        filters=shown, kinds=audit_log.KINDS, sizes=SIZES, size=size, page=page, links=links, sentence=audit_log.sentence,
        filtered=any(v for k, v in shown.items() if k != "size"), error=error,
        older=_link(shown, before=page.older) if page.older else None,
        newest=_link(shown) if before is not None else None,
    )


@router.get("/events/{position}")
async def audit_change(request: Request, visitor: Reader, position: Annotated[int, Path(ge=1)]) -> Response:
    """One event's change, as the fragment that opens below its row."""
    reader = audit_log.Reader(request.app.state.services, visitor.principal.tenant)
    change = await run_in_threadpool(reader.change, position)
    if change is None:
        # another tenant's event, bookkeeping, or no event at all: the same answer for each
        raise Refused(404, "There is no such event in this organization's audit.", title="Not found")
    return request.app.state.console_pages.render(request, "audit/_change.html", change=change)


@router.get("/export")
def audit_download(request: Request, visitor: Reader) -> StreamingResponse:
    answer = presenters.audit_download(request.app.state.services, visitor.principal.tenant)
    answer.headers["Cache-Control"] = "no-store"
    return answer
