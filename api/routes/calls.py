"""The call log over REST (docs/calls.md): every tool call of the caller's tenant, newest first, for admins and auditors."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from api.deps import Reader, ServicesDep
from api.paths import ADMIN_API
from api.problems import documented
from application import queries
from application.call_log import CallFilter
from domain import calls
from domain.calls import iso
from domain.errors import InvalidInput, UnknownRecord, Violation

router = APIRouter(prefix=f"{ADMIN_API}/calls", tags=["calls"])

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
_VIAS = "^(" + "|".join(calls.VIAS) + ")$"


def call_out(record: dict[str, Any]) -> dict[str, Any]:
    """A record as the API shows it: never an argument or a result, only their SHA-256."""
    out = {
        "id": record["id"],
        "at": record["at"],
        "tool": record["tool"],
        "kind": record["kind"],
        "version": record["version"],
        "definitionSha256": record["definition_sha256"],
        "caller": {
            "principal": record["caller"],
            "tokenId": record["caller_token"],
            "person": record["caller_person"],
            "client": record["caller_client"],
            "plan": record["plan"],
        },
        "via": record["via"],
        "argumentsSha256": record["arguments_sha256"],
        "resultSha256": record["result_sha256"],
        "outcome": record["outcome"],
        "durationMillis": record["duration_ms"],
        "traceId": record["trace_id"],
        "chain": {"n": record["n"], "previousHash": record["previous_hash"], "hash": record["hash"]},
    }
    if record["via"] == calls.EXPIRY:
        out["expired"] = {"through": record["expired_through"], "hash": record["expired_hash"]}
    return out


def _instant(field: str, value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        raise InvalidInput([Violation(field, "instant", "give a time zone (an ISO 8601 instant such as 2026-01-31T12:00:00Z)")])
    return iso(value.astimezone(timezone.utc).timestamp())


def _position(cursor: str | None) -> int | None:
    try:
        text = queries.after_cursor(cursor)
        return None if text is None else int(text)
    except ValueError as error:
        message = str(error) if "cursor" in str(error) else "invalid cursor: use the one the previous page gave"
        raise InvalidInput([Violation("cursor", "page", message)]) from None


@router.get("", response_model=list[dict[str, Any]], responses=documented(400))
def list_calls(
    services: ServicesDep,
    principal: Reader,
    request: Request,
    response: Response,
    tool: Annotated[str | None, Query(max_length=200, description="only the calls of this tool")] = None,
    caller: Annotated[str | None, Query(max_length=200, description="only the calls of this principal or token id")] = None,
    outcome: Annotated[str | None, Query(max_length=100, description="only calls with this outcome: ok, or an error's type")] = None,
    via: Annotated[str | None, Query(pattern=_VIAS, description="only calls that came this way in")] = None,
    since: Annotated[datetime | None, Query(description="only calls at or after this ISO 8601 instant")] = None,
    until: Annotated[datetime | None, Query(description="only calls before this ISO 8601 instant")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="how many calls a page holds at most")] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(description="where the page starts: the `next` link's cursor of the previous page")] = None,
) -> list[dict[str, Any]]:
    """A page of the tenant's tool calls, newest first; while more follow, a `Link` header
    (`rel="next"`) gives the next page's URL."""
    where = CallFilter(tool=tool, caller=caller, outcome=outcome, via=via,
                       since=_instant("since", since), until=_instant("until", until))
    if where.since is not None and where.until is not None and where.until <= where.since:
        raise InvalidInput([Violation("until", "range", "must be after since")])
    records, more = services.toolbox.call_log.page(principal.tenant, where, before=_position(cursor), limit=limit)
    if more and records:
        following = request.url.include_query_params(cursor=queries.cursor_after(str(records[-1]["position"])))
        response.headers["Link"] = f'<{following}>; rel="next"'
    return [call_out(record) for record in records]


@router.get("/{id}", response_model=dict[str, Any], responses=documented(404))
def get_call(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:  # noqa: A002 - the path's name, as every record's
    """One call record; another tenant's is not found."""
    record = services.toolbox.call_log.get(principal.tenant, id)
    if record is None:
        raise UnknownRecord("call", id)
    return call_out(record)
