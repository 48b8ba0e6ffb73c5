"""Bearer tokens (docs/security.md): who is calling, with which role, in which tenant.

Only hashes are kept. The first admin token comes from `TOOLSMITH_ADMIN_TOKEN`, or is generated on
the first start, its SHA-256 written to the data dir, and shown once to whoever started the service.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADMIN = "admin"
AUDITOR = "auditor"
CALLER = "caller"
# Manages tenants and nothing inside them (docs/tenants.md); belongs to no tenant.
OPERATOR = "operator"

TOKEN_FILE = "admin-token.sha256"
OPERATOR_TOKEN_FILE = "operator-token.sha256"


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    tenant: str
    # A caller token's usage profile (R14); the id of an issued token (None for the first admin's).
    usage_profile: str | None = None
    token_id: str | None = None


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


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


def admin_token_digest(data_dir: Path, configured: str | None) -> tuple[str, str | None]:
    """The admin token's digest, and the token itself when it was generated just now (to show once)."""
    return _first_token_digest(data_dir / TOKEN_FILE, configured, "tsa_")


def operator_token_digest(data_dir: Path, configured: str | None) -> tuple[str, str | None]:
    """The operator token's digest (docs/tenants.md), and the token when it was generated just now."""
    return _first_token_digest(data_dir / OPERATOR_TOKEN_FILE, configured, "tso_")


def _first_token_digest(path: Path, configured: str | None, prefix: str) -> tuple[str, str | None]:
    if configured:
        return token_digest(configured), None
    data_dir = path.parent
    if path.exists():
        return path.read_text().strip(), None
    token = prefix + secrets.token_urlsafe(32)
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token_digest(token) + "\n")
    return token_digest(token), token
