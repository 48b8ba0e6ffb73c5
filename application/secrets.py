"""The tenants' secrets (docs/kinds/index.md): created, listed, rotated, described, deleted, and read by id
during a tool call.

Each secret is a `Secret` aggregate (its id, description and value's fingerprint, with who and
when) and a ciphertext in the `SecretVault` beside the event store. A change writes the ciphertext
first and the event second, each under the tenant's lock (the one the other names of the tenant
are changed under), so a reader finds the value the record names: the vault keeps the value
before the change until the next one. A delete records its event first and forgets the value
after. Nothing decrypted is kept between calls: a tool reads the value its call needs, so a
rotation is seen by the very next call, on every replica.

A secret is in use while a kind of tool says one of its tools refers to it
(`ToolKind.secrets_used`); then it cannot be deleted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eventsourcing.application import AggregateNotFoundError

from application.commands import Change, CommandRunner
from application.kinds.base import ToolKind
from application.store import Store
from domain.errors import InvalidRecord, RecordTaken, SecretInUse, SecretUnreadable, UnknownRecord
from domain.ports import SecretValues, SecretVault
from domain.redaction import Redactor
from domain.secrets import (
    Secret,
    secret_aggregate_id,
    secret_description_violations,
    secret_id_violations,
    value_violations,
)

SECRET = "secret"

Record = dict[str, Any]


class Secrets(SecretValues):
    def __init__(self, store: Store, commands: CommandRunner, vault: SecretVault, kinds: Iterable[ToolKind]) -> None:
        self._store = store
        self._commands = commands
        self._vault = vault
        # The registry of kinds, filled once they are built (they are handed this service).
        self._kinds = kinds

    # -- what a tool call reads (SecretValues) ----------------------------------------------------

    def exists(self, tenant: str, secret_id: str) -> bool:
        return self._live(tenant, secret_id) is not None

    def value(self, tenant: str, secret_id: str) -> str:
        secret = self._secret(tenant, secret_id)
        value = self._vault.read(tenant, secret_id, secret.fingerprint)
        if value is None:
            raise SecretUnreadable(secret_id, "has no stored value matching its record; set its value again")
        return value

    def redactor(self, tenant: str) -> Redactor:
        """What replaces every form of the tenant's secrets' values (`domain.redaction`): for what
        the call log captures of a tool's values (docs/calls.md). A value that cannot be read is
        left out (it cannot be in a call's values either)."""
        values = []
        for secret_id in self._vault.ids(tenant):
            secret = self._live(tenant, secret_id)
            if secret is None:
                continue
            try:
                value = self._vault.read(tenant, secret_id, secret.fingerprint)
            except Exception:  # noqa: BLE001 - unreadable: no call could have used it
                value = None
            if value:
                values.append(value)
        return Redactor(values)

    # -- queries ------------------------------------------------------------------------------

    def list(self, tenant: str) -> list[Record]:
        """Every secret of the tenant, by id, without values; each with the tools that use it."""
        used = self.used(tenant)
        found = []
        for secret_id in self._vault.ids(tenant):
            secret = self._live(tenant, secret_id)
            if secret is not None:
                found.append({**secret.view(), "usedBy": used.get(secret_id, [])})
        return found

    def get(self, tenant: str, secret_id: str) -> Record:
        return {**self._secret(tenant, secret_id).view(), "usedBy": self.used(tenant).get(secret_id, [])}

    def used(self, tenant: str) -> dict[str, list[str]]:
        """Secret id -> the tools (of every kind) that refer to it, sorted."""
        found: dict[str, set[str]] = {}
        for kind in self._kinds:
            for secret_id, tools in kind.secrets_used(tenant).items():
                found.setdefault(secret_id, set()).update(tools)
        return {secret_id: sorted(tools) for secret_id, tools in found.items()}

    def history(self, tenant: str, secret_id: str) -> list[Any]:
        """Every event of the secret through all its lives; empty when it never existed."""
        if secret_id_violations(secret_id):
            return []
        return self._store.stored_events(secret_aggregate_id(tenant, secret_id))

    # -- commands -----------------------------------------------------------------------------

    def create(self, tenant: str, secret_id: str, value: str, description: str = "", *, by: str) -> Record:
        found = secret_id_violations(secret_id) + value_violations(value) + secret_description_violations(description)
        if found:
            raise InvalidRecord(found)

        def attempt() -> Change[Record]:
            secret = self._load(tenant, secret_id, for_update=True)
            if secret is not None and not secret.deleted:
                raise RecordTaken(SECRET, secret_id)
            fingerprint = self._vault.fingerprint(value)
            self._vault.put(tenant, secret_id, value, fingerprint, keeping=None)
            if secret is None:
                secret = Secret(tenant=tenant, secret_id=secret_id, description=description, fingerprint=fingerprint, by=by)
            else:
                secret.recreate(description, fingerprint, by)
            return Change(secret.view(), save=(secret,))

        record, _ = self._commands.run(attempt, name=secret_id, lock=tenant)
        return {**record, "usedBy": []}

    def rotate(self, tenant: str, secret_id: str, value: str, *, by: str) -> Record:
        """A new value: tools use it from their next call on."""
        return self.update(tenant, secret_id, value=value, by=by)

    def update(self, tenant: str, secret_id: str, *, value: str | None = None, description: str | None = None, by: str) -> Record:
        """PUT: rotates the value and (or) changes the description; what is unchanged records nothing."""
        found = (value_violations(value) if value is not None else []) + (
            secret_description_violations(description) if description is not None else [])
        if found:
            raise InvalidRecord(found)

        def attempt() -> Change[Record]:
            secret = self._secret(tenant, secret_id, for_update=True)
            if value is not None:
                fingerprint = self._vault.fingerprint(value)
                if fingerprint != secret.fingerprint:
                    self._vault.put(tenant, secret_id, value, fingerprint, keeping=secret.fingerprint)
                    secret.rotate(fingerprint, by)
            if description is not None and description != secret.description:
                secret.describe(description, by)
            changed = secret if secret.pending_events else None
            return Change(secret.view(), save=(changed,))

        record, _ = self._commands.run(attempt, name=secret_id, lock=tenant)
        return {**record, "usedBy": self.used(tenant).get(secret_id, [])}

    def delete(self, tenant: str, secret_id: str, *, by: str) -> None:
        """Refused (`SecretInUse`, naming the tools) while any tool refers to the secret."""

        def attempt() -> Change[None]:
            secret = self._secret(tenant, secret_id, for_update=True)
            users = self.used(tenant).get(secret_id)
            if users:
                raise SecretInUse(secret_id, users)
            secret.delete(by)
            return Change(None, save=(secret,))

        self._commands.run(attempt, name=secret_id, lock=tenant)
        self._vault.delete(tenant, secret_id)

    # -- loading ------------------------------------------------------------------------------

    def _load(self, tenant: str, secret_id: str, *, for_update: bool = False) -> Secret | None:
        if secret_id_violations(secret_id):
            return None
        try:
            return self._store.repository.get(secret_aggregate_id(tenant, secret_id), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return None

    def _live(self, tenant: str, secret_id: str) -> Secret | None:
        secret = self._load(tenant, secret_id)
        return secret if secret is not None and not secret.deleted else None

    def _secret(self, tenant: str, secret_id: str, *, for_update: bool = False) -> Secret:
        secret = self._load(tenant, secret_id, for_update=for_update)
        if secret is None or secret.deleted:
            raise UnknownRecord(SECRET, secret_id)
        return secret
