"""The call log (docs/calls.md): one record of every tool call, from every way in, written without slowing the call.

The toolbox (`application/toolbox.py`) and a module's Test (`application/execution.py`) hand each
call to `CallLog.called` or `CallLog.refused`; that is a tuple of what the call already had, appended to a bounded
in-memory queue, nothing more: no hashing, no I/O, no lock but the queue's. A background thread
takes the queue in batches and writes each batch in one transaction of the store
(`CallRecords`, SQLite in the data dir or PostgreSQL beside the event store: `infrastructure/
call_log_*.py`), which chains the records per tenant (`domain/calls.py`). The hashes of the
arguments, the result and the tool's definition are computed there, in the writer, from the values
the call already had (they are not changed after a call is answered).

Past its capacity the queue takes no more: a record that does not fit is counted (`dropped`, for
the metrics) and a structured warning says so, at most once a minute. A call never waits for the
log. A read (`page`, `get`, `last_calls`) first waits, briefly, for what was queued before it to be
written, so that whoever just called a tool finds its call.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from opentelemetry import trace

from application import call_activity
from application.context import CONSOLE, MCP, REST, CallContext
from domain import calls
from domain.calls import canonical_sha256, iso
from domain.catalog import ToolEntry
from domain.ports import ExecutionResult

log = logging.getLogger("toolsmith.call_log")

DEFAULT_CAPACITY = 50_000
DEFAULT_BATCH = 1_000
# How long a record may wait in the queue before the writer takes it, when no batch filled up.
# (A read wakes the writer at once: this only sizes the batches, a transaction each, of a steady load.)
FLUSH_SECONDS = 0.25
WARN_EVERY_SECONDS = 60.0
EXPIRE_EVERY_SECONDS = 3600.0
# How often the writer reads which tools' values are captured (another replica may switch one).
CAPTURE_EVERY_SECONDS = 5.0
# How long the writer keeps a tenant's redactor (its secrets' values) for captured values.
REDACTOR_SECONDS = 30.0
MAX_PAGE = 500

_VIA = {REST: calls.REST, MCP: calls.MCP, CONSOLE: calls.PLAYGROUND}


@dataclass(frozen=True)
class CallFilter:
    """What `GET /api/v1/admin/calls` narrows the log to (None: anything)."""

    tool: str | None = None
    caller: str | None = None
    outcome: str | None = None
    via: str | None = None
    since: str | None = None  # ISO 8601 instants, UTC, as records hold them
    until: str | None = None


class CallRecords(Protocol):
    """Where the records are kept (`infrastructure/call_log_sqlite.py`, `call_log_postgres.py`)."""

    def append(self, records: Sequence[dict[str, Any]]) -> None:
        """Chains (`domain.calls.chained`) and stores `records` in one transaction."""

    def page(self, tenant: str, where: CallFilter, *, before: int | None, limit: int) -> tuple[list[dict[str, Any]], bool]:
        """The tenant's records matching `where`, newest first, stored before position `before`;
        each with its `position`; and whether more follow."""

    def get(self, tenant: str, record_id: str) -> dict[str, Any] | None: ...

    def last_calls(self, tenant: str, tools: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The newest call record of each of `tools`, in one query."""

    def activity(self, tenant: str, tools: Sequence[str], since: str, recent: str, *, sample: int, top: int) -> dict[str, Any]:
        """The calls of `tools` since `since`, bounded: calls and errors by hour, the `top` callers since
        `since` and since `recent`, the newest `sample` durations by hour (`SqlCallRecords.activity`)."""

    def expire(self, before: str) -> int:
        """Removes every tenant's records older than `before`, recording each removal; answers how many."""

    def chains(self, tenant: str | None = None) -> Iterator[dict[str, Any]]:
        """Every record (of `tenant`), by tenant then `n` (what verify and the export read)."""

    def restore(self, records: Iterable[dict[str, Any]]) -> int:
        """Stores records as they were exported (their hashes and places kept); answers how many."""

    def set_capture(self, tenant: str, tool: str, max_bytes: int | None, by: str, at: float) -> dict[str, Any]:
        """Switches value capture of `tool` on (its cap) or off (None), recorded in the chain."""

    def captures(self, tenant: str | None = None) -> list[dict[str, Any]]:
        """The tools whose values are captured, with their caps (`tenant`'s, else every tenant's)."""

    def close(self) -> None: ...


