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
- **Vectors beside the words (k-NN plugin, Lucene engine).** A chunk embedded by its document's
  model has `vector` (`knn_vector`, HNSW of Lucene, cosine) and `model`; the vector is indexed but
  left out of `_source`. `vector_search` is one `knn` query whose filter holds the tenant, tool,
  model and documents, so Lucene answers the k nearest of those chunks (exactly, when they are few)
  and never another tool's or tenant's. Lucene scores a match (1 + cosine) / 2; the hit's score is
  the cosine again. An index made before vectors gets the two fields added to its mapping when
  first used, as the tracking fields (a mapping only grows; the chunks put before have no vector
  and are found by their words until they are put again, as on SQLite). A node without the plugin
  cannot map `knn_vector`: the index is then made without vectors and is lexical only (`vectors`
  is false, and the log says why).
- **Each document's vector sum, for the tool's mean.** Semantic retrieval centres the query on
  the mean of the tool's vectors (`vector_mean`, `domain.retrieval`). Beside its chunks, a
  document with vectors has one summary record (id `tenant/tool/<documentId>#summary`): the
  document's scope as its chunks have it (so that it is written, read and deleted under the same
  tenant filter), and under `summary` its model, how many of its chunks have a vector and the sum
  of those vectors, each L2-normalized, as 256 `double`s. It has no number, text or vector, so no
  search, read or count of chunks ever finds it (those that match on the scope alone ask for a
  number, `_CHUNK`). It is written in the same `_bulk` as the chunks and deleted with them. The
  tool's mean is one `size: 0` search (a `sum` of each coordinate over the tool's summaries by
  the model), told only when the
  summaries count exactly the chunks that have a vector by the model: half-written (a periodic
  refresh between two `_bulk` bodies), or an index whose chunks were put before summaries
  existed, and the query is asked as it is until the documents are put again (a rebuild). A
  process keeps a tool's mean for `MEAN_SECONDS` (forgotten at once when it writes the tool
  itself): a mean a second old centres a query a little differently, it never hides a chunk,
  and a hybrid query then waits on two requests side by side rather than three.
- **Unavailable is an answer.** A request that cannot reach OpenSearch (or gets 429 past the
  retries, or 502-504) raises `IndexUnavailable`, which the API serves as a 503.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
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
    PutVectors,
    VECTOR_DIMENSIONS,
    StoredChunk,
    chunk_id,
)
from projections.chunks_sqlite import lead
from projections.vector_matrix import normalized

log = logging.getLogger("toolsmith.projections")

DEFAULT_INDEX = "toolsmith-chunks"
TITLE_BOOST = 2
FRAGMENT_CHARS = 200
# A put's chunks go in `_bulk` bodies of about this size (a 25 MB upload is ~20,000 chunks).
BULK_BYTES = 4 * 1024 * 1024
RETRY_ATTEMPTS = 8
RETRY_BASE_SECONDS = 0.05
MAX_CHUNKS_READ = 10_000
# The documents one delete of the chunks past their last takes: five clauses each, under the
# 1,024 clauses a query may hold (indices.query.bool.max_clause_count's default).
EXTRA_DOCUMENTS = 200
MAX_TERMS = 65_536  # the values one `terms` query takes (index.max_terms_count's default)

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
_SUM = {"type": "double", "index": False}  # aggregated from doc values, never searched
# A chunk's embedding (`Chunk.vector`) and the model that made it: HNSW of Lucene (pure Java; the
# plugin's native engines are not used), cosine similarity (the vectors are L2-normalized).
VECTOR_MAPPINGS: dict[str, Any] = {
    "model": _KEYWORD,
    "vector": {"type": "knn_vector", "dimension": VECTOR_DIMENSIONS,
               "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil"}},
}
# A document's summary record (`summary_action`): the sum of its chunks' vectors, coordinate by
# coordinate (d000 … d255), for the tool's mean.
SUM_FIELDS = tuple(f"d{i:03d}" for i in range(VECTOR_DIMENSIONS))
SUMMARY_MAPPINGS: dict[str, Any] = {
    "summary": {"properties": {
        "model": _KEYWORD, "count": _NUMBER,
        "sum": {"properties": {name: _SUM for name in SUM_FIELDS}},
    }},
}
# A chunk, not a summary record (nor the tracking document): it has a number.
_CHUNK: dict[str, Any] = {"exists": {"field": "n"}}
MAX_K = 10_000  # the k-NN plugin's bound on a query's k
# How long a process keeps a tool's mean (`vector_mean`), and for how many tools at most.
MEAN_SECONDS = 1.0
MAX_MEANS = 1_024
# The HNSW candidates a query explores (Lucene's default is k): with k = 10 to 50 the graph missed
# about one true neighbour in ten of the retrieval set's questions; 256 finds what the exact scan does.
EF_SEARCH = 256


