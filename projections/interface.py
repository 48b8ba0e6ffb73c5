"""The read side's contract: module summaries, the faceted list, used-by lists and availability.

Two implementations stand behind `ModuleReadModel`: the in-memory one (the embedded default,
rebuilt from the event store at start) and OpenSearch. One contract test suite holds both to the
same answers (`tests/contract/`). A read model is also an `eventsourcing` tracking recorder, so
that each event is applied once in effect and a runner resumes where it stopped.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from eventsourcing.persistence import TrackingRecorder

# The read side's port (its query, its page, its refusal) is the domain's: the application asks it.
from domain.ports import ListQuery, Page, ReadModelUnavailable

__all__ = ["Document", "ListQuery", "MAX_LIMIT", "ModuleReadModel", "ORDER_FIELDS", "Page", "ReadModelUnavailable"]

ORDER_FIELDS = ("id", "description", "role", "state")
MAX_LIMIT = 100

Document = dict[str, Any]


class ModuleReadModel(TrackingRecorder, ABC):
    """Queries of the read side, and the document writes its projection makes.

    Queries may raise `ReadModelUnavailable`. Writes may be buffered until `flush`: the runner
    calls `prefetch` with the documents a batch of events will change, applies the batch, then
    `flush`es it (or `discard`s it when applying failed, to apply it again later).
    """

    # The identity of the event store whose events the view holds (None: not recorded).
    store: str | None = None

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
    def used_by_counts(self, tenant: str, module_ids: Iterable[str]) -> dict[str, int]:
        """For each id asked: how many modules' draft or published imports name it (0 for an id
        no module imports, or no module holds). One query for the whole page, not one per row."""

    @abstractmethod
    def is_taken(self, tenant: str, module_id: str) -> bool:
        """Whether a (non-deleted) module holds the id."""

    # -- what the projection writes ----------------------------------------------------------

    @abstractmethod
    def document(self, tenant: str, module_id: str) -> Document | None:
        """The stored document of a module (with its draft and published parts)."""

    @abstractmethod
    def put(self, document: Document, tracking: Any) -> None:
        """Stores a document and the tracking record of the event that produced it (refused with
        eventsourcing's `IntegrityError` when that event was applied already)."""

    @abstractmethod
    def remove(self, tenant: str, module_id: str, tracking: Any) -> None:
        """Removes a document and records the tracking record."""

    def tracking(self, application_name: str) -> tuple[int, str | None] | None:
        """The stored position and the identity of the event store it is a position of; None
        before anything was applied. A view kept outside the event store (OpenSearch) may hold
        another store's position: the runner then rebuilds it from its own store."""
        position = self.max_tracking_id(application_name)
        return None if position is None else (position, self.store)

    def open(self) -> None:
        """Creates the storage when it does not exist yet."""

    def prefetch(self, keys: Iterable[tuple[str, str]]) -> None:
        """Loads the documents (tenant, module id) that the next events will change."""

    def flush(self) -> None:
        """Makes the writes so far durable and visible, tracking last."""

    def seal(self) -> Any:
        """Ends the current batch and answers it for `write` (which may run in another thread
        while the next batch is applied); None when there is nothing to write."""
        return None

    def write(self, batch: Any) -> None:
        """Writes a sealed batch, tracking last."""

    def discard(self) -> None:
        """Forgets writes not yet flushed."""

    def close(self) -> None:
        """Releases connections."""

    def available(self) -> bool:
        """Whether queries can be answered now."""
        return True
