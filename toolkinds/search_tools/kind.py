"""File Search tools as a kind of tool (callType FILE_SEARCH; docs/kinds/index.md, docs/kinds/file-search-tools.md).

One File Search tool registers one MCP tool per enabled capability, `<toolName>_<capability>`,
all read-only: `search` (ranked chunks with the matching words marked), `fetch` (a document's text
in pages, from a document or a chunk id), `list_documents`, `find_text` (a literal phrase, no
regular expression) and `read_context` (a chunk's neighbours). R2 holds the tool's name and all
five capability names, enabled or not, so that switching a capability on never collides.

Documents go: the upload's bytes into the blob store (by SHA-256) and a `DocumentAdded` event
(`PROCESSING`); then, in the background, extraction in a separate process with time and memory
limits (`Files.extract`), the text into the blob store too, its chunks into the chunk index, and
a `DocumentReady` event with the counts, or `DocumentFailed` with the reason. The index is a read
model of the events and the blobs: `rebuild` makes it again from them. A document deleted while it
is extracted never reaches the index (its chunks are taken out again if they got there first).

A document left `PROCESSING` by a process that stopped is extracted again when the service starts.

Extraction is shared fairly between tenants (docs/tenants.md, `application.fair_queue`): each tenant's
documents queue apart, a free extraction goes to the tenant running the fewest (round robin among
equals), a tenant runs at most `Files.tenant_workers` at once (`TOOLSMITH_TENANT_MAX_EXTRACTIONS`),
and its smallest file first; a long extraction is lowered in priority by the pool. One upload's
documents all end within `Files.upload_max_seconds` of the upload (`TOOLSMITH_UPLOAD_MAX_SECONDS`):
past it, the one being extracted is stopped and those not reached end `FAILED`, with the reason.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import re
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.commands import Change
from application.fair_queue import FairQueue
from application.kinds.base import Ranked, ToolKind, Tools, tagged, validated
from domain.catalog import ToolEntry
from domain.chunking import chunk_text
from domain.documents import (
    MAX_QUERY_CHARS, PROCESSING, READY, BlobStore, DocumentIndex, Extracted,
    ExtractionFailed, IndexedDocument, IndexUnavailable, query_terms, split_chunk_id,
)
from domain.errors import (
    DocumentsUnavailable, IdTaken, InUse, InvalidDefinition, InvalidInput, QuotaExceeded, ToolNotCallable, UnknownRecord, Violation,
)
from domain.ports import ExecutionError, ExecutionResult
from domain.rules import id_violations
from toolkinds.search_tools.model import (
    CAPABILITIES, FILE_SEARCH, Config, Document, SearchTool, cap_key, capability_name, capability_names, document_id,
    enabled_capabilities, given_violations, name_violations, normalise, search_tool_id, violations,
)
from domain.tenants import DOCUMENTS, STORED_BYTES, TOOLS

log = logging.getLogger("toolsmith.search_tools")

SEARCH_TAG = "search"
LABEL = "File Search tool"
DOCUMENT = "document"
MAX_FILES = 100
MAX_FILE_NAME = 255
CONTEXT_CHARS = 120  # find_text: the characters shown either side of a match
MAX_DOCUMENT_IDS = 100
TEXT_CACHE_CHARS = 64_000_000  # decoded texts kept for fetch and find_text
REBUILD_BATCH_CHARS = 8_000_000  # a rebuild writes the chunks of documents of about this much text at once
# Longest suffix first, so that `a_list_documents` is never read as a tool `a_list`.
_SUFFIXES = sorted(CAPABILITIES, key=len, reverse=True)


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


@dataclass(frozen=True)
class Upload:
    """One uploaded file, spooled to `path` (the kind takes it over: it is gone after its extraction)."""

    name: str
    path: Path


class SearchToolKind(ToolKind):
    call_type = FILE_SEARCH
    label = LABEL

    def __init__(self, deps: Any) -> None:
        super().__init__(deps)
        self._extractions: FairQueue[_Extraction] | None = None
        self._extractions_lock = threading.Lock()
        self._pending = 0
        self._idle = threading.Condition()
        self._texts: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._texts_chars = 0
        self._texts_lock = threading.Lock()
        self._closed = False

    @property
    def files(self) -> Files:
        files = getattr(self.deps, "files", None)
        if files is None:
            raise DocumentsUnavailable("documents are not configured in this service")
        return files

    # -- queries -------------------------------------------------------------------------------

    def _all(self) -> Iterator[SearchTool]:
        """Every File Search tool of every tenant ever created (deleted ones too), once each."""
        for aggregate_id in self.deps.store.originators_of(SearchTool.Created):
            tool = self._load(aggregate_id)
            if tool is not None:
                yield tool

    def tools(self, tenant: str) -> list[SearchTool]:
        """Every live File Search tool of `tenant`, by name."""
        found = {t.tool_id: t for t in self._all() if t.tenant == tenant and not t.deleted}
        return [found[name] for name in sorted(found)]

    def find(self, tenant: str, name: str) -> SearchTool | None:
        if not isinstance(name, str) or id_violations(name):
            return None
        tool = self._load(search_tool_id(tenant, name))
        return tool if tool is not None and not tool.deleted else None

    def get(self, tenant: str, name: str) -> SearchTool:
        tool = self.find(tenant, name)
        if tool is None:
            raise UnknownRecord(LABEL, name)
        return tool

    def events(self, tenant: str, name: str) -> list[Any]:
        if not isinstance(name, str) or id_violations(name):
            return []
        return self.deps.store.stored_events(search_tool_id(tenant, name))

    def _load(self, aggregate_id: UUID, *, for_update: bool = False) -> SearchTool | None:
        try:
            return self.deps.store.repository.get(aggregate_id, deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return None

    def documents(self, tenant: str, name: str, *, after: str | None = None, limit: int = 50,
                  state: str | None = None) -> tuple[list[Document], str | None]:
        """A page of the tool's documents by name then id, and the cursor of the next page (None at the end)."""
        tool = self.get(tenant, name)
        rows = sorted(tool.documents.values(), key=lambda d: (d["name"], d["id"]))
        if state is not None:
            rows = [d for d in rows if d["state"] == state]
        return _page(rows, after, limit)

    def document(self, tenant: str, name: str, doc_id: str) -> Document:
        document = self.get(tenant, name).documents.get(doc_id)
        if document is None:
            raise UnknownRecord(DOCUMENT, doc_id)
        return document

    # -- commands: the tool --------------------------------------------------------------------

    def save(self, tenant: str, name: str, given: dict[str, Any], *, by: str, create: bool,
             expected: int | None = None) -> tuple[SearchTool, int | None]:
        """POST (create) or PUT (replace) a tool's configuration; live at once."""
        config = normalise(given)
        found = id_violations(name) + name_violations(name) + given_violations(given) + violations(config)
        if found:
            raise InvalidDefinition(found)
        aggregate_id = search_tool_id(tenant, name)

        def attempt() -> Change[SearchTool]:
            existing = self._load(aggregate_id, for_update=True)
            live = existing is not None and not existing.deleted
            if create:
                if live:
                    raise IdTaken(name, LABEL)
                for held in (name, *capability_names(name)):  # R2 across every kind, each capability's name too
                    holder = self.deps.names.holder_of(tenant, held, besides=self.label)
                    if holder is not None:
                        raise IdTaken(held, holder)
                if self.deps.quotas is not None:  # under the tenant's lock, as docs/tenants.md asks
                    self.deps.quotas.check(tenant, TOOLS)
                if existing is None:
                    tool = SearchTool(tenant=tenant, tool_id=name, config=config, by=by)
                else:
                    tool = existing
                    tool.recreate(config, by)
                return Change(tool, save=[tool], subject=self.deps.commands.subject(tool, name))
            if not live:
                raise UnknownRecord(LABEL, name)
            assert existing is not None
            subject = self.deps.commands.subject(existing, name, expected)
            changed = existing.change(config, by)
            return Change(existing, save=[existing] if changed else [], subject=subject)

        return self.deps.commands.run(attempt, name=name, lock=tenant)

    def set_enabled(self, tenant: str, name: str, enabled: bool, *, by: str) -> tuple[SearchTool, int | None]:
        tool = self.get(tenant, name)
        return self.save(tenant, name, {**tool.config, "enabled": enabled}, by=by, create=False)

    def delete(self, tenant: str, name: str, *, by: str) -> int | None:
        """Deletes the tool and its documents; refused (R12) while a plan or an agent names it or
        one of its capabilities."""
        gone: list[Document] = []

        def attempt() -> Change[None]:
            tool = self._load(search_tool_id(tenant, name), for_update=True)
            if tool is None or tool.deleted:
                raise UnknownRecord(LABEL, name)
            registry = self.deps.store.registry(tenant)
            users: dict[str, list[str]] = {}
            for held in (name, *capability_names(name)):
                for kind, names in registry.users_of(held).items():
                    users.setdefault(kind, []).extend(n for n in names if n not in users.get(kind, []))
            if any(users.values()):
                raise InUse(name, users)
            gone[:] = list(tool.documents.values())
            tool.delete(by)
            return Change(None, save=[tool], subject=self.deps.commands.subject(tool, name))

        _, position = self.deps.commands.run(attempt, name=name, lock=tenant)
        files = getattr(self.deps, "files", None)
        if files is not None:
            files.index.drop(tenant, name)
            self._collect(tenant, gone)
        return position

    # -- commands: documents -------------------------------------------------------------------

    def upload(self, tenant: str, name: str, uploads: Sequence[Upload], *, by: str) -> list[Document]:
        """Adds each file as a document (`PROCESSING`) and starts its extraction; the same bytes
        the tool has already are the document it has (202 either way). Takes over the files."""
        files = self.files
        taken: list[tuple[Upload, str, int, str]] = []
        new: list[tuple[Document, Upload]] = []
        quotas = self.deps.quotas
        try:
            if not uploads:
                raise InvalidInput([Violation("files", "DOC", "no file was uploaded (the multipart field is `files`)")])
            if len(uploads) > MAX_FILES:
                raise InvalidInput([Violation("files", "DOC", f"at most {MAX_FILES} files per upload, got {len(uploads)}")])
            known = self.get(tenant, name)  # an unknown tool is 404 before any byte is stored
            if quotas is not None and quotas.limited(tenant, DOCUMENTS, STORED_BYTES):
                # Refused before any byte is kept (and checked again, exactly, under the lock below).
                quotas.check_all(tenant, _adding(known, [(_sha256(upload.path), upload.path.stat().st_size) for upload in uploads]))
            for upload in uploads:
                with open(upload.path, "rb") as source:
                    sha256, size = files.blobs.put(tenant, source)
                taken.append((upload, sha256, size, files.sniff(str(upload.path), upload.name)))
            added: list[Document] = []

            def attempt() -> Change[None]:
                added.clear()
                new.clear()
                tool = self._load(search_tool_id(tenant, name), for_update=True)
                if tool is None or tool.deleted:
                    raise UnknownRecord(LABEL, name)
                for upload, sha256, size, media_type in taken:
                    document, is_new = tool.add_document(sha256, _file_name(upload.name), media_type, size, by)
                    added.append(document)
                    if is_new:
                        new.append((document, upload))
                        if not files.blobs.exists(tenant, sha256):  # a delete's clean-up took it meanwhile
                            with open(upload.path, "rb") as source:
                                files.blobs.put(tenant, source)
                if new and quotas is not None:
                    quotas.check_all(tenant, {DOCUMENTS: len(new), STORED_BYTES: sum(int(document["size"]) for document, _ in new)})
                return Change(None, save=[tool] if new else [], subject=self.deps.commands.subject(tool, name))

            self.deps.commands.run(attempt, name=name, lock=tenant)
        except BaseException as error:
            for upload in uploads:
                upload.path.unlink(missing_ok=True)
            if isinstance(error, QuotaExceeded):
                # Refused under the lock after the bytes were kept (another upload took the room
                # meanwhile): the bytes that no document holds go.
                self._collect(tenant, [document for document, _ in new])
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

    def delete_document(self, tenant: str, name: str, doc_id: str, *, by: str) -> int | None:
        """The document is gone from every capability's answers when this returns."""
        gone: list[Document] = []

        def attempt() -> Change[None]:
            tool = self._load(search_tool_id(tenant, name), for_update=True)
            if tool is None or tool.deleted:
                raise UnknownRecord(LABEL, name)
            if doc_id not in tool.documents:
                raise UnknownRecord(DOCUMENT, doc_id)
            gone[:] = [tool.remove_document(doc_id, by)]
            return Change(None, save=[tool], subject=self.deps.commands.subject(tool, name))

        _, position = self.deps.commands.run(attempt, name=name, lock=tenant)
        files = self.files
        files.index.remove(tenant, name, doc_id)
        self._collect(tenant, gone)
        return position

    def _collect(self, tenant: str, gone: Sequence[Document]) -> None:
        """Deletes the blobs of `gone` documents that no other document of the tenant holds."""
        files = getattr(self.deps, "files", None)
        if files is None or not gone:
            return

        def attempt() -> Change[None]:
            held: set[str] = set()
            for tool in self.tools(tenant):
                for document in tool.documents.values():
                    held.update(h for h in (document["sha256"], document["textSha256"]) if h)
            for document in gone:
                for digest in (document["sha256"], document["textSha256"]):
                    if digest and digest not in held:
                        files.blobs.delete(tenant, digest)
            return Change(None)

        # Under the tenant's lock: an upload of the same bytes records its document under it too.
        self.deps.commands.run(attempt, name="documents", lock=tenant)

    # -- extraction ----------------------------------------------------------------------------

    def start(self) -> None:
        """Extracts again what a stopped process left `PROCESSING` (in the background)."""
        if getattr(self.deps, "files", None) is None:
            return
        threading.Thread(target=self._resume, name="toolsmith-documents-resume", daemon=True).start()

    def _resume(self) -> None:
        try:
            for tool in self._all():
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
        files = self.files
        with self._idle:
            self._pending += 1
        with self._extractions_lock:
            if self._closed:  # the service is stopping: the document stays PROCESSING, extracted at the next start
                self._done(path)
                return
            if self._extractions is None:
                per_tenant = files.tenant_workers or max(1, files.workers // 2)
                self._extractions = FairQueue(self._extract, self._overdue, workers=files.workers,
                                              per_tenant=min(per_tenant, files.workers), name="toolsmith-extract")
            extractions = self._extractions
        job = _Extraction(tenant, name, dict(document), path, deadline)
        try:
            extractions.put(tenant, job, size=int(document["size"]), deadline=deadline)
        except RuntimeError:  # closed meanwhile: the document stays PROCESSING, extracted at the next start
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

    def _extract(self, job: _Extraction, background: bool) -> None:
        self._process(job.tenant, job.name, job.document, job.path, background=background, deadline=job.deadline)

    def _overdue(self, job: _Extraction) -> None:
        """A document its upload's time ran out for before its turn came: FAILED, with the reason."""
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

    def _done(self, path: Path) -> None:
        """The extraction of the file at `path` is over (or will not happen in this process)."""
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
                chunks = chunk_text(extracted, document["mediaType"])
                if not chunks:
                    raise ExtractionFailed("the document holds no text to search")
                text = extracted.text
                text_sha = files.blobs.put_bytes(tenant, text.encode("utf-8"))
                title = (extracted.title or "").strip() or document["name"]
                files.index.put(tenant, name, IndexedDocument(doc_id, title, document["name"], document["mediaType"]), chunks)
            except ExtractionFailed as failure:
                self._record(tenant, name, doc_id, failed=failure.reason)
                # The reason's words only: what a parser said in parentheses may quote the document.
                log.info("document failed", extra={"tenant": tenant, "tool": name, "document": doc_id,
                                                   "reason": failure.reason.split(" (", 1)[0]})
                return
            except IndexUnavailable as error:
                self._record(tenant, name, doc_id, failed=f"the search index could not be reached ({error}); upload the file again")
                return
            recorded = self._record(tenant, name, doc_id, ready=(text_sha, text, len(chunks), list(extracted.page_starts),
                                                                 extracted.title))
            if not recorded:  # deleted meanwhile: its chunks must not stay
                files.index.remove(tenant, name, doc_id)
            log.info("document ready", extra={"tenant": tenant, "tool": name, "document": doc_id, "characters": len(text),
                                              "chunks": len(chunks), "millis": round((time.perf_counter() - started) * 1000)})
        except Exception:
            log.exception("document extraction failed unexpectedly", extra={"tenant": tenant, "tool": name, "document": doc_id})
            try:
                self._record(tenant, name, doc_id, failed="extraction failed unexpectedly; the error is in the service's log")
            except Exception:
                log.exception("the failure could not be recorded", extra={"tenant": tenant, "tool": name, "document": doc_id})
        finally:
            self._done(path)

    def _record(self, tenant: str, name: str, doc_id: str, *, failed: str | None = None,
                ready: tuple[str, str, int, list[int], str | None] | None = None) -> bool:
        files = self.files
        done = [False]

        def attempt() -> Change[None]:
            tool = self._load(search_tool_id(tenant, name), for_update=True)
            if tool is None or tool.deleted:
                done[0] = False
                return Change(None)
            if ready is not None:
                text_sha, text, count, page_starts, title = ready
                if not files.blobs.exists(tenant, text_sha):  # a delete's clean-up took it meanwhile
                    files.blobs.put_bytes(tenant, text.encode("utf-8"))
                done[0] = tool.document_ready(doc_id, text_sha, len(text), count, page_starts, title)
            else:
                done[0] = tool.document_failed(doc_id, failed or "extraction failed")
            return Change(None, save=[tool] if done[0] else [], subject=self.deps.commands.subject(tool, name))

        self.deps.commands.run(attempt, name=name, lock=tenant)
        return done[0]

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Makes the chunk index again from the events and the blobs (`toolsmith projections
        rebuild`): every `READY` document's text, chunked again. Answers the chunks indexed."""
        files = self.files
        ready = [(tool, d) for tool in self._all() if not tool.deleted for d in tool.documents.values() if d["state"] == READY]
        files.index.clear()
        total = 0
        batch: list[tuple[str, str, IndexedDocument, list[Any]]] = []
        batch_chars = 0
        for i, (tool, document) in enumerate(ready, 1):
            try:
                text = files.blobs.get(tool.tenant, document["textSha256"]).decode("utf-8")
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
                files.index.put_many(batch)
                batch, batch_chars = [], 0
            if progress is not None:
                progress(i, len(ready))
        if batch:
            files.index.put_many(batch)
        return total

    # -- the catalog and R2 --------------------------------------------------------------------

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        return [entry for tool in self.tools(tenant) for entry in capability_entries(tool)]

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        parsed = _parse(name)
        if parsed is None:
            return None
        tool = self.find(tenant, parsed[0])
        if tool is None:
            return None
        return next((e for e in capability_entries(tool) if e.name == name), None)

    def touched(self, event: Any) -> Collection[str] | None:
        return capability_names(event.tool_id) if isinstance(event, SearchTool.Event) else None

    def holds(self, tenant: str, name: str) -> bool:
        if self.find(tenant, name) is not None:
            return True
        parsed = _parse(name)
        return parsed is not None and self.find(tenant, parsed[0]) is not None

    def members(self, tenant: str, name: str) -> Sequence[str]:
        """A File Search tool named on a server or in a usage profile stands for its capabilities."""
        return capability_names(name) if self.find(tenant, name) is not None else ()

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None:
        tenant, name = state.get("tenant"), state.get("tool_id")
        if isinstance(tenant, str) and isinstance(name, str) and search_tool_id(tenant, name) == aggregate_id:
            return tenant
        return None

    def close(self) -> None:
        self._closed = True
        with self._extractions_lock:
            extractions, self._extractions = self._extractions, None
        if extractions is not None:
            for job in extractions.close():  # never started: PROCESSING, extracted again at the next start
                self._done(job.path)
        files = getattr(self.deps, "files", None)
        if files is not None:
            files.close()

    # -- calls ---------------------------------------------------------------------------------

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: dict[str, Any], tools: Tools, depth: int) -> ExecutionResult:
        parsed = _parse(entry.name)
        tool = self.find(tenant, parsed[0]) if parsed is not None else None
        if tool is None or parsed is None:
            raise ToolNotCallable(entry.name, "no such tool")
        return self.run(tenant, tool, parsed[1], arguments)

    def call_unlisted(self, tenant: str, name: str, arguments: Any, context: dict[str, Any]) -> ExecutionResult | None:
        parsed = _parse(name)
        tool = self.find(tenant, parsed[0]) if parsed is not None else None
        if tool is None or parsed is None:
            if self.find(tenant, name) is not None:
                raise ToolNotCallable(name, f"a File Search tool is called through its capabilities ({', '.join(capability_names(name))})")
            return None
        if not tool.config["enabled"]:
            raise ToolNotCallable(name, "the tool is disabled")
        raise ToolNotCallable(name, f"the capability {parsed[1]!r} is switched off")

    def run_capability(self, tenant: str, name: str, capability: str, arguments: Any) -> ExecutionResult:
        """One capability's call, enabled or not (the console's search box, the REST `search`)."""
        if capability not in CAPABILITIES:
            raise UnknownRecord("capability", capability)
        return self.run(tenant, self.get(tenant, name), capability, arguments)

    def run(self, tenant: str, tool: SearchTool, capability: str, arguments: Any) -> ExecutionResult:
        started = time.perf_counter()
        arguments = validated(capability_schema(capability, tool.config), arguments)
        try:
            output = getattr(self, f"_{capability}")(tenant, tool, arguments)
            result = ExecutionResult(output=output)
        except _Failed as failed:
            result = ExecutionResult(error=ExecutionError(failed.kind, failed.message))
        except IndexUnavailable as error:
            result = ExecutionResult(error=ExecutionError("unavailable", f"the search index cannot be reached now ({error})"))
        return ExecutionResult(output=result.output, error=result.error,
                               duration_millis=round((time.perf_counter() - started) * 1000, 3))

    def _ready(self, tool: SearchTool, document_ids: Sequence[str] | None) -> list[Document]:
        ready = [d for d in tool.documents.values() if d["state"] == READY]
        if document_ids is None:
            return ready
        wanted = set(document_ids)
        return [d for d in ready if d["id"] in wanted]

    def _search(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        terms = query_terms(args["query"])
        if not terms:
            raise InvalidInput([Violation("input.query", "V1", "the query holds no word to search for (only common "
                                                             "words like 'the' or punctuation): add a distinctive word")])
        limit = args.get("maxResults", _default(tool.config, "search"))
        document_ids = args.get("documentIds")
        ready_ids = {d["id"] for d in self._ready(tool, document_ids)}
        if document_ids is not None and not ready_ids:
            return {"query": args["query"], "results": []}
        hits = self.files.index.search(tenant, tool.tool_id, terms, limit, document_ids)
        return {"query": args["query"], "results": [
            {"id": h.chunk_id, "documentId": h.document_id, "title": h.title, "snippet": h.snippet,
             "score": round(h.score, 6), **({"page": h.page} if h.page is not None else {})}
            for h in hits if h.document_id in ready_ids
        ]}

    def _fetch(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        given = args["id"]
        chunk = split_chunk_id(given)
        doc_id = chunk[0] if chunk is not None else given
        document = tool.documents.get(doc_id)
        if document is None:
            raise _Failed("not-found", f"no document {doc_id!r} in {tool.tool_id} (ids come from search or list_documents)")
        if document["state"] != READY:
            raise _Failed("not-ready", f"the document {doc_id!r} is {document['state']}"
                          + (f": {document['reason']}" if document["reason"] else ""))
        text = self._text(tenant, document)
        offset = args.get("offset")
        if offset is None and chunk is not None:
            found = self.files.index.chunks(tenant, tool.tool_id, doc_id, chunk[1], chunk[1])
            if not found:
                raise _Failed("not-found", f"no chunk {given!r} in the document {doc_id!r}")
            offset = found[0].start
        offset = offset or 0
        if offset > len(text):
            raise _Failed("range", f"offset {offset} is past the document's end ({len(text)} characters)")
        size = args.get("maxChars", _default(tool.config, "fetch"))
        end = min(len(text), offset + size)
        return {"id": doc_id, "title": _title(document), "name": document["name"], "text": text[offset:end],
                "offset": offset, "nextOffset": end if end < len(text) else None, "totalCharacters": len(text)}

    def _list_documents(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        prefix = args.get("namePrefix") or ""
        rows = sorted((d for d in self._ready(tool, None) if d["name"].startswith(prefix)), key=lambda d: (d["name"], d["id"]))
        try:
            page, cursor = _page(rows, args.get("cursor"), args.get("limit", _default(tool.config, "list_documents")))
        except InvalidInput:
            raise InvalidInput([Violation("input.cursor", "V1", "is not a cursor this tool gave")]) from None
        return {"documents": [{"id": d["id"], "name": d["name"], "title": _title(d), "mediaType": d["mediaType"],
                               "size": d["size"], "characters": d["characters"], "updatedAt": d["updatedAt"]} for d in page],
                "nextCursor": cursor}

    def _find_text(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        needle = args["text"]
        if not needle.strip():
            raise InvalidInput([Violation("input.text", "V1", "must hold something other than spaces")])
        most = args.get("maxMatches", _default(tool.config, "find_text"))
        flags = 0 if args.get("caseSensitive", False) else re.IGNORECASE
        pattern = re.compile(re.escape(needle), flags)  # a literal: the model's text is never a pattern
        matches: list[dict[str, Any]] = []
        truncated = False
        for document in sorted(self._ready(tool, args.get("documentIds")), key=lambda d: (d["name"], d["id"])):
            text = self._text(tenant, document)
            for found in pattern.finditer(text):
                if len(matches) >= most:
                    truncated = True
                    break
                start, end = found.span()
                matches.append({"documentId": document["id"], "title": _title(document), "offset": start,
                                "text": text[max(0, start - CONTEXT_CHARS):end + CONTEXT_CHARS],
                                "contextOffset": max(0, start - CONTEXT_CHARS)})
            if truncated:
                break
        return {"text": needle, "matches": matches, "truncated": truncated}

    def _read_context(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        given = args["chunkId"]
        parsed = split_chunk_id(given)
        document = tool.documents.get(parsed[0]) if parsed is not None else None
        if parsed is None or document is None or document["state"] != READY:
            raise _Failed("not-found", f"no chunk {given!r} in {tool.tool_id} (chunk ids come from search)")
        default = _default(tool.config, "read_context")
        before, after = args.get("before", default), args.get("after", default)
        n = parsed[1]
        found = self.files.index.chunks(tenant, tool.tool_id, parsed[0], max(0, n - before), n + after)
        if not any(c.n == n for c in found):
            raise _Failed("not-found", f"no chunk {given!r} in the document {parsed[0]!r}")
        return {"chunkId": given, "documentId": parsed[0], "title": _title(document), "chunks": [
            {"id": c.chunk_id, "n": c.n, "start": c.start, "end": c.end, "text": c.text,
             **({"page": c.page} if c.page is not None else {})} for c in found]}

    def _text(self, tenant: str, document: Document) -> str:
        key = (tenant, document["textSha256"])
        with self._texts_lock:
            text = self._texts.get(key)
            if text is not None:
                self._texts.move_to_end(key)
                return text
        try:
            text = self.files.blobs.get(tenant, document["textSha256"]).decode("utf-8")
        except KeyError:
            raise _Failed("not-found", f"the text of {document['id']!r} is missing from the blob store") from None
        with self._texts_lock:
            if key not in self._texts and len(text) <= TEXT_CACHE_CHARS // 4:
                self._texts[key] = text
                self._texts_chars += len(text)
                while self._texts_chars > TEXT_CACHE_CHARS:
                    _, dropped = self._texts.popitem(last=False)
                    self._texts_chars -= len(dropped)
        return text


@dataclass(frozen=True)
class _Extraction:
    """A document waiting for its extraction: the file spooled for it, and its upload's deadline."""

    tenant: str
    name: str
    document: Document
    path: Path
    deadline: float | None


class _Failed(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


# -- capabilities as tools -----------------------------------------------------------------------


def _default(config: Config, capability: str) -> int:
    limit = CAPABILITIES[capability][1]
    return config["capabilities"][capability][limit]


def _bounded(config: Config, capability: str, description: str, *, minimum: int = 1) -> dict[str, Any]:
    limit = CAPABILITIES[capability][1]
    mine = config["capabilities"][capability]
    return {"type": "integer", "minimum": minimum, "maximum": mine[cap_key(limit)], "default": mine[limit],
            "description": f"{description} (default {mine[limit]}, at most {mine[cap_key(limit)]})"}


_DOCUMENT_IDS = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 100}, "maxItems": MAX_DOCUMENT_IDS,
                 "description": "only these documents (ids from list_documents or search results)"}


def capability_schema(capability: str, config: Config) -> dict[str, Any]:
    """The JSON Schema of a capability's arguments, with the tool's limits as its bounds."""
    if capability == "search":
        properties: dict[str, Any] = {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "words to search for"},
            "maxResults": _bounded(config, capability, "how many results"),
            "documentIds": _DOCUMENT_IDS,
        }
        required = ["query"]
    elif capability == "fetch":
        properties = {
            "id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "a document id, or a chunk id from search (the text then starts at that chunk)"},
            "offset": {"type": "integer", "minimum": 0, "description": "the character to start at (nextOffset of the previous fetch)"},
            "maxChars": _bounded(config, capability, "how many characters"),
        }
        required = ["id"]
    elif capability == "list_documents":
        properties = {
            "namePrefix": {"type": "string", "maxLength": 255, "description": "only documents whose file name starts so"},
            "limit": _bounded(config, capability, "how many documents"),
            "cursor": {"type": "string", "maxLength": 600, "description": "nextCursor of the previous page"},
        }
        required = []
    elif capability == "find_text":
        properties = {
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "the exact text to find (no regular expressions)"},
            "caseSensitive": {"type": "boolean", "default": False},
            "documentIds": _DOCUMENT_IDS,
            "maxMatches": _bounded(config, capability, "how many matches"),
        }
        required = ["text"]
    else:
        properties = {
            "chunkId": {"type": "string", "minLength": 1, "maxLength": 200, "description": "a chunk id from search"},
            "before": _bounded(config, capability, "chunks before it", minimum=0),
            "after": _bounded(config, capability, "chunks after it", minimum=0),
        }
        required = ["chunkId"]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_WHAT = {
    "search": "Search the documents of {name} for words: the best passages, each with its chunk id, document id, "
              "title, a snippet with the matching words marked, and its score. Fetch an id for the full text.",
    "fetch": "Read a document of {name} by its id (or from a chunk id from search on): its text, a page at a time; "
             "pass nextOffset as offset for the next page.",
    "list_documents": "List the documents of {name}: id, file name, type, size and when each was updated; pass "
                      "nextCursor as cursor for the next page.",
    "find_text": "Find an exact phrase in the documents of {name} (no regular expressions): each match's document, "
                 "character offset and the text around it.",
    "read_context": "Read the chunks before and after a chunk of {name} (a chunk id from search), in order.",
}


def capability_entries(tool: SearchTool) -> list[ToolEntry]:
    """The tool's enabled capabilities as catalog entries (a disabled capability is never listed)."""
    config = tool.config
    about = config["description"].strip()
    return [
        ToolEntry(
            name=capability_name(tool.tool_id, capability),
            description=(f"{about}\n\n" if about else "") + _WHAT[capability].format(name=tool.tool_id),
            call_type=FILE_SEARCH,
            input_schema=capability_schema(capability, config),
            tags=tagged(config["tags"], SEARCH_TAG),
            expose_in_chat=config["exposeInChat"],
            enabled=config["enabled"],
            read_only=True,
            group=tool.tool_id,
        )
        for capability in enabled_capabilities(config)
    ]


def _parse(name: Any) -> tuple[str, str] | None:
    """(tool, capability) for a capability's name, else None."""
    if not isinstance(name, str):
        return None
    for capability in _SUFFIXES:
        suffix = f"_{capability}"
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], capability
    return None


def _title(document: Document) -> str:
    return (document.get("title") or "").strip() or document["name"]


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


def _page(rows: list[Document], after: str | None, limit: int) -> tuple[list[Document], str | None]:
    """Keyset paging by (name, id); the cursor is opaque to callers."""
    if after:
        try:
            last = base64.urlsafe_b64decode(after.encode() + b"==").decode().split("\x00", 1)
            key = (last[0], last[1])
        except (ValueError, IndexError, UnicodeDecodeError):
            raise InvalidInput([Violation("cursor", "V1", "is not a cursor this API gave")]) from None
        rows = [d for d in rows if (d["name"], d["id"]) > key]
    page = rows[:limit]
    cursor = None
    if len(rows) > limit:
        cursor = base64.urlsafe_b64encode(f"{page[-1]['name']}\x00{page[-1]['id']}".encode()).decode().rstrip("=")
    return page, cursor

