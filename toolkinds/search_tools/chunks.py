"""The File Search chunk index as the kind writes and reads it (docs/kinds/file-search-tools.md).

Every touch of the chunk index (`DocumentIndex`: an SQLite FTS5 file, or OpenSearch) goes through
here: a ready document's chunks put, a deleted document's or tool's taken out, the capabilities'
searches and chunk ranges, and `rebuild`, which makes the index again from the events and the blobs
(the index is a read model of them). Chunking itself is `domain.chunking`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from domain.chunking import chunk_text
from domain.documents import BlobStore, Chunk, DocumentIndex, Extracted, Hit, IndexedDocument, StoredChunk
from toolkinds.search_tools.model import Document, SearchTool

log = logging.getLogger("toolsmith.search_tools")

REBUILD_BATCH_CHARS = 8_000_000  # a rebuild writes the chunks of documents of about this much text at once


def put_document(index: DocumentIndex, tenant: str, name: str, document: Document, title: str,
                 chunks: Sequence[Chunk]) -> None:
    """A document's chunks, searchable under `title` (before its `DocumentReady` is recorded)."""
    index.put(tenant, name, IndexedDocument(document["id"], title, document["name"], document["mediaType"]), chunks)


def remove_document(index: DocumentIndex, tenant: str, name: str, doc_id: str) -> None:
    index.remove(tenant, name, doc_id)


def drop_tool(index: DocumentIndex, tenant: str, name: str) -> None:
    index.drop(tenant, name)


def search(index: DocumentIndex, tenant: str, name: str, terms: Sequence[str], limit: int,
           document_ids: Sequence[str] | None) -> list[Hit]:
    return index.search(tenant, name, terms, limit, document_ids)


def chunk_range(index: DocumentIndex, tenant: str, name: str, doc_id: str, first: int, last: int) -> list[StoredChunk]:
    """The document's chunks numbered `first` to `last`, in order (those that exist)."""
    return index.chunks(tenant, name, doc_id, first, last)


def rebuild(blobs: BlobStore, index: DocumentIndex, ready: Sequence[tuple[SearchTool, Document]],
            progress: Callable[[int, int], None] | None = None) -> int:
    """Makes the chunk index again from the `ready` documents' texts in the blob store, chunked
    again. Answers the chunks indexed."""
    index.clear()
    total = 0
    batch: list[tuple[str, str, IndexedDocument, list[Any]]] = []
    batch_chars = 0
    for i, (tool, document) in enumerate(ready, 1):
        try:
            text = blobs.get(tool.tenant, document["textSha256"]).decode("utf-8")
        except KeyError:
            log.warning("a document's text is missing from the blob store", extra={
                "tenant": tool.tenant, "tool": tool.tool_id, "document": document["id"]})
            continue
        extracted = Extracted(text, tuple(document["pageStarts"] or ()), document["title"])
        chunks = chunk_text(extracted, document["mediaType"])
        title = (document["title"] or "").strip() or document["name"]
        batch.append((tool.tenant, tool.tool_id, IndexedDocument(document["id"], title, document["name"],
                                                                 document["mediaType"]), chunks))
        batch_chars += len(text)
        total += len(chunks)
        if batch_chars >= REBUILD_BATCH_CHARS or i == len(ready):
            index.put_many(batch)
            batch, batch_chars = [], 0
        if progress is not None:
            progress(i, len(ready))
    if batch:
        index.put_many(batch)
    return total
