"""The tenant's graph lock across processes: a PostgreSQL advisory lock (docs/rules.md, R10).

API processes that share one PostgreSQL event store serialize their publishes (and the saves that
change an import) with a session-level advisory lock, keyed by the store (database and schema) and the tenant.
The lock is held on a connection of a small pool of its own, never on one of the event store's,
so a publish that holds it for its sandbox checks takes nothing from the writers. Threads of one
process first queue on the in-process lock, so each process has at most one connection per tenant
waiting on the server. Should a process die while holding it, its connection closes and
PostgreSQL releases the lock.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Mapping

from psycopg_pool import ConnectionPool

from domain.ports import GraphLock, ThreadGraphLock
from infrastructure.notifications import connection_settings

_LOCK = "SELECT pg_advisory_lock(%s)"
_UNLOCK = "SELECT pg_advisory_unlock(%s)"


def lock_key(namespace: str, tenant: str) -> int:
    """A stable signed 64-bit key (what `pg_advisory_lock` takes): every process derives the same."""
    digest = hashlib.sha256(f"toolsmith-graph\0{namespace}\0{tenant}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class AdvisoryGraphLock(GraphLock):
    """Serializes the graph changes of one tenant across every process on one PostgreSQL store."""

    def __init__(self, connection: Mapping[str, str], *, namespace: str, pool_size: int = 4) -> None:
        self._namespace = namespace
        self._threads = ThreadGraphLock()
        # Autocommit: a session-level lock, not one that ends with a transaction.
        self._pool = ConnectionPool(
            kwargs={**connection, "autocommit": True},
            min_size=1,
            max_size=pool_size,
            name="toolsmith-graph-lock",
            open=True,
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AdvisoryGraphLock:
        """The lock for the store that eventsourcing's POSTGRES_* variables in `env` describe."""
        connection = connection_settings(env)
        # Stores in different schemas of one database are different stores: their locks too.
        return cls(connection, namespace=f"{connection['dbname']}.{env.get('POSTGRES_SCHEMA') or 'public'}")

    @contextlib.contextmanager
    def hold(self, tenant: str) -> Iterator[None]:
        key = lock_key(self._namespace, tenant)
        with self._threads.hold(tenant), self._pool.connection() as connection:
            connection.execute(_LOCK, (key,))
            try:
                yield
            finally:
                connection.execute(_UNLOCK, (key,))

    def close(self) -> None:
        self._pool.close()
