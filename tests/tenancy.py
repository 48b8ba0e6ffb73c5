"""Two tenants holding the same ids, and the proof that a read model keeps them apart (docs/tenants.md).

Each tenant's modules (and File Search documents) use the very same ids as the other's, with data
that differ in everything a query looks at: descriptions, states, roles, tags, imports, which ids
are deleted. A store holding both tenants (the *shared* one) must answer every query of a tenant
exactly as a store holding that tenant alone answers it, and every answer must name only that
tenant's data. The module events are made once and applied to each store, so the stores'
documents are equal to the last timestamp.

The scenario calls every query through `probe(tenant, what)`, a context manager around each call
to the shared store: the OpenSearch test records there every request the call sends and checks it
is scoped to that tenant (tests/integration/test_opensearch_tenant_filter.py); the embedded
implementations' test passes a no-op (tests/contract/test_tenant_isolation.py).
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from typing import Any

from eventsourcing.persistence import Tracking

import numpy as np

from domain.documents import TEXT, VECTOR_DIMENSIONS, Chunk, DocumentIndex, IndexedDocument
from domain.model import STATES, CodeModule
from projections.interface import ListQuery, ModuleReadModel
from projections.modules import ModuleSummaries

ACME, GLOBEX = "acme", "globex"
TENANTS = (ACME, GLOBEX)
Probe = Callable[[str, str], AbstractContextManager[Any]]


@contextmanager
def no_probe(tenant: str, what: str) -> Iterator[None]:
    yield


# -- modules ---------------------------------------------------------------------------------------

SOURCE = "exports.run = function (input) { return input; };"
# The same ids in both tenants ("solo" only in acme, "extra" only in globex), differing in every
# field a query reads. Every description names its tenant, and the tags `<tenant>-only` too.
# (id, description, tags or None for a library, draft imports, what happens: publish, draft after
# a publish (with imports), delete)
MODULES: dict[str, list[tuple[str, str, list[str] | None, list[str], str]]] = {
    ACME: [
        ("dates", "Date helpers of acme", None, [], "publish"),
        ("report", "Yearly report for acme", ["text", "acme-only"], ["dates"], "draft:dates,lib"),
        ("counter", "Counts the lines for acme", ["text"], [], ""),
        ("lib", "Library kept by acme", None, [], "publish"),
        ("gone", "Deleted at acme", ["text"], ["lib"], "delete"),
        ("solo", "Only acme has it", ["acme-only"], ["lib"], ""),
        ("Mixed", "zeta, the last of acme", ["text", "shared"], [], "publish"),
    ],
    GLOBEX: [
        ("dates", "Date tool of globex", ["text", "globex-only"], ["counter"], ""),
        ("report", "Yearly report for globex", None, ["counter"], "publish"),
        ("counter", "Counter of globex", None, [], "publish"),
        ("lib", "Deleted at globex", None, [], "delete"),
        ("gone", "Gone nowhere at globex", ["globex-only"], ["report"], "publish"),
        ("extra", "Only globex has it", ["text"], ["dates", "lib"], ""),
        ("Mixed", "alpha, the first of globex", ["shared"], ["report"], "draft:report,dates"),
    ],
}
IDS = sorted({module_id for modules in MODULES.values() for module_id, *_ in modules}) + ["nobody"]


def _definition(description: str, tags: list[str] | None, imports: list[str]) -> dict[str, Any]:
    tool = None
    if tags is not None:
        tool = {"tags": tags, "exposeInChat": False, "timeout": 1000, "memoryMb": 64, "inputParameters": [],
                "enabled": True}
    return {"description": description, "content": SOURCE, "imports": imports, "tool": tool}


def module_events(tenant: str) -> list[Any]:
    """The tenant's module events, in order (made once: apply the same list to every store)."""
    events: list[Any] = []
    for module_id, description, tags, imports, fate in MODULES[tenant]:
        definition = _definition(description, tags, imports)
        module = CodeModule(tenant=tenant, module_id=module_id, definition=definition, by=f"{tenant}-admin")
        if fate in ("publish", "delete") or fate.startswith("draft:"):
            module.publish(by=f"{tenant}-admin")
        if fate.startswith("draft:"):
            changed = _definition(f"{description}, changed", tags, fate.removeprefix("draft:").split(","))
            module.change_draft(changed, by=f"{tenant}-editor")
        if fate == "delete":
            module.delete(by=f"{tenant}-admin")
        events.extend(module.collect_events())
    return events