class CallLog:
    """The queue, its writer thread and the reads. `store` None: a log that keeps nothing (a test
    or a command without a data dir), whose `called` costs one check."""

    def __init__(self, store: CallRecords | None, *, capacity: int = DEFAULT_CAPACITY, batch: int = DEFAULT_BATCH,
                 flush_seconds: float = FLUSH_SECONDS, clock: Any = time.time, days: int | None = None) -> None:
        """`days`: how long records are kept (None: for ever); the writer removes older ones hourly."""
        self.store = store
        self.days = days
        self._next_expiry = 0.0
        self.on = store is not None
        self.capacity = capacity
        self.batch = batch
        self.dropped = 0  # records the queue had no room for (a counter the metrics expose)
        self.written = 0
        self.failed = 0  # records a failing store could not take
        self._flush_seconds = flush_seconds
        self._clock = clock
        self._queue: deque[tuple[Any, ...]] = deque()
        # Records ever queued: `next` of a count is atomic, so calls of many threads count every record.
        self._count = itertools.count(1)
        self._queued = 0
        self._done = 0  # records ever taken and written or given up (only the writer writes it)
        self._wake = threading.Event()
        self._progress = threading.Condition()
        self._stopping = False
        self._warned_at = float("-inf")
        self._thread: threading.Thread | None = None
        # Value capture (docs/calls.md): tenant -> tool -> cap in bytes, read from the store; and
        # what redacts a tenant's secrets from captured values (set by the composition: the
        # tenant's secrets' values), kept a moment per tenant by the writer.
        self._capture: dict[str, dict[str, int]] = {}
        self._next_capture_read = 0.0
        self.redactor: Any = None  # (tenant) -> domain.redaction.Redactor
        self._redactors: dict[str, tuple[float, Any]] = {}
        # Told of each call (tenant, tool, kind, via, outcome, seconds, whether the catalog knew the
        # tool): the metrics' counters (docs/observability.md); wired by the composition root.
        self.observe: Callable[[str, str, str | None, str, str, float, bool], None] | None = None

    # -- the call path ------------------------------------------------------------------------

    def called(self, tenant: str, name: str, entry: ToolEntry | None, context: CallContext, arguments: Any,
               result: ExecutionResult | None, error: BaseException | str | None, started: float, elapsed: float,
               via: str | None = None, kind: str | None = None, definition: Any = None) -> None:
        """Queues the record of one call: `result` when it was answered, `error` when it was
        refused or failed outside the tool; `started` its wall-clock time, `elapsed` seconds.
        `via`, `kind` and `definition` for a run of what is no tool of the catalog (a module's Test
        of its draft): else the context and the entry say. `observe` (the metrics) is told of
        every call, whether the log keeps records or not."""
        observe = self.observe
        if not self.on and observe is None:
            return
        if result is not None:
            outcome = calls.OK if result.error is None else result.error.type
        elif isinstance(error, str):
            outcome = error
        else:
            outcome = getattr(error, "code", None) or type(error).__name__
        step = context.plan_step
        via = via or (calls.PLAN if step is not None else _VIA.get(context.way_in, context.way_in))
        if observe is not None:
            observe(tenant, name, kind or (entry.call_type if entry is not None else None), via, outcome, elapsed,
                    entry is not None or kind is not None)
        if not self.on:
            return
        if len(self._queue) >= self.capacity:
            self._drop()
            return
        # One tuple (`_record` reads it in the writer; the principal and the plan step are frozen).
        self._queue.append((tenant, started, name, entry, context.principal, step, via, arguments, result, outcome, elapsed,
                            _trace_id(), kind, definition, caps.get(name) if (caps := self._capture.get(tenant)) else None))
        self._queued = next(self._count)
        if len(self._queue) >= self.batch:
            self._wake.set()

    def _drop(self) -> None:
        self.dropped += 1
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY_SECONDS:
            self._warned_at = now
            log.warning("call log queue full: records dropped, counted only",
                        extra={"dropped": self.dropped, "capacity": self.capacity})

    # -- the writer ---------------------------------------------------------------------------

    def start(self) -> None:
        if self.on and self._thread is None:
            self._read_captures()
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="call-log-writer", daemon=True)
            self._thread.start()

    def close(self) -> None:
        """Writes what is queued, then stops the writer and closes the store."""
        self.stop()
        if self.store is not None:
            self.store.close()

    def stop(self) -> None:
        """Writes what is queued, then stops the writer (the store stays open)."""
        thread = self._thread
        if thread is not None:
            self._stopping = True
            self._wake.set()
            thread.join(timeout=10)
            self._thread = None
        if self.store is not None:
            self._write_all()

    def flush(self, timeout: float = 2.0) -> bool:
        """Waits until every record queued before this call is written (or given up); False when
        `timeout` passed first."""
        if not self.on:
            return True
        target = self._queued
        if self._thread is None:
            self._write_all()
            return True
        deadline = time.monotonic() + timeout
        with self._progress:
            while self._done < target:
                self._wake.set()
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._progress.wait(min(left, 0.05))
        return True

    def _run(self) -> None:
        while not self._stopping:
            self._wake.wait(self._flush_seconds)
            self._wake.clear()
            self._write_all()
            if time.monotonic() >= self._next_capture_read:
                self._read_captures()
            if self.days is not None and time.monotonic() >= self._next_expiry:
                self._next_expiry = time.monotonic() + EXPIRE_EVERY_SECONDS
                self._expire_now()
        self._write_all()

    def _expire_now(self) -> None:
        try:
            removed = self.expire(self.days)  # type: ignore[arg-type]
        except Exception as error:  # noqa: BLE001 - tried again within the hour
            log.error("call log: expiry failed", extra={"error": type(error).__name__})
            return
        if removed:
            log.info("call log: expired records removed", extra={"removed": removed, "days": self.days})

    def _read_captures(self) -> None:
        self._next_capture_read = time.monotonic() + CAPTURE_EVERY_SECONDS
        try:
            found = self.store.captures()  # type: ignore[union-attr]
        except Exception as error:  # noqa: BLE001 - read again in a moment
            log.error("call log: the value capture switches could not be read", extra={"error": type(error).__name__})
            return
        switched: dict[str, dict[str, int]] = {}
        for row in found:
            switched.setdefault(row["tenant"], {})[row["tool"]] = row["maxBytes"]
        self._capture = switched  # replaced whole: the call path reads it without a lock

    def _redactor_for(self, tenant: str) -> Any:
        if self.redactor is None:
            return None
        now = time.monotonic()
        kept = self._redactors.get(tenant)
        if kept is None or kept[0] < now:
            kept = (now + REDACTOR_SECONDS, self.redactor(tenant))
            self._redactors[tenant] = kept
        return kept[1]

    def _write_all(self) -> None:
        while self._queue:
            taken: list[tuple[Any, ...]] = []
            queue = self._queue
            while queue and len(taken) < self.batch:
                taken.append(queue.popleft())
            self._write(taken)

    def _write(self, taken: list[tuple[Any, ...]]) -> None:
        try:
            # Each id: the batch's time in milliseconds (12 hex digits), then 10 random bytes of its
            # own (one read of the system's randomness a batch). Ids that grow with time are added
            # at the end of the store's index of them, not at random places in it.
            at, ids = f"{int(time.time() * 1000) & 0xFFFFFFFFFFFF:012x}", os.urandom(10 * len(taken)).hex()
            self.store.append([_record(raw, self._redactor_for, at + ids[20 * k:20 * k + 20])  # type: ignore[union-attr]
                               for k, raw in enumerate(taken)])
            self.written += len(taken)
        except Exception as error:  # noqa: BLE001 - the calls were answered; the log says what it lost
            self.failed += len(taken)
            log.error("call log: a batch could not be written", extra={"records": len(taken), "error": type(error).__name__})
        with self._progress:
            self._done += len(taken)
            self._progress.notify_all()

    def health(self) -> dict[str, Any]:
        """What /healthz says of the log: on or off, records waiting, written, dropped (the queue
        was full: counted only) and failed (the store refused a batch), since the service started."""
        return {"on": self.on, "queued": len(self._queue), "written": self.written, "dropped": self.dropped,
                "failed": self.failed}

    # -- reads --------------------------------------------------------------------------------

    def page(self, tenant: str, where: CallFilter, *, before: int | None = None, limit: int = 50) -> tuple[list[dict[str, Any]], bool]:
        if self.store is None:
            return [], False
        self.flush()
        return self.store.page(tenant, where, before=before, limit=min(limit, MAX_PAGE))

    def get(self, tenant: str, record_id: str) -> dict[str, Any] | None:
        if self.store is None:
            return None
        self.flush()
        return self.store.get(tenant, record_id)

    def last_calls(self, tenant: str, tools: Sequence[str]) -> dict[str, dict[str, Any]]:
        if self.store is None or not tools:
            return {}
        self.flush()
        return self.store.last_calls(tenant, tools)

    # -- value capture ------------------------------------------------------------------------

    def captures(self, tenant: str) -> list[dict[str, Any]]:
        return [] if self.store is None else self.store.captures(tenant)

    def set_capture(self, tenant: str, tool: str, max_bytes: int | None, by: str) -> dict[str, Any]:
        """Switches value capture of `tool` on with a cap of `max_bytes` per value, or off (None):
        the switch is a record of the tenant's chain; the calls queued after it follow it."""
        if self.store is None:
            raise RuntimeError("the call log is off")
        self.flush()
        record = self.store.set_capture(tenant, tool, max_bytes, by, self._clock())
        switched = {t: dict(tools) for t, tools in self._capture.items()}
        if max_bytes:
            switched.setdefault(tenant, {})[tool] = int(max_bytes)
        else:
            switched.get(tenant, {}).pop(tool, None)
        self._capture = switched
        return record

    def activity(self, tenant: str, tool: str, names: Sequence[str] = ()) -> Any:
        """`tool`'s last 24 hours and 7 days (`application.call_activity.Activity`), of the calls of
        `names` when given (a File Search tool's capabilities); None without a store."""
        if self.store is None:
            return None
        self.flush()
        now = self._clock()
        _, _, day_since, week_since = call_activity.bounds(now)
        raw = self.store.activity(tenant, list(names) or [tool], week_since, day_since, sample=call_activity.SAMPLE, top=call_activity.TOP)
        return call_activity.summarize(tool, raw, now)

    def expire(self, days: int) -> int:
        """Removes the records older than `days` days (recorded in each tenant's chain)."""
        if self.store is None:
            return 0
        if threading.current_thread() is not self._thread:
            self.flush()
        cutoff = datetime.fromtimestamp(self._clock(), timezone.utc) - timedelta(days=days)
        return self.store.expire(iso(cutoff.timestamp()))


