"""Benchmark: the call log (docs/calls.md, issue 35): what recording a call costs the call, how fast the
writer stores records at its ceiling, how long verify takes per 100,000 records, and tool-call
throughput with the log on against off.

- **Call path**: the CPU time of the calling thread per `CallLog.called` (a dict built and queued),
  with a 1 KB argument and a small result, against a log that keeps nothing (`CallLog(None)`, one
  check); the writer is kept from running meanwhile, so only the call path is measured.
- **Write rate at the ceiling**: records queued as fast as the call path can, then written by the
  background thread in batches (one transaction each) to `calls.sqlite` on a temporary data dir
  (and to PostgreSQL when `POSTGRES_HOST` names a server): records a second, queue to disk.
- **Verify**: `verify_calls` over the stored chains, scaled to 100,000 records.
- **A tool's activity**: `CallLog.activity` (the console's charts of one tool: 24 hours and 7 days,
  four bounded queries) on a tool with 100,000 calls (20,000 in quick runs) spread over the week,
  among another tool's as many, in SQLite.
- **Throughput**: `POST /api/v1/tools/{name}/call` of a published code module (FastAPI's test client
  on `bootstrap`, SQLite, the embedded sandbox), rounds alternating the log on and off; the goal is
  ≥ 0.95 of the calls a second without it.

Run: `python -m bench.call_log [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import Progress, Row, bench_settings, median, quartiles, standalone

TITLE = "Benchmark — the call log: its cost on the call path, its write rate, verify, and call throughput with it on; medians"


def _context() -> Any:
    from application.context import REST, CallContext
    from application.principals import Principal

    return CallContext(Principal("bench", "caller", "bench", token_id="t1"), REST)


def call_path(n: int, progress: Progress) -> tuple[float, float]:
    """Seconds of CPU a `called` costs, with the log on and with it off."""
    from application.call_log import CallLog
    from domain.catalog import ToolEntry
    from domain.ports import ExecutionResult
    from infrastructure.call_log_sqlite import SqliteCallRecords

    context, entry = _context(), ToolEntry(name="echo", description="echoes", call_type="CODE", version=1)
    arguments, result = {"text": "x" * 1024}, ExecutionResult(output={"echo": "x" * 64})
    on = CallLog(SqliteCallRecords(":memory:"), capacity=n + 1, batch=n + 1)  # not started: the call path alone
    off = CallLog(None)
    figures: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(5):
        for name, log in (("on", on), ("off", off)):
            started = time.thread_time()
            for _ in range(n // 5):
                log.called("bench", "echo", entry, context, arguments, result, None, 0.0, 0.001)
            figures[name].append((time.thread_time() - started) / (n // 5))
    progress(f"call path: {median(figures['on']) * 1e6:.2f} µs on, {median(figures['off']) * 1e6:.2f} µs off")
    on.store.close()  # type: ignore[union-attr]
    return median(figures["on"]), median(figures["off"])


def write_rate(store: Any, n: int, progress: Progress, label: str) -> float:
    """Records a second the writer stores when the queue is full of them."""
    from application.call_log import CallLog
    from domain.catalog import ToolEntry
    from domain.ports import ExecutionResult

    context, result = _context(), ExecutionResult(output={"echo": "x" * 64})
    entries = [ToolEntry(name=f"tool{i}", description="a tool", call_type="CODE", version=1) for i in range(50)]
    log = CallLog(store, capacity=n + 1)
    for i in range(n):
        entry = entries[i % 50]
        log.called(f"tenant{i % 3}", entry.name, entry, context, {"i": i, "text": "x" * 200}, result, None, time.time(), 0.001)
    started = time.perf_counter()
    log.start()
    assert log.flush(timeout=600)
    rate = n / (time.perf_counter() - started)
    progress(f"{label}: {rate:,.0f} records/s ({n:,} records)")
    log.stop()
    return rate


def verify_time(store: Any, progress: Progress) -> float:
    from domain.calls import verify_calls

    started = time.perf_counter()
    report = verify_calls(store.chains())
    took = time.perf_counter() - started
    assert report.intact, report.broken[:3]
    per = took / report.records * 100_000
    progress(f"verify: {report.records:,} records in {took:.2f} s ({per:.2f} s per 100,000)")
    return per


def activity_time(n: int, progress: Progress) -> float:
    """Seconds one tool's activity takes to read, the tool having `n` calls over the last 7 days."""
    from application.call_log import CallLog
    from domain.calls import iso
    from infrastructure.call_log_sqlite import SqliteCallRecords

    now = time.time()
    with tempfile.TemporaryDirectory() as data:
        store = SqliteCallRecords(Path(data) / "calls.sqlite")
        from datetime import datetime

        from application.call_activity import bounds

        since = datetime.fromisoformat(bounds(now)[3].replace("Z", "+00:00")).timestamp()
        step = (now - since - 1) / n  # the week's window: from midnight (UTC) six days ago to now
        for start in range(0, n, 5_000):
            store.append([{
                "id": os.urandom(16).hex(), "tenant": "bench", "at": iso(now - (i * step)), "tool": tool, "kind": "CODE", "version": 1,
                "definition_sha256": "d" * 64, "caller": f"caller{i % 40}", "caller_token": None, "caller_person": None,
                "caller_client": None, "plan": None, "via": "rest", "arguments_sha256": "a" * 64, "result_sha256": "b" * 64,
                "outcome": "ok" if i % 20 else "runtime", "duration_ms": float(i % 97), "trace_id": None,
                "expired_through": None, "expired_hash": None,
            } for i in range(start, min(start + 5_000, n)) for tool in ("busy", "other")])
        log = CallLog(store, clock=lambda: now)
        times = []
        for _ in range(7):
            started = time.perf_counter()
            activity = log.activity("bench", "busy")
            times.append(time.perf_counter() - started)
        assert activity.week.calls == n, activity.week.calls
        store.close()
    took = median(times)
    progress(f"activity: {took * 1000:.1f} ms for a tool with {n:,} calls in 7 days")
    return took


