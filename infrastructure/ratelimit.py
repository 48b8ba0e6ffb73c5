"""Token buckets per key (docs/tenants.md): a token's, a tenant's request rate, a client address's failed
authentications.

A bucket holds up to `burst` requests and refills at `rate` a second; a request takes one, and a
request that finds it empty is refused with the seconds until one is back (`Retry-After`).

`RateLimiter` is the port and its embedded implementation: buckets live in this process, which is
right for one process (a SQLite store belongs to one). Full buckets are forgotten, so memory follows
the keys in use, not every key ever seen.

`SharedRateLimiter` holds the buckets in a table of the PostgreSQL store, so that several API
replicas behind a load balancer grant a key its rate once, not once each. A request does not cost a
round trip each: a replica leases a small batch of requests from the shared bucket with one atomic
statement and serves them locally, and it remembers how long a bucket it found empty stays empty.
Requests leased and not yet served are the only way past the rate: at most `lease - 1` per replica
at any moment, so the lease is a twentieth of the burst (two replicas: a tenth of it).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("toolsmith.ratelimit")

# Buckets kept before full ones are swept out.
_SWEEP_AT = 10_000

TABLE = "toolsmith_rate_buckets"


class RateLimiter:
    """The rate limiter's port, and its in-process implementation (the embedded default)."""

    def __init__(self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # key: (tokens, at)

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def take(self, key: str) -> float | None:
        """None when the request may go on; else the seconds to wait before the next one will."""
        if self.rate <= 0:
            return None
        now = self._clock()
        with self._lock:
            tokens = self._tokens(key, now)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > _SWEEP_AT:
                self._sweep(now)
            return None

    def waiting(self, key: str) -> float | None:
        """Without taking anything: None when a request of `key` would go on now, else the seconds
        until one would (a login throttle asks this before it knows whether a request counts)."""
        if self.rate <= 0 or key not in self._buckets:
            # A key without a bucket has a full one (at least one request): every request of an
            # address that sent no bad token asks this, and it costs no lock nor clock.
            return None
        with self._lock:
            tokens = self._tokens(key, self._clock())
        return None if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def _tokens(self, key: str, now: float) -> float:
        tokens, at = self._buckets.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + max(0.0, now - at) * self.rate)

    def _sweep(self, now: float) -> None:
        full = [key for key, (tokens, at) in self._buckets.items()
                if tokens + (now - at) * self.rate >= self.burst]
        for key in full:
            del self._buckets[key]


def lease_size(burst: int) -> int:
    """Requests a replica leases at once: it may hold `lease - 1` unserved while the shared bucket
    refills, so two replicas pass the rate by at most a tenth of the burst."""
    return 1 + burst // 20


# The bucket of (limiter, key) after a lease, in one statement: created full on first use, else
# refilled for the time since its last lease (the database's clock, which every replica shares,
# unless the caller gives one), then up to `lease` whole requests taken. `granted` keeps what this
# statement took, for RETURNING (which sees only the new row). A concurrent lease of the same key
# waits for the row lock and is computed again on the row that lease left.
_NOW = "COALESCE(%(now)s::float8, extract(epoch FROM statement_timestamp()))"
_REFILLED = f"LEAST(%(burst)s::float8, b.tokens + GREATEST(0, {_NOW} - b.at) * %(rate)s::float8)"
_LEASE = f"""
INSERT INTO {{table}} AS b (limiter, key, tokens, at, granted)
VALUES (%(limiter)s, %(key)s, %(burst)s::float8 - LEAST(%(lease)s, %(burst)s), {_NOW}, LEAST(%(lease)s, %(burst)s))
ON CONFLICT (limiter, key) DO UPDATE SET
    granted = LEAST(%(lease)s, floor({_REFILLED}))::integer,
    tokens = {_REFILLED} - LEAST(%(lease)s, floor({_REFILLED})),
    at = GREATEST(b.at, {_NOW})
RETURNING granted, tokens
"""
# Buckets full again for a minute past that are forgotten, as the in-process limiter forgets them.
_SWEEP = f"DELETE FROM {{table}} WHERE limiter = %(limiter)s AND at < {_NOW} - %(full_after)s"
_SWEEP_EVERY = 1_000  # leases of this process between sweeps


