"""The call log's records and their hash chain (docs/calls.md): what is kept of every tool call, never its values.

A record says when a tool was called, in which tenant, which tool of which kind at which version
(and the SHA-256 of its definition), by whom and by which way in, the SHA-256 of its arguments and
of its result (canonical JSON), its outcome (`ok` or the error's type) and how long it took. The
records of one tenant form one hash chain, as each aggregate's events do (docs/rules.md B5): each
record holds the hash of the one before it (`previous_hash`) and its own (`hash`), the SHA-256 of
its canonical JSON (`domain.chain.state_hash`, the events' own), and its place in the chain (`n`,
from 1). A changed byte changes its hash and breaks the next record's link; a removed one leaves a
gap in `n`.

Records older than the retention are removed, and the removal is itself a record of the chain
(`via` EXPIRY): it names the last record it removed (`expired_through`, its `n`) and that record's
hash (`expired_hash`), so that the records left still verify: the first one after the gap links to
the hash the expiry vouches for.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from uuid import uuid4

import orjson

from domain.chain import GENESIS, state_hash

# The ways in a call record names (`via`); an expiry record's `via` is EXPIRY.
REST = "rest"
MCP = "mcp"
PLAN = "plan"
PLAYGROUND = "playground"
TEST = "test"
VIAS = (REST, MCP, PLAN, PLAYGROUND, TEST)
EXPIRY = "expiry"
# An admin's switch of value capture for one tool: a record of the chain too (`capture_record`).
CAPTURE = "capture"
# Records that are the log's own bookkeeping, not calls: never listed, counted or shown as a call.
BOOKKEEPING = (EXPIRY, CAPTURE)
OK = "ok"
# Value capture's size cap (docs/calls.md): each captured value's JSON is cut to at most this many bytes.
CAPTURE_MAX_BYTES = 65_536

# Every field of a record, in the order the REST API shows them.
FIELDS = (
    "id", "tenant", "n", "at", "tool", "kind", "version", "definition_sha256", "caller", "caller_token", "caller_person",
    "caller_client", "plan", "via", "arguments_sha256", "result_sha256", "outcome", "duration_ms", "trace_id",
    "expired_through", "expired_hash", "previous_hash", "hash",
)


class CallRecord:
    """The type a record's hash names (`state_hash` covers a type name, as an event's does)."""


def record_hash(record: Mapping[str, Any]) -> str:
    """The SHA-256 of the record's canonical JSON, its `previous_hash` included, its `hash` left out."""
    return state_hash(CallRecord, {k: v for k, v in record.items() if k != "hash"})


def canonical_sha256(value: Any) -> str:
    """The SHA-256 of a JSON value as canonical JSON (keys sorted): what a record keeps of the
    arguments and the result of a call, never the values themselves."""
    try:
        data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:  # not JSON (a kind's own object): its text stands for it
        data = orjson.dumps(repr(value))
    return hashlib.sha256(data).hexdigest()


_TYPE = CallRecord.__qualname__


