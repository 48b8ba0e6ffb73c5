"""Embedding documents again when the service's embedding model changed (docs/kinds/file-search-tools.md,
"Embedding model").

At start (`Ingest.start`), every `READY` document whose vectors are of another model than the
service's (`TOOLSMITH_EMBEDDING_MODEL`, or the same choice of another package version) is queued
for the extraction workers, in the extraction queue itself: the same workers, the same fair share
between tenants and per-tenant limit, after the tenant's uploads (a re-embedding is the largest of
jobs there). A job chunks the document's text from the blob store as the chunk index does, embeds
it in a worker, keeps the vectors as a blob and records a `DocumentEmbedded` naming the new model;
the chunk projection then gives the document's chunks the new vectors in place. Documents
uploaded meanwhile are embedded by the new model by their extraction.

Search keeps answering meanwhile: a tool's documents are of one model or the other, and a query is
embedded by each model its documents have, each model's nearest merged by rank
(`domain.retrieval.by_rank`), so no document is ever missing from semantic results. The progress
is the tool's documents by the service's model out of its documents with vectors (`progress`:
the REST route `GET …/search-tools/{id}/embedding`, the tool's console page, the logs). A document
whose re-embedding fails keeps its vectors (and stays found by them) and is tried again at the
next start, or when an admin asks (`POST …/search-tools/{id}/embedding`). Once a tool is done, the old vectors' blobs that no document holds are deleted.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from application.commands import Change
from domain.documents import READY, VECTOR_DIMENSIONS, ExtractionFailed
from toolkinds.search_tools.model import Document, SearchTool, search_tool_id

if TYPE_CHECKING:
    from toolkinds.search_tools.ingest import Ingest

log = logging.getLogger("toolsmith.search_tools")

# A re-embedding's place in its tenant's queue: after every upload (the queue takes the smallest first).
QUEUE_SIZE = 1 << 50


@dataclass(frozen=True)
class Reembed:
    """A document to embed again: its tool, id and the text it had when queued."""

    tenant: str
    name: str
    document_id: str
    text_sha256: str


def stale(document: Document, model: str) -> bool:
    """Whether a document has vectors of another model than `model`."""
    return document["state"] == READY and bool(document.get("embeddingModel")) and document["embeddingModel"] != model


def progress(tool: SearchTool, model: str | None) -> dict[str, Any]:
    """`{"model", "documents", "embedded"}`: the tool's documents with vectors, those by `model`."""
    embedded = [d for d in tool.documents.values() if d["state"] == READY and d.get("embeddingModel")]
    done = sum(1 for d in embedded if d["embeddingModel"] == model)
    return {"model": model, "documents": len(embedded), "embedded": done}


def models_of(tool: SearchTool, model: str | None) -> list[str]:
    """The models whose vectors a search of the tool reads: the service's, and any other its
    documents still have (a change under way)."""
    found = dict.fromkeys([model] if model else [])
    for document in tool.documents.values():
        if document["state"] == READY and document.get("embeddingModel"):
            found.setdefault(document["embeddingModel"], None)
    return list(found)


