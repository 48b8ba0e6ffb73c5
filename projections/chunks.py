"""The chunk index as a projection's view: the File Search chunk index (`DocumentIndex`, SQLite FTS5
or OpenSearch) with its own tracking record, so that the index is built from the events and the
blobs by replay and resumes where it stopped (docs/kinds/file-search-tools.md).

The projection (the kind's, which knows what each of its events changes) stages each event's
change with the event's tracking (`stage`); `flush` writes the batch's changes and then its
position in one `apply` (one transaction on SQLite), so the index never holds a position without
the changes before it. Changes are idempotent (a put replaces a document's chunks, a removal of
what is gone is no error): a batch applied again after a failure changes nothing twice. A batch
holding more text than `FLUSH_CHARS` writes its changes early (the position still last), so that
a replay of large documents never holds them all in memory.

The index records which event store its position is of. An index holding another store's position
(a data dir's file or an OpenSearch index left by another deployment) is emptied and built again
from this store, as the module read model is (issue 12, 10).
"""

from __future__ import annotations

import logging
import threading

from eventsourcing.persistence import Tracking, TrackingRecorder

from domain.documents import DocumentIndex, IndexChange, IndexPosition, PutDocument

log = logging.getLogger("toolsmith.projections")

FLUSH_CHARS = 8_000_000  # a batch writes its chunks early past about this much text


class ChunkView(TrackingRecorder):
    def __init__(self, index: DocumentIndex, store: str | None) -> None:
        """`store` is the identity of the event store the projection follows."""
        self.index = index
        self.store = store
        self._changes: list[IndexChange] = []
        self._chars = 0
        self._tracking: Tracking | None = None
        self._checked: set[str] = set()
        self._checking = threading.Lock()
        self._lock = threading.Lock()

    # -- the tracking record ---------------------------------------------------------------------

    def max_tracking_id(self, application_name: str) -> int | None:
        self._check_store(application_name)
        found = self.index.position(application_name)
        return None if found is None else found.notification_id

    def insert_tracking(self, tracking: Tracking) -> None:
        """Records a position at once when no change waits for a flush (the runner saying how far
        it read), else with the changes at the flush."""
        with self._lock:
            if self._changes:
                self._tracking = tracking
                return
        self.index.apply([], self._position(tracking))

    def _check_store(self, application_name: str) -> None:
        """Empties an index that holds another event store's position (once per process)."""
        if application_name in self._checked:
            return
        # Once, before any position is read: a reader (the health) and the first catch-up may ask at once.
        with self._checking:
            if application_name in self._checked:
                return
            found = self.index.position(application_name)
            if found is not None and found.store != self.store:
                # Said as the module read model says it (a reason), so an operator reads both alike.
                log.warning("chunk index of another event store: building it again from this one", extra={
                    "projection": "chunks", "found": found.store or "(unrecorded)", "store": self.store,
                    "reason": f"the chunk index holds event store {found.store or '(unrecorded)'}'s chunks, "
                              f"not this event store's ({self.store})"})
                self.index.clear()
            self._checked.add(application_name)

    # -- what the projection writes --------------------------------------------------------------

    def stage(self, change: IndexChange | None, tracking: Tracking) -> None:
        """An event's change of the index (None: it changes nothing), written at the next flush."""
        with self._lock:
            if change is not None:
                self._changes.append(change)
                if isinstance(change, PutDocument):
                    self._chars += sum(len(chunk.text) for chunk in change.chunks)
            self._tracking = tracking
            early = self._chars >= FLUSH_CHARS
            changes = self._take() if early else []
        if early:
            self.index.apply(changes)  # the position waits for the flush: it must come last

    def flush(self) -> None:
        """Writes the staged changes, then the position of the last event staged."""
        with self._lock:
            changes, tracking = self._take(), self._tracking
            self._tracking = None
        if changes or tracking is not None:
            self.index.apply(changes, self._position(tracking) if tracking is not None else None)

    def discard(self) -> None:
        """Forgets what is staged (the batch failed; it is applied again from the stored position)."""
        with self._lock:
            self._take()
            self._tracking = None

    def clear(self) -> None:
        """Empties the index and its position: the next catch-up builds it again from the log."""
        self.discard()
        self.index.clear()

    def _take(self) -> list[IndexChange]:
        changes, self._changes, self._chars = self._changes, [], 0
        return changes

    def _position(self, tracking: Tracking) -> IndexPosition:
        return IndexPosition(tracking.application_name, tracking.notification_id, self.store)
