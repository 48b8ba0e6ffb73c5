"""Organizations (docs/tenants.md): the tenants one service hosts, as the operator manages them.

Every tenant of the store is an entry of the one `TenantRegistry` aggregate, changed only by the
operator: created (with a name and quotas), renamed, suspended or resumed, its quotas set, and
deleted once it holds nothing. Its events join the hash chain like every other (B5); they are the
store's, not a tenant's, so no tenant's export carries them.

The tenant a single-tenant deployment serves (`TOOLSMITH_TENANT`, `default`) exists without an
event: a store written before tenants were events starts with it, and the operator's first change
to it records it.

The rules here name the field and the rule they break, like the module rules of `domain/rules.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain.chain import Chained
from domain.errors import Violation

Record = dict[str, Any]

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates")
TENANTS_ID = uuid5(_NAMESPACE, "tenants")

# A tenant's id names it in logs and the operator's URLs, never in a tenant's own: lower case, so
# that `Acme` and `acme` are never two tenants.
TENANT_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,62}\Z")
MAX_NAME = 200

# What a tenant may hold (docs/tenants.md): modules, tools of the other kinds (API URL and File Search
# tools), documents, and the bytes of its documents. None is no limit.
MODULES = "modules"
TOOLS = "tools"
DOCUMENTS = "documents"
STORED_BYTES = "storedBytes"
QUOTAS = (MODULES, TOOLS, DOCUMENTS, STORED_BYTES)
MAX_QUOTA = 10**15

Quotas = dict[str, int | None]


def no_quotas() -> Quotas:
    return {quota: None for quota in QUOTAS}


def tenant_id_violations(tenant_id: object, field: str = "id") -> list[Violation]:
    if not isinstance(tenant_id, str) or not TENANT_ID.match(tenant_id):
        return [Violation(field, "docs/tenants.md", "a tenant id is 1–63 lower-case letters, digits or '-', starting with a letter or digit")]
    return []


def name_violations(name: object, field: str = "name") -> list[Violation]:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        return [Violation(field, "docs/tenants.md", f"a tenant's name has 1 to {MAX_NAME} characters")]
    return []


def quota_violations(quotas: object, field: str = "quotas") -> list[Violation]:
    if not isinstance(quotas, Mapping):
        return [Violation(field, "docs/tenants.md", f"an object of {', '.join(QUOTAS)}")]
    found = []
    for key, value in quotas.items():
        if key not in QUOTAS:
            found.append(Violation(f"{field}.{key}", "docs/tenants.md", f"no such quota; the quotas are {', '.join(QUOTAS)}"))
        elif value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_QUOTA):
            found.append(Violation(f"{field}.{key}", "docs/tenants.md", f"a whole number from 0 to {MAX_QUOTA}, or null for no limit"))
    return found


def tenant_record(tenant_id: str, name: str | None = None) -> Record:
    """A tenant as it stands before any event names it (the deployment's own tenant)."""
    return {"id": tenant_id, "name": name or tenant_id, "suspended": False, "quotas": no_quotas(),
            "createdAt": None, "createdBy": None, "updatedAt": None, "updatedBy": None}


class TenantRegistry(Chained):
    """Every tenant the operator created or changed: its name, whether it is suspended, its quotas."""

    @staticmethod
    def create_id() -> UUID:  # type: ignore[override]
        return TENANTS_ID

    @event("Started")
    def __init__(self, previous_hash: str = "") -> None:
        self.tenants: dict[str, Record] = {}

    def get(self, tenant_id: str) -> Record | None:
        return self.tenants.get(tenant_id)

    def create(self, tenant_id: str, name: str, quotas: Quotas, by: str) -> None:
        self._created(tenant_id=tenant_id, name=name, quotas=dict(quotas), by=by)

    def change(self, tenant_id: str, name: str, suspended: bool, quotas: Quotas, by: str) -> None:
        self._changed(tenant_id=tenant_id, name=name, suspended=suspended, quotas=dict(quotas), by=by)

    def delete(self, tenant_id: str, by: str) -> None:
        self._deleted(tenant_id=tenant_id, by=by)

    @event("Created")
    def _created(self, tenant_id: str, name: str, quotas: Quotas, by: str, previous_hash: str = "",
                 timestamp: datetime | None = None) -> None:
        record = tenant_record(tenant_id, name)
        record["quotas"] = {**no_quotas(), **quotas}
        record["createdAt"] = record["updatedAt"] = _iso(timestamp)
        record["createdBy"] = record["updatedBy"] = by
        self.tenants[tenant_id] = record

    @event("Changed")
    def _changed(self, tenant_id: str, name: str, suspended: bool, quotas: Quotas, by: str, previous_hash: str = "",
                 timestamp: datetime | None = None) -> None:
        # The deployment's own tenant is first recorded by its first change.
        record = dict(self.tenants.get(tenant_id) or tenant_record(tenant_id))
        record.update(name=name, suspended=suspended, quotas={**no_quotas(), **quotas},
                      updatedAt=_iso(timestamp), updatedBy=by)
        self.tenants[tenant_id] = record

    @event("Deleted")
    def _deleted(self, tenant_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.tenants.pop(tenant_id, None)


def _iso(timestamp: datetime | None) -> str | None:
    return timestamp.isoformat() if timestamp is not None else None
