"""The call log's records in SQLite (docs/calls.md): `calls.sqlite` in the data dir, in WAL mode.

Each record is stored whole, as the canonical JSON its hash covers (`record`), beside the columns
the reads filter and sort on (tenant, tool, caller, outcome, via, time) and its `position`, the
order it was stored in (the REST API's cursor). Reads show the JSON, never the columns, so a record
shows what verify checks. `call_heads` keeps each tenant's chain head (its last `n` and hash), read
and moved in the transaction that appends a batch: the chain continues across restarts.

`SqlCallRecords` is the SQL both engines share (`infrastructure/call_log_postgres.py` is the
PostgreSQL one); each supplies its connection, its placeholders and its tables' definitions.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from domain.calls import CAPTURE, EXPIRY, GENESIS, capture_record, chained, expiry_record

FILE_MODE = 0o600
# The most rows one INSERT takes (10 values each: within SQLite's 32,766 and PostgreSQL's 65,535 parameters).
ROWS_A_STATEMENT = 256
_FILTERS = ("tool", "outcome", "via")


def dumps(record: dict[str, Any]) -> str:
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS).decode()


class SqlCallRecords:
    """The SQL of a call-record store; `_transaction` yields a cursor, `P` is the placeholder."""

    P = "?"
    RECORDS = "call_records"
    HEADS = "call_heads"
    CAPTURES = "call_capture"

    # -- what an engine supplies ------------------------------------------------------------

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:  # pragma: no cover - each engine's own
        raise NotImplementedError
        yield

    def _head_for_update(self, cursor: Any, tenant: str) -> tuple[int, str]:
        cursor.execute(f"SELECT n, hash FROM {self.HEADS} WHERE tenant = {self.P}", (tenant,))
        row = cursor.fetchone()
        return (int(row[0]), str(row[1])) if row else (0, GENESIS)

    # -- writes ----------------------------------------------------------------------------

    def append(self, records: Sequence[dict[str, Any]]) -> None:
        if not records:
            return
        with self._transaction(write=True) as cursor:
            self._append(cursor, records)

    def _append(self, cursor: Any, records: Sequence[dict[str, Any]], *, as_stored: bool = False) -> None:
        heads: dict[str, tuple[int, str]] = {}
        rows = []
        for record in records:
            tenant = record["tenant"]
            if tenant not in heads:
                heads[tenant] = self._head_for_update(cursor, tenant)
            n, previous = heads[tenant]
            if not as_stored:
                chained(record, n + 1, previous)
            heads[tenant] = (record["n"], record["hash"])
            rows.append((record["id"], tenant, record["n"], record["at"], record["tool"], record["caller"],
                         record["caller_token"], record["outcome"], record["via"], dumps(record)))
        p = self.P
        # Many rows a statement (sizes a power of two, so that few statements are ever prepared):
        # the engine inserts them in one step, where `executemany` would step, and let go of the
        # interpreter's lock and take it back, once a row.
        start = 0
        while start < len(rows):
            size = min(ROWS_A_STATEMENT, 1 << ((len(rows) - start).bit_length() - 1))
            chunk = rows[start:start + size]
            start += size
            cursor.execute(self._insert(size), [value for row in chunk for value in row])
        cursor.executemany(
            f"INSERT INTO {self.HEADS} (tenant, n, hash) VALUES ({p}, {p}, {p}) "
            f"ON CONFLICT (tenant) DO UPDATE SET n = excluded.n, hash = excluded.hash",
            [(tenant, n, digest) for tenant, (n, digest) in heads.items()])

    def _insert(self, rows: int) -> str:
        inserts: dict[int, str] = self.__dict__.setdefault("_inserts", {})  # each size's statement, made once
        sql = inserts.get(rows)
        if sql is None:
            values = "(" + ", ".join([self.P] * 10) + ")"
            sql = (f"INSERT INTO {self.RECORDS} (id, tenant, n, at, tool, caller, caller_token, outcome, via, record) "
                   f"VALUES {', '.join([values] * rows)}")
            inserts[rows] = sql
        return sql

    def restore(self, records: Iterable[dict[str, Any]]) -> int:
        """Records as exported, their places and hashes kept (an audit import into an empty store)."""
        batch = [dict(record) for record in records]
        batch.sort(key=lambda r: (r["tenant"], r["n"]))
        with self._transaction(write=True) as cursor:
            self._append(cursor, batch, as_stored=True)
            # the switches of value capture as their records left them
            for record in batch:
                if record.get("via") == CAPTURE and record.get("tool"):
                    self._switch(cursor, record["tenant"], record["tool"], record.get("capture_max_bytes"), record["caller"], record["at"])
        return len(batch)

    # -- value capture ---------------------------------------------------------------------

    def set_capture(self, tenant: str, tool: str, max_bytes: int | None, by: str, at: float) -> dict[str, Any]:
        """Switches value capture of `tool` on (with its cap) or off (None), and records the switch in
        the tenant's chain, in one transaction; answers the switch's record."""
        record = capture_record(tenant, at, tool, by, max_bytes)
        with self._transaction(write=True) as cursor:
            self._head_for_update(cursor, tenant)  # the chain's lock first, as a batch takes it
            self._append(cursor, [record])
            self._switch(cursor, tenant, tool, max_bytes, by, record["at"])
        return record

    def _switch(self, cursor: Any, tenant: str, tool: str, max_bytes: int | None, by: str, at: str) -> None:
        p = self.P
        if max_bytes:
            cursor.execute(f"INSERT INTO {self.CAPTURES} (tenant, tool, max_bytes, switched_by, at) VALUES ({p}, {p}, {p}, {p}, {p}) "
                           f"ON CONFLICT (tenant, tool) DO UPDATE SET max_bytes = excluded.max_bytes, switched_by = excluded.switched_by, at = excluded.at",
                           (tenant, tool, int(max_bytes), by, at))
        else:
            cursor.execute(f"DELETE FROM {self.CAPTURES} WHERE tenant = {p} AND tool = {p}", (tenant, tool))

    def captures(self, tenant: str | None = None) -> list[dict[str, Any]]:
        """The tools whose values are captured (of `tenant`, else of every tenant), with their caps."""
        p = self.P
        where, args = (f"WHERE tenant = {p}", [tenant]) if tenant is not None else ("", [])
        with self._transaction(write=False) as cursor:
            cursor.execute(f"SELECT tenant, tool, max_bytes, switched_by, at FROM {self.CAPTURES} {where} ORDER BY tenant, tool", args)
            rows = cursor.fetchall()
        return [{"tenant": t, "tool": tool, "maxBytes": int(m), "by": by, "at": at} for t, tool, m, by, at in rows]

    def expire(self, before: str) -> int:
        """Removes the records older than `before` of every tenant; each tenant's removal is a new
        record of its chain naming the last record removed and its hash (`domain/calls.py`)."""
        p = self.P
        removed = 0
        with self._transaction(write=True) as cursor:
            # Up to the newest record older than `before` (a chain is in time order: `n` follows `at`).
            cursor.execute(f"SELECT tenant, MAX(n) FROM {self.RECORDS} WHERE at < {p} AND via <> {p} GROUP BY tenant",
                           (before, "expiry"))
            for tenant, through in cursor.fetchall():
                self._head_for_update(cursor, tenant)  # the chain's lock first, as a batch takes it
                cursor.execute(f"SELECT record FROM {self.RECORDS} WHERE tenant = {p} AND n = {p}", (tenant, through))
                last = orjson.loads(cursor.fetchone()[0])
                cursor.execute(f"SELECT COUNT(*) FROM {self.RECORDS} WHERE tenant = {p} AND n <= {p}", (tenant, through))
                count = cursor.fetchone()[0]
                cursor.execute(f"DELETE FROM {self.RECORDS} WHERE tenant = {p} AND n <= {p}", (tenant, through))
                self._append(cursor, [expiry_record(tenant, time.time(), int(through), last["hash"], int(count))])
                removed += int(count)
        return removed

    # -- reads -----------------------------------------------------------------------------

    def page(self, tenant: str, where: Any, *, before: int | None, limit: int) -> tuple[list[dict[str, Any]], bool]:
        p = self.P
        clauses, args = [f"tenant = {p}", f"via <> {p}", f"via <> {p}"], [tenant, EXPIRY, CAPTURE]
        for name in _FILTERS:
            value = getattr(where, name)
            if value is not None:
                clauses.append(f"{name} = {p}")
                args.append(value)
        if where.caller is not None:
            clauses.append(f"(caller = {p} OR caller_token = {p})")
            args += [where.caller, where.caller]
        if where.since is not None:
            clauses.append(f"at >= {p}")
            args.append(where.since)
        if where.until is not None:
            clauses.append(f"at < {p}")
            args.append(where.until)
        if before is not None:
            clauses.append(f"position < {p}")
            args.append(before)
        sql = (f"SELECT position, record FROM {self.RECORDS} WHERE {' AND '.join(clauses)} "
               f"ORDER BY position DESC LIMIT {int(limit) + 1}")
        with self._transaction(write=False) as cursor:
            cursor.execute(sql, args)
            rows = cursor.fetchall()
        found = [{**orjson.loads(record), "position": int(position)} for position, record in rows[:limit]]
        return found, len(rows) > limit

    def get(self, tenant: str, record_id: str) -> dict[str, Any] | None:
        p = self.P
        with self._transaction(write=False) as cursor:
            cursor.execute(f"SELECT position, record FROM {self.RECORDS} WHERE tenant = {p} AND id = {p}", (tenant, record_id))
            row = cursor.fetchone()
        return {**orjson.loads(row[1]), "position": int(row[0])} if row else None

    def last_calls(self, tenant: str, tools: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The newest call of each tool (a module's Test runs a draft, not the tool: not counted)."""
        p = self.P
        names = list(dict.fromkeys(tools))
        marks = ", ".join([p] * len(names))
        sql = (f"SELECT record FROM {self.RECORDS} WHERE position IN (SELECT MAX(position) FROM {self.RECORDS} "
               f"WHERE tenant = {p} AND tool IN ({marks}) AND via <> {p} AND via <> {p} GROUP BY tool)")
        with self._transaction(write=False) as cursor:
            cursor.execute(sql, [tenant, *names, "test", CAPTURE])
            rows = cursor.fetchall()
        found = [orjson.loads(row[0]) for row in rows]
        return {record["tool"]: record for record in found}

    # A record's duration, read from its JSON (each engine's own function).
    DURATION = "CAST(json_extract(record, '$.duration_ms') AS REAL)"

    def activity(self, tenant: str, tools: Sequence[str], since: str, recent: str, *, sample: int, top: int) -> dict[str, Any]:
        """The calls of `tools` (one tool, or a File Search tool's capabilities) at or after `since`
        (a module's Tests and the log's bookkeeping left out), in bounded queries on the index of
        (tenant, tool, at, via, outcome, caller), which the counts read alone: each hour's calls
        and errors (one row an hour at most), the `top` callers since `since` and since `recent`,
        and the durations of the newest `sample` calls with their hour (for the percentiles)."""
        p = self.P
        names = list(dict.fromkeys(tools)) or [""]
        where = f"tenant = {p} AND tool IN ({', '.join([p] * len(names))}) AND at >= {p} AND via <> {p} AND via <> {p} AND via <> {p}"
        args = [tenant, *names, since, "test", EXPIRY, CAPTURE]
        found: dict[str, Any] = {}
        with self._transaction(write=False) as cursor:
            cursor.execute(f"SELECT substr(at, 1, 13), COUNT(*), SUM(CASE WHEN outcome <> {p} THEN 1 ELSE 0 END) "
                           f"FROM {self.RECORDS} WHERE {where} GROUP BY substr(at, 1, 13)", ["ok", *args])
            found["hours"] = [(str(h), int(c), int(e or 0)) for h, c, e in cursor.fetchall()]
            for key, start in (("callers", since), ("recent_callers", recent)):
                cursor.execute(f"SELECT caller, COUNT(*) FROM {self.RECORDS} WHERE {where} "
                               f"GROUP BY caller ORDER BY COUNT(*) DESC, caller LIMIT {int(top)}", [tenant, *names, start, "test", EXPIRY, CAPTURE])
                found[key] = [(str(c or ""), int(n)) for c, n in cursor.fetchall()]
            cursor.execute(f"SELECT substr(at, 1, 13), {self.DURATION} FROM {self.RECORDS} WHERE {where} "
                           f"ORDER BY at DESC LIMIT {int(sample)}", args)
            found["durations"] = [(str(h), float(d or 0.0)) for h, d in cursor.fetchall()]
        return found

    def chains(self, tenant: str | None = None) -> Iterator[dict[str, Any]]:
        """Every record (of `tenant`), by tenant then `n`: read a thousand at a time, each in a
        transaction of its own, so that a slow reader (a download) holds no lock between them."""
        p = self.P
        last_tenant, last_n = "", 0
        while True:
            if tenant is None:
                where, args = f"(tenant > {p} OR (tenant = {p} AND n > {p}))", [last_tenant, last_tenant, last_n]
            else:
                where, args = f"tenant = {p} AND n > {p}", [tenant, last_n]
            with self._transaction(write=False) as cursor:
                cursor.execute(f"SELECT tenant, n, record FROM {self.RECORDS} WHERE {where} ORDER BY tenant, n LIMIT 1000", args)
                rows = cursor.fetchall()
            if not rows:
                return
            for _, _, record in rows:
                yield orjson.loads(record)
            last_tenant, last_n = rows[-1][0], int(rows[-1][1])

    def count(self) -> int:
        with self._transaction(write=False) as cursor:
            cursor.execute(f"SELECT COUNT(*) FROM {self.RECORDS}")
            return int(cursor.fetchone()[0])