def index_settings(replicas: int) -> dict[str, Any]:
    # The translog is synced in the background, as the module read model's: the index is a
    # projection, rebuilt from the events and the blobs, and a crash loses only the newest writes.
    return {"number_of_shards": 1, "number_of_replicas": replicas, "translog.durability": "async"}


def index_body(replicas: int, vectors: bool, alias: str) -> dict[str, Any]:
    """A new index behind `alias`; `index.knn` (static: fixed when the index is made) lets the
    k-NN plugin build the vectors' HNSW graphs."""
    settings = index_settings(replicas)
    if vectors:
        settings["knn"] = True
    return {"settings": settings, "mappings": index_mappings(vectors), "aliases": {alias: {}}}


def index_mappings(vectors: bool) -> dict[str, Any]:
    """The index's mapping, with the vector fields when the node has the k-NN plugin; the vectors
    are indexed for `knn` but not kept in `_source` (1 KB a chunk that no read returns)."""
    if not vectors:
        return MAPPINGS
    return {**MAPPINGS, "_source": {"excludes": ["vector"]},
            "properties": {**MAPPINGS["properties"], **VECTOR_MAPPINGS, **SUMMARY_MAPPINGS}}


def tracking_doc_id(application_name: str) -> str:
    return f"~tracking~{application_name}"


def chunk_doc_id(tenant: str, tool: str, document_id: str, n: int) -> str:
    return f"{tenant}/{tool}/{chunk_id(document_id, n)}"


def summary_doc_id(tenant: str, tool: str, document_id: str) -> str:
    return f"{tenant}/{tool}/{document_id}#summary"  # a chunk's number is never `summary`


def chunk_source(tenant: str, tool: str, document: IndexedDocument, chunk: Chunk,
                 vectors: bool = False) -> dict[str, Any]:
    source = {
        "tenant": tenant, "tool": tool, "document_id": document.document_id, "n": chunk.n, "start": chunk.start,
        "end": chunk.end, "page": chunk.page, "title": document.title, "text": chunk.text, "name": document.name,
        "media_type": document.media_type,
    }
    if vectors and document.model and _is_vector(chunk.vector):
        source["model"] = document.model
        source["vector"] = np.frombuffer(chunk.vector, dtype="<f4").tolist()
    return source


def summary_action(tenant: str, tool: str, document_id: str, model: str | None,
                   vectors: Sequence[bytes | None]) -> bytes:
    """The `_bulk` action that writes the document's summary record: the count and sum of the
    vectors its chunks are given (those `chunk_source` keeps, each L2-normalized, summed in
    float64), or deletes it when none is kept."""
    kept = [v for v in vectors if _is_vector(v)] if model else []
    doc_id = summary_doc_id(tenant, tool, document_id)
    if not kept:
        return _line({"delete": {"_id": doc_id}})
    # normalized and summed as the embedded index's mean is (projections/vector_matrix.py)
    total = normalized(np.frombuffer(b"".join(kept), dtype="<f4").reshape(len(kept), VECTOR_DIMENSIONS)).sum(
        axis=0, dtype=np.float64)
    summary = {"model": model, "count": len(kept), "sum": dict(zip(SUM_FIELDS, total.tolist()))}
    return _line({"index": {"_id": doc_id}}) + _line({"tenant": tenant, "tool": tool, "document_id": document_id,
                                                      "summary": summary})


def _is_vector(vector: bytes | None) -> bool:
    return vector is not None and len(vector) == 4 * VECTOR_DIMENSIONS


