"""What a tenant holds (docs/tenants.md): its modules, its tools of the other kinds (API URL and File
Search tools), its documents and their bytes, its plans, agents, MCP servers, usage profiles and
secrets.

Exact, as of the question: the quotas are checked against these counts under the tenant's lock
(`application/quotas.py`), and a tenant is deleted only when it holds nothing. Which modules are
alive, and which tools of each kind, is a projection of their lifecycle events (created, created
again, deleted), caught up to the log's head before every answer (`application/projected.py`);
what each counts (a module, a tool) and what a live one holds (a File Search tool's documents and
their bytes, loaded from the store) its kind declares (`Counted`), so that nothing here names one.
Each count is made only when asked for (`count`), so a check of one quota pays for that one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.projected import Follower, LiveIndex, group_of
from application.secrets import Secrets
from application.store import Store
from application.tenants import record_holdings
from domain.tenants import DOCUMENTS, MODULES, STORED_BYTES, TOOLS

if TYPE_CHECKING:
    from application.kinds.base import Counted


@dataclass(frozen=True)
class TenantUsage:
    modules: int
    tools: int
    documents: int
    stored_bytes: int

    def as_quotas(self) -> dict[str, int]:
        """Named as the quotas are (`domain/tenants.py`)."""
        return {MODULES: self.modules, TOOLS: self.tools, DOCUMENTS: self.documents, STORED_BYTES: self.stored_bytes}


class Usage:
    def __init__(self, store: Store, secrets: Secrets, *, counted: Sequence[Counted] = ()) -> None:
        """`counted`: what each installed kind's aggregates count toward the quotas (their
        plugins declare it, `KindPlugin.quotas`)."""
        self._store = store
        self._secrets = secrets
        self._counted = tuple(counted)
        self._live = Follower(store, LiveIndex([c.aggregate for c in self._counted], name="usage"))

    def projections(self) -> tuple[Follower[Any], ...]:
        """The read models the projection runner keeps up to date for this service."""
        return (self._live,)

    def count(self, tenant: str, quotas: Iterable[str]) -> dict[str, int]:
        """What `tenant` holds of each of `quotas` (named as `domain/tenants.py` names them), and
        only of those: the live aggregates each counts, from the projection of their lifecycle,
        and what those hold (a File Search tool's documents), from each as the store has it."""
        wanted = set(quotas)
        found = dict.fromkeys(wanted, 0)
        live = self._live.current().view
        for counted in self._counted:
            group = group_of(counted.aggregate)
            if counted.quota in wanted:
                found[counted.quota] += live.count(tenant, group)
            held = wanted.intersection(counted.holds)
            if counted.contents is None or not held:
                continue
            for aggregate in self._loaded(live.ids(tenant, group)):
                for quota, amount in counted.contents(aggregate).items():
                    if quota in held:
                        found[quota] += amount
        return found

    def _loaded(self, ids: Iterable[UUID]) -> list[Any]:
        """The live aggregates of `ids`, each as the store has it now (a cached one is brought up
        to date from the store)."""
        found = []
        for aggregate_id in ids:
            try:
                aggregate = self._store.repository.get(aggregate_id, deepcopy_from_cache=False)
            except AggregateNotFoundError:
                continue
            if not aggregate.deleted:
                found.append(aggregate)
        return found

    def of(self, tenant: str) -> TenantUsage:
        counted = self.count(tenant, (MODULES, TOOLS, DOCUMENTS, STORED_BYTES))
        return TenantUsage(modules=counted[MODULES], tools=counted[TOOLS], documents=counted[DOCUMENTS],
                           stored_bytes=counted[STORED_BYTES])

    def holdings(self, tenant: str) -> list[str]:
        """What the tenant still holds, as a person reads it ("3 modules", "1 secret"); empty when nothing."""
        usage = self.of(tenant)
        found = [f"{count} {noun}{'s' if count != 1 else ''}" for count, noun in (
            (usage.modules, "module"), (usage.tools, "tool"), (usage.documents, "document")) if count]
        found += record_holdings(self._store, tenant)
        secrets = len(self._secrets.list(tenant))
        if secrets:
            found.append(f"{secrets} secret{'s' if secrets != 1 else ''}")
        return found
