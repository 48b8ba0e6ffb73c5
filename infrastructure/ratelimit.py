"""A token bucket per key (DESIGN §12): each bearer token's request rate.

A bucket holds up to `burst` requests and refills at `rate` a second; a request takes one, and a
request that finds it empty is refused with the seconds until one is back (`Retry-After`). Buckets
live in this process: with several API replicas behind a load balancer, each replica grants a
token its rate. Full buckets are forgotten, so memory follows the tokens in use, not every token
ever seen.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

# Buckets kept before full ones are swept out.
_SWEEP_AT = 10_000


class RateLimiter:
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
            tokens, at = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                return (1.0 - tokens) / self.rate
            self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > _SWEEP_AT:
                self._sweep(now)
            return None

    def _sweep(self, now: float) -> None:
        full = [key for key, (tokens, at) in self._buckets.items()
                if tokens + (now - at) * self.rate >= self.burst]
        for key in full:
            del self._buckets[key]


def retry_after(seconds: float) -> str:
    """`Retry-After` in whole seconds, never 0 (a client told 0 would retry at once)."""
    return str(max(1, math.ceil(seconds)))
