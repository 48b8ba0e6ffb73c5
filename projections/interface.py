"""The read side's contract: module summaries, the faceted list, used-by lists and availability.

Two implementations stand behind `ModuleReadModel`: the in-memory one (the embedded default,
rebuilt from the event store at start) and OpenSearch. One contract test suite holds both to the
same answers (`tests/contract/`). A read model is also an `eventsourcing` tracking recorder, so
that each event is applied once in effect and a runner resumes where it stopped.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.persistence import TrackingRecorder

ORDER_FIELDS = ("id", "description", "role", "state")
MAX_LIMIT = 100

Document = dict[str, Any]


@dataclass(frozen=True)
class ListQuery:
    """GET /api/v1/admin/code-modules's query, already validated."""

    search: str | None = None
    state: str | None = None
    tool: bool | None = None
    used_by: str | None = None
    tags: tuple[str, ...] = ()
    offset: int = 0
    limit: int = 20
    order_by: str = "id"
    ascending: bool = True


@dataclass
class Page:
    collection: list[dict[str, Any]]
    total: int
    facets: dict[str, dict[str, int]] = field(default_factory=dict)


class ModuleReadModel(TrackingRecorder, ABC):
    """Queries of the read side, and the document writes its projection makes."""

    # -- queries -----------------------------------------------------------------------------

    @abstractmethod
    def list(self, tenant: str, query: ListQuery) -> Page:
        """A page of summaries; facets count the whole result, not the page."""

    @abstractmethod
    def summary(self, tenant: str, module_id: str) -> dict[str, Any] | None:
        """One module's summary, or None."""

    @abstractmethod
    def used_by(self, tenant: str, module_id: str) -> list[str]:
        """Ids of the modules whose draft or published imports name `module_id`, sorted."""

    @abstractmethod
    def is_taken(self, tenant: str, module_id: str) -> bool:
        """Whether a (non-deleted) module holds the id."""

    # -- what the projection writes ----------------------------------------------------------

    @abstractmethod
    def document(self, tenant: str, module_id: str) -> Document | None:
        """The stored document of a module (with its draft and published parts)."""

    @abstractmethod
    def put(self, document: Document, tracking: Any) -> None:
        """Stores a document and the tracking record of the event that produced it, atomically."""

    @abstractmethod
    def remove(self, tenant: str, module_id: str, tracking: Any) -> None:
        """Removes a document and records the tracking record, atomically."""
