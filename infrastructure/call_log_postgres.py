"""The call log's records in PostgreSQL (docs/calls.md), beside the event store, when the event store is PostgreSQL.

The same tables and SQL as SQLite's (`infrastructure/call_log_sqlite.py`), in the event store's
schema, through its connection pool (`store.recorder.datastore`, not closed here). Several replicas
append to one tenant's chain: each batch takes the tenant's head row `FOR UPDATE`, so the chain
stays one line whichever replica writes next. The tables are made as the event store's are, each
statement idempotent and tried again while other replicas make them at the same moment
(`infrastructure.postgres_store.created_despite_others`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier

from domain.calls import GENESIS
from infrastructure.call_log_sqlite import SqlCallRecords
from infrastructure.postgres_store import created_despite_others

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {records} (position BIGSERIAL PRIMARY KEY, id text NOT NULL UNIQUE, tenant text NOT NULL, "
    "n bigint NOT NULL, at text NOT NULL, tool text, caller text, caller_token text, outcome text NOT NULL, "
    "via text NOT NULL, record text NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS toolsmith_call_records_chain ON {records} (tenant, n)",
    "CREATE INDEX IF NOT EXISTS toolsmith_call_records_tool ON {records} (tenant, tool, position)",
    "CREATE INDEX IF NOT EXISTS toolsmith_call_records_at ON {records} (at)",
    "DROP INDEX IF EXISTS toolsmith_call_records_tool_at",
    "CREATE INDEX IF NOT EXISTS toolsmith_call_records_activity ON {records} (tenant, tool, at, via, outcome, caller)",
    "CREATE TABLE IF NOT EXISTS {heads} (tenant text PRIMARY KEY, n bigint NOT NULL, hash text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {captures} (tenant text NOT NULL, tool text NOT NULL, max_bytes integer NOT NULL, "
    "switched_by text NOT NULL, at text NOT NULL, PRIMARY KEY (tenant, tool))",
)


class PostgresCallRecords(SqlCallRecords):
    P = "%s"
    DURATION = "CAST(CAST(record AS json) ->> 'duration_ms' AS double precision)"

    def __init__(self, datastore: Any) -> None:
        self._datastore = datastore
        schema = getattr(datastore, "schema", None) or "public"
        self.RECORDS = SQL("{}.{}").format(Identifier(schema), Identifier("toolsmith_call_records")).as_string(None)
        self.HEADS = SQL("{}.{}").format(Identifier(schema), Identifier("toolsmith_call_heads")).as_string(None)
        self.CAPTURES = SQL("{}.{}").format(Identifier(schema), Identifier("toolsmith_call_capture")).as_string(None)
        created_despite_others(self._create)

    def _create(self) -> None:
        with self._transaction(write=True) as cursor:
            for statement in _SCHEMA:
                cursor.execute(statement.format(records=self.RECORDS, heads=self.HEADS, captures=self.CAPTURES))

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        with self._datastore.get_connection() as connection, connection.transaction(force_rollback=not write):
            yield connection.cursor(row_factory=tuple_row)

    def _head_for_update(self, cursor: Any, tenant: str) -> tuple[int, str]:
        # The row exists before it is locked: two replicas' first batches of a tenant meet on it.
        cursor.execute(f"INSERT INTO {self.HEADS} (tenant, n, hash) VALUES (%s, 0, %s) ON CONFLICT (tenant) DO NOTHING",
                       (tenant, GENESIS))
        cursor.execute(f"SELECT n, hash FROM {self.HEADS} WHERE tenant = %s FOR UPDATE", (tenant,))
        row = cursor.fetchone()
        return int(row[0]), str(row[1])

    def close(self) -> None:
        """The pool is the event store's, closed with it."""
