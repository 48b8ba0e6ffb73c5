"""The embedded read model: documents in a dict, rebuilt from the event store at every start."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.popo import POPOTrackingRecorder

from domain.model import STATES
from projections.documents import searchable, summary
from projections.interface import Document, ListQuery, ModuleReadModel, Page

_ORDER_KEYS = {
    "id": lambda d: d["id"].lower(),
    "description": lambda d: d["description"].lower(),
    "role": lambda d: d["role"],
    "state": lambda d: d["state"],
}


class InMemoryModuleReadModel(POPOTrackingRecorder, ModuleReadModel):
    def __init__(self) -> None:
        super().__init__()
        self._documents: dict[tuple[str, str], Document] = {}

    # -- writes ------------------------------------------------------------------------------

    def document(self, tenant: str, module_id: str) -> Document | None:
        with self._database_lock:
            found = self._documents.get((tenant, module_id))
            return _copy(found) if found is not None else None

    def put(self, document: Document, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            self._documents[(document["tenant"], document["id"])] = _copy(document)
            self._insert_tracking(tracking)

    def remove(self, tenant: str, module_id: str, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            self._documents.pop((tenant, module_id), None)
            self._insert_tracking(tracking)

    # -- queries -----------------------------------------------------------------------------

    def list(self, tenant: str, query: ListQuery) -> Page:
        with self._database_lock:
            matches = [d for (t, _), d in self._documents.items() if t == tenant and _matches(d, query, self._documents)]
        facets = {
            "state": {state: 0 for state in STATES},
            "role": {"tool": 0, "library": 0},
            "tags": {},
        }
        tags: Counter[str] = Counter()
        for document in matches:
            facets["state"][document["state"]] += 1
            facets["role"][document["role"]] += 1
            tags.update(document["tags"])
        facets["tags"] = dict(sorted(tags.items(), key=lambda item: (-item[1], item[0])))
        key = _ORDER_KEYS[query.order_by]
        matches.sort(key=lambda d: d["id"].lower())
        matches.sort(key=key, reverse=not query.ascending)
        page = matches[query.offset : query.offset + query.limit]
        return Page(collection=[summary(d) for d in page], total=len(matches), facets=facets)

    def summary(self, tenant: str, module_id: str) -> dict[str, Any] | None:
        document = self.document(tenant, module_id)
        return summary(document) if document is not None else None

    def used_by(self, tenant: str, module_id: str) -> list[str]:
        with self._database_lock:
            return sorted(d["id"] for (t, _), d in self._documents.items() if t == tenant and module_id in d["uses"])

    def used_by_counts(self, tenant: str, module_ids: Iterable[str]) -> dict[str, int]:
        counts = {module_id: 0 for module_id in module_ids}
        with self._database_lock:
            for (t, _), document in self._documents.items():
                if t == tenant:
                    for used in document["uses"]:
                        if used in counts:
                            counts[used] += 1
        return counts

    def is_taken(self, tenant: str, module_id: str) -> bool:
        with self._database_lock:
            return (tenant, module_id) in self._documents


def _matches(document: Document, query: ListQuery, documents: dict[tuple[str, str], Document]) -> bool:
    if query.search and not searchable(document, query.search):
        return False
    if query.state and document["state"] != query.state:
        return False
    if query.tool is not None and (document["role"] == "tool") != query.tool:
        return False
    if query.tags and not set(query.tags) <= set(document["tags"]):
        return False
    if query.used_by is not None:
        user = documents.get((document["tenant"], query.used_by))
        if document["id"] not in query.also_used and (user is None or document["id"] not in user["uses"]):
            return False
    return True


def _copy(document: Document) -> Document:
    # Documents hold only JSON-shaped values; a shallow copy per level is enough and fast.
    copied = dict(document)
    for name in ("draft", "published"):
        if copied.get(name) is not None:
            copied[name] = dict(copied[name])
    return copied
