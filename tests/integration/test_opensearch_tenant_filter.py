"""Every request the OpenSearch read models send is scoped to one tenant (docs/tenants.md), on a real node.

The module read model (`OpenSearchModuleReadModel`) and the File Search chunk index
(`OpenSearchDocumentIndex`) each get a client whose transport records every request. Two tenants
hold the same module ids and document ids (the scenario of tests/tenancy.py), and every public
query is called for each of them — the list with every combination of its filters, facets, orders,
search and usedBy, summary, document, is_taken, used_by, used_by_counts; search, chunks and count
— as are the writes. Each call's requests are checked as they are sent:

- a search, count, msearch or delete-by-query has a `term` filter on the call's tenant among the
  required clauses of its query, and names no other tenant anywhere;
- a get, mget or bulk item names documents by ids that start with `<tenant>/` (a module, or a
  chunk), or the projection's tracking document, which holds no tenant's data;
- anything else is index management (create, exists, mapping, settings) or a failure: a request
  of a new kind must be added here, after asking whether it needs the filter;

and each call must have sent a request (its answer came from OpenSearch, and was inspected). The
answers are checked too: each tenant's answer on the shared index equals its answer on an index
holding that tenant alone, and names nothing of the other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import orjson
import pytest
from opensearchpy import OpenSearch, Transport

from projections import chunks_opensearch
from projections.chunks_opensearch import OpenSearchDocumentIndex
from projections.opensearch import OpenSearchModuleReadModel
from tests import tenancy
from tests.tenancy import ACME, GLOBEX, TENANTS

STORE = "tenancy-test-store"
QUERIES = ("search", "count", "msearch", "delete_by_query", "get", "mget")
ADMIN_ENDPOINTS = ("_mapping", "_settings", "_refresh", "_alias")


@dataclass(frozen=True)
class Sent:
    method: str
    url: str
    params: dict[str, Any]
    body: Any


class RecordingTransport(Transport):
    """The client's transport, keeping every request it is asked to send."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: list[Sent] = []

    def perform_request(self, method: str, url: str, params: Any = None, body: Any = None, timeout: Any = None,
                        ignore: Any = (), headers: Any = None) -> Any:
        self.sent.append(Sent(method, url, dict(params or {}), body))
        return super().perform_request(method, url, params=params, body=body, timeout=timeout, ignore=ignore,
                                       headers=headers)


class Inspector:
    """`probe(tenant, what)` for the scenario: checks each request a call sends on the way."""

    def __init__(self, transport: RecordingTransport, index: str, *, tracking: bool) -> None:
        self.transport = transport
        self.index = index
        self.tracking = tracking  # whether the projection's tracking document may be written
        self.kinds: Counter[str] = Counter()
        self.calls = 0

    @contextmanager
    def probe(self, tenant: str, what: str) -> Iterator[None]:
        first = len(self.transport.sent)
        yield
        sent = self.transport.sent[first:]
        kinds = [self.check(request, tenant, what) for request in sent]
        assert set(kinds) - {"admin"}, f"{tenant}: {what}: no request reached OpenSearch ({sent})"
        self.kinds.update(kinds)
        self.calls += 1

    def check(self, request: Sent, tenant: str, what: str) -> str:
        """The request's kind, once it is checked to be the tenant's only."""
        parts = [unquote(part) for part in request.url.split("?")[0].strip("/").split("/")]
        where = f"{tenant}: {what}: {request.method} {request.url}"
        if parts == [""] and request.method == "HEAD":
            return "admin"  # ping
        if parts[-1] == "_bulk":
            assert parts[0] in (self.index, "_bulk"), where
            self._check_bulk(_lines(request.body), tenant, where)
            return "bulk"
        if parts[0] == "_alias" or (parts[0].startswith(self.index) and (len(parts) == 1 or parts[1] in ADMIN_ENDPOINTS)):
            assert request.method in ("HEAD", "PUT", "GET", "POST"), where
            return "admin"
        assert parts[0] == self.index, f"{where}: not the read model's index"
        endpoint = parts[1] if len(parts) > 1 else ""
        if endpoint in ("_search", "_count", "_delete_by_query") and len(parts) == 2:
            _check_query(_lines(request.body)[0].get("query"), tenant, where)
            return endpoint.removeprefix("_")
        if endpoint == "_msearch":
            lines = _lines(request.body)
            for header, body in zip(lines[::2], lines[1::2], strict=True):
                assert header.get("index", self.index) == self.index, where
                _check_query(body.get("query"), tenant, where)
            return "msearch"
        if endpoint == "_doc" and len(parts) == 3 and request.method in ("GET", "HEAD"):
            self._check_id(parts[2], tenant, where)
            return "get"
        if endpoint == "_mget":
            body = _lines(request.body)[0]
            ids = body.get("ids") or [doc["_id"] for doc in body["docs"]]
            for doc_id in ids:
                self._check_id(doc_id, tenant, where)
            return "mget"
        raise AssertionError(f"{where}: a request of a kind this test does not know; is it scoped to the tenant?")

    def _check_bulk(self, lines: list[dict[str, Any]], tenant: str, where: str) -> None:
        assert lines, where
        expect_source = False
        for line in lines:
            if expect_source:
                tracking = line.get("kind") == "tracking"
                assert tracking or line.get("tenant") == tenant, f"{where}: writes {line}"
                expect_source = False
                continue
            (operation, meta), = line.items()
            assert meta.get("_index", self.index) == self.index, f"{where}: {line}"
            self._check_id(meta["_id"], tenant, where)
            expect_source = operation != "delete"
        assert not expect_source, where

    def _check_id(self, doc_id: str, tenant: str, where: str) -> None:
        if self.tracking and doc_id.startswith("tracking/"):
            return  # the projection's position, no tenant's data
        assert doc_id.startswith(f"{tenant}/"), f"{where}: reads or writes {doc_id!r}, not an id of the tenant's"


