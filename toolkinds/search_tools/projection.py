"""The chunk index of File Search tools as a projection of their events and the blob store
(docs/kinds/file-search-tools.md): the kind records what happened to a document, and this builds
the index from it, live and by replay alike, so that the index a replay makes is the one the live
service made.

- `DocumentReady` names the SHA-256 of the text extracted (in the blob store), where its pages
  start and its title: the text is read from the blobs and chunked again (`domain.chunking`, the
  same function of the same text), and its chunks become the document's.
- `DocumentEmbedded` (recorded just before the `DocumentReady` when the extraction worker
  embedded the chunks) names a blob of one vector a chunk, in order, and their model: each chunk
  is then indexed with its vector. A document recorded before embeddings, or whose vectors do
  not fit its chunks, is indexed by its words only.
- A `DocumentEmbedded` of a document already `READY` (embedded again by another model,
  `reembed.py`) gives its chunks the new vectors in place (`PutVectors`): the same chunks, the
  new model; the index keeps a document's vectors of one model at a time.
- `DocumentRemoved` takes the document's chunks out, `Deleted` (and `Recreated`, which starts a
  tool with no document) every chunk of the tool.
- The file name and media type a document's chunks carry come from its `DocumentAdded`, kept
  while it is extracted; a position resumed between the two (a restart) reads them from the tool
  as it was at that event.
- A text no longer in the blob store indexes nothing: its blob goes only once no document holds
  it, so the document's removal is further on in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from uuid import UUID

from eventsourcing.persistence import Tracking
from eventsourcing.projection import Projection

from application.projected import topics_of
from domain.chunking import chunk_text
from domain.documents import VECTOR_DIMENSIONS, BlobStore, DropTool, Extracted, IndexChange, IndexedDocument, PutDocument, PutVectors, RemoveDocument
from projections.chunks import ChunkView
from toolkinds.search_tools.model import SearchTool

log = logging.getLogger("toolsmith.search_tools")

# The events that say what a tool's documents are (a configuration's change indexes nothing).
_EVENTS = (SearchTool.Deleted, SearchTool.Recreated, SearchTool.DocumentAdded, SearchTool.DocumentEmbedded,
           SearchTool.DocumentReady, SearchTool.DocumentFailed, SearchTool.DocumentRemoved)


class ChunkIndex(Projection[ChunkView]):
    name = "chunks"
    topics = topics_of(*_EVENTS)

    def __init__(self, view: ChunkView, *, blobs: BlobStore,
                 tool_at: Callable[[UUID, int], SearchTool | None]) -> None:
        """`tool_at(aggregate id, version)` is the tool as it was at that version (None when unknown)."""
        super().__init__(view)
        self.blobs = blobs
        self._tool_at = tool_at
        # (tenant, tool, document id) -> (file name, media type), from DocumentAdded to its outcome.
        self._added: dict[tuple[str, str, str], tuple[str, str]] = {}
        # (tenant, tool, document id) -> (model, vectors' SHA-256), from DocumentEmbedded to its READY.
        self._embedded: dict[tuple[str, str, str], tuple[str, str]] = {}

    def prepare(self, domain_events: list[Any]) -> None:
        """A page begins: what a page that failed had staged goes (it is applied again from the position)."""
        self.view.discard()

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:  # type: ignore[override]
        self.view.stage(self._change(domain_event), tracking)

    def flush(self) -> None:
        self.view.flush()

    def _change(self, event: Any) -> IndexChange | None:
        if isinstance(event, SearchTool.DocumentAdded):
            self._added[(event.tenant, event.tool_id, event.document_id)] = (event.name, event.media_type)
            return None
        if isinstance(event, SearchTool.DocumentEmbedded):
            key = (event.tenant, event.tool_id, event.document_id)
            if key in self._added:  # its extraction's: indexed with its DocumentReady
                self._embedded[key] = (event.model, event.vectors_sha256)
                return None
            return self._embedded_again(event)
        if isinstance(event, SearchTool.DocumentReady):
            return self._ready(event)
        if isinstance(event, SearchTool.DocumentFailed):
            self._added.pop((event.tenant, event.tool_id, event.document_id), None)
            self._embedded.pop((event.tenant, event.tool_id, event.document_id), None)
            return None
        if isinstance(event, SearchTool.DocumentRemoved):
            self._added.pop((event.tenant, event.tool_id, event.document_id), None)
            self._embedded.pop((event.tenant, event.tool_id, event.document_id), None)
            return RemoveDocument(event.tenant, event.tool_id, event.document_id)
        if isinstance(event, (SearchTool.Deleted, SearchTool.Recreated)):
            for held in (self._added, self._embedded):
                for key in [k for k in held if k[:2] == (event.tenant, event.tool_id)]:
                    del held[key]
            return DropTool(event.tenant, event.tool_id)
        return None

    def _ready(self, event: Any) -> PutDocument | None:
        where = {"tenant": event.tenant, "tool": event.tool_id, "document": event.document_id}
        key = (event.tenant, event.tool_id, event.document_id)
        added = self._added.pop(key, None)
        embedded = self._embedded.pop(key, None)
        if added is None:
            tool = self._tool_at(event.originator_id, event.originator_version)
            document = tool.documents.get(event.document_id) if tool is not None else None
            if document is None:
                log.warning("a ready document's file name is unknown; not indexed", extra=where)
                return None
            added = (document["name"], document["mediaType"])
            if embedded is None and document.get("vectorsSha256"):
                embedded = (document["embeddingModel"], document["vectorsSha256"])
        name, media_type = added
        try:
            text = self.blobs.get(event.tenant, event.text_sha256).decode("utf-8")
        except KeyError:
            log.warning("a document's text is missing from the blob store; not indexed", extra=where)
            return None
        except UnicodeDecodeError:  # written as UTF-8 by the kind: a damaged blob, which no replay mends
            log.error("a document's text in the blob store is not UTF-8; not indexed", extra=where)
            return None
        chunks = chunk_text(Extracted(text, tuple(event.page_starts or ()), event.title), media_type)
        title = (event.title or "").strip() or name
        model = embedded[0] if embedded is not None else None
        vectors = self._vectors(event.tenant, embedded[1], len(chunks), where) if embedded is not None else None
        if vectors is None:
            model = None
        else:
            chunks = [replace(chunk, vector=vectors[i]) for i, chunk in enumerate(chunks)]
        return PutDocument(event.tenant, event.tool_id, IndexedDocument(event.document_id, title, name, media_type, model),
                           chunks)

    def _embedded_again(self, event: Any) -> PutVectors | None:
        """A ready document embedded again (another model): its chunks' vectors change in place.
        (A position resumed between a document's DocumentAdded and its DocumentReady also comes
        here: the index has no chunk of it yet, so nothing changes, and its DocumentReady reads
        the vectors from the tool as it was.)"""
        where = {"tenant": event.tenant, "tool": event.tool_id, "document": event.document_id}
        try:
            data = self.blobs.get(event.tenant, event.vectors_sha256)
        except KeyError:
            log.warning("a document's new vectors are missing from the blob store; it keeps its vectors", extra=where)
            return None
        size = 4 * VECTOR_DIMENSIONS
        if not data or len(data) % size:
            log.error("a document's new vectors are not whole vectors; it keeps its vectors", extra=where)
            return None
        return PutVectors(event.tenant, event.tool_id, event.document_id, event.model,
                          [data[i:i + size] for i in range(0, len(data), size)])

    def _vectors(self, tenant: str, digest: str, count: int, where: dict[str, str]) -> list[bytes] | None:
        """Each chunk's vector from the blob `DocumentEmbedded` named (None: indexed by words only)."""
        try:
            data = self.blobs.get(tenant, digest)
        except KeyError:
            log.warning("a document's vectors are missing from the blob store; indexed by words only", extra=where)
            return None
        size = 4 * VECTOR_DIMENSIONS
        if len(data) != count * size:
            log.error("a document's vectors are not one per chunk; indexed by words only", extra=where)
            return None
        return [data[i * size:(i + 1) * size] for i in range(count)]