def apply(view: ModuleReadModel, batches: Sequence[tuple[str, list[Any]]], probe: Probe = no_probe) -> None:
    """Applies each tenant's events as one batch, the way the runner does (prefetch, apply,
    flush), inside `probe(tenant, …)`: the writes of a batch are that tenant's only."""
    view.open()
    projection = ModuleSummaries(view=view)
    position = view.max_tracking_id("tenancy") or 0
    for tenant, events in batches:
        with probe(tenant, "apply"):
            projection.prepare(events)
            for event in events:
                position += 1
                projection.process_event(event, Tracking("tenancy", position))
            view.flush()


def list_queries() -> Iterator[ListQuery]:
    """Every combination of the list's filters (search, state, role, used-by with and without a
    plan's tools, tags), each with one of the eight orders and one of three pages in turn; then a
    search of two words, two tags, every order and page over the unfiltered list."""
    searches = (None, ACME, GLOBEX)
    states = (None, *STATES)
    roles = (None, True, False)
    users: tuple[tuple[str | None, tuple[str, ...]], ...] = (
        (None, ()), ("Mixed", ()), ("nobody", ("counter", "extra", "solo")))
    tags = ((), ("text",), ("acme-only",), ("globex-only",))
    orders = list(itertools.product(("id", "description", "role", "state"), (True, False)))
    pages = ((0, 20), (1, 2), (0, 1))
    combinations = itertools.product(searches, states, roles, users, tags)
    for n, (search, state, tool, (used_by, also_used), tagged) in enumerate(combinations):
        order_by, ascending = orders[n % len(orders)]
        offset, limit = pages[n // len(orders) % len(pages)]
        yield ListQuery(search=search, state=state, tool=tool, used_by=used_by, also_used=also_used, tags=tagged,
                        offset=offset, limit=limit, order_by=order_by, ascending=ascending)
    yield from (ListQuery(search="of YEARLY"), ListQuery(search="e"), ListQuery(tags=("text", "shared")),
                ListQuery(used_by="report"), ListQuery(used_by="report", also_used=("Mixed",), search="e"))
    for (order_by, ascending), (offset, limit) in itertools.product(orders, pages + ((3, 3), (20, 5))):
        yield ListQuery(offset=offset, limit=limit, order_by=order_by, ascending=ascending)


def check_modules(shared: ModuleReadModel, alone: dict[str, ModuleReadModel], probe: Probe = no_probe) -> int:
    """Every query of each tenant of `alone` on `shared` (which holds both tenants' modules)
    answers as on the store of that tenant alone, and names nothing of another tenant. Answers how
    many queries were checked."""
    checked = 0

    def same(tenant: str, what: str, call: Callable[[ModuleReadModel], Any]) -> Any:
        nonlocal checked
        with probe(tenant, what):
            got = call(shared)
        expected = call(alone[tenant])
        assert got == expected, f"{tenant}: {what}: the shared store answers {got!r}, the tenant's own {expected!r}"
        checked += 1
        return got

    for tenant in alone:
        others = _others(tenant)
        for query in list_queries():
            page = same(tenant, f"list {query}", lambda view: _page(view.list(tenant, query)))
            for summary in page["collection"]:
                assert _names_only(tenant, summary["description"]), (tenant, query, summary)
            assert not {f"{other}-only" for other in others} & page["facets"]["tags"].keys(), (tenant, query, page["facets"])
        for module_id in IDS:
            summary = same(tenant, f"summary {module_id}", lambda view: view.summary(tenant, module_id))
            assert summary is None or _names_only(tenant, summary["description"]), (tenant, summary)
            document = same(tenant, f"document {module_id}", lambda view: view.document(tenant, module_id))
            assert document is None or document["tenant"] == tenant, (tenant, document)
            same(tenant, f"is_taken {module_id}", lambda view: view.is_taken(tenant, module_id))
            same(tenant, f"used_by {module_id}", lambda view: view.used_by(tenant, module_id))
        for ids in (IDS, ["lib"], ["counter", "dates", "report"], ["nobody"]):
            same(tenant, f"used_by_counts {ids}", lambda view: view.used_by_counts(tenant, ids))

    # The tenants' answers do differ, so that equal answers above mean something.
    assert shared.summary(ACME, "dates") != shared.summary(GLOBEX, "dates")
    assert shared.is_taken(GLOBEX, "gone") and not shared.is_taken(ACME, "gone")
    assert shared.is_taken(ACME, "solo") and not shared.is_taken(GLOBEX, "solo")
    assert shared.used_by(ACME, "lib") == ["report", "solo"] and shared.used_by(GLOBEX, "lib") == ["extra"]
    assert shared.used_by_counts(ACME, ["counter"]) == {"counter": 0}
    assert shared.used_by_counts(GLOBEX, ["counter"]) == {"counter": 2}
    assert _ids(shared.list(ACME, ListQuery(tags=("globex-only",)))) == []
    assert _ids(shared.list(GLOBEX, ListQuery(tags=("globex-only",)))) == ["dates", "gone"]
    assert _ids(shared.list(ACME, ListQuery(search="globex"))) == []
    assert _ids(shared.list(ACME, ListQuery(used_by="Mixed"))) == []
    assert _ids(shared.list(GLOBEX, ListQuery(used_by="Mixed"))) == ["dates", "report"]
    return checked


def _page(page: Any) -> dict[str, Any]:
    return {"collection": page.collection, "total": page.total, "facets": page.facets}


def _ids(page: Any) -> list[str]:
    return [summary["id"] for summary in page.collection]


def _others(tenant: str) -> list[str]:
    return [other for other in TENANTS if other != tenant]


def _names_only(tenant: str, text: str) -> bool:
    """Whether `text` names the tenant and no other (every description and chunk names its own)."""
    return tenant in text and not any(other in text for other in _others(tenant))


# -- File Search documents --------------------------------------------------------------------------

TOOLS = ("handbook", "wiki")
DOCUMENT_IDS = ("guide", "faq", "policy")
# Words each tenant's chunks hold, and words both tenants' chunks hold.
SHARED_WORDS = ("holiday", "parking", "badge")


VECTOR_MODEL = "tenancy-model@1"


def text_vector(text: str) -> bytes:
    """A unit vector of the index's width, the same for the same text (a stand-in embedding)."""
    vector = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(VECTOR_DIMENSIONS)
    return (vector / np.linalg.norm(vector)).astype("<f4").tobytes()


def document_chunks(tenant: str, tool: str, document_id: str) -> tuple[IndexedDocument, list[Chunk]]:
    """A document of the tenant's tool: its title and every chunk name the tenant; the chunks'
    count and words differ between tenants (globex's `policy` is in its wiki only); each chunk
    has a vector of its text by `VECTOR_MODEL`."""
    title = f"{tenant} {tool} {document_id}"
    count = 3 if tenant == ACME else 2
    texts = [f"{tenant} {SHARED_WORDS[(n + len(document_id)) % 3]} chunk {n} of {document_id} in {tool} at {tenant}"
             for n in range(count)]
    chunks, start = [], 0
    for n, text in enumerate(texts):
        chunks.append(Chunk(n=n, start=start, end=start + len(text), text=text, page=n + 1 if tenant == GLOBEX else None,
                            vector=text_vector(text)))
        start += len(text) + 2
    return IndexedDocument(document_id=document_id, title=title, name=f"{document_id}.txt", media_type=TEXT,
                           model=VECTOR_MODEL), chunks


def documents_of(tenant: str) -> list[tuple[str, IndexedDocument, list[Chunk]]]:
    found = []
    for tool, document_id in itertools.product(TOOLS, DOCUMENT_IDS):
        if tenant == GLOBEX and document_id == "policy" and tool == "handbook":
            continue
        found.append((tool, *document_chunks(tenant, tool, document_id)))
    return found


def fill_documents(index: DocumentIndex, tenants: Iterable[str], probe: Probe = no_probe) -> None:
    """Puts every document of the tenants (one `put` each, inside `probe`), then removes acme's
    wiki `faq` and puts globex's handbook `guide` again with fewer chunks."""
    for tenant in tenants:
        for tool, document, chunks in documents_of(tenant):
            with probe(tenant, f"put {tool}/{document.document_id}"):
                index.put(tenant, tool, document, chunks)
        if tenant == ACME:
            with probe(tenant, "remove wiki/faq"):
                index.remove(tenant, "wiki", "faq")
        else:
            document, chunks = document_chunks(tenant, "handbook", "guide")
            with probe(tenant, "put handbook/guide again"):
                index.put(tenant, "handbook", document, chunks[:1])


def check_documents(shared: DocumentIndex, alone: dict[str, DocumentIndex], probe: Probe = no_probe) -> int:
    """Every read of each tenant on `shared` answers as on the index of that tenant `alone`
    (searches as sets of hits without their scores: BM25 counts a word's rarity over the whole
    index, so scores, and the order of hits, may differ), and names nothing of the other tenant."""
    checked = 0

    def same(tenant: str, what: str, call: Callable[[DocumentIndex], Any], key: Callable[[Any], Any] = lambda x: x) -> Any:
        nonlocal checked
        with probe(tenant, what):
            got = call(shared)
        expected = call(alone[tenant])
        assert key(got) == key(expected), f"{tenant}: {what}: the shared index answers {got!r}, the tenant's own {expected!r}"
        checked += 1
        return got

    searches = [[ACME], [GLOBEX], [ACME, GLOBEX], list(SHARED_WORDS), ["chunk"], ["guide", "holiday"], ["nowhere"]]
    within = (None, ["guide"], ["faq", "policy"], ["missing"])
    for tenant in alone:
        others = _others(tenant)
        for tool, terms, document_ids in itertools.product(TOOLS, searches, within):
            what = f"search {tool} {terms} in {document_ids}"
            hits = same(tenant, what, lambda index: index.search(tenant, tool, terms, 100, document_ids), _hit_set)
            for hit in hits:
                assert _names_only(tenant, hit.title) and _names_only(tenant, hit.snippet), (tenant, what, hit)
            top = same(tenant, what + " (top 2)", lambda index: index.search(tenant, tool, terms, 2, document_ids), len)
            assert all(_names_only(tenant, hit.title) for hit in top)
            if all(term in others for term in terms):
                assert hits == [], (tenant, what, hits)
        for tool, document_id in itertools.product(TOOLS, (*DOCUMENT_IDS, "missing")):
            for first, last in ((0, 10), (1, 1), (2, 5), (-3, 0)):
                stored = same(tenant, f"chunks {tool}/{document_id} {first}-{last}",
                              lambda index: index.chunks(tenant, tool, document_id, first, last))
                assert all(_names_only(tenant, chunk.text) for chunk in stored)
        for tool in (*TOOLS, "missing"):
            same(tenant, f"count {tool}", lambda index: index.count(tenant, tool))
        if shared.vectors:
            for tool, document_ids, near in itertools.product(TOOLS, within, (ACME, GLOBEX)):
                what = f"vector search {tool} near {near}'s text in {document_ids}"
                vector = text_vector(f"{near} {SHARED_WORDS[0]} chunk 0 of guide in {tool} at {near}")
                hits = same(tenant, what, lambda index: index.vector_search(tenant, tool, vector, VECTOR_MODEL, 100, document_ids),
                            _hit_set)
                assert all(_names_only(tenant, hit.title) and _names_only(tenant, hit.snippet) for hit in hits), (tenant, what)
                same(tenant, what + " (top 2)",
                     lambda index: index.vector_search(tenant, tool, vector, VECTOR_MODEL, 2, document_ids), len)
            for tool in (*TOOLS, "missing"):
                # the tool's mean (what a semantic query is centred on): of the tenant's vectors only
                with probe(tenant, f"vector mean {tool}"):
                    got = _mean(shared.vector_mean(tenant, tool, VECTOR_MODEL))
                expected = _mean(alone[tenant].vector_mean(tenant, tool, VECTOR_MODEL))
                assert (got is None) == (expected is None) and (got is None or np.allclose(got, expected, atol=1e-6)), (
                    f"{tenant}: vector mean {tool}: the shared index answers {got}, the tenant's own {expected}")
                checked += 1

    # The tenants' answers do differ, so that equal answers above mean something.
    assert shared.count(ACME, "handbook") == 9 and shared.count(GLOBEX, "handbook") == 3
    assert shared.count(ACME, "wiki") == 6 and shared.count(GLOBEX, "wiki") == 6
    assert [c.n for c in shared.chunks(GLOBEX, "handbook", "guide", 0, 10)] == [0]
    assert [c.n for c in shared.chunks(ACME, "handbook", "guide", 0, 10)] == [0, 1, 2]
    assert shared.chunks(ACME, "wiki", "faq", 0, 10) == [] and len(shared.chunks(GLOBEX, "wiki", "faq", 0, 10)) == 2
    assert shared.search(ACME, "handbook", [GLOBEX], 10) == []
    assert {h.document_id for h in shared.search(GLOBEX, "handbook", ["chunk"], 10)} == {"guide", "faq"}
    if shared.vectors:
        assert not np.allclose(_mean(shared.vector_mean(ACME, "wiki", VECTOR_MODEL)),
                               _mean(shared.vector_mean(GLOBEX, "wiki", VECTOR_MODEL)), atol=1e-3)
        assert {h.document_id for h in shared.vector_search(ACME, "wiki", text_vector("x"), VECTOR_MODEL, 100)} == {"guide", "policy"}
    return checked


def _mean(mean: bytes | None) -> np.ndarray | None:
    return None if mean is None else np.frombuffer(mean, dtype="<f4")


def _hit_set(hits: list[Any]) -> set[tuple[Any, ...]]:
    return {tuple(v for k, v in asdict(hit).items() if k != "score") for hit in hits}