class OpenSearchDocumentIndex(DocumentIndex):
    remote = True  # every read is a request to the node: hybrid retrieval sends its two side by side

    def __init__(self, client: OpenSearch, index: str = DEFAULT_INDEX, replicas: int = 1) -> None:
        """`index` is the alias every request goes through; `replicas` the replicas of the index
        created on first use (0 on a single node, or its health stays yellow)."""
        self.client = client
        self.index = index
        self.replicas = replicas
        self._ready = False
        self._ready_lock = threading.Lock()
        self._vectors = False  # the index has the vector fields (known once prepared)
        self.mean_seconds = MEAN_SECONDS
        self._means: OrderedDict[tuple[str, str, str], tuple[float, bytes | None]] = OrderedDict()
        self._means_lock = threading.Lock()

    # -- writes ----------------------------------------------------------------------------------

    def put(self, tenant: str, tool: str, document: IndexedDocument, chunks: Sequence[Chunk]) -> None:
        actions: list[bytes] = [
            _line({"index": {"_id": chunk_doc_id(tenant, tool, document.document_id, c.n)}})
            + _line(chunk_source(tenant, tool, document, c, self.vectors))
            for c in chunks
        ]
        # The chunks numbered past this put's last one, if an earlier put made more.
        last_before = self._last_number(tenant, tool, document.document_id, len(chunks))
        actions += [
            _line({"delete": {"_id": chunk_doc_id(tenant, tool, document.document_id, n)}})
            for n in range(len(chunks), last_before + 1)
        ]
        if self.vectors:
            actions.append(summary_action(tenant, tool, document.document_id, document.model, [c.vector for c in chunks]))
        bodies = list(_bodies(actions))
        for i, body in enumerate(bodies):
            self._bulk(body, refresh=i == len(bodies) - 1)
        self._forget_means(tenant, tool)

    def put_many(self, documents: Sequence[tuple[str, str, IndexedDocument, Sequence[Chunk]]]) -> None:
        """Every new chunk in `_bulk` requests of about `BULK_BYTES` (over each chunk of the same id),
        then the chunks numbered past each document's new last one deleted by one query per
        `EXTRA_DOCUMENTS` documents (a rebuild's path: a refresh or two per batch rather than one
        per document). Nothing is deleted before its replacement is written: a replica putting a
        document again (two replicas follow one log into one index) never leaves a search,
        between its steps, without the document."""
        actions = [
            _line({"index": {"_id": chunk_doc_id(tenant, tool, document.document_id, c.n)}})
            + _line(chunk_source(tenant, tool, document, c, self.vectors))
            for tenant, tool, document, chunks in documents for c in chunks
        ]
        if self.vectors:
            actions += [summary_action(tenant, tool, document.document_id, document.model, [c.vector for c in chunks])
                        for tenant, tool, document, chunks in documents]
        bodies = list(_bodies(actions))
        for i, body in enumerate(bodies):
            self._bulk(body, refresh=i == len(bodies) - 1)
        # Each past-the-last clause names the document fully: the same id may be another tool's.
        extras = [
            {"bool": {"filter": [*_scope(tenant, tool, [document.document_id]), {"range": {"n": {"gte": len(chunks)}}}]}}
            for tenant, tool, document, chunks in documents
        ]
        for part in _parts(extras, EXTRA_DOCUMENTS):
            # refreshed when it deleted something (a delete that matched nothing does not refresh)
            self._delete_by_query({"bool": {"minimum_should_match": 1, "should": part}}, refresh=True)
        for tenant, tool in {(tenant, tool) for tenant, tool, _, _ in documents}:
            self._forget_means(tenant, tool)

    def put_vectors(self, tenant: str, tool: str, document_id: str, model: str, vectors: Sequence[bytes]) -> bool:
        """A partial update of each chunk (`model`, `vector`): the vector is not in `_source`, the
        update gives it anew. Only when the document has exactly one chunk a vector."""
        if not self.vectors or not vectors or not all(_is_vector(v) for v in vectors):
            return False
        body = {"query": {"bool": {"filter": [*_scope(tenant, tool, [document_id]), _CHUNK]}}}
        if int(self._call(lambda: self.client.count(index=self.index, body=body))["count"]) != len(vectors):
            return False
        if self._last_number(tenant, tool, document_id, 0) != len(vectors) - 1:
            return False
        actions = [
            _line({"update": {"_id": chunk_doc_id(tenant, tool, document_id, n)}})
            + _line({"doc": {"model": model, "vector": np.frombuffer(vector, dtype="<f4").tolist()}})
            for n, vector in enumerate(vectors)
        ]
        actions.append(summary_action(tenant, tool, document_id, model, vectors))
        for body_part in _bodies(actions):
            self._bulk(body_part, refresh=True)
        self._forget_means(tenant, tool)
        return True

    def remove(self, tenant: str, tool: str, document_id: str) -> None:
        self._delete_by_query({"bool": {"filter": _scope(tenant, tool, [document_id])}})  # its summary too
        self._forget_means(tenant, tool)

    def drop(self, tenant: str, tool: str) -> None:
        self._delete_by_query({"bool": {"filter": _scope(tenant, tool)}})
        self._forget_means(tenant, tool)

    def clear(self) -> None:
        self._delete_by_query({"match_all": {}})
        self._forget_means()

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
            elif isinstance(change, PutVectors):
                self.put_vectors(change.tenant, change.tool, change.document_id, change.model, change.vectors)
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
        body = {"query": _CHUNK}
        return int(self._call(lambda: self.client.count(index=self.index, body=body))["count"])

    # -- reads -----------------------------------------------------------------------------------

    def search(self, tenant: str, tool: str, terms: Sequence[str], limit: int,
               document_ids: Sequence[str] | None = None, exact: bool = True) -> list[Hit]:
        # Always exact: Lucene skips the chunks that cannot reach the top (block-max WAND) itself.
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

    @property
    def vectors(self) -> bool:  # type: ignore[override]
        """Whether the index has the vector fields (the node has the k-NN plugin)."""
        self.prepare()
        return self._vectors

    def vector_search(self, tenant: str, tool: str, vector: bytes, model: str, limit: int,
                      document_ids: Sequence[str] | None = None) -> list[Hit]:
        """One `knn` query with the scope and the model inside its filter: the k nearest of the
        tool's chunks by `model` (within `document_ids`), never the k nearest filtered after."""
        if (limit <= 0 or len(vector) != 4 * VECTOR_DIMENSIONS or (document_ids is not None and not document_ids)
                or not self.vectors):
            return []
        k = min(limit, MAX_K)
        body = {
            "size": k,
            "track_total_hits": False,
            "_source": ["document_id", "n", "start", "page", "title", "text"],
            "query": {"knn": {"vector": {
                "vector": np.frombuffer(vector, dtype="<f4").tolist(),
                "k": k,
                "method_parameters": {"ef_search": max(k, EF_SEARCH)},
                "filter": {"bool": {"filter": [*_scope(tenant, tool, document_ids), {"term": {"model": model}}]}},
            }}},
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))
        hits = []
        for hit in found["hits"]["hits"]:
            source = hit["_source"]
            hits.append(Hit(
                chunk_id=chunk_id(source["document_id"], source["n"]), document_id=source["document_id"],
                title=source["title"], snippet=lead(source["text"]), score=2.0 * float(hit["_score"]) - 1.0,
                page=source.get("page"), start=source["start"],
            ))
        # Lucene's order, ties by chunk id as on SQLite.
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def vector_mean(self, tenant: str, tool: str, model: str) -> bytes | None:
        """One search of no hits: the tool's summaries by `model` summed coordinate by coordinate,
        beside the count of its chunks with a vector by `model`; the mean when the summaries count
        exactly those chunks (None otherwise, or with no vectors). Kept `mean_seconds`."""
        if not self.vectors:
            return None
        key, now = (tenant, tool, model), time.monotonic()
        with self._means_lock:
            kept = self._means.get(key)
            if kept is not None and kept[0] > now:
                return kept[1]
        mean = self._mean(tenant, tool, model)
        with self._means_lock:
            self._means[key] = (now + self.mean_seconds, mean)
            self._means.move_to_end(key)
            while len(self._means) > MAX_MEANS:
                self._means.popitem(last=False)
        return mean

    def _forget_means(self, tenant: str | None = None, tool: str | None = None) -> None:
        """The means kept of the tool (every tool's, with none named): this process wrote it."""
        with self._means_lock:
            for key in [k for k in self._means if tenant is None or k[:2] == (tenant, tool)]:
                del self._means[key]

    def _mean(self, tenant: str, tool: str, model: str) -> bytes | None:
        chunks = {"term": {"model": model}}
        summaries = {"term": {"summary.model": model}}
        body = {
            "size": 0,
            "track_total_hits": False,
            "query": {"bool": {"filter": _scope(tenant, tool), "minimum_should_match": 1, "should": [chunks, summaries]}},
            "aggs": {
                "chunks": {"filter": chunks},
                "summaries": {"filter": summaries, "aggs": {
                    "count": {"sum": {"field": "summary.count"}},
                    **{name: {"sum": {"field": f"summary.sum.{name}"}} for name in SUM_FIELDS},
                }},
            },
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))["aggregations"]
        count = int(found["summaries"]["count"]["value"] or 0)
        if count == 0 or count != int(found["chunks"]["doc_count"]):
            return None
        total = np.array([found["summaries"][name]["value"] for name in SUM_FIELDS], dtype=np.float64)
        return (total / count).astype("<f4").tobytes()

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
        body = {"query": {"bool": {"filter": [*_scope(tenant, tool), _CHUNK]}}}
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
                    self._vectors = self._create()
                else:
                    # An index made before the projection's tracking record: its fields are added.
                    self.client.indices.put_mapping(index=self.index, body={"properties": {
                        name: MAPPINGS["properties"][name] for name in TRACKING_FIELDS}})
                    self._vectors = self._add_vector_fields()
                    if self._vectors:  # an index made before summary records: their fields too
                        self.client.indices.put_mapping(index=self.index, body={"properties": SUMMARY_MAPPINGS})
            except TransportConnectionError as error:
                raise IndexUnavailable(f"OpenSearch cannot be reached: {_reason(error)}") from None
            except TransportError as error:
                if _error_type(error) != "resource_already_exists_exception":
                    raise IndexUnavailable(f"cannot prepare the OpenSearch index {self.index!r}: {_reason(error)}") from None
            self._ready = True

    def _create(self, vectors: bool = True) -> bool:
        """Creates `<index>-000001` behind the alias, with the vector fields unless the node cannot
        map them; whether it has them."""
        try:
            self.client.indices.create(index=f"{self.index}-000001", body=index_body(self.replicas, vectors, self.index))
        except TransportError as error:
            if vectors and _no_knn(error):
                log.warning("OpenSearch has no k-NN plugin: the chunk index is lexical only", extra={
                    "projection": "chunks", "index": self.index, "reason": _reason(error)})
                return self._create(vectors=False)
            if _error_type(error) == "resource_already_exists_exception":  # another process made it
                return self._has_vector_fields()
            raise
        return vectors

    def _add_vector_fields(self) -> bool:
        """An index made before vectors is rebuilt: `index.knn` is fixed when an index is made, and
        without it a `knn_vector` field cannot be searched by `knn`. The next index (`-000002`, …)
        is made with the vector fields, the old one's chunks copied into it (`_reindex`, so search
        keeps finding them by their words), the alias moved to it in one step and the old index
        deleted. Its tracking document is not copied: the projection then applies every event
        again, and each document is put again with its vectors (from its DocumentEmbedded blob).
        Whether the index has the vector fields."""
        if self._has_vector_fields():
            return True
        found = self.client.indices.get_alias(name=self.index, ignore=[404])
        olds = [name for name in found if isinstance(found.get(name), dict)] if found.get("status") != 404 else []
        if len(olds) != 1:  # an index of that name, not an alias: not ours to move
            log.warning("the OpenSearch chunk index is not behind an alias: it stays lexical only", extra={
                "projection": "chunks", "index": self.index})
            return False
        old = olds[0]
        number = int(old.rsplit("-", 1)[1]) + 1 if old.rsplit("-", 1)[-1].isdigit() else 1
        new = f"{self.index}-{number:06d}"
        body = index_body(self.replicas, True, self.index)
        del body["aliases"]
        try:
            self.client.indices.create(index=new, body=body)
        except TransportError as error:
            if _no_knn(error):
                log.warning("OpenSearch has no k-NN plugin: the chunk index is lexical only", extra={
                    "projection": "chunks", "index": self.index, "reason": _reason(error)})
                return False
            if _error_type(error) != "resource_already_exists_exception":
                raise
            return self._has_vector_fields()  # another process is rebuilding it
        log.warning("the OpenSearch chunk index has no vectors: building it again from the events", extra={
            "projection": "chunks", "index": self.index, "from": old, "to": new})
        self.client.reindex(body={"source": {"index": old, "query": {"exists": {"field": "tenant"}}},
                                  "dest": {"index": new}}, refresh=True, wait_for_completion=True,
                            request_timeout=3600)
        self.client.indices.update_aliases(body={"actions": [
            {"add": {"index": new, "alias": self.index}}, {"remove_index": {"index": old}}]})
        return True

    def _has_vector_fields(self) -> bool:
        found = self.client.indices.get_field_mapping(index=self.index, fields="vector")
        return any(index.get("mappings", {}).get("vector") for index in found.values())

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
        ids = list(document_ids)
        if len(ids) <= MAX_TERMS:
            filters.append({"terms": {"document_id": ids}})
        else:  # a metadata filter's documents may be more than one `terms` query takes
            filters.append({"bool": {"minimum_should_match": 1, "should": [
                {"terms": {"document_id": ids[i:i + MAX_TERMS]}} for i in range(0, len(ids), MAX_TERMS)]}})
    return filters


def _parts(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


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


def _no_knn(error: TransportError) -> bool:
    """The node cannot map `knn_vector` (no k-NN plugin)."""
    return "knn_vector" in _reason(error)


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