def chained(record: dict[str, Any], n: int, previous_hash: str) -> dict[str, Any]:
    """`record` as the `n`th of its tenant's chain, after the record whose hash is `previous_hash`.
    Its hash is `record_hash`'s, computed without copying the record (the writer's per-record cost):
    the type's name is put in for the one serialization and taken out again."""
    record.pop("hash", None)
    record["n"] = n
    record["previous_hash"] = previous_hash
    record["__type__"] = _TYPE
    try:
        data = orjson.dumps(record, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    finally:
        del record["__type__"]
    record["hash"] = hashlib.sha256(data).hexdigest()
    return record


@dataclass
class ChainBreak:
    """A record that does not verify: its tenant, its id and place, and why."""

    tenant: str
    id: str
    n: int
    reason: str

    def __str__(self) -> str:
        return f"call record {self.id} (tenant {self.tenant!r}, #{self.n}): {self.reason}"


@dataclass
class CallChainReport:
    records: int = 0
    tenants: int = 0
    broken: list[ChainBreak] = field(default_factory=list)
    digest: str = ""

    @property
    def intact(self) -> bool:
        return not self.broken


def verify_calls(records: Iterable[Mapping[str, Any]]) -> CallChainReport:
    """Checks every tenant's chain: each record's own hash, its link to the one before it, no gap
    but those an expiry vouches for. `records` come by tenant, then `n`, oldest first. The digest
    covers every chain's head (tenant, `n`, hash), for an auditor to keep and compare later."""
    report = CallChainReport()
    heads: dict[str, tuple[int, str]] = {}
    tenant: str | None = None
    expected_n, expected_hash = 0, GENESIS
    pending: list[Mapping[str, Any]] = []

    def check(chain: list[Mapping[str, Any]]) -> None:
        nonlocal expected_n, expected_hash
        if not chain:
            return
        # The newest expiry says where the records left begin: after the one it removed last.
        floor = max((r for r in chain if r.get("via") == EXPIRY), key=lambda r: r["n"], default=None)
        expected_n, expected_hash = 0, GENESIS
        if floor is not None and isinstance(floor.get("expired_through"), int):
            expected_n, expected_hash = floor["expired_through"], floor.get("expired_hash") or GENESIS
        for record in chain:
            report.records += 1
            n = record.get("n")
            rid, who = str(record.get("id")), str(record.get("tenant"))
            if record_hash(record) != record.get("hash"):
                report.broken.append(ChainBreak(who, rid, n if isinstance(n, int) else -1, "its content does not match its hash"))
            elif not isinstance(n, int) or n != expected_n + 1:
                missing = "is out of order" if not isinstance(n, int) or n <= expected_n else (
                    f"follows #{expected_n}: record #{expected_n + 1} is missing" if n == expected_n + 2
                    else f"follows #{expected_n}: records #{expected_n + 1} to #{n - 1} are missing")
                report.broken.append(ChainBreak(who, rid, n if isinstance(n, int) else -1, missing))
            elif record.get("previous_hash") != expected_hash:
                report.broken.append(ChainBreak(who, rid, n, f"does not link to record #{expected_n}: it or that record was changed"))
            expected_n = n if isinstance(n, int) else expected_n
            expected_hash = str(record.get("hash"))
        heads[str(chain[-1].get("tenant"))] = (expected_n, expected_hash)

    for record in records:
        if record.get("tenant") != tenant:
            check(pending)
            pending, tenant = [], record.get("tenant")
        pending.append(record)
    check(pending)
    report.tenants = len(heads)
    lines = "\n".join(f"{t}:{n}:{h}" for t, (n, h) in sorted(heads.items()))
    report.digest = hashlib.sha256(lines.encode()).hexdigest()
    return report


# The last second `iso` wrote, with its text (replaced whole: threads share it without a lock).
_SECOND: tuple[int, str] = (0, "1970-01-01T00:00:00")


def iso(at: float) -> str:
    """A record's time: ISO 8601, UTC, to the microsecond (sortable as text). The date and time of
    the second are formatted once a second (the writer formats a record's time in a fraction of a
    microsecond)."""
    global _SECOND
    second = math.floor(at)
    micros = round((at - second) * 1_000_000)  # as `datetime.fromtimestamp` rounds
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    cached = _SECOND
    if cached[0] != second:
        cached = _SECOND = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{cached[1]}.{micros:06d}Z"


def capture_record(tenant: str, at: float, tool: str, by: str, max_bytes: int | None) -> dict[str, Any]:
    """The record an admin's switch of value capture leaves in `tenant`'s chain: on with its cap
    (`max_bytes`), or off (None)."""
    return {
        "id": uuid4().hex, "tenant": tenant, "at": iso(at), "tool": tool, "kind": None, "version": None,
        "definition_sha256": None, "caller": by, "caller_token": None, "caller_person": None,
        "caller_client": None, "plan": None, "via": CAPTURE, "arguments_sha256": None, "result_sha256": None,
        "outcome": f"capture on ({max_bytes} bytes)" if max_bytes else "capture off", "duration_ms": 0.0,
        "trace_id": None, "expired_through": None, "expired_hash": None, "capture_max_bytes": max_bytes,
    }


def captured_text(value: Any, max_bytes: int) -> tuple[str, bool]:
    """A value as canonical JSON, cut to at most `max_bytes` bytes (never inside a character), and
    whether it was cut: what value capture keeps of an argument or a result."""
    try:
        data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        data = orjson.dumps(repr(value))
    if len(data) <= max_bytes:
        return data.decode(), False
    return data[:max_bytes].decode("utf-8", errors="ignore"), True


def expiry_record(tenant: str, at: float, through: int, through_hash: str, count: int) -> dict[str, Any]:
    """The record an expiry leaves in `tenant`'s chain: the last record it removed and its hash."""
    return {
        "id": uuid4().hex, "tenant": tenant, "at": iso(at), "tool": None, "kind": None, "version": None,
        "definition_sha256": None, "caller": "retention", "caller_token": None, "caller_person": None,
        "caller_client": None, "plan": None, "via": EXPIRY, "arguments_sha256": None, "result_sha256": None,
        "outcome": f"expired {count}", "duration_ms": 0.0, "trace_id": None, "expired_through": through,
        "expired_hash": through_hash,
    }