# Each entry's definition hash, by the entry (the catalog hands the same entry object to every call
# of a tool until it changes; entries hold dicts, so they are kept by identity, the entry with its
# hash so that the identity is never another's): computed once per version of a tool, not per call.
_DEFINITIONS: dict[int, tuple[ToolEntry, str]] = {}
_DEFINITIONS_KEPT = 10_000


def _definition_sha256(entry: ToolEntry | None) -> str | None:
    if entry is None:
        return None
    cached = _DEFINITIONS.get(id(entry))
    if cached is not None and cached[0] is entry:
        return cached[1]
    digest = _definition_hash(entry)
    if len(_DEFINITIONS) >= _DEFINITIONS_KEPT:
        _DEFINITIONS.clear()
    _DEFINITIONS[id(entry)] = (entry, digest)
    return digest


def _definition_hash(entry: ToolEntry) -> str:
    return canonical_sha256({
        "name": entry.name, "description": entry.description, "kind": entry.call_type, "inputSchema": entry.input_schema,
        "tags": list(entry.tags), "exposeInChat": entry.expose_in_chat, "enabled": entry.enabled,
        "version": getattr(entry, "version", None),
    })


def _trace_id() -> str | None:
    """The trace the call is part of (32 hex digits), when traces are on (docs/observability.md)."""
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def _captured(tenant: str, arguments: Any, result: ExecutionResult | None, cap: int, redactor_for: Any) -> dict[str, Any]:
    """What value capture keeps of a call: its arguments and result, the tenant's secrets replaced
    (`domain.redaction`), each as canonical JSON cut to the tool's cap."""
    cap = int(cap)
    redactor = redactor_for(tenant) if redactor_for is not None else None
    values: list[Any] = [arguments]
    if result is not None:
        values.append(result.output if result.error is None else {"error": {"type": result.error.type, "message": result.error.message}})
    if redactor:
        values = [redactor.value(v) for v in values]
    arguments, cut = calls.captured_text(values[0], cap)
    kept: dict[str, Any] = {"maxBytes": cap, "arguments": arguments, "argumentsCut": cut, "result": None, "resultCut": False}
    if len(values) > 1:
        kept["result"], kept["resultCut"] = calls.captured_text(values[1], cap)
    return kept