class Reembedding:
    """The re-embedding jobs of one service: queued at start, run by `Ingest`'s workers."""

    def __init__(self, ingest: Ingest) -> None:
        self.ingest = ingest
        self._lock = threading.Lock()
        self._left: dict[tuple[str, str], int] = {}  # (tenant, tool) -> jobs not finished
        self._old: dict[tuple[str, str], set[str]] = {}  # (tenant, tool) -> vectors' blobs replaced

    def queue_all(self) -> int:
        """Queues every stale document of every tool; answers how many."""
        files = self.ingest.files
        model = files.embedding_model
        if model is None or files.embed is None:
            return 0
        return sum(self.queue_tool(tool) for tool in self.ingest.kind._all() if not tool.deleted)

    def queue_tool(self, tool: SearchTool) -> int:
        """Queues the tool's stale documents (none while its re-embedding runs); answers how many."""
        files = self.ingest.files
        model = files.embedding_model
        if model is None or files.embed is None:
            return 0
        key = (tool.tenant, tool.tool_id)
        jobs = [Reembed(tool.tenant, tool.tool_id, d["id"], d["textSha256"]) for d in tool.documents.values() if stale(d, model)]
        with self._lock:
            if not jobs or self._left.get(key, 0) > 0:
                return 0
            self._left[key] = len(jobs)
        log.info("re-embedding started", extra={"tenant": tool.tenant, "tool": tool.tool_id, "model": model,
                                                **progress(tool, model)})
        for job in jobs:
            self.ingest.queue_job(tool.tenant, job, size=QUEUE_SIZE)
        return len(jobs)

    def running(self, tenant: str, name: str) -> bool:
        with self._lock:
            return self._left.get((tenant, name), 0) > 0

    def run(self, job: Reembed) -> None:
        """Embeds the document again and records it (nothing when it changed or went meanwhile)."""
        where = {"tenant": job.tenant, "tool": job.name, "document": job.document_id}
        try:
            self._run(job, where)
        except Exception:
            log.exception("a document could not be embedded again; it keeps its vectors", extra=where)
        finally:
            self._finished(job)

    def _run(self, job: Reembed, where: dict[str, str]) -> None:
        ingest, files = self.ingest, self.ingest.files
        target = files.embedding_model
        tool = ingest.kind._load(search_tool_id(job.tenant, job.name))
        document = tool.documents.get(job.document_id) if tool is not None and not tool.deleted else None
        if document is None or target is None or files.embed is None or not stale(document, target) \
                or document["textSha256"] != job.text_sha256:
            return
        path = ingest._spool_blob(job.tenant, job.text_sha256)
        if path is None:
            log.warning("a document's text is missing from the blob store; it keeps its vectors", extra=where)
            return
        try:
            model, vectors = files.embed(str(path), document["mediaType"], document.get("pageStarts") or (),
                                         document.get("title"), background=True)
        except ExtractionFailed as failure:
            log.warning("a document could not be embedded again; it keeps its vectors",
                        extra={**where, "reason": failure.reason.split(" (", 1)[0]})
            return
        finally:
            path.unlink(missing_ok=True)
        if model != target or len(vectors) != int(document["chunks"] or 0) * 4 * VECTOR_DIMENSIONS:
            log.error("a document's new vectors are not one per chunk by the service's model; it keeps its vectors",
                      extra={**where, "model": model, "bytes": len(vectors)})
            return
        vectors_sha = files.blobs.put_bytes(job.tenant, vectors)
        recorded = self._record(job, model, vectors_sha, vectors)
        if recorded is None:  # changed or gone meanwhile: the new blob goes unless a document holds it
            ingest.collect(job.tenant, [{"sha256": None, "textSha256": None, "vectorsSha256": vectors_sha}])
            return
        old, now = recorded
        if old and old != vectors_sha:
            with self._lock:
                self._old.setdefault((job.tenant, job.name), set()).add(old)
        log.info("document embedded again", extra={**where, **progress(now, target)})

    def _record(self, job: Reembed, model: str, vectors_sha: str, vectors: bytes) -> tuple[str | None, SearchTool] | None:
        """(the vectors' blob it replaced, the tool after) once recorded; None when not."""
        deps, files = self.ingest.kind.deps, self.ingest.files
        answer: list[Any] = []

        def attempt() -> Change[None]:
            answer.clear()
            tool = self.ingest.kind._load(search_tool_id(job.tenant, job.name), for_update=True)
            if tool is None or tool.deleted or job.document_id not in tool.documents:
                return Change(None)
            old = tool.documents[job.document_id].get("vectorsSha256")
            if not files.blobs.exists(job.tenant, vectors_sha):  # a delete's clean-up took it meanwhile
                files.blobs.put_bytes(job.tenant, vectors)
            if not tool.document_embedded_again(job.document_id, model, vectors_sha, job.text_sha256):
                return Change(None)
            answer[:] = [old, tool]
            return Change(None, save=[tool], subject=deps.commands.subject(tool, job.name))

        deps.commands.run(attempt, name=job.name, lock=job.tenant)
        return (answer[0], answer[1]) if answer else None

    def _finished(self, job: Reembed) -> None:
        key = (job.tenant, job.name)
        with self._lock:
            self._left[key] = self._left.get(key, 1) - 1
            if self._left[key] > 0:
                return
            del self._left[key]
            old = self._old.pop(key, set())
        try:
            if old:  # the tool is done: the vectors it no longer holds, unless another document does
                self.ingest.collect(job.tenant, [{"sha256": None, "textSha256": None, "vectorsSha256": d} for d in old])
            tool = self.ingest.kind._load(search_tool_id(job.tenant, job.name))
            if tool is not None:
                log.info("re-embedding done", extra={"tenant": job.tenant, "tool": job.name,
                                                     **progress(tool, self.ingest.files.embedding_model)})
        except Exception:
            log.exception("the re-embedding's end could not be recorded", extra={"tenant": job.tenant, "tool": job.name})
