"""What the built-in authorization server remembers (docs/oauth.md), outside the event log: these
are secrets, and an event is kept forever and exported. Only digests of codes, refresh tokens and
client secrets are written (SHA-256: each is 256 random bits, nothing to guess), in one SQLite
file of the data dir (`oauth.sqlite`, mode 0600), or, when the event store is PostgreSQL, in its
schema (`api/oauth/store_postgres.py`: every replica sees every grant and revocation):

- `clients`: the clients registered by Dynamic Client Registration (RFC 7591), their metadata;
- `grants`: a person's consent to one client for one resource (an MCP server URL) and scopes;
  a grant is one refresh-token family: revoking it (the person, on the grants page; a reused
  refresh token or code) ends every refresh token of it and the access tokens it issued;
- `codes`: authorization codes (minutes, one use), with the PKCE challenge;
- `refresh_tokens`: each rotation's token, marked used when exchanged."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILE = "oauth.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS oauth_keys (name TEXT PRIMARY KEY, document TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS oauth_clients (
    client_id TEXT PRIMARY KEY, secret_digest TEXT, metadata TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS oauth_grants (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, subject TEXT NOT NULL, person TEXT NOT NULL,
    person_ref TEXT NOT NULL, role TEXT NOT NULL, usage_profile TEXT, client_id TEXT NOT NULL,
    client_name TEXT NOT NULL, resource TEXT NOT NULL, scope TEXT NOT NULL, created REAL NOT NULL,
    revoked REAL, revoked_why TEXT);
CREATE INDEX IF NOT EXISTS oauth_grants_by_tenant ON oauth_grants (tenant, created);
CREATE TABLE IF NOT EXISTS oauth_codes (
    digest TEXT PRIMARY KEY, grant_id TEXT NOT NULL, client_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
    scope TEXT NOT NULL, challenge TEXT NOT NULL, challenge_method TEXT NOT NULL, expires REAL NOT NULL, used REAL);
CREATE TABLE IF NOT EXISTS oauth_refresh_tokens (
    digest TEXT PRIMARY KEY, grant_id TEXT NOT NULL, client_id TEXT NOT NULL, scope TEXT NOT NULL,
    expires REAL NOT NULL, used REAL);
"""


@dataclass(frozen=True)
class Grant:
    id: str
    tenant: str
    subject: str  # the `sub` of its tokens: who the person is, stable
    person: str  # their name, as events and pages show it
    person_ref: str  # how to ask whether the person may still sign in (never a secret: a digest or an id)
    role: str
    usage_profile: str | None
    client_id: str
    client_name: str
    resource: str
    scope: str
    created: float
    revoked: float | None = None
    revoked_why: str | None = None


@dataclass(frozen=True)
class Code:
    digest: str
    grant_id: str
    client_id: str
    redirect_uri: str
    scope: str
    challenge: str
    challenge_method: str
    expires: float
    used: float | None


@dataclass(frozen=True)
class Refresh:
    digest: str
    grant_id: str
    client_id: str
    scope: str
    expires: float
    used: float | None