_SCHEMA = """
CREATE TABLE IF NOT EXISTS call_records (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    n INTEGER NOT NULL,
    at TEXT NOT NULL,
    tool TEXT,
    caller TEXT,
    caller_token TEXT,
    outcome TEXT NOT NULL,
    via TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS call_records_chain ON call_records (tenant, n);
CREATE INDEX IF NOT EXISTS call_records_tool ON call_records (tenant, tool, position);
CREATE INDEX IF NOT EXISTS call_records_at ON call_records (at);
DROP INDEX IF EXISTS call_records_tool_at;
CREATE INDEX IF NOT EXISTS call_records_activity ON call_records (tenant, tool, at, via, outcome, caller);
CREATE TABLE IF NOT EXISTS call_heads (tenant TEXT PRIMARY KEY, n INTEGER NOT NULL, hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS call_capture (tenant TEXT NOT NULL, tool TEXT NOT NULL, max_bytes INTEGER NOT NULL, switched_by TEXT NOT NULL,
    at TEXT NOT NULL, PRIMARY KEY (tenant, tool));
"""


class SqliteCallRecords(SqlCallRecords):
    """The records in the SQLite file `path` (made 0600): one connection writes (the log's writer
    thread), another reads; each behind its own lock."""

    def __init__(self, path: Path | str) -> None:
        path = str(path)
        if path != ":memory:" and not os.path.exists(path):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
            except FileExistsError:
                pass
        self._writer = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        self._writer.execute("PRAGMA journal_mode=WAL")
        self._writer.execute("PRAGMA synchronous=NORMAL")
        self._writer.executescript(_SCHEMA)
        self._reader = self._writer if path == ":memory:" else sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        self._write_lock = threading.Lock()
        self._read_lock = self._write_lock if self._reader is self._writer else threading.Lock()

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        connection, lock = (self._writer, self._write_lock) if write else (self._reader, self._read_lock)
        with lock:
            cursor = connection.cursor()
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield cursor
            except BaseException:
                connection.rollback()
                raise
            else:
                connection.commit()
            finally:
                cursor.close()

    def close(self) -> None:
        for connection in {id(c): c for c in (self._reader, self._writer)}.values():
            connection.close()
