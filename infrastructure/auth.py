"""Bearer tokens (DESIGN §8): who is calling, with which role, in which tenant.

Only hashes are kept. The first admin token comes from `TOOLSMITH_ADMIN_TOKEN`, or is generated on
the first start, its SHA-256 written to the data dir, and shown once to whoever started the service.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

ADMIN = "admin"
AUDITOR = "auditor"
CALLER = "caller"

TOKEN_FILE = "admin-token.sha256"


@dataclass(frozen=True)
class Principal:
    name: str
    role: str
    tenant: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Authenticator:
    def __init__(self) -> None:
        self._principals: dict[str, Principal] = {}

    def add(self, token_digest: str, principal: Principal) -> None:
        self._principals[token_digest] = principal

    def authenticate(self, token: str | None) -> Principal | None:
        if not token:
            return None
        presented = _digest(token)
        found = None
        # Compare against every digest in constant time, so timing says nothing about which matched.
        for digest, principal in self._principals.items():
            if hmac.compare_digest(presented, digest):
                found = principal
        return found


def admin_token_digest(data_dir: Path, configured: str | None) -> tuple[str, str | None]:
    """The admin token's digest, and the token itself when it was generated just now (to show once)."""
    if configured:
        return _digest(configured), None
    path = data_dir / TOKEN_FILE
    if path.exists():
        return path.read_text().strip(), None
    token = "tsa_" + secrets.token_urlsafe(32)
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(_digest(token) + "\n")
    return _digest(token), token
