"""Who is calling (docs/security.md, docs/users.md): the principal a bearer token or a person's
session stands for (and the person, when there is one), the roles, and the authenticator that finds
the principal of a presented token.

Only digests are compared (`domain.callers.token_digest`). The first admin's and the operator's
digests come from the data dir or the settings (`infrastructure/auth.py`), handed in by the
composition root; the tokens admins issued are found in the event-sourced token registry.

Who holds an issued token is kept for `ttl` seconds (a second by default), so that a request costs
no read of the store (on PostgreSQL, a query each): a token revoked here is refused here at once
(`forget`, which the composition root calls on every change of the tokens or tenants), and by the
other replicas of a PostgreSQL store within the `ttl`, as a tenant's suspension is
(`application/tenants.py`). Only tokens that are one are kept, so the keeping is bounded by the
tokens issued, whatever is presented.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.callers import token_digest

ADMIN = "admin"
AUDITOR = "auditor"
CALLER = "caller"
# Manages tenants and nothing inside them (docs/tenants.md); belongs to no tenant.
OPERATOR = "operator"
# The roles an admin may issue a token with (the operator's token is never issued, only configured).
ROLES = (ADMIN, AUDITOR, CALLER)


@dataclass(frozen=True)
class Person:
    """The person a principal is, when it is one (docs/users.md): a user of its tenant."""

    id: str
    name: str
    email: str
    locale: str


@dataclass(frozen=True)
class Principal:
    # What events record as `by`: a token's name, or for a person `domain.users.actor` (their
    # display name, id and how they came), so that every change a person makes names them.
    name: str
    role: str
    tenant: str
    # A caller token's usage profile (R14); the id of an issued token (None for the first admin's).
    usage_profile: str | None = None
    token_id: str | None = None
    # The person, when there is one (a console session of theirs, one of their tokens, an OAuth
    # client acting for them), and how they came: `console`, `token` or `oauth`.
    user: Person | None = None
    via: str | None = None
    # The OAuth client a call comes through (its client_id), when it came with an access token.
    client: str | None = None

    @property
    def rate_key(self) -> str | None:
        """What the request rate counts: the person wherever there is one, whatever token, session
        or client they come through; else the token (None: the caller's digest)."""
        if self.user is not None:
            return f"user:{self.tenant}:{self.user.id}"
        return self.token_id

    @property
    def display_name(self) -> str:
        """The person's display name, else the token's name."""
        return self.user.name if self.user is not None else self.name


class Authenticator:
    """The first admin's token (from the settings or the data dir), then the tokens admins issued
    (`find_issued`: the event-sourced token registry, which keeps only hashes)."""

    def __init__(self, find_issued: Callable[[str], dict[str, Any] | None] | None = None, *, ttl: float = 1.0,
                 owner: Callable[[dict[str, Any], Principal], Principal | None] | None = None) -> None:
        # `find_issued` takes a token's digest; `owner` answers who an issued token stands for when a
        # person owns it (docs/users.md: the person, its role capped by theirs; None once they are
        # disabled or deleted), or the token's own principal it is handed.
        self._principals: dict[str, Principal] = {}
        self._find_issued = find_issued
        self._owner = owner
        self._ttl = ttl
        self._issued: dict[str, tuple[float, Principal]] = {}  # a digest: when it was read, its holder
        # Bumped by `forget`: a read of the store that began before a revocation is never kept after it.
        self._generation = 0
        self._lock = threading.Lock()

    def add(self, token_digest: str, principal: Principal) -> None:
        self._principals[token_digest] = principal

    def authenticate(self, token: str | None) -> Principal | None:
        if not token:
            return None
        return self.authenticate_digest(token_digest(token))

    def authenticate_digest(self, presented: str) -> Principal | None:
        """Who holds the token with this SHA-256 digest now (the console's session keeps the digest,
        never the token, and asks on every request, so a revoked token ends its sessions)."""
        found = None
        # Compare against every digest in constant time, so timing says nothing about which matched.
        for digest, principal in self._principals.items():
            if hmac.compare_digest(presented, digest):
                found = principal
        if found is None and self._find_issued is not None:
            found = self._issued_holder(presented)
        return found

    def _issued_holder(self, digest: str) -> Principal | None:
        kept = self._issued.get(digest)
        now = time.monotonic()
        if kept is not None and now - kept[0] <= self._ttl:
            return kept[1]
        generation = self._generation
        issued = self._find_issued(digest) if self._find_issued is not None else None
        if issued is None:
            return None
        principal = Principal(
            name=issued["name"], role=issued["role"], tenant=issued["tenant"],
            usage_profile=issued["usageProfile"], token_id=issued["id"],
        )
        if self._owner is not None:
            owned = self._owner(issued, principal)
            if owned is None:
                return None
            principal = owned
        with self._lock:
            if generation == self._generation:
                self._issued[digest] = (now, principal)
        return principal

    def forget(self, *_: Any) -> None:
        """Drops what is kept of the issued tokens: called after this process issued or revoked a
        token, or changed a tenant (deleting one revokes its tokens), so that the next request reads
        the store again."""
        with self._lock:
            self._generation += 1
            self._issued = {}
