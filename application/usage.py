"""What a tenant holds (docs/tenants.md): its modules, its tools of the other kinds (API URL and File
Search tools), its documents and their bytes, its plans, agents, MCP servers, usage profiles and
secrets.

Read from the store, exactly: the quotas are checked against these counts under the tenant's lock
(`application/quotas.py`), and a tenant is deleted only when it holds nothing. Which modules and
tools of a tenant are alive is kept by a `Census` of their lifecycle events (created, created
again, deleted), which reads the log's newer lifecycle events to its end before every answer; the
documents and their bytes are the tenant's live File Search tools' own, loaded from the store.
Each count is made only when asked for (`count`), so a check of one quota pays for that one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.secrets import Secrets
from application.store import Store
from application.tenants import record_holdings
from toolkinds.api_tools.model import ApiTool
from domain.model import CodeModule
from domain.topics import stored_topics
from toolkinds.search_tools.model import SearchTool
from domain.tenants import DOCUMENTS, MODULES, STORED_BYTES, TOOLS

# The census's groups: what a lifecycle event of each aggregate type counts as.
_MODULE, _API_TOOL, _SEARCH_TOOL = "module", "api tool", "search tool"
_LIFECYCLE: dict[type, tuple[str, bool]] = {
    event: (group, alive)
    for group, aggregate in ((_MODULE, CodeModule), (_API_TOOL, ApiTool), (_SEARCH_TOOL, SearchTool))
    for event, alive in ((aggregate.Created, True), (aggregate.Recreated, True), (aggregate.Deleted, False))
}
PAGE = 1_000  # lifecycle events read at a time


class Census:
    """The live modules, API URL tools and File Search tools of every tenant, by aggregate id, as
    the log's lifecycle events say (nothing else of an aggregate is decoded or kept).

    Every answer first reads what was recorded since the last one, to the log's end: it is the
    store's, as of the question, in every replica (a PostgreSQL store commits its events in the
    order of their positions, so nothing is recorded behind what was read). The first answer reads
    every lifecycle event in the log once; the ids it keeps are a few dozen bytes per module.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._topics = [topic for event in _LIFECYCLE for topic in stored_topics(event)]
        self._groups = {topic: meaning for event, meaning in _LIFECYCLE.items() for topic in stored_topics(event)}
        self._live: dict[tuple[str, str], set[UUID]] = {}
        self._next = 1  # the position of the next notification to read
        self._lock = threading.Lock()

    def live(self, tenant: str, group: str) -> frozenset[UUID]:
        with self._lock:
            self._catch_up()
            return frozenset(self._live.get((tenant, group), ()))

    def count(self, tenant: str, group: str) -> int:
        with self._lock:
            self._catch_up()
            return len(self._live.get((tenant, group), ()))

    def _catch_up(self) -> None:
        recorder, mapper = self._store.recorder, self._store.mapper
        while True:
            page = recorder.select_notifications(self._next, PAGE, topics=self._topics)
            for notification in page:
                event = mapper.to_domain_event(notification)
                group, alive = self._groups[notification.topic]
                ids = self._live.setdefault((event.tenant, group), set())
                if alive:
                    ids.add(notification.originator_id)
                else:
                    ids.discard(notification.originator_id)
            if page:
                self._next = page[-1].id + 1
            if len(page) < PAGE:
                return


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
    def __init__(self, store: Store, secrets: Secrets) -> None:
        self._store = store
        self._secrets = secrets
        self._census = Census(store)

    def count(self, tenant: str, quotas: Iterable[str]) -> dict[str, int]:
        """What `tenant` holds of each of `quotas` (named as `domain/tenants.py` names them), and
        only of those: modules and tools from the census, documents and bytes from the tenant's
        live File Search tools."""
        wanted = set(quotas)
        found: dict[str, int] = {}
        if MODULES in wanted:
            found[MODULES] = self._census.count(tenant, _MODULE)
        if TOOLS in wanted:
            found[TOOLS] = self._census.count(tenant, _API_TOOL) + self._census.count(tenant, _SEARCH_TOOL)
        if wanted & {DOCUMENTS, STORED_BYTES}:
            documents = stored = 0
            for tool in self._search_tools(tenant):
                documents += len(tool.documents)
                stored += sum(int(document["size"]) for document in tool.documents.values())
            found[DOCUMENTS], found[STORED_BYTES] = documents, stored
        return {quota: found[quota] for quota in wanted}

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

    def _search_tools(self, tenant: str) -> list[Any]:
        """The tenant's live File Search tools, each as the store has it now (a cached one is
        brought up to date from the store)."""
        tools = []
        for aggregate_id in self._census.live(tenant, _SEARCH_TOOL):
            try:
                tool = self._store.repository.get(aggregate_id, deepcopy_from_cache=False)
            except AggregateNotFoundError:
                continue
            if not tool.deleted:
                tools.append(tool)
        return tools
