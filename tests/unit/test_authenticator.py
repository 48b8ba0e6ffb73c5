"""The authenticator keeps who holds an issued token for its `ttl` (issue 30): a read of the token
registry per token and second, not per request; `forget` (a token revoked or a tenant changed in this
process) drops it; a read that began before a revocation is never kept after it."""

from __future__ import annotations

from typing import Any

import pytest

from application import principals
from application.principals import ADMIN, Authenticator, Principal

DIGEST = "d" * 64


class Registry:
    """The token registry as `find_issued` reads it, counting its reads."""

    def __init__(self) -> None:
        self.tokens: dict[str, dict[str, Any]] = {DIGEST: {"name": "t", "role": "caller", "tenant": "acme", "usageProfile": "p", "id": "t1"}}
        self.reads = 0
        self.during_read: Any = None

    def find(self, digest: str) -> dict[str, Any] | None:
        self.reads += 1
        found = self.tokens.get(digest)
        if self.during_read is not None:
            self.during_read()
        return found


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(principals.time, "monotonic", lambda: now[0])
    return now


def test_an_issued_token_is_read_once_within_the_ttl_and_again_after_it(clock: list[float]) -> None:
    registry = Registry()
    authenticator = Authenticator(registry.find, ttl=1.0)
    held = [authenticator.authenticate_digest(DIGEST) for _ in range(5)]
    assert held[0] == Principal(name="t", role="caller", tenant="acme", usage_profile="p", token_id="t1")
    assert all(p == held[0] for p in held) and registry.reads == 1
    # Another replica revoked it: seen once the ttl has passed.
    del registry.tokens[DIGEST]
    clock[0] += 1.01
    assert authenticator.authenticate_digest(DIGEST) is None and registry.reads == 2


def test_forget_drops_what_is_kept(clock: list[float]) -> None:
    registry = Registry()
    authenticator = Authenticator(registry.find)
    assert authenticator.authenticate_digest(DIGEST) is not None
    del registry.tokens[DIGEST]
    authenticator.forget()
    assert authenticator.authenticate_digest(DIGEST) is None


def test_a_read_that_began_before_a_revocation_is_not_kept(clock: list[float]) -> None:
    registry = Registry()
    authenticator = Authenticator(registry.find)

    def revoked_meanwhile() -> None:  # the revocation commits while this read holds the old registry
        registry.tokens.pop(DIGEST, None)
        authenticator.forget()

    registry.during_read = revoked_meanwhile
    assert authenticator.authenticate_digest(DIGEST) is not None  # what that read found
    registry.during_read = None
    assert authenticator.authenticate_digest(DIGEST) is None


def test_a_token_that_is_not_one_is_never_kept_and_configured_ones_are_compared_first(clock: list[float]) -> None:
    registry = Registry()
    authenticator = Authenticator(registry.find)
    admin = Principal(name="admin", role=ADMIN, tenant="default")
    authenticator.add("a" * 64, admin)
    assert authenticator.authenticate_digest("a" * 64) == admin and registry.reads == 0
    for _ in range(3):
        assert authenticator.authenticate_digest("e" * 64) is None
    assert registry.reads == 3 and not authenticator._issued
    registry.tokens["e" * 64] = registry.tokens[DIGEST]  # issued elsewhere: seen at the next request
    assert authenticator.authenticate_digest("e" * 64) is not None