class OAuthStore:
    """The SQL both stores speak (`P` is the driver's placeholder); SQLite's connection here."""

    P = "?"
    shared = False  # one process owns a SQLite data dir; replicas share a PostgreSQL store

    def __init__(self, data_dir: Path) -> None:
        path = data_dir / FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._lock = threading.Lock()
        with self._lock:
            self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()
        self._closed = True

    @property
    def closed(self) -> bool:
        return getattr(self, "_closed", False)

    def _one(self, sql: str, *args: Any) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(sql, args).fetchone()
        return None if row is None else dict(row)

    def _all(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(row) for row in self._db.execute(sql, args).fetchall()]

    def _run(self, sql: str, *args: Any) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    # The signing keys' document (api/oauth/keys.py)
    def keys_document(self) -> str | None:
        row = self._one("SELECT document FROM oauth_keys WHERE name = 'signing'")
        return None if row is None else str(row["document"])

    def save_keys_document(self, document: str, expected: str | None) -> bool:
        """Writes the keys' document if what is stored is still `expected`; False when another
        process changed it first (the caller reads it again)."""
        if expected is None:
            return self._run("INSERT INTO oauth_keys (name, document) VALUES ('signing', ?) ON CONFLICT (name) DO NOTHING",
                             document) > 0
        return self._run("UPDATE oauth_keys SET document = ? WHERE name = 'signing' AND document = ?", document, expected) > 0

    # Clients (DCR)
    def add_client(self, client_id: str, secret_digest: str | None, metadata: dict[str, Any]) -> None:
        self._run("INSERT INTO oauth_clients VALUES (?, ?, ?, ?)", client_id, secret_digest, json.dumps(metadata), time.time())

    def client(self, client_id: str) -> tuple[str | None, dict[str, Any]] | None:
        row = self._one("SELECT secret_digest, metadata FROM oauth_clients WHERE client_id = ?", client_id)
        return None if row is None else (row["secret_digest"], json.loads(row["metadata"]))

    # Grants
    def add_grant(self, grant: Grant) -> None:
        self._run("INSERT INTO oauth_grants VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)", grant.id, grant.tenant,
                  grant.subject, grant.person, grant.person_ref, grant.role, grant.usage_profile, grant.client_id,
                  grant.client_name, grant.resource, grant.scope, grant.created)

    def grant(self, grant_id: str) -> Grant | None:
        row = self._one("SELECT * FROM oauth_grants WHERE id = ?", grant_id)
        return None if row is None else Grant(**row)

    def grants(self, tenant: str, subject: str | None = None) -> list[Grant]:
        """A tenant's grants not revoked, newest first; one person's when `subject` is given."""
        if subject is None:
            rows = self._all("SELECT * FROM oauth_grants WHERE tenant = ? AND revoked IS NULL ORDER BY created DESC", tenant)
        else:
            rows = self._all("SELECT * FROM oauth_grants WHERE tenant = ? AND subject = ? AND revoked IS NULL ORDER BY created DESC",
                             tenant, subject)
        return [Grant(**row) for row in rows]

    def knows_client(self, client_id: str) -> bool:
        """Whether a grant was ever given to this client (a metadata document fetched at consent)."""
        return self._one("SELECT 1 FROM oauth_grants WHERE client_id = ? LIMIT 1", client_id) is not None

    def revoke_grant(self, grant_id: str, why: str) -> bool:
        return self._run("UPDATE oauth_grants SET revoked = ?, revoked_why = ? WHERE id = ? AND revoked IS NULL",
                         time.time(), why, grant_id) > 0

    def revoked_since(self, since: float) -> list[str]:
        return [row["id"] for row in self._all("SELECT id FROM oauth_grants WHERE revoked >= ?", since)]

    # Codes
    def add_code(self, code: Code) -> None:
        self._run("INSERT INTO oauth_codes VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)", code.digest, code.grant_id, code.client_id,
                  code.redirect_uri, code.scope, code.challenge, code.challenge_method, code.expires)

    def code(self, digest: str) -> Code | None:
        row = self._one("SELECT * FROM oauth_codes WHERE digest = ?", digest)
        return None if row is None else Code(**row)

    def use_code(self, digest: str) -> bool:
        """Marks the code used; False when it was already (a second exchange)."""
        return self._run("UPDATE oauth_codes SET used = ? WHERE digest = ? AND used IS NULL", time.time(), digest) > 0

    # Refresh tokens
    def add_refresh(self, refresh: Refresh) -> None:
        self._run("INSERT INTO oauth_refresh_tokens VALUES (?, ?, ?, ?, ?, NULL)", refresh.digest, refresh.grant_id,
                  refresh.client_id, refresh.scope, refresh.expires)

    def refresh(self, digest: str) -> Refresh | None:
        row = self._one("SELECT * FROM oauth_refresh_tokens WHERE digest = ?", digest)
        return None if row is None else Refresh(**row)

    def use_refresh(self, digest: str) -> bool:
        return self._run("UPDATE oauth_refresh_tokens SET used = ? WHERE digest = ? AND used IS NULL", time.time(), digest) > 0

    def forget_expired(self, now: float) -> None:
        self._run("DELETE FROM oauth_codes WHERE expires < ?", now - 3600)
        self._run("DELETE FROM oauth_refresh_tokens WHERE expires < ?", now - 3600)