def _check_query(query: Any, tenant: str, where: str) -> None:
    """A `term` filter on the tenant among the required clauses, and no other tenant anywhere; a
    `knn` query holds them in its own filter (Lucene answers the k nearest of what it matches)."""
    if isinstance(query, dict) and list(query) == ["knn"]:
        (field, knn), = query["knn"].items()
        _check_query(knn.get("filter"), tenant, f"{where} (knn on {field})")
        return
    assert isinstance(query, dict) and "bool" in query, f"{where}: not a bool query: {query}"
    required = []
    for occurs in ("filter", "must"):
        clauses = query["bool"].get(occurs, [])
        required += clauses if isinstance(clauses, list) else [clauses]
    tenant_terms = [_term_value(clause["term"]["tenant"]) for clause in required if "tenant" in clause.get("term", {})]
    assert tenant_terms, f"{where}: no term filter on the tenant: {query}"
    named = _tenants_named(query)
    assert named == {tenant}, f"{where}: names tenants {named}: {query}"


def _tenants_named(node: Any) -> set[Any]:
    """Every value a clause anywhere in the query compares the `tenant` field with."""
    found: set[Any] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "tenant":
                found |= {_term_value(v) for v in value} if isinstance(value, list) else {_term_value(value)}
            else:
                found |= _tenants_named(value)
    elif isinstance(node, list):
        for item in node:
            found |= _tenants_named(item)
    return found


def _term_value(value: Any) -> Any:
    return value.get("value") if isinstance(value, dict) else value


def _lines(body: Any) -> list[dict[str, Any]]:
    """A request body as JSON objects: one for a JSON body, one per line of an NDJSON one."""
    if isinstance(body, dict):
        return [body]
    if isinstance(body, (list, tuple)):
        return [line if isinstance(line, dict) else orjson.loads(line) for line in body]
    if isinstance(body, str):
        body = body.encode()
    return [orjson.loads(line) for line in body.splitlines() if line.strip()]


@pytest.fixture
def recording_client(opensearch_url: str) -> Iterator[OpenSearch]:
    client = OpenSearch(hosts=[opensearch_url], timeout=30, transport_class=RecordingTransport)
    yield client
    client.close()


