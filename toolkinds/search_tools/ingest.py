"""A File Search tool's documents coming in and going out (docs/kinds/file-search-tools.md).

An upload's bytes go into the blob store (by SHA-256) and a `DocumentAdded` event (`PROCESSING`)
is recorded; then, in the background, extraction in a separate process with time and memory limits
(`Files.extract`), the text into the blob store too, and a `DocumentReady` event with its SHA-256
and the counts, or `DocumentFailed` with the reason. Nothing here writes the chunk index: its
projection (`chunks`) indexes the text a `DocumentReady` names, after the event, so a document
deleted while it is extracted (its `DocumentReady` is then never recorded) never reaches it. A
document left `PROCESSING` by a process that stopped is extracted again when the service starts
(`start`).

Extraction is shared fairly between tenants (docs/tenants.md, `application.fair_queue`): each tenant's
documents queue apart, a free extraction goes to the tenant running the fewest (round robin among
equals), a tenant runs at most `Files.tenant_workers` at once (`TOOLSMITH_TENANT_MAX_EXTRACTIONS`),
and its smallest file first; a long extraction is lowered in priority by the pool. One upload's
documents all end within `Files.upload_max_seconds` of the upload (`TOOLSMITH_UPLOAD_MAX_SECONDS`):
past it, the one being extracted is stopped and those not reached end `FAILED`, with the reason.
Documents embedded again under a new model (`reembed.py`) queue there too, after the uploads.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from application.commands import Change
from application.fair_queue import FairQueue
from domain.chunking import chunk_text
from domain.documents import PROCESSING, VECTOR_DIMENSIONS, BlobStore, DocumentIndex, Extracted, ExtractionFailed
from domain.errors import InvalidInput, QuotaExceeded, UnknownRecord, Violation
from domain.metadata import merged, schema_of, values_violations
from domain.tenants import DOCUMENTS, STORED_BYTES
from toolkinds.search_tools.model import LABEL, Document, SearchTool, document_id, search_tool_id
from toolkinds.search_tools.reembed import Reembed, Reembedding

if TYPE_CHECKING:
    from toolkinds.search_tools.kind import SearchToolKind

log = logging.getLogger("toolsmith.search_tools")

DOCUMENT = "document"
MAX_FILES = 100
MAX_FILE_NAME = 255


@dataclass(frozen=True)
class Files:
    """What the kind needs to keep documents: the blob store, the chunk index, and extraction
    (`sniff(path, name)` the media type from the bytes; `extract(path, media_type, background=,
    deadline=, overdue=)` in a separate process, raising `ExtractionFailed`, as
    `infrastructure.extraction.ExtractorPool.extract` does), with a folder for the files being
    extracted. `workers` extractions run at once, at most `tenant_workers` of one tenant (unset:
    half the workers, at least one), and one upload's all end within `upload_max_seconds`."""

    blobs: BlobStore
    index: DocumentIndex
    sniff: Callable[[str, str], str]
    extract: Callable[..., Extracted]
    workdir: Path
    workers: int = 2
    tenant_workers: int | None = None
    upload_max_seconds: float = 900.0
    max_upload_bytes: int = 25 * 1_048_576
    close: Callable[[], None] = lambda: None
    # A query's vector (model, float32 bytes): by the service's model, or (`model=`) for the vectors
    # of that model (a change of model under way); None: search is lexical only.
    embed_query: Callable[..., tuple[str, bytes]] | None = None
    # The service's embedding model (what documents of another are embedded again by, `reembed.py`)
    # and a text's vectors in an extraction worker (`ExtractorPool.embed`).
    embedding_model: str | None = None
    embed: Callable[..., tuple[str, bytes]] | None = None


@dataclass(frozen=True)
class Upload:
    """One uploaded file, spooled to `path` (the kind takes it over: it is gone after its extraction)."""

    name: str
    path: Path


@dataclass(frozen=True)
class _Extraction:
    """A document waiting for its extraction: the file spooled for it, and its upload's deadline."""

    tenant: str
    name: str
    document: Document
    path: Path
    deadline: float | None


