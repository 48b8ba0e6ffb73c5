"""The chunk index on OpenSearch (when `OPENSEARCH_URL` is set): every File Search chunk of every
tenant in one index, behind an alias.

- **Strict mapping, written in code.** `dynamic: strict`; the scope (tenant, tool, document id)
  is keyword, the numbers are integers, the title and text are analyzed with the standard
  analyzer, and the document's file name and media type are kept but not indexed.
- **Idempotent writes.** A chunk's `_id` is `tenant/tool/<documentId>#<n>`, so putting a
  document writes over its chunks by id; the chunks numbered past the new last one, if the
  document had more before, are deleted in the same `_bulk`. Putting twice leaves exactly the
  chunks of the last put. Items rejected with 429 are retried with backoff, and only those.
- **Read your writes.** Every write refreshes the index before it returns (`refresh=true` on the
  last `_bulk` of a put, and on the delete-by-queries of `remove`, `drop` and `clear`): an upload
  is searchable when its indexing ends, a deleted document is gone from the next search. A forced
  refresh, not `wait_for`: `wait_for` waits for the next scheduled refresh (every second), and a
  put of 8 chunks took about 1 s with it against about 25 ms with a forced refresh (dev node).
- **Created on first use.** The first call creates `<index>-000001` with the alias `<index>`
  unless the alias (or an index of that name) exists; two processes racing on it make one index.
  Writes require the alias (`require_alias`), so a deleted index is never re-created with a
  dynamic mapping by a write: the index is prepared again and the call retried once.
- **Its own tracking record.** The chunk projection's position is a document of the index (id
  `~tracking~<application>`, no tenant or tool, so no query scoped to a tool ever sees it),
  written after the changes of its batch, refreshed with them. Replicas following one log into one
  index may write it out of order: a position moved back makes changes apply again, and changes
  are idempotent. An index made by a release before it gets the position's fields added to its
  mapping when first used (a mapping only grows).
- **Unavailable is an answer.** A request that cannot reach OpenSearch (or gets 429 past the
  retries, or 502-504) raises `IndexUnavailable`, which the API serves as a 503.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import orjson
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as TransportConnectionError
from opensearchpy.exceptions import TransportError

from domain.documents import (
    MARK_END,
    MARK_START,
    Chunk,
    DocumentIndex,
    DropTool,
    Hit,
    IndexChange,
    IndexedDocument,
    IndexPosition,
    IndexUnavailable,
    PutDocument,
    StoredChunk,
    chunk_id,
)

DEFAULT_INDEX = "toolsmith-chunks"
TITLE_BOOST = 2
FRAGMENT_CHARS = 200
# A put's chunks go in `_bulk` bodies of about this size (a 25 MB upload is ~20,000 chunks).
BULK_BYTES = 4 * 1024 * 1024
RETRY_ATTEMPTS = 8
RETRY_BASE_SECONDS = 0.05
MAX_CHUNKS_READ = 10_000

_KEYWORD = {"type": "keyword"}
_KEPT = {"type": "keyword", "index": False, "doc_values": False}
_NUMBER = {"type": "integer"}
_STORED_NUMBER = {"type": "integer", "index": False}
_TEXT = {"type": "text", "analyzer": "standard"}
MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "tenant": _KEYWORD,
        "tool": _KEYWORD,
        "document_id": _KEYWORD,
        "n": _NUMBER,
        "start": _STORED_NUMBER,
        "end": _STORED_NUMBER,
        "page": _STORED_NUMBER,
        "title": _TEXT,
        "text": _TEXT,
        "name": _KEPT,
        "media_type": _KEPT,
        # The tracking document's.
        "application_name": _KEYWORD,
        "notification_id": {"type": "long"},
        "store": _KEPT,
    },
}
TRACKING_FIELDS = ("application_name", "notification_id", "store")


def index_settings(replicas: int) -> dict[str, Any]:
    # The translog is synced in the background, as the module read model's: the index is a
    # projection, rebuilt from the events and the blobs, and a crash loses only the newest writes.
    return {"number_of_shards": 1, "number_of_replicas": replicas, "translog.durability": "async"}


def tracking_doc_id(application_name: str) -> str:
    return f"~tracking~{application_name}"


def chunk_doc_id(tenant: str, tool: str, document_id: str, n: int) -> str:
    return f"{tenant}/{tool}/{chunk_id(document_id, n)}"


def chunk_source(tenant: str, tool: str, document: IndexedDocument, chunk: Chunk) -> dict[str, Any]:
    return {
        "tenant": tenant, "tool": tool, "document_id": document.document_id, "n": chunk.n, "start": chunk.start,
        "end": chunk.end, "page": chunk.page, "title": document.title, "text": chunk.text, "name": document.name,
        "media_type": document.media_type,
    }


class OpenSearchDocumentIndex(DocumentIndex):
    def __init__(self, client: OpenSearch, index: str = DEFAULT_INDEX, replicas: int = 1) -> None:
        """`index` is the alias every request goes through; `replicas` the replicas of the index
        created on first use (0 on a single node, or its health stays yellow)."""
        self.client = client
        self.index = index
        self.replicas = replicas
        self._ready = False
        self._ready_lock = threading.Lock()

    # -- writes ----------------------------------------------------------------------------------

    def put(self, tenant: str, tool: str, document: IndexedDocument, chunks: Sequence[Chunk]) -> None:
        actions: list[bytes] = [
            _line({"index": {"_id": chunk_doc_id(tenant, tool, document.document_id, c.n)}})
            + _line(chunk_source(tenant, tool, document, c))
            for c in chunks
        ]
        # The chunks numbered past this put's last one, if an earlier put made more.
        last_before = self._last_number(tenant, tool, document.document_id, len(chunks))
        actions += [
            _line({"delete": {"_id": chunk_doc_id(tenant, tool, document.document_id, n)}})
            for n in range(len(chunks), last_before + 1)
        ]
        bodies = list(_bodies(actions))
        for i, body in enumerate(bodies):
            self._bulk(body, refresh=i == len(bodies) - 1)

    def put_many(self, documents: Sequence[tuple[str, str, IndexedDocument, Sequence[Chunk]]]) -> None:
        """The documents' old chunks deleted by one query per tool, then every new chunk in `_bulk`
        requests of about `BULK_BYTES`, with one refresh at the end (a rebuild's path: one refresh
        per batch rather than per document)."""
        by_tool: dict[tuple[str, str], list[str]] = {}
        for tenant, tool, document, _ in documents:
            by_tool.setdefault((tenant, tool), []).append(document.document_id)
        for (tenant, tool), document_ids in by_tool.items():
            self._delete_by_query({"bool": {"filter": _scope(tenant, tool, document_ids)}}, refresh=False)
        actions = [
            _line({"index": {"_id": chunk_doc_id(tenant, tool, document.document_id, c.n)}})
            + _line(chunk_source(tenant, tool, document, c))
            for tenant, tool, document, chunks in documents for c in chunks
        ]
        bodies = list(_bodies(actions))
        for i, body in enumerate(bodies):
            self._bulk(body, refresh=i == len(bodies) - 1)

    def remove(self, tenant: str, tool: str, document_id: str) -> None:
        self._delete_by_query({"bool": {"filter": _scope(tenant, tool, [document_id])}})

    def drop(self, tenant: str, tool: str) -> None:
        self._delete_by_query({"bool": {"filter": _scope(tenant, tool)}})

    def clear(self) -> None:
        self._delete_by_query({"match_all": {}})

    def apply(self, changes: Sequence[IndexChange], position: IndexPosition | None = None) -> None:
        """Puts go together (`put_many`) until a removal, which goes after them, in the changes'
        order; the position last, with a refresh."""
        puts: dict[tuple[str, str, str], tuple[str, str, IndexedDocument, Sequence[Chunk]]] = {}
        for change in changes:
            if isinstance(change, PutDocument):
                puts[(change.tenant, change.tool, change.document.document_id)] = (
                    change.tenant, change.tool, change.document, change.chunks)
                continue
            if puts:
                self.put_many(list(puts.values()))
                puts = {}
            if isinstance(change, DropTool):
                self.drop(change.tenant, change.tool)
            else:
                self.remove(change.tenant, change.tool, change.document_id)
        if puts:
            self.put_many(list(puts.values()))
        if position is not None:
            source = {"application_name": position.application_name, "notification_id": position.notification_id,
                      "store": position.store}
            self._call(lambda: self.client.index(index=self.index, id=tracking_doc_id(position.application_name),
                                                 body=source, refresh="true", require_alias=True))

    def position(self, application_name: str) -> IndexPosition | None:
        found = self._call(lambda: self.client.get(index=self.index, id=tracking_doc_id(application_name), ignore=[404]))
        source = found.get("_source") if found.get("found") else None
        if not source:
            return None
        return IndexPosition(application_name, int(source["notification_id"]), source.get("store"))

    def total(self) -> int:
        body = {"query": {"exists": {"field": "tenant"}}}
        return int(self._call(lambda: self.client.count(index=self.index, body=body))["count"])

    # -- reads -----------------------------------------------------------------------------------

    def search(self, tenant: str, tool: str, terms: Sequence[str], limit: int,
               document_ids: Sequence[str] | None = None) -> list[Hit]:
        if not terms or limit <= 0 or (document_ids is not None and not document_ids):
            return []
        body = {
            "size": limit,
            "track_total_hits": False,
            "_source": ["document_id", "n", "start", "page", "title"],
            "query": {
                "bool": {
                    "must": {
                        "simple_query_string": {
                            "query": " ".join(terms),
                            "fields": ["text", f"title^{TITLE_BOOST}"],
                            "default_operator": "or",
                            # Whitespace splits the words, and nothing else is an operator.
                            "flags": "WHITESPACE",
                        }
                    },
                    "filter": _scope(tenant, tool, document_ids),
                }
            },
            "highlight": {
                "fields": {
                    "text": {
                        "pre_tags": [MARK_START],
                        "post_tags": [MARK_END],
                        "fragment_size": FRAGMENT_CHARS,
                        "number_of_fragments": 1,
                        "no_match_size": FRAGMENT_CHARS,
                    }
                }
            },
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))
        hits = []
        for hit in found["hits"]["hits"]:
            source = hit["_source"]
            fragments = hit.get("highlight", {}).get("text") or [""]
            hits.append(Hit(
                chunk_id=chunk_id(source["document_id"], source["n"]), document_id=source["document_id"],
                title=source["title"], snippet=fragments[0], score=float(hit["_score"]), page=source.get("page"),
                start=source["start"],
            ))
        return hits

    def chunks(self, tenant: str, tool: str, document_id: str, first: int, last: int) -> list[StoredChunk]:
        first = max(first, 0)
        if last < first:
            return []
        body = {
            "size": min(last - first + 1, MAX_CHUNKS_READ),
            "track_total_hits": False,
            "_source": ["n", "start", "end", "text", "page"],
            "query": {"bool": {"filter": [*_scope(tenant, tool, [document_id]), {"range": {"n": {"gte": first, "lte": last}}}]}},
            "sort": [{"n": "asc"}],
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))
        return [
            StoredChunk(chunk_id=chunk_id(document_id, s["n"]), document_id=document_id, n=s["n"], start=s["start"],
                        end=s["end"], text=s["text"], page=s.get("page"))
            for s in (hit["_source"] for hit in found["hits"]["hits"])
        ]

    def count(self, tenant: str, tool: str) -> int:
        body = {"query": {"bool": {"filter": _scope(tenant, tool)}}}
        return int(self._call(lambda: self.client.count(index=self.index, body=body))["count"])

    def close(self) -> None:
        self.client.close()

    # -- the index -------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Creates the index behind the alias unless it exists (done by the first call anyway)."""
        if self._ready:
            return
        with self._ready_lock:
            if self._ready:
                return
            try:
                if not (self.client.indices.exists_alias(name=self.index) or self.client.indices.exists(index=self.index)):
                    self.client.indices.create(
                        index=f"{self.index}-000001",
                        body={"settings": index_settings(self.replicas), "mappings": MAPPINGS, "aliases": {self.index: {}}},
                    )
                else:
                    # An index made before the projection's tracking record: its fields are added.
                    self.client.indices.put_mapping(index=self.index, body={"properties": {
                        name: MAPPINGS["properties"][name] for name in TRACKING_FIELDS}})
            except TransportConnectionError as error:
                raise IndexUnavailable(f"OpenSearch cannot be reached: {_reason(error)}") from None
            except TransportError as error:
                if _error_type(error) != "resource_already_exists_exception":
                    raise IndexUnavailable(f"cannot prepare the OpenSearch index {self.index!r}: {_reason(error)}") from None
            self._ready = True

    # -- plumbing --------------------------------------------------------------------------------

    def _last_number(self, tenant: str, tool: str, document_id: str, from_n: int) -> int:
        """The highest chunk number ≥ `from_n` the document has, or `from_n - 1` when none."""
        body = {
            "size": 0,
            "track_total_hits": False,
            "query": {"bool": {"filter": [*_scope(tenant, tool, [document_id]), {"range": {"n": {"gte": from_n}}}]}},
            "aggs": {"last": {"max": {"field": "n"}}},
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))
        value = found["aggregations"]["last"]["value"]
        return from_n - 1 if value is None else int(value)

    def _bulk(self, body: list[bytes], *, refresh: bool) -> None:
        """One `_bulk` request of `body` (NDJSON lines, two for an index, one for a delete);
        items rejected with 429 are sent again, with backoff, and only those."""
        attempt = 0
        prepared_again = False
        while body:
            payload = b"".join(body)
            try:
                answer = self._call(lambda: self.client.bulk(
                    body=payload, index=self.index, refresh="true" if refresh else "false", require_alias=True,
                    filter_path="errors,items.*.status,items.*.error"))
            except _Overloaded:
                answer = {"errors": True, "items": [{"index": {"status": 429}}] * len(body)}
            if not answer.get("errors"):
                return
            retry, failures, missing = [], [], []
            for action, item in zip(body, answer["items"], strict=True):
                kind, result = next(iter(item.items()))
                status = result.get("status", 200)
                error = result.get("error")
                if status == 429:
                    retry.append(action)
                elif isinstance(error, dict) and error.get("type") == "index_not_found_exception":
                    missing.append(action)  # the alias is gone (`require_alias`)
                elif status >= 300 and not (kind == "delete" and status == 404):  # a chunk already gone
                    failures.append(f"{status} {error}")
            if missing and not prepared_again:
                prepared_again = True
                with self._ready_lock:
                    self._ready = False
                retry += missing
            elif missing:
                failures.append(f"the OpenSearch index {self.index!r} does not exist")
            if failures:
                raise IndexUnavailable(f"{len(failures)} of {len(body)} chunk writes failed: " + "; ".join(failures[:3]))
            attempt += 1
            if attempt > RETRY_ATTEMPTS:
                raise IndexUnavailable(f"OpenSearch kept rejecting {len(retry)} chunk writes with 429 (too many requests)")
            time.sleep(RETRY_BASE_SECONDS * 2 ** (attempt - 1))
            body = retry

    def _delete_by_query(self, query: dict[str, Any], *, refresh: bool = True) -> None:
        answer = self._call(lambda: self.client.delete_by_query(
            index=self.index, body={"query": query}, refresh=refresh, conflicts="proceed", filter_path="failures"))
        if answer and answer.get("failures"):
            raise IndexUnavailable(f"deleting chunks failed: {answer['failures'][:3]}")

    def _call(self, request: Callable[[], Any]) -> Any:
        """Runs `request` on a prepared index; a missing index (deleted behind our back) is
        prepared again and the request retried once."""
        for attempt in range(2):
            self.prepare()
            try:
                return request()
            except TransportConnectionError as error:
                raise IndexUnavailable(f"OpenSearch cannot be reached: {_reason(error)}") from None
            except TransportError as error:
                if _error_type(error) == "index_not_found_exception" and attempt == 0:
                    with self._ready_lock:
                        self._ready = False
                    continue
                if error.status_code == 429:
                    raise _Overloaded(f"OpenSearch is overloaded: 429 {_reason(error)}") from None
                if error.status_code in (502, 503, 504) or _error_type(error) == "index_not_found_exception":
                    raise IndexUnavailable(f"OpenSearch is unavailable: {error.status_code} {_reason(error)}") from None
                raise
        raise AssertionError("unreachable")


class _Overloaded(IndexUnavailable):
    """OpenSearch answered 429 to a whole request."""


def _scope(tenant: str, tool: str, document_ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
    filters: list[dict[str, Any]] = [{"term": {"tenant": tenant}}, {"term": {"tool": tool}}]
    if document_ids is not None:
        filters.append({"terms": {"document_id": list(document_ids)}})
    return filters


def _line(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value) + b"\n"


def _bodies(actions: list[bytes]) -> Iterator[list[bytes]]:
    """The actions in groups of about `BULK_BYTES` (at least one group, possibly empty)."""
    group: list[bytes] = []
    size = 0
    for action in actions:
        if group and size + len(action) > BULK_BYTES:
            yield group
            group, size = [], 0
        group.append(action)
        size += len(action)
    yield group


def _error_type(error: TransportError) -> str | None:
    info = error.info if isinstance(error.info, dict) else {}
    inner = info.get("error")
    return inner.get("type") if isinstance(inner, dict) else None


def _reason(error: Exception) -> str:
    if isinstance(error, TransportError) and isinstance(error.info, dict):
        inner = error.info.get("error")
        if isinstance(inner, dict) and inner.get("reason"):
            return str(inner["reason"])
    return str(getattr(error, "error", None) or error.__class__.__name__)
