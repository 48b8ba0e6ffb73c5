"""The event store on PostgreSQL: what opening it meets when replicas start at the same moment.

Opening a store makes its tables, indexes, types and functions if they are missing (`CREATE ... IF
NOT EXISTS`, `CREATE OR REPLACE FUNCTION`). On PostgreSQL, replicas that start at the same moment
race on the catalog: the loser's statement fails ("duplicate key value violates unique constraint
pg_type_typname_nsp_index", "tuple concurrently updated") though what it wanted to make is there,
or soon will be. Every statement is idempotent, so the loser tries again after a random pause,
which takes the replicas out of step. The event store (`application.store.Store`, handed
`created_despite_others` by the composition root), the blob store, the secret vault and the shared
rate limiter all open their tables this way.
"""

from __future__ import annotations

import random
import time
from typing import Any

from eventsourcing.persistence import IntegrityError, InternalError, OperationalError, ProgrammingError

# Attempts at making the store's tables when other processes are making them at the same moment.
CREATE_ATTEMPTS = 10

# What PostgreSQL answers a `CREATE ... IF NOT EXISTS` racing another process's: the object "already
# exists" (duplicate table, object, schema or function: a ProgrammingError) though it did not when checked,
# or the two transactions' catalog locks deadlocked (an OperationalError; PostgreSQL rolled one back).
CREATED_MEANWHILE = frozenset({"42P07", "42710", "42P06", "42723", "40P01"})


def created_meanwhile(error: Exception) -> bool:
    """Whether `error` says another process created the same object at the same moment: a unique key
    of the catalog, a catalog row changed concurrently, or a duplicate object. Any other error (a
    missing privilege, a syntax error, a refused connection) is not: it would fail again."""
    if isinstance(error, (IntegrityError, InternalError)):
        return True
    return isinstance(error, (ProgrammingError, OperationalError)) and getattr(error.__cause__, "sqlstate", None) in CREATED_MEANWHILE


def created_despite_others(make: Any) -> Any:
    """What `make` answers; tried again, after a random pause, while it fails because another process
    is creating the same tables at the same moment (so `make` must be idempotent: `IF NOT EXISTS`)."""
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            return make()
        except (IntegrityError, InternalError, ProgrammingError, OperationalError) as e:
            if attempt == CREATE_ATTEMPTS or not created_meanwhile(e):
                raise
            time.sleep(random.uniform(0.02, 0.1) * attempt)  # noqa: S311 - a pause, not a secret
    raise AssertionError("unreachable")
