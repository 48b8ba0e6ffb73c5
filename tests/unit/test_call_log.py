"""The call log's queue and writer (application/call_log.py) and its chain (domain/calls.py): a call only
queues its record; the writer stores them in batches; past the queue's capacity records are counted, not
kept, a call never waits, and one warning a minute says so; verify names a changed record."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from application.call_log import CallFilter, CallLog
from application.context import MCP, REST, CallContext
from application.principals import Principal
from domain.calls import canonical_sha256, chained, record_hash, verify_calls
from domain.catalog import ToolEntry
from domain.errors import ToolNotCallable
from domain.ports import ExecutionError, ExecutionResult
from infrastructure.call_log_sqlite import SqliteCallRecords

CONTEXT = CallContext(Principal("robot", "caller", "alpha", token_id="t1"), REST)
ENTRY = ToolEntry(name="echo", description="echoes", call_type="CODE", version=3)


class SlowRecords(SqliteCallRecords):
    """A real SQLite store whose writes wait until `go` is set: a database that has stalled."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.go = threading.Event()

    def append(self, records: Any) -> None:
        self.go.wait(10)
        super().append(records)


def test_a_call_is_recorded_with_hashes_and_its_entrys_version(tmp_path: Path) -> None:
    log = CallLog(SqliteCallRecords(tmp_path / "calls.sqlite"))
    log.start()
    log.called("alpha", "echo", ENTRY, CONTEXT, {"b": 1, "a": [1, 2]}, ExecutionResult(output={"x": "y"}), None, time.time(), 0.002)
    log.called("alpha", "echo", ENTRY, CONTEXT, {}, ExecutionResult(error=ExecutionError("timeout", "too slow")), None, time.time(), 0.5)
    log.called("alpha", "ghost", None, CallContext(CONTEXT.principal, MCP), {}, None, ToolNotCallable("ghost", "no such tool"), time.time(), 0.0)
    found, more = log.page("alpha", CallFilter())
    assert not more and [r["outcome"] for r in found] == ["tool-not-found", "timeout", "ok"]
    ok = found[2]
    assert ok["arguments_sha256"] == canonical_sha256({"a": [1, 2], "b": 1}) and ok["result_sha256"] == canonical_sha256({"x": "y"})
    assert ok["version"] == 3 and ok["kind"] == "CODE" and ok["caller"] == "robot" and ok["caller_token"] == "t1"
    assert ok["duration_ms"] == 2.0 and ok["via"] == "rest" and found[0]["via"] == "mcp"
    assert found[0]["kind"] is None and found[0]["result_sha256"] is None
    assert log.written == 3 and log.dropped == 0
    log.close()


def test_past_its_capacity_the_queue_counts_never_blocks_and_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SlowRecords(tmp_path / "calls.sqlite")
    log = CallLog(store, capacity=10, batch=5, flush_seconds=0.01)
    log.start()
    caplog.set_level(logging.WARNING, logger="toolsmith.call_log")
    result = ExecutionResult(output=1)
    started = time.perf_counter()
    for _ in range(1000):
        log.called("alpha", "echo", ENTRY, CONTEXT, {}, result, None, time.time(), 0.001)
    took = time.perf_counter() - started  # wall time: waiting for the stalled store would show here
    # The writer holds one batch it cannot write; the queue holds its capacity; the rest are counted.
    assert log.dropped >= 1000 - 10 - 5 and log.dropped <= 1000 - 10
    assert took < 0.5, f"1000 calls took {took:.3f} s with the store stalled"
    warnings = [r for r in caplog.records if "dropped" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].dropped >= 1  # type: ignore[attr-defined]
    store.go.set()
    assert log.flush(timeout=5)
    kept = 1000 - log.dropped
    assert log.written == kept and store.count() == kept
    assert verify_calls(store.chains()).intact
    log.close()


