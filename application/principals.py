"""Who is calling (docs/security.md): the principal a bearer token stands for, the roles, and the
authenticator that finds the principal of a presented token.

Only digests are compared (`domain.callers.token_digest`). The first admin's and the operator's
digests come from the data dir or the settings (`infrastructure/auth.py`), handed in by the
composition root; the tokens admins issued are found in the event-sourced token registry.
"""

from __future__ import annotations

import hmac
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
class Principal:
    name: str
    role: str
    tenant: str
    # A caller token's usage profile (R14); the id of an issued token (None for the first admin's).
    usage_profile: str | None = None
    token_id: str | None = None


class Authenticator:
    """The first admin's token (from the settings or the data dir), then the tokens admins issued
    (`find_issued`: the event-sourced token registry, which keeps only hashes)."""

    def __init__(self, find_issued: Callable[[str], dict[str, Any] | None] | None = None) -> None:
        # `find_issued` takes a token's digest.
        self._principals: dict[str, Principal] = {}
        self._find_issued = find_issued

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
            issued = self._find_issued(presented)
            if issued is not None:
                found = Principal(
                    name=issued["name"], role=issued["role"], tenant=issued["tenant"],
                    usage_profile=issued["usageProfile"], token_id=issued["id"],
                )
        return found
