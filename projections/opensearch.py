"""The production read model: module documents in an OpenSearch index, behind an alias.

- **Strict mapping, written in code.** `dynamic: strict`, and the parts of a document that hold
  user data (`draft`, `published`) are stored but not indexed, so no tag, parameter or import name
  can ever add a field to the mapping.
- **Idempotent writes.** A document's `_id` is `tenant/module id`, and it is written with
  `version_type=external` and the notification id of the last event applied to it. OpenSearch
  refuses an older or repeated write (a 409 for that item), which is treated as already applied.
  A deleted module stays as a tombstone with its version, so a replay can never resurrect it.
- **Tracking in the same index.** The position of the last applied notification is a document of
  the index too (`kind: tracking`), written after the module documents of its batch, also with an
  external version. So a fresh index (a rebuild) starts at position 0, and an alias swap moves the
  documents and their position together. A runner killed between the two writes re-applies the
  batch, and the versions make that a no-op.
- **Batches.** The projection's writes are buffered (`put`, `remove`, `insert_tracking`) and sent
  as one `_bulk` request by `flush`. Items rejected with 429 are retried with backoff, and only
  those; any other failed item fails the batch, and the tracking position is not advanced past it.
- **The runner's heartbeat in the same index.** A runner of its own process (`toolsmith
  projections run`) writes a small document (`kind: heartbeat`: its id, a counter, its time) every
  few seconds (`beat`), so that the API processes can tell it is alive while nothing is written
  (issue 28, 11); they judge its freshness by the counter's changes on their own clock
  (`projections/runner.py`), never by comparing its time with theirs.
- **One event store per index.** Every document, the tracking position included, records the id
  of the event store it came from (`store`, see `projections/store_identity.py`), and queries
  match only this store's documents. A runner that finds another store's position in the index
  rebuilds it from its own store into a fresh index and swaps the alias (`projections/runner.py`):
  another store's documents are never served, and its position never skips this store's events.
- **Unavailable is an answer.** A query that cannot reach OpenSearch raises
  `ReadModelUnavailable`, which the API serves as a 503 problem.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from eventsourcing.persistence import IntegrityError, Tracking
import orjson
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as TransportConnectionError
from opensearchpy.exceptions import NotFoundError, TransportError

from domain.model import STATES
from projections.documents import summary
from projections.interface import Document, ListQuery, ModuleReadModel, Page, ReadModelUnavailable

log = logging.getLogger("toolsmith.projections.opensearch")
# The client logs every 404 and 409 as a warning; here both are expected answers (a missing
# document, a write that was applied already), and real failures are raised and logged by us.
logging.getLogger("opensearch").setLevel(logging.ERROR)

DEFAULT_ALIAS = "toolsmith-modules"
TAG_FACET_SIZE = 10_000
TRACKING = "tracking"
MODULE = "module"
HEARTBEAT = "heartbeat"

_KEYWORD = {"type": "keyword"}
# Facet fields: their global ordinals are built at refresh, not by the first list after a write.
_FACET = {"type": "keyword", "eager_global_ordinals": True}
# The runner's heartbeat: which runner, how many beats, and when by its own clock (for people).
_HEARTBEAT_FIELDS: dict[str, Any] = {"runner": _KEYWORD, "beats": {"type": "long"}, "beatAt": {"type": "date"}}
MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "kind": _KEYWORD,
        "tenant": _KEYWORD,
        "id": _KEYWORD,
        "deleted": {"type": "boolean"},
        "description": {"type": "keyword", "index": False, "doc_values": False},
        "state": _FACET,
        "role": _FACET,
        "tags": _FACET,
        "imports": _KEYWORD,
        "uses": _KEYWORD,
        "publishedVersion": {"type": "integer"},
        "exposeInChat": {"type": "boolean"},
        "updatedAt": {"type": "date"},
        "updatedBy": _KEYWORD,
        # Derived for queries: what `search` matches, and the case-insensitive sort keys.
        "text": {"type": "wildcard"},
        "idKey": _KEYWORD,
        "descriptionKey": _KEYWORD,
        # Kept whole, never indexed: user data must not shape the mapping.
        "draft": {"type": "object", "enabled": False},
        "published": {"type": "object", "enabled": False},
        # The tracking document.
        "application": _KEYWORD,
        "position": {"type": "long"},
        # Every document: the event store it came from.
        "store": _KEYWORD,
        # The heartbeat document (and `application`).
        **_HEARTBEAT_FIELDS,
    },
}
_DERIVED = ("kind", "deleted", "text", "idKey", "descriptionKey", "store")


# The translog is written at every request but synced to disk every few seconds, not at each
# request: a sync per bulk was a third of a small write's time (issue 15, write → listed). The index
# is a projection of the event store, and safe so: a crash of the node loses at most the newest
# operations, in the order they were made, so a tracking position that survives has every document
# before it, and the runner applies again whatever came after the position that survived.
DURABILITY = {"translog.durability": "async"}


def index_settings(replicas: int, *, rebuilding: bool = False) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "number_of_shards": 1,
        "number_of_replicas": 0 if rebuilding else replicas,
        # Paging reaches every module of a large tenant (the list allows any offset).
        "max_result_window": 1_000_000,
        **DURABILITY,
    }
    if rebuilding:
        settings["refresh_interval"] = "-1"
    return settings


def new_index_name(alias: str) -> str:
    return f"{alias}-{datetime.now(UTC).strftime('%Y%m%d%H%M%S%f')}"


def _module_id(tenant: str, module_id: str) -> str:
    return f"{tenant}/{module_id}"


def _tracking_id(application_name: str) -> str:
    return f"{TRACKING}/{application_name}"


def _heartbeat_id(application_name: str) -> str:
    return f"{HEARTBEAT}/{application_name}"


@dataclass(frozen=True)
class Batch:
    """A sealed batch: documents by id with their versions, and the tracking positions."""

    documents: dict[str, tuple[Document, int]]
    positions: dict[str, int]


class Overloaded(ReadModelUnavailable):
    """OpenSearch answered 429 (a full queue, a tripped circuit breaker): retry later."""


class BulkRejected(Exception):
    """Items of a bulk request failed for a reason a retry cannot fix."""


class OpenSearchModuleReadModel(ModuleReadModel):
    def __init__(
        self,
        client: OpenSearch,
        *,
        index: str = DEFAULT_ALIAS,
        refresh: bool = True,
        replicas: int = 0,
        retry_attempts: int = 8,
        retry_base_seconds: float = 0.05,
        on_documents_written: Callable[[], None] | None = None,
        fresh: bool = False,
        store: str | None = None,
    ) -> None:
        """`index` is the alias queries and writes go through (or, for a rebuild, a concrete
        index). `refresh` makes each flushed batch searchable at once: read-your-writes. `store`
        is the identity of the event store followed; a view given none (a tool, a test) reads
        every store's documents and records none."""
        super().__init__()
        self.store = store
        self.client = client
        self.index = index
        self.refresh = refresh
        self.replicas = replicas
        self.retry_attempts = retry_attempts
        self.retry_base_seconds = retry_base_seconds
        # A failpoint for the fault tests: called between the documents' write and the tracking's.
        self.on_documents_written = on_documents_written
        # Told each batch's positions once its documents can be found, before they are stored.
        self.on_searchable: Callable[[dict[str, int]], None] | None = None
        self._pending: dict[str, tuple[Document, int]] = {}
        self._pending_tracking: dict[str, int] = {}
        self._prefetched: dict[str, Document | None] = {}
        self._recent: dict[str, tuple[Document, int]] = {}
        # A rebuild's new index: only what this view wrote can be found in it.
        self.fresh = fresh
        self._written: set[str] = set()
        self._known_positions: dict[str, int] = {}
        # Whether `index` is an alias, once `open` knows: a heartbeat then requires one, so that a
        # beat after the index was deleted fails instead of making a concrete index of that name
        # with a dynamic mapping (OpenSearch creates a missing index on a write).
        self._alias: bool | None = None

    # -- the index -----------------------------------------------------------------------------

    def open(self) -> None:
        """Creates the first concrete index behind the alias, unless the alias exists. Two
        processes starting at once race on one deterministic name, so only one index is made."""
        try:
            alias = bool(self.client.indices.exists_alias(name=self.index))
            if alias or self.client.indices.exists(index=self.index):
                self._alias = alias
                # An index made before documents recorded their store, or before runners beat in
                # it, gets the fields (a no-op after).
                self.client.indices.put_mapping(index=self.index, body={"properties": {"store": _KEYWORD, **_HEARTBEAT_FIELDS}})
                # An index made before the translog was synced in the background gets it too.
                self.client.indices.put_settings(index=self.index, body={"index": DURABILITY})
                return
            self.client.indices.create(
                index=f"{self.index}-000001",
                body={"settings": index_settings(self.replicas), "mappings": MAPPINGS, "aliases": {self.index: {}}},
            )
            self._alias = True
        except TransportConnectionError as error:
            raise ReadModelUnavailable(f"OpenSearch cannot be reached: {_reason(error)}") from None
        except TransportError as error:
            if _error_type(error) != "resource_already_exists_exception":
                raise ReadModelUnavailable(f"cannot prepare the OpenSearch index {self.index!r}: {_reason(error)}") from None
            self._alias = True  # another process made it, with its alias

    # -- tracking ------------------------------------------------------------------------------

    def tracking(self, application_name: str) -> tuple[int, str | None] | None:
        """The position written to OpenSearch, and the event store it is a position of."""
        source = self._get(_tracking_id(application_name))
        return (source["position"], source.get("store")) if source else None

    def max_tracking_id(self, application_name: str) -> int | None:
        """The position written to OpenSearch (a batch in progress does not count); None when
        the index holds no position of this view's event store (another store's means nothing).
        Every document before it can be found (see `write`)."""
        tracked = self.tracking(application_name)
        position = tracked[0] if tracked is not None and self.store in (None, tracked[1]) else None
        if position is None:
            self._known_positions.pop(application_name, None)  # an index with nothing applied yet
        else:
            self._known_positions[application_name] = position
        return position

    def insert_tracking(self, tracking: Tracking) -> None:
        self._check_new(tracking)
        self._pending_tracking[tracking.application_name] = tracking.notification_id

    def _check_new(self, tracking: Tracking) -> None:
        applied = self._pending_tracking.get(tracking.application_name, self._known_positions.get(tracking.application_name))
        if applied is None:
            applied = self.max_tracking_id(tracking.application_name)
        if applied is not None and tracking.notification_id <= applied:
            raise IntegrityError(f"notification {tracking.notification_id} was already applied (position {applied})")

    # -- the runner's heartbeat ---------------------------------------------------------------

    def beat(self, application_name: str, runner: str, beats: int) -> None:
        """Writes the heartbeat of the runner `runner` following `application_name`'s log: its
        `beats`th. Not refreshed: a reader gets it by id, which OpenSearch answers in real time.
        Only into an index `open` prepared (see `_alias`)."""
        if self._alias is None:
            raise ReadModelUnavailable(f"the OpenSearch index {self.index!r} is not prepared yet")
        document = {"kind": HEARTBEAT, "application": application_name, "runner": runner, "beats": beats,
                    "beatAt": datetime.now(UTC).isoformat(), **self._stamp}
        self._call(lambda: self.client.index(index=self.index, id=_heartbeat_id(application_name), body=document,
                                             refresh="false", require_alias="true" if self._alias else "false"))

    def heartbeat(self, application_name: str) -> tuple[str, int] | None:
        """The last heartbeat written by a runner of this view's event store: (runner, beats), or
        None when none was ever written (or only another store's)."""
        source = self._get(_heartbeat_id(application_name))
        if source is None or self.store not in (None, source.get("store")):
            return None
        return source["runner"], source["beats"]

    # -- what the projection writes ----------------------------------------------------------

    def prefetch(self, keys: Iterable[tuple[str, str]]) -> None:
        """Loads the documents a batch will change in one request, before it changes them."""
        ids = {_module_id(t, m) for t, m in keys} - self._pending.keys() - self._recent.keys() - self._prefetched.keys()
        if self.fresh:
            # A fresh index holds only what this view wrote to it: the others need no request.
            self._prefetched.update((key, None) for key in ids - self._written)
            ids &= self._written
        if not ids:
            return
        found = self._call(lambda: self.client.mget(index=self.index, body={"ids": sorted(ids)}))
        for item in found["docs"]:
            self._prefetched[item["_id"]] = self._own(item["_source"]) if item.get("found") else None

    def document(self, tenant: str, module_id: str) -> Document | None:
        key = _module_id(tenant, module_id)
        buffered = self._pending.get(key) or self._recent.get(key)
        if buffered is not None:
            return None if buffered[0].get("deleted") else dict(buffered[0])
        if key in self._prefetched:
            found = self._prefetched[key]
            return _plain(found) if found is not None else None
        source = self._get_live(key)
        return _plain(source) if source is not None else None

    def put(self, document: Document, tracking: Tracking) -> None:
        self._check_new(tracking)
        # Kept as the projection made it (it hands over a new dict); indexed when written.
        self._pending[_module_id(document["tenant"], document["id"])] = (document, tracking.notification_id)
        self._pending_tracking[tracking.application_name] = tracking.notification_id

    def remove(self, tenant: str, module_id: str, tracking: Tracking) -> None:
        self._check_new(tracking)
        tombstone = {"kind": MODULE, "tenant": tenant, "id": module_id, "deleted": True, **self._stamp}
        self._pending[_module_id(tenant, module_id)] = (tombstone, tracking.notification_id)
        self._pending_tracking[tracking.application_name] = tracking.notification_id

    def flush(self) -> None:
        """Writes the buffered documents, then the tracking position. On failure nothing of the
        batch counts as applied: the runner drops its buffers and applies the batch again."""
        self.write(self.seal())
        self._recent = {}

    def seal(self) -> Batch | None:
        """Ends the batch being buffered and hands it over for `write`. Until the next `seal`,
        its documents stay readable here, so the next batch can be applied while it is written."""
        batch = Batch(self._pending, self._pending_tracking) if self._pending_tracking else None
        self._recent = self._pending
        self._pending, self._pending_tracking, self._prefetched = {}, {}, {}
        if self.fresh:
            self._written.update(self._recent)
        return batch

    def write(self, batch: Batch | None) -> None:
        """The documents, made searchable (with `refresh`), then the positions, not refreshed: a
        position that can be read, however it is read, has every document before it searchable,
        and a write costs one refresh, most of a small write's time (issue 15, write → listed).
        `on_searchable(positions)` hears of the batch between the two, as early as a reader may."""
        if batch is None:
            return
        actions = [_action(self.index, key, version, source if source.get("deleted") else _indexed(source, self._stamp))
                   for key, (source, version) in batch.documents.items()]
        self._bulk(actions)
        if self.on_documents_written is not None:
            self.on_documents_written()
        if self.on_searchable is not None and (self.refresh or not actions):
            self.on_searchable(dict(batch.positions))
        self._bulk(
            [
                _action(self.index, _tracking_id(name), position,
                        {"kind": TRACKING, "application": name, "position": position, **self._stamp})
                for name, position in batch.positions.items()
            ],
            refresh=False,
        )
        self._known_positions.update(batch.positions)

    def discard(self) -> None:
        """Forgets the batches not yet written (the runner will apply them again)."""
        self._pending, self._pending_tracking, self._prefetched, self._recent = {}, {}, {}, {}
        self._known_positions.clear()

    def _bulk(self, actions: list[tuple[dict[str, Any], dict[str, Any]]], *, refresh: bool | None = None) -> None:
        """Sends the actions (refreshing as the view does, unless `refresh` says); retries the
        items rejected with 429 (only those) with backoff."""
        refresh = self.refresh if refresh is None else refresh
        attempt = 0
        while actions:
            # One NDJSON body serialized by orjson: the client's per-line json.dumps took a
            # rebuild's writer thread seconds, holding the GIL the applying thread needs.
            body = b"".join(orjson.dumps(line) + b"\n" for action in actions for line in action)
            try:
                response = self._call(lambda: self.client.bulk(body=body, refresh="true" if refresh else "false"))
            except Overloaded:
                response = {"errors": True, "items": [{"index": {"status": 429}}] * len(actions)}  # the whole request, again
            if not response.get("errors"):
                return
            retry, failures = [], []
            for action, item in zip(actions, response["items"], strict=True):
                result = next(iter(item.values()))
                status = result.get("status", 200)
                if status == 429:
                    retry.append(action)
                elif status >= 300 and status != 409:  # 409: this version or a newer one is there already
                    failures.append(f"{result.get('_id')}: {status} {_item_reason(result)}")
            if failures:
                raise BulkRejected(f"{len(failures)} of {len(actions)} writes failed: " + "; ".join(failures[:5]))
            if not retry:
                # Only 409s: every item was applied already (a batch applied again after a restart).
                return
            attempt += 1
            if attempt > self.retry_attempts:
                raise ReadModelUnavailable(f"OpenSearch kept rejecting {len(retry)} writes with 429 (too many requests)")
            delay = self.retry_base_seconds * 2 ** (attempt - 1)
            log.warning("bulk items rejected with 429; retrying them", extra={"items": len(retry), "attempt": attempt})
            time.sleep(delay * (0.5 + random.random()))
            actions = retry

    # -- queries -------------------------------------------------------------------------------

    def list(self, tenant: str, query: ListQuery) -> Page:
        filters: list[dict[str, Any]] = self._live_filter(tenant)
        if query.search:
            for word in query.search.lower().split():
                filters.append({"wildcard": {"text": {"value": f"*{_escape_wildcard(word)}*"}}})
        if query.state:
            filters.append({"term": {"state": query.state}})
        if query.tool is not None:
            filters.append({"term": {"role": "tool" if query.tool else "library"}})
        for tag in query.tags:
            filters.append({"term": {"tags": tag}})
        if query.used_by is not None:
            user = self._get_live(_module_id(tenant, query.used_by))
            filters.append({"terms": {"id": sorted({*(user["uses"] if user else []), *query.also_used})}})
        order = "asc" if query.ascending else "desc"
        primary = {"id": "idKey", "description": "descriptionKey", "role": "role", "state": "state"}[query.order_by]
        sort = [{primary: order}, {"idKey": "asc"}, {"id": "asc"}]
        if primary == "idKey":
            sort = [{"idKey": order}, {"id": order}]
        body = {
            "query": {"bool": {"filter": filters}},
            "from": query.offset,
            "size": query.limit,
            "sort": sort,
            "track_total_hits": True,
            "_source": {"excludes": ["draft", "published", "text", "idKey", "descriptionKey"]},
            "aggs": {
                "state": {"terms": {"field": "state", "size": len(STATES)}},
                "role": {"terms": {"field": "role", "size": 2}},
                "tags": {"terms": {"field": "tags", "size": TAG_FACET_SIZE, "order": [{"_count": "desc"}, {"_key": "asc"}]}},
            },
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))
        aggregations = found["aggregations"]
        facets = {
            "state": {state: 0 for state in STATES},
            "role": {"tool": 0, "library": 0},
            "tags": {b["key"]: b["doc_count"] for b in aggregations["tags"]["buckets"]},
        }
        for name in ("state", "role"):
            for bucket in aggregations[name]["buckets"]:
                facets[name][bucket["key"]] = bucket["doc_count"]
        return Page(
            collection=[summary(hit["_source"]) for hit in found["hits"]["hits"]],
            total=found["hits"]["total"]["value"],
            facets=facets,
        )

    def summary(self, tenant: str, module_id: str) -> dict[str, Any] | None:
        source = self._get_live(_module_id(tenant, module_id))
        return summary(source) if source is not None else None

    def used_by(self, tenant: str, module_id: str) -> list[str]:
        body = {
            "query": {"bool": {"filter": [*self._live_filter(tenant), {"term": {"uses": module_id}}]}},
            "size": 10_000,
            "sort": [{"id": "asc"}],
            "_source": False,
            "docvalue_fields": ["id"],
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))
        return sorted(hit["fields"]["id"][0] for hit in found["hits"]["hits"])

    def used_by_counts(self, tenant: str, module_ids: Iterable[str]) -> dict[str, int]:
        counts = {module_id: 0 for module_id in module_ids}
        if not counts:
            return counts
        wanted = sorted(counts)
        body = {
            "query": {"bool": {"filter": [*self._live_filter(tenant), {"terms": {"uses": wanted}}]}},
            "size": 0,
            "track_total_hits": False,
            # `include` keeps only the asked ids' buckets (a module's other imports are not counted)
            "aggs": {"uses": {"terms": {"field": "uses", "include": wanted, "size": len(wanted)}}},
        }
        found = self._call(lambda: self.client.search(index=self.index, body=body))
        for bucket in found["aggregations"]["uses"]["buckets"]:
            counts[bucket["key"]] = bucket["doc_count"]
        return counts

    def is_taken(self, tenant: str, module_id: str) -> bool:
        return self._get_live(_module_id(tenant, module_id)) is not None

    def close(self) -> None:
        self.client.close()

    def available(self) -> bool:
        try:
            return bool(self.client.ping())
        except Exception:  # noqa: BLE001 - any failure means "not now"
            return False

    # -- plumbing ------------------------------------------------------------------------------

    def _get(self, doc_id: str) -> Document | None:
        try:
            return self._call(lambda: self.client.get(index=self.index, id=doc_id))["_source"]
        except NotFoundError:
            return None

    def _get_live(self, doc_id: str) -> Document | None:
        """A module's stored document, or None when there is none, only its tombstone, or only
        another event store's document."""
        source = self._get(doc_id)
        return self._own(source) if source is not None else None

    def _own(self, source: Document) -> Document | None:
        """A live document of this view's event store (of any, for a view given none), or None."""
        return _live(source) if self.store in (None, source.get("store")) else None

    @property
    def _stamp(self) -> Document:
        """What every written document records of the event store it came from."""
        return {"store": self.store} if self.store is not None else {}

    def _live_filter(self, tenant: str) -> list[dict[str, Any]]:
        filters = [{"term": {"kind": MODULE}}, {"term": {"tenant": tenant}}, {"term": {"deleted": False}}]
        if self.store is not None:
            filters.append({"term": {"store": self.store}})
        return filters

    def _call(self, request: Callable[[], Any]) -> Any:
        try:
            return request()
        except NotFoundError as error:
            if _error_type(error) == "index_not_found_exception":
                raise ReadModelUnavailable(f"the OpenSearch index {self.index!r} does not exist") from None
            raise
        except TransportConnectionError as error:
            raise ReadModelUnavailable(f"OpenSearch cannot be reached: {_reason(error)}") from None
        except TransportError as error:
            if error.status_code == 429:
                raise Overloaded(f"OpenSearch is overloaded: 429 {_reason(error)}") from None
            if error.status_code in (502, 503, 504):
                raise ReadModelUnavailable(f"OpenSearch is unavailable: {error.status_code} {_reason(error)}") from None
            raise


