"""Each event store's identity: a random id recorded once, in the store itself (issue 12, 10).

It lives with the read side, which is who needs it: a read model kept outside the store
(OpenSearch) records the identity of the store it follows next to its tracking position, so that a
server started on another store (a fresh data dir, a staging database, a store restored with
`toolsmith audit import`, whose positions start again from 1) can tell that the documents are not
its own, instead of skipping its events up to the other store's position and serving the other
store's modules.

The id lives in a table of its own beside the events (`toolsmith_store`, in the same SQLite file
or PostgreSQL schema), created on the first open. It is not an event: `audit export` never
carries it, and `audit import` gives the restored store a new one (a restored store is a new
store, whose positions mean something else).
"""

from __future__ import annotations

import uuid
from typing import Any

from eventsourcing.application import Application
from eventsourcing.persistence import PersistenceError

TABLE = "toolsmith_store"
_KEY = "identity"
_ATTEMPTS = 3


def store_identity(app: Application) -> str:
    """The store's id, recorded now if it has none yet."""
    return _record(app, uuid.uuid4().hex, replace=False)


def renew_store_identity(app: Application) -> str:
    """Gives the store a new id (after a restore: its positions are no longer the old store's)."""
    return _record(app, uuid.uuid4().hex, replace=True)


def _record(app: Application, candidate: str, *, replace: bool) -> str:
    datastore = getattr(app.recorder, "datastore", None)
    if datastore is None:
        # A store in memory (eventsourcing's POPO) lives as long as this process: so does its id.
        if replace or not hasattr(app.recorder, "_toolsmith_identity"):
            app.recorder._toolsmith_identity = candidate  # type: ignore[attr-defined]
        return app.recorder._toolsmith_identity  # type: ignore[attr-defined]
    postgres = type(datastore).__module__.startswith("eventsourcing.postgres")
    if not replace:
        # Read first: once recorded, the id needs no write (nor the right to create a table).
        try:
            found = _postgres_read(datastore) if postgres else _sqlite_read(datastore)
        except PersistenceError:
            found = None  # no table yet
        if found is not None:
            return found
    write = _postgres if postgres else _sqlite
    for attempt in range(_ATTEMPTS):
        try:
            return write(datastore, candidate, replace)
        except PersistenceError:
            # Two processes opening a new store at once may race on creating the table.
            if attempt == _ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def _sqlite_read(datastore: Any) -> str | None:
    with datastore.transaction(commit=False) as cursor:
        cursor.execute(f"SELECT value FROM {TABLE} WHERE name = ?", (_KEY,))
        row = cursor.fetchone()
        return row[0] if row is not None else None


def _postgres_read(datastore: Any) -> str | None:
    from psycopg.sql import SQL, Identifier

    with datastore.transaction(commit=False) as cursor:
        cursor.execute(SQL("SELECT value FROM {}.{} WHERE name = %s").format(Identifier(datastore.schema), Identifier(TABLE)),
                       (_KEY,))
        row = cursor.fetchone()
        return row["value"] if row is not None else None


def _sqlite(datastore: Any, candidate: str, replace: bool) -> str:
    with datastore.transaction(commit=True) as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        cursor.execute(f"{verb} INTO {TABLE} (name, value) VALUES (?, ?)", (_KEY, candidate))
        cursor.execute(f"SELECT value FROM {TABLE} WHERE name = ?", (_KEY,))
        return cursor.fetchone()[0]


def _postgres(datastore: Any, candidate: str, replace: bool) -> str:
    from psycopg.sql import SQL, Identifier

    table = SQL("{}.{}").format(Identifier(datastore.schema), Identifier(TABLE))
    conflict = "DO UPDATE SET value = EXCLUDED.value" if replace else "DO NOTHING"
    with datastore.transaction(commit=True) as cursor:
        cursor.execute(SQL("CREATE TABLE IF NOT EXISTS {} (name text PRIMARY KEY, value text NOT NULL)").format(table))
        cursor.execute(SQL("INSERT INTO {} (name, value) VALUES (%s, %s) ON CONFLICT (name) " + conflict).format(table),
                       (_KEY, candidate))
        cursor.execute(SQL("SELECT value FROM {} WHERE name = %s").format(table), (_KEY,))
        return cursor.fetchone()["value"]