def throughput(calls: int, rounds: int, progress: Progress) -> tuple[list[float], list[float]]:
    """Calls a second with the log on and off, each round of `calls` calls."""
    from fastapi.testclient import TestClient

    from application.call_log import CallLog
    from entrypoints.compose import bootstrap
    from entrypoints.web import create_app

    with tempfile.TemporaryDirectory() as data:
        # No request rate: what is measured is the calls, not the limiter's refusals.
        settings = bench_settings(Path(data) / "data").model_copy(update={"rate_per_second": 0, "tenant_rate_per_second": 0})
        services = bootstrap(settings)
        app = create_app(services)
        on_log = services.toolbox.call_log
        off_log = CallLog(None)
        figures: dict[str, list[float]] = {"on": [], "off": []}
        with TestClient(app, headers={"Authorization": "Bearer x"}) as client:
            made = client.post("/api/v1/admin/code-modules", json={
                "id": "echo", "description": "echoes", "draftContent": "exports.run = function (i) { return i; };",
                "tool": {"inputParameters": [{"name": "text", "type": "string"}], "exposeInChat": True}})
            assert made.status_code == 201, made.text
            assert client.post("/api/v1/admin/code-modules/echo/publish").status_code == 200
            for _ in range(50):  # warm: the catalog, the sandbox's workers
                client.post("/api/v1/tools/echo/call", json={"text": "warm"})
            for k in range(rounds):
                for name in (("on", "off") if k % 2 == 0 else ("off", "on")):
                    services.toolbox.call_log = on_log if name == "on" else off_log
                    started = time.perf_counter()
                    for _ in range(calls):
                        answer = client.post("/api/v1/tools/echo/call", json={"text": "hello"})
                    figures[name].append(calls / (time.perf_counter() - started))
                    assert answer.status_code == 200, answer.text
                progress(f"throughput round {k + 1}: {figures['on'][-1]:,.0f} on, {figures['off'][-1]:,.0f} off calls/s")
            services.toolbox.call_log = on_log
    return figures["on"], figures["off"]


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    parser = argparse.ArgumentParser(prog="python -m bench.call_log")
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    progress = Progress("call_log", quiet=quiet)
    n_path = 50_000 if args.quick else 200_000
    n_write = 20_000 if args.quick else 100_000
    calls, rounds = (100, 4) if args.quick else (300, 8)

    on, off = call_path(n_path, progress)
    rows = [Row("call path: CPU per recorded call (1 KB arguments)", f"{on * 1e6:.2f} µs", f"{off * 1e6:.2f} µs log off",
                None, "dict + queue put")]

    from infrastructure.call_log_sqlite import SqliteCallRecords

    with tempfile.TemporaryDirectory() as data:
        store = SqliteCallRecords(Path(data) / "calls.sqlite")
        rate = write_rate(store, n_write, progress, "SQLite")
        rows.append(Row("write rate at the ceiling, SQLite (WAL, batches of 1,000)", f"{rate:,.0f} records/s", ""))
        per = verify_time(store, progress)
        rows.append(Row("verify per 100,000 records (SQLite)", f"{per:.2f} s", ""))
        store.close()
    if os.environ.get("POSTGRES_HOST"):
        from eventsourcing.postgres import PostgresFactory

        from infrastructure.call_log_postgres import PostgresCallRecords

        import psycopg
        from psycopg import sql

        # A schema of the run's own, dropped afterwards: the server's other data is left alone.
        env = {k: v for k, v in os.environ.items() if k.startswith("POSTGRES_")}
        schema = f"bench_calls_{os.urandom(6).hex()}"
        admin = psycopg.connect(host=env.get("POSTGRES_HOST"), port=env.get("POSTGRES_PORT", "5432"), user=env.get("POSTGRES_USER"),
                                password=env.get("POSTGRES_PASSWORD"), dbname=env.get("POSTGRES_DBNAME"), autocommit=True)
        admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        try:
            datastore = PostgresFactory({"PERSISTENCE_MODULE": "eventsourcing.postgres", **env, "POSTGRES_SCHEMA": schema}).datastore
            rate = write_rate(PostgresCallRecords(datastore), n_write, progress, "PostgreSQL")
            rows.append(Row("write rate at the ceiling, PostgreSQL", f"{rate:,.0f} records/s", ""))
            datastore.close()
        finally:
            admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
            admin.close()

    n_activity = 20_000 if args.quick else 100_000
    took = activity_time(n_activity, progress)
    rows.append(Row(f"a tool's activity (24 h and 7 days), {n_activity:,} calls in the week, SQLite", f"{took * 1000:.1f} ms", "",
                    None, "4 bounded queries"))

    with_log, without = throughput(calls, rounds, progress)
    ratio = median(with_log) / median(without)
    low, high = quartiles([a / b for a, b in zip(with_log, without)])
    rows.append(Row("REST tool calls a second, call log on / off", f"{median(with_log):,.0f} /s", f"{median(without):,.0f} /s",
                    ratio, "≥ 0.95", ratio >= 0.95, f"{low:.2f}–{high:.2f}"))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return rows, {"load": load}


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
