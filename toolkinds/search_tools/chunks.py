"""The File Search chunk index as the kind reads it, and the projection that writes it
(docs/kinds/file-search-tools.md).

The kind never writes the index: it records what happened to a document (`DocumentReady` with the
SHA-256 of its text, `DocumentRemoved`, the tool's `Deleted`), and the chunk projection
(`projection.ChunkIndex`, through a `Follower` the one projection runner catches up) builds the
index from those events and the blobs. Every read catches the projection up first, so a search
right after a document is `READY` finds it, in any process (read-your-writes). `rebuild` empties
the index and replays the log into it (`toolsmith projections rebuild`); an index lost (a data dir's
file deleted, an OpenSearch index dropped) has no position, and is replayed the same way.
Chunking itself is `domain.chunking`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.projected import Follower
from domain.documents import DocumentIndex, Hit, IndexUnavailable, StoredChunk
from domain.errors import DocumentsUnavailable
from domain.retrieval import retrieve
from projections.chunks import ChunkView
from projections.store_identity import store_identity
from toolkinds.search_tools.model import SearchTool
from toolkinds.search_tools.projection import ChunkIndex
from toolkinds.search_tools.reembed import models_of

if TYPE_CHECKING:
    from toolkinds.search_tools.ingest import Files
    from toolkinds.search_tools.kind import SearchToolKind

log = logging.getLogger("toolsmith.search_tools")


class Chunks:
    """The kind's chunk index: its projection's follower (made on first use, when documents are
    configured), and the reads, each once the projection has applied the log up to now."""

    def __init__(self, kind: SearchToolKind) -> None:
        self.kind = kind
        self._follower: Follower[ChunkView] | None = None
        self._files: Files | None = None
        self._lock = threading.Lock()

    def follower(self) -> Follower[ChunkView] | None:
        """None when the service keeps no documents."""
        try:
            files = self.kind.files
        except DocumentsUnavailable:
            return None
        with self._lock:
            if self._follower is None or self._files is not files:
                store = self.kind.deps.store
                view = ChunkView(files.index, store_identity(store))
                self._follower = Follower(store, ChunkIndex(view, blobs=files.blobs, tool_at=self._tool_at))
                self._files = files
            return self._follower

    def _index(self) -> DocumentIndex:
        """The index, with the projection caught up to the log's head as of now. Caught up
        already (the runner's passes keep it so), a read waits for no lock: the follower's is
        taken only when there is something to apply. A projection failing for another reason
        than an unreachable index leaves the reads the index as it is (the error is logged, and
        the health shows the projection failing) rather than failing every search."""
        index = self.kind.files.index
        follower = self.follower()
        if follower is None:
            return index
        if follower.position() >= (self.kind.deps.store.recorder.max_notification_id() or 0):
            return index
        try:
            follower.catch_up()
        except IndexUnavailable:
            raise
        except Exception:
            log.exception("the chunk projection failed; the index is read as it is", extra={"projection": follower.name})
        return index

    def search(self, tenant: str, name: str, terms: Sequence[str], limit: int,
               document_ids: Sequence[str] | None) -> list[Hit]:
        return self._index().search(tenant, name, terms, limit, document_ids)

    def retrieve(self, tenant: str, name: str, query: str, terms: Sequence[str], limit: int,
                 document_ids: Sequence[str] | None, retrieval: Mapping[str, Any], *,
                 tool: SearchTool | None = None) -> list[Hit]:
        """The best `limit` chunks by the tool's retrieval (`domain.retrieval.retrieve`); the
        query embedded by every model the `tool`'s documents have (a change of model under way,
        `reembed.py`), else by the service's."""
        files = self.kind.files
        embed = files.embed_query
        models = models_of(tool, files.embedding_model) if tool is not None else []
        if embed is not None and len(models) > 1:
            def embed_each(text: str, given: Callable[..., tuple[str, bytes]] = embed) -> list[tuple[str, bytes]]:
                return [given(text, model=model) for model in models]

            return retrieve(self._index(), embed_each, tenant, name, query, terms, limit, document_ids, retrieval)
        return retrieve(self._index(), embed, tenant, name, query, terms, limit, document_ids, retrieval)

    def chunk_range(self, tenant: str, name: str, doc_id: str, first: int, last: int) -> list[StoredChunk]:
        """The document's chunks numbered `first` to `last`, in order (those that exist)."""
        return self._index().chunks(tenant, name, doc_id, first, last)

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Empties the index, then applies every event again, reading the texts from the blob
        store; `progress(position, head)` after each page of the log. Answers the chunks indexed."""
        files = self.kind.files
        follower = self.follower()
        assert follower is not None
        # With no catch-up in flight: one recording its position after the index was emptied
        # would make the replay start there.
        follower.reset(follower.view.clear)
        follower.catch_up(progress)
        return files.index.total()

    def _tool_at(self, aggregate_id: UUID, version: int) -> Any:
        try:
            tool = self.kind.deps.store.repository.get(aggregate_id, version=version)
        except AggregateNotFoundError:
            return None
        return tool if isinstance(tool, SearchTool) else None
