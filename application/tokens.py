"""Bearer tokens (docs/security.md): issued, listed, revoked, and found by their secret.

Every token of every tenant is an entry of the one `TokenRegistry`, changed by the
`CommandRunner`; only a token's SHA-256 is ever recorded, and its secret is answered once.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from application.commands import Change, CommandRunner
from application.principals import CALLER, ROLES
from application.store import Store
from domain.callers import PROFILE, Record, token_digest
from domain.errors import InvalidRecord, UnknownRecord, Violation

MAX_NAME = 200
TOKEN = "token"


class Tokens:
    def __init__(self, store: Store, commands: CommandRunner) -> None:
        self._store = store
        self._commands = commands
        self._listeners: list[Callable[[], None]] = []

    def on_change(self, listener: Callable[[], None]) -> None:
        """`listener()` after this process issued or revoked a token (the authenticator forgets
        who held which, so a revoked token is refused at once: `application/principals.py`)."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    def tokens(self, tenant: str) -> list[Record]:
        tokens = self._store.tokens().tokens.values()
        return sorted((public_token(t) for t in tokens if t["tenant"] == tenant), key=lambda t: t["createdAt"] or "")

    def issue_token(self, tenant: str, name: str, role: str, usage_profile: str | None, *, by: str) -> tuple[Record, str]:
        """A new bearer token: answered once with its secret; only its SHA-256 is recorded."""
        found = []
        if role not in ROLES:
            found.append(Violation("role", "docs/security.md", f"must be one of {', '.join(ROLES)}"))
        if not name or len(name) > MAX_NAME:
            found.append(Violation("name", "docs/security.md", f"a token has a name of 1 to {MAX_NAME} characters"))
        if usage_profile is not None:
            if role != CALLER:
                found.append(Violation("usageProfile", "R14", "only caller tokens have a usage profile"))
            elif self._store.registry(tenant).get(PROFILE, usage_profile) is None:
                found.append(Violation("usageProfile", "R14", f"no usage profile {usage_profile!r}"))
        if found:
            raise InvalidRecord(found)
        secret = "tsk_" + secrets.token_urlsafe(32)
        token_id = secrets.token_hex(8)

        def attempt() -> Change[Record]:
            registry = self._store.tokens(for_update=True)
            registry.issue(token_id, token_digest(secret), name, role, tenant, usage_profile, by)
            return Change(public_token(registry.tokens[token_id]), save=(registry,))

        token, _ = self._commands.run(attempt, name=token_id)
        self._changed()
        return token, secret

    def revoke_token(self, tenant: str, token_id: str, *, by: str) -> None:
        def attempt() -> Change[None]:
            registry = self._store.tokens(for_update=True)
            token = registry.tokens.get(token_id)
            if token is None or token["tenant"] != tenant:
                raise UnknownRecord(TOKEN, token_id)
            registry.revoke(token_id, by)
            return Change(None, save=(registry,))

        self._commands.run(attempt, name=token_id)
        self._changed()

    def digest_of(self, tenant: str, token_id: str) -> str | None:
        """The SHA-256 digest of the tenant's issued token `token_id`, None when it has none (revoked
        tokens are gone): the console's Playground admits a call "run as" that token with it, exactly
        as if the token were presented (`api.admission.Admission.admit_digest`). It never leaves the process."""
        token = self._store.tokens().tokens.get(token_id)
        return token["digest"] if token is not None and token["tenant"] == tenant else None

    def find_token(self, token: str) -> Record | None:
        """The issued token with this secret, or None (revoked tokens are gone)."""
        return self.find_digest(token_digest(token))

    def find_digest(self, digest: str) -> Record | None:
        """The issued token whose secret has this SHA-256 digest, or None."""
        registry = self._store.tokens()
        token_id = registry.by_digest.get(digest)
        return registry.tokens.get(token_id) if token_id is not None else None


def public_token(token: Record) -> Record:
    """A token as it is shown: never its digest, nor its tenant (a URL never names one)."""
    return {k: v for k, v in token.items() if k not in ("digest", "tenant")}
