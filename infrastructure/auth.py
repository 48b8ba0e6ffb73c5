"""The first tokens (docs/security.md): the first admin's and the operator's, from the settings or
the data dir.

Only hashes are kept. The first admin token comes from `TOOLSMITH_ADMIN_TOKEN`, or is generated on
the first start, its SHA-256 written to the data dir, and shown once to whoever started the service.
Who a presented token stands for is the application's (`application/principals.py`).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from domain.callers import token_digest

TOKEN_FILE = "admin-token.sha256"
OPERATOR_TOKEN_FILE = "operator-token.sha256"


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
