"""The built-in authorization server's store in PostgreSQL (docs/oauth.md), when the event store is
PostgreSQL: the same tables and SQL as SQLite's (`api/oauth/store.py`), in the event store's schema,
through its connection pool (`store.recorder.datastore`, not closed here), so that every replica
signs with the same keys and sees every grant, code, refresh token and revocation. The tables are
made as the event store's are, each statement idempotent and tried again while other replicas make
them at the same moment (`infrastructure.postgres_store.created_despite_others`)."""

from __future__ import annotations

import re
import threading
from typing import Any

from psycopg.rows import dict_row
from psycopg.sql import SQL, Identifier

from api.oauth.store import SCHEMA, OAuthStore
from infrastructure.postgres_store import created_despite_others

_TABLES = re.compile(r"\boauth_(keys|clients|grants|codes|refresh_tokens)\b")


class PostgresOAuthStore(OAuthStore):
    P = "%s"
    shared = True

    def __init__(self, datastore: Any) -> None:  # noqa: ANN401 - eventsourcing's PostgresDatastore
        self._datastore = datastore
        self._lock = threading.Lock()  # unused: the pool serializes nothing, PostgreSQL does
        schema = getattr(datastore, "schema", None) or "public"
        self._prefix = SQL("{}.").format(Identifier(schema)).as_string(None)
        statements = [s.strip() for s in SCHEMA.replace(" REAL", " DOUBLE PRECISION").split(";") if s.strip()]
        created_despite_others(lambda: self._create(statements))

    def _create(self, statements: list[str]) -> None:
        with self._datastore.get_connection() as connection, connection.transaction():
            for statement in statements:
                connection.execute(self._qualified(statement))

    def _qualified(self, sql: str) -> str:
        return _TABLES.sub(lambda m: self._prefix + m.group(0), sql).replace("?", "%s")

    def close(self) -> None:
        """The pool is the event store's, closed with it."""

    @property
    def closed(self) -> bool:
        return bool(getattr(getattr(self._datastore, "pool", None), "closed", False))

    def _one(self, sql: str, *args: Any) -> dict[str, Any] | None:
        with self._datastore.get_connection() as connection, connection.transaction():
            return connection.cursor(row_factory=dict_row).execute(self._qualified(sql), args).fetchone()

    def _all(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        with self._datastore.get_connection() as connection, connection.transaction():
            return list(connection.cursor(row_factory=dict_row).execute(self._qualified(sql), args).fetchall())

    def _run(self, sql: str, *args: Any) -> int:
        with self._datastore.get_connection() as connection, connection.transaction():
            return connection.cursor().execute(self._qualified(sql), args).rowcount
