"""The call log's wiring (docs/calls.md): its records beside the event store, in SQLite or PostgreSQL."""

from __future__ import annotations

from typing import Any

from application.call_log import CallLog
from application.store import Store
from infrastructure.call_log_sqlite import SqliteCallRecords
from infrastructure.settings import POSTGRES, Settings

CALLS_FILE = "calls.sqlite"


def open_call_log(settings: Settings, store: Store) -> CallLog:
    """The log of `settings`: in the event store's PostgreSQL schema when the event store is
    PostgreSQL (every replica appends to the same chains), else `calls.sqlite` in the data dir."""
    datastore = getattr(store.recorder, "datastore", None)
    if settings.persistence_module == POSTGRES and datastore is not None:
        from infrastructure.call_log_postgres import PostgresCallRecords  # psycopg needs libpq, which SQLite deployments may lack

        return CallLog(PostgresCallRecords(datastore), capacity=settings.call_log_queue, days=settings.call_log_days)
    return CallLog(SqliteCallRecords(settings.data_dir / CALLS_FILE), capacity=settings.call_log_queue, days=settings.call_log_days)


def open_call_records(settings: Settings, store: Any, *, create: bool = False) -> Any:
    """The call log's records alone, for `toolsmith audit` (no queue, no writer): None when the
    data dir has none and `create` is false (a store that never served a call)."""
    datastore = getattr(store.recorder, "datastore", None)
    if settings.persistence_module == POSTGRES and datastore is not None:
        from infrastructure.call_log_postgres import PostgresCallRecords

        return PostgresCallRecords(datastore)
    path = settings.data_dir / CALLS_FILE
    if not path.exists() and not create:
        return None
    return SqliteCallRecords(path)