def test_the_call_path_costs_a_dict_and_a_queue_put(tmp_path: Path) -> None:
    store = SlowRecords(tmp_path / "calls.sqlite")  # stalled: what is measured is the call path alone
    log = CallLog(store, capacity=100_000)
    log.start()
    result = ExecutionResult(output={"a": 1})
    arguments = {"text": "x" * 1000}
    n = 20_000
    # The calling thread's own CPU time: what the call path costs, whatever else the machine runs.
    started = time.thread_time()
    for _ in range(n):
        log.called("alpha", "echo", ENTRY, CONTEXT, arguments, result, None, 0.0, 0.001)
    per_call = (time.thread_time() - started) / n
    assert per_call < 15e-6, f"{per_call * 1e6:.1f} µs a call"
    store.go.set()
    log.close()


def test_a_log_without_a_store_keeps_nothing_and_costs_nothing() -> None:
    log = CallLog(None)
    log.start()
    log.called("alpha", "echo", ENTRY, CONTEXT, {}, ExecutionResult(output=1), None, time.time(), 0.0)
    assert log.page("alpha", CallFilter()) == ([], False) and log.last_calls("alpha", ["echo"]) == {}
    assert log.flush() and log.dropped == 0
    log.close()


def test_close_writes_what_is_queued(tmp_path: Path) -> None:
    store = SqliteCallRecords(tmp_path / "calls.sqlite")
    log = CallLog(store, flush_seconds=60)
    log.start()
    for _ in range(7):
        log.called("alpha", "echo", ENTRY, CONTEXT, {}, ExecutionResult(output=1), None, time.time(), 0.0)
    log.close()
    again = SqliteCallRecords(tmp_path / "calls.sqlite")
    assert again.count() == 7
    again.close()


def _chain(tenant: str, count: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    previous = ""
    for n in range(1, count + 1):
        record = chained({"id": f"{tenant}{n}", "tenant": tenant, "via": "rest", "tool": "echo", "outcome": "ok"}, n, previous)
        previous = record["hash"]
        records.append(record)
    return records


def test_verify_names_the_record_whose_byte_changed_and_the_link_a_rewrite_breaks() -> None:
    records = _chain("alpha", 4) + _chain("beta", 2)
    assert verify_calls(records).intact
    digest = verify_calls(records).digest
    changed = [dict(r) for r in records]
    changed[1]["outcome"] = "ok!"
    report = verify_calls(changed)
    assert [(b.tenant, b.n) for b in report.broken] == [("alpha", 2)] and "does not match its hash" in report.broken[0].reason
    # rewritten with its hash recomputed: the next record's link names it
    changed[1]["hash"] = record_hash(changed[1])
    report = verify_calls(changed)
    assert [(b.tenant, b.n) for b in report.broken] == [("alpha", 3)] and "does not link" in report.broken[0].reason
    # the newest record rewritten whole: only the digest of the heads shows it
    rewritten = [dict(r) for r in records]
    rewritten[3]["outcome"] = "changed"
    rewritten[3]["hash"] = record_hash(rewritten[3])
    assert verify_calls(rewritten).intact and verify_calls(rewritten).digest != digest


def test_the_writer_removes_records_past_the_retention_and_records_the_removal(tmp_path: Path) -> None:
    store = SqliteCallRecords(tmp_path / "calls.sqlite")
    log = CallLog(store, days=30)
    now = time.time()
    for age_days in (45, 31, 1, 0):
        log.called("alpha", "echo", ENTRY, CONTEXT, {}, ExecutionResult(output=1), None, now - age_days * 86_400, 0.0)
    log.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(r["via"] == "expiry" for r in store.chains()):
        time.sleep(0.05)
    left = list(store.chains())
    assert [r["via"] for r in left] == ["rest", "rest", "expiry"]
    assert left[-1]["expired_through"] == 2 and left[-1]["outcome"] == "expired 2"
    assert verify_calls(left).intact
    # the REST list shows calls, not the removals
    assert [r["via"] for r in log.page("alpha", CallFilter())[0]] == ["rest", "rest"]
    log.close()
