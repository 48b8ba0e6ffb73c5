"""What a tenant holds (DESIGN §12): its modules, its tools of the other kinds, its documents and
their bytes, its plans, agents, MCP servers, usage profiles and secrets.

Read from the store, exactly (the quotas are checked against it under the tenant's lock, and a
tenant is deleted only when it holds nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from application.kinds.api_tools import ApiToolKind
from application.kinds.base import ToolKinds
from application.kinds.search_tools import SearchToolKind
from application.secrets import Secrets
from application.store import Store
from application.tenants import record_holdings


@dataclass(frozen=True)
class TenantUsage:
    modules: int
    tools: int
    documents: int
    stored_bytes: int

    def as_quotas(self) -> dict[str, int]:
        """Named as the quotas are (`domain/tenants.py`)."""
        return {"modules": self.modules, "tools": self.tools, "documents": self.documents, "storedBytes": self.stored_bytes}


class Usage:
    def __init__(self, store: Store, kinds: ToolKinds, secrets: Secrets) -> None:
        self._store = store
        self._kinds = kinds
        self._secrets = secrets

    def _kind(self, cls: type) -> object | None:
        try:
            return self._kinds.find(cls)
        except (KeyError, LookupError, StopIteration):
            return None

    def of(self, tenant: str) -> TenantUsage:
        modules = len(self._store.graph(tenant).nodes)
        tools = documents = stored = 0
        api = self._kind(ApiToolKind)
        if isinstance(api, ApiToolKind):
            tools += len(api.tools(tenant))
        search = self._kind(SearchToolKind)
        if isinstance(search, SearchToolKind):
            for tool in search.tools(tenant):
                tools += 1
                documents += len(tool.documents)
                stored += sum(int(document["size"]) for document in tool.documents.values())
        return TenantUsage(modules=modules, tools=tools, documents=documents, stored_bytes=stored)

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
