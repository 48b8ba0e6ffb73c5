"""The call log over REST (docs/calls.md): every tool call of the caller's tenant, newest first, for admins and auditors."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from api.deps import Admin, Reader, ServicesDep
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
    if "captured" in record:  # value capture was on for the tool (docs/calls.md)
        out["captured"] = record["captured"]
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


class CaptureIn(BaseModel):
    """Value capture switched on for one tool: each captured value's JSON is cut to `maxBytes` bytes."""

    model_config = ConfigDict(extra="forbid")
    maxBytes: int = Field(default=4096, ge=1, le=calls.CAPTURE_MAX_BYTES,  # noqa: N815 - the API's spelling
                          description="each captured value's JSON is cut to at most this many bytes")


def _capture_out(row: dict[str, Any]) -> dict[str, Any]:
    return {"tool": row["tool"], "maxBytes": row["maxBytes"], "by": row["by"], "at": row["at"]}


@router.get("/capture", response_model=list[dict[str, Any]])
def list_captures(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
    """The tools whose calls' values are captured, with their caps; off for every other tool."""
    return [_capture_out(row) for row in services.toolbox.call_log.captures(principal.tenant)]


@router.put("/capture/{name}", response_model=dict[str, Any], responses=documented(400, 404))
def switch_capture_on(services: ServicesDep, principal: Admin, body: CaptureIn,
                      name: Annotated[str, Path(max_length=200)]) -> dict[str, Any]:
    """Switches value capture on for one tool of the catalog: its calls' arguments and results are
    kept in their records, the tenant's secrets replaced, each cut to `maxBytes`. The switch is a
    record of the call log's chain."""
    if services.toolbox.entry(principal.tenant, name) is None:
        raise UnknownRecord("tool", name)
    services.toolbox.call_log.set_capture(principal.tenant, name, body.maxBytes, principal.name)
    return {"tool": name, "maxBytes": body.maxBytes, "capture": True}


@router.delete("/capture/{name}", response_model=dict[str, Any], responses=documented(404))
def switch_capture_off(services: ServicesDep, principal: Admin, name: Annotated[str, Path(max_length=200)]) -> dict[str, Any]:
    """Switches value capture off for one tool (its records keep what they captured until they expire)."""
    if not any(row["tool"] == name for row in services.toolbox.call_log.captures(principal.tenant)):
        raise UnknownRecord("value capture", name)
    services.toolbox.call_log.set_capture(principal.tenant, name, None, principal.name)
    return {"tool": name, "capture": False}


@router.get("/{id}", response_model=dict[str, Any], responses=documented(404))
def get_call(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:  # noqa: A002 - the path's name, as every record's
    """One call record; another tenant's is not found."""
    record = services.toolbox.call_log.get(principal.tenant, id)
    if record is None:
        raise UnknownRecord("call", id)
    return call_out(record)
