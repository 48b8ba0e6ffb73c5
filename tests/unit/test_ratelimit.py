"""The in-process token buckets (`infrastructure/ratelimit.py`): `waiting` asks without taking, and a
key never seen (every request of an address that sent no bad token asks) has a full bucket."""

from __future__ import annotations

from infrastructure.ratelimit import RateLimiter


def test_waiting_takes_nothing_and_sees_an_empty_bucket_until_it_refills() -> None:
    now = [100.0]
    limiter = RateLimiter(1.0, 2, clock=lambda: now[0])
    assert limiter.waiting("never-seen") is None and limiter.waiting("never-seen") is None
    assert limiter.take("a") is None and limiter.take("a") is None
    assert limiter.waiting("a") == 1.0  # empty: a second until one is back
    assert limiter.take("a") == 1.0
    now[0] += 0.5
    assert limiter.waiting("a") == 0.5
    now[0] += 0.5
    assert limiter.waiting("a") is None
    assert limiter.waiting("never-seen") is None and "never-seen" not in limiter._buckets