def _record(raw: tuple[Any, ...], redactor_for: Any = None, record_id: str | None = None) -> dict[str, Any]:
    """The stored record of a queued call (`CallLog.called`'s tuple), made in the writer: its id
    (`record_id`, 32 hex digits, else drawn here), time and hashes, and its values when the tool's
    are captured."""
    (tenant, at, tool, entry, principal, step, via, arguments, result, outcome, elapsed, trace_id, kind, definition,
     capture) = raw
    if result is None:
        result_sha256 = None
    elif result.error is None:
        result_sha256 = canonical_sha256(result.output)
    else:
        result_sha256 = canonical_sha256({"error": {"type": result.error.type, "message": result.error.message}})
    person = principal.user
    record = {
        "id": record_id or os.urandom(16).hex(), "tenant": tenant, "at": iso(at), "tool": tool,
        "kind": kind or (entry.call_type if entry is not None else None), "version": getattr(entry, "version", None),
        "definition_sha256": canonical_sha256(definition) if definition is not None else _definition_sha256(entry),
        "caller": principal.name, "caller_token": principal.token_id, "caller_person": person.id if person is not None else None,
        "caller_client": principal.client, "plan": step.plan if step is not None else None, "via": via,
        "arguments_sha256": canonical_sha256(arguments), "result_sha256": result_sha256,
        "outcome": outcome, "duration_ms": round(elapsed * 1000.0, 3), "trace_id": trace_id,
        "expired_through": None, "expired_hash": None,
    }
    if capture:  # only when captured: a record without values hashes as it did before capture existed
        record["captured"] = _captured(tenant, arguments, result, capture, redactor_for)
    return record
