"""A module's past (docs/rules.md B1, B2): every event through all its lives, its published versions,
and the tenant's import graph as it changed; read from the event store, never from a cache. The
tenant's changesets (B6) are a projection of the log's `Published` events (`Changesets`), caught up
before every answer (`application/projected.py`)."""

from __future__ import annotations

from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.popo import POPOTrackingRecorder
from eventsourcing.projection import Projection

from application.projected import Follower, topics_of
from application.store import Store
from domain.model import CodeModule, Definition, graph_aggregate_id, module_aggregate_id
from domain.rules import id_violations


class ChangesetsView(POPOTrackingRecorder):
    """By tenant, each changeset (id, message, who, when) with the modules it published, in the
    order they were recorded."""

    def __init__(self) -> None:
        super().__init__()
        self._tenants: dict[str, dict[str, dict[str, Any]]] = {}

    def of(self, tenant: str) -> list[dict[str, Any]]:
        """The tenant's changesets, newest first, each a copy."""
        with self._database_lock:
            found = [{**entry, "modules": [dict(m) for m in entry["modules"]]} for entry in self._tenants.get(tenant, {}).values()]
        return sorted(found, key=lambda c: c["at"], reverse=True)

    def published(self, event: Any, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            changesets = self._tenants.setdefault(event.tenant, {})
            entry = changesets.setdefault(event.changeset, {"id": event.changeset, "message": event.message, "by": event.by,
                                                            "at": event.timestamp, "modules": []})
            entry["modules"].append({"id": event.module_id, "version": event.version})
            self._insert_tracking(tracking)


class Changesets(Projection[ChangesetsView]):
    """Every tenant's changesets, from the `Published` events that name one."""

    name = "changesets"
    topics = topics_of(CodeModule.Published)

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        if isinstance(domain_event, CodeModule.Published) and getattr(domain_event, "changeset", None) is not None:
            self.view.published(domain_event, tracking)
        else:
            self.view.insert_tracking(tracking)


class History:
    def __init__(self, store: Store) -> None:
        self._store = store
        self.changesets_follower: Follower[ChangesetsView] = Follower(store, Changesets(view=ChangesetsView()))

    def projections(self) -> tuple[Follower[Any], ...]:
        """The read models the projection runner keeps up to date for this service."""
        return (self.changesets_follower,)

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
        it published with the version it made. From the `Changesets` projection of the log's
        `Published` events, caught up first: it costs the tenant's changesets, not the log."""
        return self.changesets_follower.current().view.of(tenant)
