"""The call log's stores (infrastructure/call_log_sqlite.py, call_log_postgres.py; docs/calls.md), each held to
the same contract on a real engine: records chained per tenant, a changed byte or a removed record named by
verify, expiry that leaves a verifiable chain and says so, newest-first pages with filters, each tool's
last call in one query, and on PostgreSQL two replicas appending to one tenant's chain at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from application.call_log import CallFilter
from domain.calls import iso, verify_calls
from infrastructure.call_log_sqlite import SqliteCallRecords

DAY = 86_400.0


@dataclass
class Backend:
    store: Any
    replica: Callable[[], Any]
    execute: Callable[[str, tuple[Any, ...]], None]  # SQL on the engine itself, as someone with its password would
    P: str


def _sqlite(tmp_path: Path) -> Iterator[Backend]:
    import sqlite3

    path = tmp_path / "calls.sqlite"
    store = SqliteCallRecords(path)

    def execute(sql: str, args: tuple[Any, ...]) -> None:
        with sqlite3.connect(path) as connection:
            connection.execute(sql.replace("{records}", "call_records"), args)

    yield Backend(store, lambda: SqliteCallRecords(path), execute, "?")
    store.close()


def _postgres(settings: dict[str, str]) -> Iterator[Backend]:
    from eventsourcing.postgres import PostgresFactory

    from infrastructure.call_log_postgres import PostgresCallRecords

    pools: list[Any] = []

    def replica() -> PostgresCallRecords:
        pools.append(PostgresFactory(dict(settings)).datastore)  # each replica its own pool, as each API process
        return PostgresCallRecords(pools[-1])

    store = replica()

    def execute(sql: str, args: tuple[Any, ...]) -> None:
        with pools[0].transaction(commit=True) as cursor:
            cursor.execute(sql.replace("{records}", store.RECORDS), args)

    yield Backend(store, replica, execute, "%s")
    for pool in pools:
        pool.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield from _sqlite(tmp_path)
    else:
        yield from _postgres(request.getfixturevalue("postgres_store"))


_ids = iter(range(1, 10**9))


def record(tenant: str = "alpha", tool: str = "echo", *, at: float | None = None, outcome: str = "ok", via: str = "rest",
           caller: str = "admin") -> dict[str, Any]:
    return {
        "id": f"r{next(_ids):08d}", "tenant": tenant, "at": iso(at if at is not None else time.time()), "tool": tool, "kind": "CODE",
        "version": 1, "definition_sha256": "d" * 64, "caller": caller, "caller_token": "tok", "caller_person": None,
        "caller_client": None, "plan": None, "via": via, "arguments_sha256": "a" * 64, "result_sha256": "b" * 64,
        "outcome": outcome, "duration_ms": 1.5, "trace_id": None, "expired_through": None, "expired_hash": None,
    }


def test_records_chain_per_tenant_and_verify(backend: Backend) -> None:
    backend.store.append([record("alpha"), record("beta"), record("alpha")])
    backend.store.append([record("alpha")])
    chains = list(backend.store.chains())
    assert [(r["tenant"], r["n"]) for r in chains] == [("alpha", 1), ("alpha", 2), ("alpha", 3), ("beta", 1)]
    assert chains[1]["previous_hash"] == chains[0]["hash"] and chains[0]["previous_hash"] == ""
    report = verify_calls(chains)
    assert report.intact and report.records == 4 and report.tenants == 2 and len(report.digest) == 64
    # a new store on the same data continues each chain where it stood
    again = backend.replica()
    again.append([record("beta")])
    assert [r["n"] for r in again.chains() if r["tenant"] == "beta"] == [1, 2]
    assert verify_calls(again.chains()).intact


def test_a_changed_byte_is_named_and_a_removed_record_is_a_gap(backend: Backend) -> None:
    backend.store.append([record("alpha", tool=f"t{i}") for i in range(5)])
    third = [r for r in backend.store.chains()][2]
    changed = third["id"]
    # one byte of what the record says: its outcome
    backend.execute("UPDATE {records} SET record = replace(record, '\"outcome\":\"ok\"', '\"outcome\":\"ox\"') WHERE id = " + backend.P, (changed,))
    report = verify_calls(backend.store.chains())
    assert [b.id for b in report.broken] == [changed]
    assert "does not match its hash" in str(report.broken[0]) and "#3" in str(report.broken[0])

    backend.execute("DELETE FROM {records} WHERE id = " + backend.P, (changed,))
    report = verify_calls(backend.store.chains())
    assert len(report.broken) == 1 and "record #3 is missing" in str(report.broken[0])


def test_expiry_removes_old_records_and_leaves_a_verifiable_chain(backend: Backend) -> None:
    now = time.time()
    backend.store.append([record("alpha", at=now - 40 * DAY), record("alpha", at=now - 35 * DAY), record("beta", at=now - 31 * DAY),
                          record("alpha", at=now - DAY), record("beta", at=now)])
    digest_before = verify_calls(backend.store.chains()).digest
    assert backend.store.expire(iso(now - 30 * DAY)) == 3
    left = list(backend.store.chains())
    assert [(r["tenant"], r["n"], r["via"]) for r in left] == [("alpha", 3, "rest"), ("alpha", 4, "expiry"), ("beta", 2, "rest"), ("beta", 3, "expiry")]
    expiry = left[1]
    assert expiry["expired_through"] == 2 and expiry["outcome"] == "expired 2"
    report = verify_calls(left)
    assert report.intact and report.digest != digest_before
    # the chain goes on after an expiry, and a record changed after it is still named
    backend.store.append([record("alpha")])
    assert verify_calls(backend.store.chains()).intact
    backend.execute("UPDATE {records} SET record = replace(record, '\"caller\":\"admin\"', '\"caller\":\"admim\"') WHERE tenant = "
                    + backend.P + " AND n = 3", ("alpha",))
    assert [b.n for b in verify_calls(backend.store.chains()).broken] == [3]
    # nothing old enough: nothing removed, nothing recorded
    assert backend.store.expire(iso(now - 60 * DAY)) == 0


def test_pages_are_newest_first_filtered_and_per_tenant(backend: Backend) -> None:
    now = time.time()
    backend.store.append([record("alpha", "echo", at=now - 5), record("alpha", "echo", at=now - 4, outcome="runtime"),
                          record("alpha", "sum", at=now - 3, via="mcp", caller="robot"), record("beta", "echo", at=now - 2),
                          record("alpha", "echo", at=now - 1)])
    page, more = backend.store.page("alpha", CallFilter(), before=None, limit=2)
    assert [r["at"] for r in page] == [iso(now - 1), iso(now - 3)] and more
    rest, more = backend.store.page("alpha", CallFilter(), before=page[-1]["position"], limit=10)
    assert [r["at"] for r in rest] == [iso(now - 4), iso(now - 5)] and not more
    assert len(backend.store.page("alpha", CallFilter(tool="echo"), before=None, limit=10)[0]) == 3
    assert [r["tool"] for r in backend.store.page("alpha", CallFilter(via="mcp"), before=None, limit=10)[0]] == ["sum"]
    assert [r["tool"] for r in backend.store.page("alpha", CallFilter(caller="robot"), before=None, limit=10)[0]] == ["sum"]
    assert len(backend.store.page("alpha", CallFilter(caller="tok"), before=None, limit=10)[0]) == 4  # a token id
    assert [r["outcome"] for r in backend.store.page("alpha", CallFilter(outcome="runtime"), before=None, limit=10)[0]] == ["runtime"]
    assert len(backend.store.page("alpha", CallFilter(since=iso(now - 4), until=iso(now - 1)), before=None, limit=10)[0]) == 2
    assert [r["tenant"] for r in backend.store.page("beta", CallFilter(), before=None, limit=10)[0]] == ["beta"]
    one = page[0]
    assert backend.store.get("alpha", one["id"])["hash"] == one["hash"]
    assert backend.store.get("beta", one["id"]) is None


def test_each_tools_last_call_in_one_query(backend: Backend) -> None:
    now = time.time()
    backend.store.append([record("alpha", "echo", at=now - 3), record("alpha", "sum", at=now - 2, outcome="timeout"),
                          record("alpha", "echo", at=now - 1, outcome="invalid-input"), record("beta", "never", at=now),
                          record("alpha", "sum", at=now, via="test")])
    last = backend.store.last_calls("alpha", ["echo", "sum", "never"])
    assert {name: r["outcome"] for name, r in last.items()} == {"echo": "invalid-input", "sum": "timeout"}


def test_records_restored_as_exported_verify_the_same(backend: Backend, tmp_path: Path) -> None:
    backend.store.append([record("alpha"), record("beta"), record("alpha")])
    exported = list(backend.store.chains())
    copy = SqliteCallRecords(tmp_path / "restored.sqlite")
    assert copy.restore(exported) == 3
    assert verify_calls(copy.chains()).digest == verify_calls(exported).digest
    copy.close()


def test_replicas_appending_at_once_keep_one_chain(backend: Backend) -> None:
    replicas = [backend.replica() for _ in range(3)]
    errors: list[BaseException] = []

    def write(store: Any) -> None:
        try:
            for _ in range(10):
                store.append([record("alpha"), record("alpha")])
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=write, args=(store,)) for store in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    chain = list(backend.store.chains())
    assert [r["n"] for r in chain] == list(range(1, 61))
    assert verify_calls(chain).intact


def test_a_tools_activity_is_counted_by_hour_with_its_callers_and_durations(backend: Backend) -> None:
    from application.call_activity import bounds, summarize

    now = time.time()
    _, _, day_since, week_since = bounds(now)
    slow = record("alpha", "echo", at=now - 2 * DAY, outcome="timeout", caller="robot")
    slow["duration_ms"] = 900.0
    backend.store.append([
        record("alpha", "echo", at=now - 30), record("alpha", "echo", at=now - 20, caller="robot"),
        record("alpha", "echo", at=now - 10, outcome="runtime"), slow,
        record("alpha", "echo", at=now - 9 * DAY),  # before the week
        record("alpha", "echo", at=now - 5, via="test"),  # a Test of a draft: not the tool's
        record("alpha", "sum", at=now - 5), record("beta", "echo", at=now - 5),  # another tool, another tenant
    ])
    raw = backend.store.activity("alpha", ["echo"], week_since, day_since, sample=100, top=5)
    assert sum(c for _, c, _ in raw["hours"]) == 4 and sum(e for _, _, e in raw["hours"]) == 2
    assert raw["callers"] == [("admin", 2), ("robot", 2)] and raw["recent_callers"] == [("admin", 2), ("robot", 1)]
    assert sorted(d for _, d in raw["durations"]) == [1.5, 1.5, 1.5, 900.0]
    both = backend.store.activity("alpha", ["echo", "sum"], week_since, day_since, sample=100, top=5)  # a File Search tool's capabilities
    assert sum(c for _, c, _ in both["hours"]) == 5
    activity = summarize("echo", raw, now)
    assert (activity.day.calls, activity.day.errors, activity.day.p50, activity.day.p95) == (3, 1, 1.5, 1.5)
    assert (activity.week.calls, activity.week.errors, activity.week.p95) == (4, 2, 900.0)
    assert len(activity.day.buckets) == 24 and len(activity.week.buckets) == 7
    assert activity.day.buckets[-1].calls + activity.day.buckets[-2].calls == 3  # this hour, or the last if it just began
    # the newest call's duration only, when the sample is one: the week's percentiles say they are sampled
    one = summarize("echo", backend.store.activity("alpha", ["echo"], week_since, day_since, sample=1, top=1), now, sample=1)
    assert one.week.sampled and one.week.calls == 4 and one.week.p50 == 1.5


def test_a_capture_switch_is_a_record_of_the_chain_and_an_import_restores_it(backend: Backend, tmp_path: Path) -> None:
    backend.store.append([record("alpha")])
    backend.store.set_capture("alpha", "echo", 128, "admin", time.time())
    backend.store.set_capture("alpha", "sum", 64, "admin", time.time())
    backend.store.set_capture("alpha", "sum", None, "admin", time.time())
    assert [(c["tool"], c["maxBytes"]) for c in backend.store.captures("alpha")] == [("echo", 128)]
    assert backend.store.captures("beta") == []
    chain = list(backend.store.chains("alpha"))
    assert [r["outcome"] for r in chain[1:]] == ["capture on (128 bytes)", "capture on (64 bytes)", "capture off"]
    assert verify_calls(chain).intact
    # switches are the log's bookkeeping: no call in a page, nor a tool's last call
    assert len(backend.store.page("alpha", CallFilter(), before=None, limit=10)[0]) == 1
    assert "sum" not in backend.store.last_calls("alpha", ["echo", "sum"])
    copy = SqliteCallRecords(tmp_path / "restored.sqlite")
    copy.restore(list(backend.store.chains()))
    assert [(c["tool"], c["maxBytes"]) for c in copy.captures()] == [("echo", 128)]
    assert verify_calls(copy.chains()).digest == verify_calls(backend.store.chains()).digest
    copy.close()
