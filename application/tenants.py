"""Organizations (docs/tenants.md): the operator's tenants, and what every request asks of them.

The operator creates a tenant (answering its first admin token, once), renames it, suspends or
resumes it, sets its quotas, and deletes it once it holds nothing; each is one event of the
`TenantRegistry`, saved in one transaction with the tokens it issues or revokes.

Every request asks `state(tenant)`: whether its token's tenant still exists and is not suspended.
The answer is kept for `ttl` seconds (a second by default), so that a request costs no read of the
store; a change made here is seen here at once, and by the other replicas of a PostgreSQL store
within the `ttl`.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from application.commands import Change, CommandRunner
from application.store import Store
from application.tokens import public_token
from domain.callers import token_digest
from domain.callers import KINDS as RECORD_KINDS
from domain.errors import InvalidRecord, RecordTaken, TenantNotEmpty, UnknownRecord, Violation
from domain.tenants import (
    QUOTAS,
    Quotas,
    Record,
    TenantRegistry,
    name_violations,
    no_quotas,
    quota_violations,
    tenant_id_violations,
    tenant_record,
)

TENANT = "tenant"


@dataclass(frozen=True)
class TenantState:
    exists: bool
    suspended: bool


class Tenants:
    """`own` is the deployment's own tenant (`TOOLSMITH_TENANT`): it exists without an event and
    is never deleted (the first admin's token belongs to it). `holdings(tenant)` says what a
    tenant still holds ("3 modules", …), for the refusal to delete it."""

    def __init__(self, store: Store, commands: CommandRunner, *, own: str,
                 holdings: Callable[[str], list[str]] | None = None, ttl: float = 1.0) -> None:
        self._store = store
        self._commands = commands
        self.own = own
        self._holdings = holdings or (lambda tenant: [])
        self._ttl = ttl
        self._lock = threading.Lock()
        self._known: dict[str, Record] | None = None
        self._read_at = 0.0
        self._listeners: list[Callable[[str], None]] = []

    # -- what every request asks ---------------------------------------------------------------

    def state(self, tenant: str) -> TenantState:
        """Whether `tenant` is suspended. A tenant no event names is not: the deployment's own, or
        one whose tokens a release before tenants were events issued (a deleted tenant's tokens
        were revoked with it, so none of them reaches here)."""
        record = self._snapshot().get(tenant)
        return TenantState(exists=True, suspended=bool(record["suspended"]) if record is not None else False)

    def quotas(self, tenant: str) -> Quotas:
        """The tenant's quotas as the store says now (exact: a quota is checked under the tenant's
        lock against the store, never a cached answer)."""
        record = self._store.tenants().get(tenant)
        return dict(record["quotas"]) if record is not None else no_quotas()

    def suspended(self) -> set[str]:
        return {tenant for tenant, record in self._snapshot().items() if record["suspended"]}

    def on_change(self, listener: Callable[[str], None]) -> None:
        """`listener(tenant)` after this process changed a tenant (the MCP sessions of a suspended
        one end at once; other replicas see it by polling `suspended`)."""
        self._listeners.append(listener)

    def _snapshot(self) -> dict[str, Record]:
        now = time.monotonic()
        known = self._known
        if known is None or now - self._read_at > self._ttl:
            with self._lock:
                if self._known is None or now - self._read_at > self._ttl:
                    self._known = dict(self._store.tenants().tenants)
                    self._read_at = time.monotonic()
                known = self._known
        return known

    def _forget(self, tenant: str) -> None:
        with self._lock:
            self._known = None
        for listener in self._listeners:
            listener(tenant)

    # -- the operator's ------------------------------------------------------------------------

    def list(self) -> list[Record]:
        registry = self._store.tenants()
        found = {tenant_id: dict(record) for tenant_id, record in registry.tenants.items()}
        found.setdefault(self.own, tenant_record(self.own))
        return [found[key] for key in sorted(found)]

    def get(self, tenant_id: str) -> Record:
        record = self._store.tenants().get(tenant_id)
        if record is None:
            if tenant_id != self.own:
                raise UnknownRecord(TENANT, tenant_id)
            record = tenant_record(self.own)
        return dict(record)

    def version(self) -> int:
        return self._store.tenants().version

    def create(self, tenant_id: Any, name: Any, quotas: Any, *, by: str) -> tuple[Record, Record, str]:
        """A new tenant and its first admin token: (tenant, token, the token's secret, shown once)."""
        quotas = {} if quotas is None else quotas
        found = tenant_id_violations(tenant_id) + name_violations(name) + quota_violations(quotas)
        if found:
            raise InvalidRecord(found)
        secret = "tsk_" + secrets.token_urlsafe(32)
        token_id = secrets.token_hex(8)

        def attempt() -> Change[tuple[Record, Record]]:
            registry: TenantRegistry = self._store.tenants(for_update=True)
            if tenant_id == self.own or registry.get(tenant_id) is not None:
                raise RecordTaken(TENANT, tenant_id)
            registry.create(tenant_id, name.strip(), {**no_quotas(), **quotas}, by)
            tokens = self._store.tokens(for_update=True)
            tokens.issue(token_id, token_digest(secret), f"{tenant_id} admin", "admin", tenant_id, None, by)
            return Change((dict(registry.tenants[tenant_id]), public_token(tokens.tokens[token_id])), save=(registry, tokens))

        (tenant, token), _ = self._commands.run(attempt, name=tenant_id)
        self._forget(tenant_id)
        return tenant, token, secret

    def update(self, tenant_id: str, body: dict[str, Any], *, by: str) -> Record:
        """`PUT`: renames, suspends or resumes, sets quotas; a field left out keeps its value, a
        quota left out of `quotas` too (null lifts it)."""
        found = []
        if "name" in body:
            found += name_violations(body["name"])
        if "suspended" in body and not isinstance(body["suspended"], bool):
            found.append(Violation("suspended", "docs/tenants.md", "true or false"))
        if "quotas" in body:
            found += quota_violations(body["quotas"])
        if found:
            raise InvalidRecord(found)

        def attempt() -> Change[Record]:
            registry: TenantRegistry = self._store.tenants(for_update=True)
            current = registry.get(tenant_id)
            if current is None:
                if tenant_id != self.own:
                    raise UnknownRecord(TENANT, tenant_id)
                current = tenant_record(self.own)
            name = body["name"].strip() if "name" in body else current["name"]
            suspended = body.get("suspended", current["suspended"])
            quotas = {**current["quotas"], **body.get("quotas", {})}
            if (name, suspended, quotas) == (current["name"], current["suspended"], current["quotas"]) and registry.get(tenant_id):
                return Change(dict(current))
            registry.change(tenant_id, name, suspended, quotas, by)
            return Change(dict(registry.tenants[tenant_id]), save=(registry,))

        record, _ = self._commands.run(attempt, name=tenant_id)
        self._forget(tenant_id)
        return record

    def delete(self, tenant_id: str, *, by: str) -> None:
        """Only an empty tenant; its tokens are revoked with it, in the same transaction."""
        if tenant_id == self.own:
            raise TenantNotEmpty(tenant_id, [], f"tenant {tenant_id!r} is this deployment's own (TOOLSMITH_TENANT, "
                                                "the first admin token's); it is never deleted")
        def attempt() -> Change[None]:
            registry: TenantRegistry = self._store.tenants(for_update=True)
            if registry.get(tenant_id) is None:
                raise UnknownRecord(TENANT, tenant_id)
            # Under the tenant's lock (every command that creates in a tenant holds it), so that
            # nothing is created in it between this look and the delete.
            holds = self._holdings(tenant_id)
            if holds:
                raise TenantNotEmpty(tenant_id, holds)
            registry.delete(tenant_id, by)
            tokens = self._store.tokens(for_update=True)
            for token_id, token in list(tokens.tokens.items()):
                if token["tenant"] == tenant_id:
                    tokens.revoke(token_id, by)
            return Change(None, save=(registry, tokens))

        self._commands.run(attempt, name=tenant_id, lock=tenant_id)
        self._forget(tenant_id)


def record_holdings(store: Store, tenant: str) -> list[str]:
    """What a tenant's caller registry holds (plans, agents, MCP servers, usage profiles)."""
    registry = store.registry(tenant)
    found = []
    for kind in RECORD_KINDS:
        count = len(registry.all(kind))
        if count:
            found.append(f"{count} {kind}{'s' if count != 1 else ''}")
    return found


__all__ = ["QUOTAS", "TENANT", "TenantState", "Tenants", "record_holdings"]