def test_every_module_query_carries_the_tenant_filter(recording_client: OpenSearch, opensearch: OpenSearch,
                                                      opensearch_index: str) -> None:
    transport = recording_client.transport
    assert isinstance(transport, RecordingTransport)
    shared = OpenSearchModuleReadModel(recording_client, index=f"{opensearch_index}-shared", replicas=0, store=STORE)
    inspector = Inspector(transport, shared.index, tracking=True)
    events = {tenant: tenancy.module_events(tenant) for tenant in TENANTS}
    # the writes: each tenant's events in a batch of its own, inspected as the queries are
    tenancy.apply(shared, [(GLOBEX, events[GLOBEX]), (ACME, events[ACME])], probe=inspector.probe)
    alone = {}
    for tenant in (*TENANTS, "initech"):
        alone[tenant] = OpenSearchModuleReadModel(opensearch, index=f"{opensearch_index}-{tenant}", replicas=0, store=STORE)
        tenancy.apply(alone[tenant], [(tenant, events.get(tenant, []))])

    checked = tenancy.check_modules(shared, alone, probe=inspector.probe)

    assert checked == inspector.calls - 2 > 1_500  # (2: the batches of writes)
    assert {"search", "get", "mget", "bulk"} <= inspector.kinds.keys(), inspector.kinds


def test_every_chunk_query_carries_the_tenant_filter(recording_client: OpenSearch, opensearch: OpenSearch,
                                                     opensearch_index: str) -> None:
    transport = recording_client.transport
    assert isinstance(transport, RecordingTransport)
    shared = OpenSearchDocumentIndex(recording_client, index=f"{opensearch_index}-chunks", replicas=0)
    inspector = Inspector(transport, shared.index, tracking=False)
    tenancy.fill_documents(shared, TENANTS, probe=inspector.probe)
    alone = {}
    for tenant in (*TENANTS, "initech"):
        alone[tenant] = OpenSearchDocumentIndex(opensearch, index=f"{opensearch_index}-chunks-{tenant}", replicas=0)
        tenancy.fill_documents(alone[tenant], [tenant] if tenant in TENANTS else [])
        alone[tenant].prepare()

    checked = tenancy.check_documents(shared, alone, probe=inspector.probe)

    writes = inspector.calls - checked
    assert checked > 300 and writes == 2 * len(tenancy.documents_of(ACME)) + 1
    assert {"search", "count", "delete_by_query", "bulk"} <= inspector.kinds.keys(), inspector.kinds


def test_the_inspector_refuses_a_query_without_the_tenant_filter(recording_client: OpenSearch,
                                                                   opensearch_index: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the module read model as it would be had its live filter forgotten the tenant
    def unscoped(self: OpenSearchModuleReadModel, tenant: str) -> list[dict[str, Any]]:
        return [{"term": {"kind": "module"}}, {"term": {"deleted": False}}]

    view = OpenSearchModuleReadModel(recording_client, index=opensearch_index, replicas=0)
    inspector = Inspector(recording_client.transport, opensearch_index, tracking=True)  # type: ignore[arg-type]
    tenancy.apply(view, [(ACME, tenancy.module_events(ACME))])
    monkeypatch.setattr(OpenSearchModuleReadModel, "_live_filter", unscoped)
    for call in (lambda: view.list(ACME, tenancy.ListQuery()), lambda: view.used_by(ACME, "lib"),
                 lambda: view.used_by_counts(ACME, ["lib"])):
        with pytest.raises(AssertionError, match="no term filter on the tenant"), inspector.probe(ACME, "unscoped"):
            call()
    # and a read by an id of another tenant's
    with pytest.raises(AssertionError, match="not an id of the tenant's"), inspector.probe(GLOBEX, "read"):
        view.summary(ACME, "dates")


def test_the_inspector_refuses_a_chunk_query_without_the_tenant_filter(recording_client: OpenSearch,
                                                                         opensearch_index: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    index = OpenSearchDocumentIndex(recording_client, index=opensearch_index, replicas=0)
    inspector = Inspector(recording_client.transport, opensearch_index, tracking=False)  # type: ignore[arg-type]
    tenancy.fill_documents(index, [ACME])
    # the chunk index as it would be had its scope forgotten the tenant
    monkeypatch.setattr(chunks_opensearch, "_scope", lambda tenant, tool, document_ids=None: [{"term": {"tool": tool}}])
    vector = tenancy.text_vector("chunk")
    for call in (lambda: index.search(ACME, "wiki", ["chunk"], 5), lambda: index.chunks(ACME, "wiki", "guide", 0, 9),
                 lambda: index.count(ACME, "wiki"),
                 lambda: index.vector_search(ACME, "wiki", vector, tenancy.VECTOR_MODEL, 5),
                 lambda: index.vector_mean(ACME, "wiki", tenancy.VECTOR_MODEL)):
        with pytest.raises(AssertionError, match="no term filter on the tenant"), inspector.probe(ACME, "unscoped"):
            call()