class Ingest:
    """The kind's documents pipeline: uploads, deletes, the extraction queue and its pool of
    workers (made at the first upload), and recording each extraction's outcome. It reads the
    kind's `files` at each use (never keeps them), and its tools through the kind."""

    def __init__(self, kind: SearchToolKind) -> None:
        self.kind = kind
        self._extractions: FairQueue[_Extraction | Reembed] | None = None
        self._extractions_lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition()
        self._closed = False
        self.reembedding = Reembedding(self)

    @property
    def pending(self) -> int:
        """Documents queued for extraction or being extracted now (the metrics' extraction queue)."""
        return self._pending

    def extractions_by_tenant(self) -> dict[str, tuple[int, int]]:
        """Each tenant's extractions queued and running now (the metrics' per-tenant figures)."""
        extractions = self._extractions
        return extractions.by_tenant() if extractions is not None else {}

    @property
    def files(self) -> Files:
        return self.kind.files

    # -- commands: documents -------------------------------------------------------------------

    def upload(self, tenant: str, name: str, uploads: Sequence[Upload], *, by: str,
               metadata: dict[str, Any] | None = None) -> list[Document]:
        """Adds each file as a document (`PROCESSING`) and starts its extraction; the same bytes
        the tool has already are the document it has (202 either way). `metadata`, checked
        against the tool's schema before any byte is kept, becomes each document's (the one
        the tool had too). Takes over the files."""
        files = self.files
        deps = self.kind.deps
        taken: list[tuple[Upload, str, int, str]] = []
        new: list[tuple[Document, Upload]] = []
        quotas = deps.quotas
        try:
            if not uploads:
                raise InvalidInput([Violation("files", "DOC", "no file was uploaded (the multipart field is `files`)")])
            if len(uploads) > MAX_FILES:
                raise InvalidInput([Violation("files", "DOC", f"at most {MAX_FILES} files per upload, got {len(uploads)}")])
            known = self.kind.get(tenant, name)  # an unknown tool is 404 before any byte is stored
            kept = self._checked_metadata(known, metadata) if metadata is not None else None
            if quotas is not None and quotas.limited(tenant, DOCUMENTS, STORED_BYTES):
                # Refused before any byte is kept (and checked again, exactly, under the lock below).
                quotas.check_all(tenant, _adding(known, [(_sha256(upload.path), upload.path.stat().st_size) for upload in uploads]))
            for upload in uploads:
                with open(upload.path, "rb") as source:
                    sha256, size = files.blobs.put(tenant, source)
                taken.append((upload, sha256, size, files.sniff(str(upload.path), upload.name)))
            added: list[Document] = []

            changed = [False]

            def attempt() -> Change[None]:
                added.clear()
                new.clear()
                changed[0] = False
                tool = self._for_update(tenant, name)
                for upload, sha256, size, media_type in taken:
                    document, is_new = tool.add_document(sha256, _file_name(upload.name), media_type, size, by)
                    if kept is not None and tool.set_metadata(document["id"], self._checked_metadata(tool, kept), by):
                        changed[0] = True
                        document = tool.documents[document["id"]]
                    added.append(document)
                    if is_new:
                        new.append((document, upload))
                        if not files.blobs.exists(tenant, sha256):  # a delete's clean-up took it meanwhile
                            with open(upload.path, "rb") as source:
                                files.blobs.put(tenant, source)
                if new and quotas is not None:
                    quotas.check_all(tenant, {DOCUMENTS: len(new), STORED_BYTES: sum(int(document["size"]) for document, _ in new)})
                return Change(None, save=[tool] if new or changed[0] else [], subject=deps.commands.subject(tool, name))

            deps.commands.run(attempt, name=name, lock=tenant)
        except BaseException as error:
            for upload in uploads:
                upload.path.unlink(missing_ok=True)
            if isinstance(error, QuotaExceeded):
                # Refused under the lock after the bytes were kept (another upload took the room
                # meanwhile): the bytes that no document holds go.
                self.collect(tenant, [document for document, _ in new])
            raise
        queued = {id(upload) for _, upload in new}
        for upload in uploads:
            if id(upload) not in queued:
                upload.path.unlink(missing_ok=True)
        deadline = time.monotonic() + files.upload_max_seconds  # one upload's documents, all
        for document, upload in new:
            self._queue(tenant, name, document, upload.path, deadline)
        log.info("documents uploaded", extra={"tenant": tenant, "tool": name, "files": len(uploads), "new": len(new)})
        return added

    def set_metadata(self, tenant: str, name: str, doc_id: str, metadata: Any, *, by: str, merge: bool = False) -> Document:
        """Makes `metadata` the document's (`merge`: a JSON merge patch of what it has, null
        removing a key), checked against the tool's schema under the tenant's lock."""
        if not isinstance(metadata, dict):
            raise InvalidInput([Violation("metadata", "DOC", "must be a JSON object of key -> value")])
        deps = self.kind.deps
        answer: list[Document] = []

        def attempt() -> Change[None]:
            tool = self._for_update(tenant, name)
            document = tool.documents.get(doc_id)
            if document is None:
                raise UnknownRecord(DOCUMENT, doc_id)
            wanted = merged(document.get("metadata") or {}, metadata) if merge else metadata
            changed = tool.set_metadata(doc_id, self._checked_metadata(tool, wanted), by)
            answer[:] = [tool.documents[doc_id]]
            return Change(None, save=[tool] if changed else [], subject=deps.commands.subject(tool, name))

        deps.commands.run(attempt, name=name, lock=tenant)
        return answer[0]

    def _for_update(self, tenant: str, name: str) -> SearchTool:
        """The tool `name`, loaded to be changed (in a command's attempt); UnknownRecord if it is gone."""
        tool = self.kind._load(search_tool_id(tenant, name), for_update=True)
        if tool is None or tool.deleted:
            raise UnknownRecord(LABEL, name)
        return tool

    @staticmethod
    def _checked_metadata(tool: SearchTool, metadata: Any) -> dict[str, Any]:
        kept, found = values_violations(schema_of(tool.config), metadata)
        if found:
            raise InvalidInput(found)
        return kept

    def delete_document(self, tenant: str, name: str, doc_id: str, *, by: str) -> int | None:
        """The document is gone from every capability's answers when this returns."""
        deps = self.kind.deps
        gone: list[Document] = []

        def attempt() -> Change[None]:
            tool = self._for_update(tenant, name)
            if doc_id not in tool.documents:
                raise UnknownRecord(DOCUMENT, doc_id)
            gone[:] = [tool.remove_document(doc_id, by)]
            return Change(None, save=[tool], subject=deps.commands.subject(tool, name))

        _, position = deps.commands.run(attempt, name=name, lock=tenant)
        self.collect(tenant, gone)
        return position

    def collect(self, tenant: str, gone: Sequence[Document]) -> None:
        """Deletes the blobs of `gone` documents that no other document of the tenant holds."""
        deps = self.kind.deps
        files = deps.resources.get(self.kind.call_type)
        if files is None or not gone:
            return

        def attempt() -> Change[None]:
            held: set[str] = set()
            for tool in self.kind.tools(tenant):
                for document in tool.documents.values():
                    held.update(h for h in _blobs_of(document) if h)
            for document in gone:
                for digest in _blobs_of(document):
                    if digest and digest not in held:
                        files.blobs.delete(tenant, digest)
            return Change(None)

        # Under the tenant's lock: an upload of the same bytes records its document under it too.
        deps.commands.run(attempt, name="documents", lock=tenant)

    # -- extraction ----------------------------------------------------------------------------

    def start(self) -> None:
        """Extracts again what a stopped process left `PROCESSING` (in the background)."""
        if self.kind.deps.resources.get(self.kind.call_type) is None:
            return
        threading.Thread(target=self._resume, name="toolsmith-documents-resume", daemon=True).start()

    def _resume(self) -> None:
        self._resume_extractions()
        try:
            # After the extractions resumed: those embed by the service's model already.
            self.reembedding.queue_all()
        except Exception:
            log.exception("documents of another embedding model could not be queued to be embedded again")

    def _resume_extractions(self) -> None:
        try:
            for tool in self.kind._all():
                if tool.deleted:
                    continue
                deadline = time.monotonic() + self.files.upload_max_seconds  # a tool's resumed documents: one upload
                for document in tool.documents.values():
                    if document["state"] == PROCESSING and not self._closed:
                        path = self._spool_blob(tool.tenant, document["sha256"])
                        if path is not None:
                            self._queue(tool.tenant, tool.tool_id, document, path, deadline)
        except Exception:
            log.exception("documents left processing could not be resumed")

    def _spool_blob(self, tenant: str, sha256: str) -> Path | None:
        files = self.files
        handle, path = tempfile.mkstemp(prefix="resume-", dir=files.workdir)
        try:
            with os.fdopen(handle, "wb") as target:
                files.blobs.copy_to(tenant, sha256, target)
        except KeyError:
            Path(path).unlink(missing_ok=True)
            return None
        return Path(path)

    def _queue(self, tenant: str, name: str, document: Document, path: Path, deadline: float) -> None:
        job = _Extraction(tenant, name, dict(document), path, deadline)
        self.queue_job(tenant, job, size=int(document["size"]), deadline=deadline)

    def queue_job(self, tenant: str, job: _Extraction | Reembed, *, size: int, deadline: float | None = None) -> None:
        """Queues an extraction or a re-embedding (`reembed.py`) for the workers, fairly between tenants."""
        files = self.files
        with self._idle:
            self._pending += 1
        with self._extractions_lock:
            if self._closed:  # the service is stopping: the document stays PROCESSING, extracted at the next start
                self._job_done(job)
                return
            if self._extractions is None:
                per_tenant = files.tenant_workers or max(1, files.workers // 2)
                self._extractions = FairQueue(self._extract, self._overdue, workers=files.workers,
                                              per_tenant=min(per_tenant, files.workers), name="toolsmith-extract")
            extractions = self._extractions
        try:
            extractions.put(tenant, job, size=size, deadline=deadline)
        except RuntimeError:  # closed meanwhile: the document stays PROCESSING, extracted at the next start
            self._job_done(job)

    def _job_done(self, job: _Extraction | Reembed) -> None:
        if isinstance(job, Reembed):
            self.reembedding._finished(job)
            self._done(None)
        else:
            self._done(job.path)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Whether every queued extraction finished within `timeout` (tests and the CLI)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def _extract(self, job: _Extraction | Reembed, background: bool) -> None:
        if isinstance(job, Reembed):
            try:
                self.reembedding.run(job)
            finally:
                self._done(None)
            return
        self._process(job.tenant, job.name, job.document, job.path, background=background, deadline=job.deadline)

    def _overdue(self, job: _Extraction | Reembed) -> None:
        """A document its upload's time ran out for before its turn came: FAILED, with the reason."""
        if isinstance(job, Reembed):  # queued with no deadline: never
            self._job_done(job)
            return
        try:
            self._record(job.tenant, job.name, job.document["id"], failed=self._overdue_reason())
            log.info("document failed", extra={"tenant": job.tenant, "tool": job.name, "document": job.document["id"],
                                               "reason": "its upload's time limit passed before its extraction"})
        except Exception:
            log.exception("the failure could not be recorded", extra={"tenant": job.tenant, "tool": job.name,
                                                                      "document": job.document["id"]})
        finally:
            self._done(job.path)

    def _overdue_reason(self) -> str:
        return (f"its upload's documents were not all extracted within {self.files.upload_max_seconds:g} s (the limit "
                f"for one upload); upload this file again, alone or with fewer files")

    def _done(self, path: Path | None) -> None:
        """The extraction of the file at `path` is over (or will not happen in this process)."""
        if path is not None:
            path.unlink(missing_ok=True)
        with self._idle:
            self._pending -= 1
            self._idle.notify_all()

    def _process(self, tenant: str, name: str, document: Document, path: Path, *, background: bool = False,
                 deadline: float | None = None) -> None:
        files = self.files
        doc_id = document["id"]
        started = time.perf_counter()
        try:
            try:
                extracted = files.extract(str(path), document["mediaType"], background=background, deadline=deadline,
                                          overdue=self._overdue_reason())
                found = chunk_text(extracted, document["mediaType"])
                if not found:
                    raise ExtractionFailed("the document holds no text to search")
                text = extracted.text
                text_sha = files.blobs.put_bytes(tenant, text.encode("utf-8"))
                vectors = _vectors(extracted, len(found), where={"tenant": tenant, "tool": name, "document": doc_id})
                vectors_sha = files.blobs.put_bytes(tenant, vectors) if vectors is not None else None
            except ExtractionFailed as failure:
                self._record(tenant, name, doc_id, failed=failure.reason)
                # The reason's words only: what a parser said in parentheses may quote the document.
                log.info("document failed", extra={"tenant": tenant, "tool": name, "document": doc_id,
                                                   "reason": failure.reason.split(" (", 1)[0]})
                return
            # The chunk projection indexes the text once this is recorded (not at all when the
            # document was deleted meanwhile: nothing is recorded then).
            self._record(tenant, name, doc_id, ready=(text_sha, text, len(found), list(extracted.page_starts),
                                                      extracted.title),
                         embedded=(extracted.model, vectors_sha, vectors) if vectors_sha is not None else None)
            log.info("document ready", extra={"tenant": tenant, "tool": name, "document": doc_id, "characters": len(text),
                                              "chunks": len(found), "millis": round((time.perf_counter() - started) * 1000)})
        except Exception:
            log.exception("document extraction failed unexpectedly", extra={"tenant": tenant, "tool": name, "document": doc_id})
            try:
                self._record(tenant, name, doc_id, failed="extraction failed unexpectedly; the error is in the service's log")
            except Exception:
                log.exception("the failure could not be recorded", extra={"tenant": tenant, "tool": name, "document": doc_id})
        finally:
            self._done(path)

    def _record(self, tenant: str, name: str, doc_id: str, *, failed: str | None = None,
                ready: tuple[str, str, int, list[int], str | None] | None = None,
                embedded: tuple[str | None, str, bytes] | None = None) -> bool:
        files = self.files
        deps = self.kind.deps
        done = [False]

        def attempt() -> Change[None]:
            tool = self.kind._load(search_tool_id(tenant, name), for_update=True)
            if tool is None or tool.deleted:
                done[0] = False
                return Change(None)
            if ready is not None:
                text_sha, text, count, page_starts, title = ready
                if not files.blobs.exists(tenant, text_sha):  # a delete's clean-up took it meanwhile
                    files.blobs.put_bytes(tenant, text.encode("utf-8"))
                if embedded is not None and embedded[0]:
                    model, vectors_sha, vectors = embedded
                    if not files.blobs.exists(tenant, vectors_sha):
                        files.blobs.put_bytes(tenant, vectors)
                    tool.document_embedded(doc_id, model, vectors_sha)
                done[0] = tool.document_ready(doc_id, text_sha, len(text), count, page_starts, title)
            else:
                done[0] = tool.document_failed(doc_id, failed or "extraction failed")
            return Change(None, save=[tool] if done[0] else [], subject=deps.commands.subject(tool, name))

        deps.commands.run(attempt, name=name, lock=tenant)
        return done[0]

    def close(self) -> None:
        """Stops the pool; what never started stays `PROCESSING`, extracted again at the next start."""
        self._closed = True
        with self._extractions_lock:
            extractions, self._extractions = self._extractions, None
        if extractions is not None:
            for job in extractions.close():
                self._job_done(job)


def _blobs_of(document: Document) -> tuple[str | None, ...]:
    """The blobs a document holds: its bytes, its text and its chunks' vectors."""
    return document["sha256"], document["textSha256"], document.get("vectorsSha256")


def _vectors(extracted: Extracted, chunks: int, where: dict[str, str]) -> bytes | None:
    """The worker's vectors when they are one per chunk of the model's size (else the document is
    indexed by its words only, and the log says why)."""
    if extracted.vectors is None or not extracted.model:
        return None
    if len(extracted.vectors) != chunks * 4 * VECTOR_DIMENSIONS:
        log.warning("the extraction's vectors are not one per chunk; indexed by words only",
                    extra={**where, "bytes": len(extracted.vectors), "chunks": chunks})
        return None
    return extracted.vectors


def _file_name(given: str) -> str:
    """A file name as a person gave it, without any folder, control character or excess length."""
    name = (given or "").replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(c for c in name if c.isprintable()).strip()
    return name[:MAX_FILE_NAME] or "document"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while piece := source.read(1_048_576):
            digest.update(piece)
    return digest.hexdigest()


def _adding(tool: SearchTool, uploaded: Sequence[tuple[str, int]]) -> dict[str, int]:
    """What (sha256, size) files would add to the tool's documents and their bytes (docs/tenants.md):
    the bytes it has already, or has twice in the upload, are one document."""
    new: dict[str, int] = {}
    for sha256, size in uploaded:
        doc_id = document_id(sha256)
        if doc_id not in tool.documents:
            new.setdefault(doc_id, size)
    return {DOCUMENTS: len(new), STORED_BYTES: sum(new.values())}