class SharedRateLimiter(RateLimiter):
    """Buckets in the `toolsmith_rate_buckets` table of a PostgreSQL store, shared by every replica
    of it: `datastore` is the event store's (`store.recorder.datastore`, whose pool it uses and does
    not close); `name` tells this limiter's buckets from the others' in the table. Keys are stored
    as SHA-256 digests (a client address is nobody else's business). `shared_clock` gives the
    buckets' time in seconds; None: the database's, the one clock every replica agrees on.

    Should the database fail, a request goes on (logged): the store failing is answered elsewhere,
    and refusing every request for want of a counter would be worse than an unmetered moment."""

    def __init__(self, datastore: Any, name: str, rate: float, burst: int, *, lease: int | None = None,
                 clock: Callable[[], float] = time.monotonic, shared_clock: Callable[[], float] | None = None) -> None:
        super().__init__(rate, burst, clock=clock)
        from psycopg.sql import SQL, Identifier  # psycopg needs libpq, which a SQLite deployment may lack

        self.name = name
        self.lease = lease or lease_size(burst)
        self._datastore = datastore
        self._shared_clock = shared_clock
        table = SQL("{}.{}").format(Identifier(datastore.schema), Identifier(TABLE))
        self._lease_sql = SQL(_LEASE).format(table=table)  # type: ignore[arg-type]
        self._sweep_sql = SQL(_SWEEP).format(table=table)  # type: ignore[arg-type]
        self._create_sql = SQL("CREATE TABLE IF NOT EXISTS {table} (limiter text NOT NULL, key text NOT NULL, "
                               "tokens float8 NOT NULL, at float8 NOT NULL, granted integer NOT NULL, "
                               "PRIMARY KEY (limiter, key))").format(table=table)
        self._held: dict[str, int] = {}  # key: requests leased, not yet served
        self._empty_until: dict[str, float] = {}  # key: when the shared bucket has a request again (local clock)
        self._leases = 0
        if self.enabled:
            from infrastructure.postgres_store import created_despite_others

            # Replicas opening a new store at once race on creating the table.
            created_despite_others(self._create)

    def _create(self) -> None:
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(self._create_sql)

    def take(self, key: str) -> float | None:
        if self.rate <= 0:
            return None
        now = self._clock()
        with self._lock:
            if self._held.get(key, 0) > 0:
                self._served(key)
                return None
            wait = self._still_empty(key, now)
            if wait is not None:
                return wait
        granted, tokens = self._lease(key)
        with self._lock:
            if granted > 0:
                if len(self._held) > _SWEEP_AT:
                    # Keys leased once and not seen since: their requests are given up (fewer than
                    # the rate, never more), so memory follows the keys in use.
                    self._held = {}
                self._held[key] = self._held.get(key, 0) + granted
                self._served(key)
                if tokens < 1.0 and self._held.get(key, 0) == 0:
                    # The last request the bucket had: the next one from here waits without asking.
                    self._empty_until[key] = now + (1.0 - tokens) / self.rate
                return None
            wait = (1.0 - tokens) / self.rate
            self._empty_until[key] = now + wait
            if len(self._empty_until) > _SWEEP_AT:
                self._forget_past(now)
            return wait

    def waiting(self, key: str) -> float | None:
        """What this replica knows without a round trip: a bucket it found empty, until it refills
        (another replica learns it at its own next `take` of the key)."""
        if self.rate <= 0:
            return None
        with self._lock:
            if self._held.get(key, 0) > 0:
                return None
            return self._still_empty(key, self._clock())

    def _served(self, key: str) -> None:
        held = self._held[key] - 1
        if held:
            self._held[key] = held
        else:
            del self._held[key]

    def _still_empty(self, key: str, now: float) -> float | None:
        until = self._empty_until.get(key)
        if until is None:
            return None
        if now >= until:
            del self._empty_until[key]
            return None
        return until - now

    def _forget_past(self, now: float) -> None:
        for key in [key for key, until in self._empty_until.items() if until <= now]:
            del self._empty_until[key]

    def _lease(self, key: str) -> tuple[int, float]:
        """(requests granted, requests left in the shared bucket), in one statement."""
        now = self._shared_clock() if self._shared_clock is not None else None
        digest = hashlib.sha256(key.encode()).hexdigest()
        try:
            with self._datastore.transaction(commit=True) as cursor:
                cursor.execute(self._lease_sql, {"limiter": self.name, "key": digest, "now": now, "rate": self.rate,
                                                 "burst": self.burst, "lease": self.lease})
                row = cursor.fetchone()
                self._leases += 1
                if self._leases % _SWEEP_EVERY == 0:
                    cursor.execute(self._sweep_sql, {"limiter": self.name, "now": now,
                                                     "full_after": self.burst / self.rate + 60.0})
        except Exception as error:  # noqa: BLE001 - any failure of the database: the request goes on
            log.warning("rate limiter's shared bucket unavailable; request let through",
                        extra={"limiter": self.name, "error": type(error).__name__})
            return 1, float(self.burst)
        return int(row["granted"]), float(row["tokens"])


def retry_after(seconds: float) -> str:
    """`Retry-After` in whole seconds, never 0 (a client told 0 would retry at once)."""
    return str(max(1, math.ceil(seconds)))