def _indexed(document: Document, stamp: Document) -> Document:
    """The document as stored: the projection's fields plus what the queries need."""
    return {
        **document,
        **stamp,
        "kind": MODULE,
        "deleted": False,
        "text": f"{document['id']} {document['description']}".lower(),
        "idKey": document["id"].lower(),
        "descriptionKey": document["description"].lower(),
    }


def _plain(source: Document) -> Document:
    return {k: v for k, v in source.items() if k not in _DERIVED}


def _live(source: Document) -> Document | None:
    return None if source.get("deleted") else source


def _action(index: str, doc_id: str, version: int, source: Document) -> tuple[dict[str, Any], dict[str, Any]]:
    return ({"index": {"_index": index, "_id": doc_id, "version": version, "version_type": "external"}}, source)


def _escape_wildcard(word: str) -> str:
    return word.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")


def _error_type(error: TransportError) -> str | None:
    info = error.info if isinstance(error.info, dict) else {}
    return (info.get("error") or {}).get("type") if isinstance(info.get("error"), dict) else None


def _reason(error: Exception) -> str:
    if isinstance(error, TransportError) and isinstance(error.info, dict):
        inner = error.info.get("error")
        if isinstance(inner, dict) and inner.get("reason"):
            return str(inner["reason"])
    return str(getattr(error, "error", None) or error.__class__.__name__)


def _item_reason(result: dict[str, Any]) -> str:
    error = result.get("error")
    if isinstance(error, dict):
        return f"{error.get('type')}: {error.get('reason')}"
    return str(error)
