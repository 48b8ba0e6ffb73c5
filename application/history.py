"""A module's past (docs/rules.md B1, B2): every event through all its lives, its published versions,
and the tenant's import graph as it changed; read from the event store, never from a cache."""

from __future__ import annotations

from typing import Any

from application.store import Store
from domain.model import CodeModule, Definition, graph_aggregate_id, module_aggregate_id
from domain.rules import id_violations


class History:
    def __init__(self, store: Store) -> None:
        self._store = store

    def module_events(self, tenant: str, module_id: str) -> list[Any]:
        """Every event of a module, in order, through all its lives (B2); empty when it never existed."""
        if not isinstance(module_id, str) or id_violations(module_id):
            return []
        return self._store.stored_events(module_aggregate_id(tenant, module_id))

    def graph_events(self, tenant: str) -> list[Any]:
        return self._store.stored_events(graph_aggregate_id(tenant))

    def published_versions(self, tenant: str, module_id: str) -> dict[int, Definition]:
        """Each published version's definition, by number (B1, B2)."""
        return {e.version: e.definition for e in self.module_events(tenant, module_id) if isinstance(e, CodeModule.Published)}

    def changesets(self, tenant: str) -> list[dict[str, Any]]:
        """Every changeset of the tenant (B6), newest first: id, message, who, when, and each module
        it published with the version it made. Read from the `Published` events of the log."""
        found: dict[str, dict[str, Any]] = {}
        for notification in self._store.notifications_of(CodeModule.Published):
            event = self._store.mapper.to_domain_event(notification)
            if event.tenant != tenant or getattr(event, "changeset", None) is None:
                continue
            entry = found.setdefault(event.changeset, {"id": event.changeset, "message": event.message, "by": event.by,
                                                       "at": event.timestamp, "modules": []})
            entry["modules"].append({"id": event.module_id, "version": event.version})
        return sorted(found.values(), key=lambda c: c["at"], reverse=True)
