"""One contract for every `DocumentIndex` (File Search chunks, docs/kinds/file-search-tools.md): what a user of a
File Search tool would check — a word is found where it is, with its document, title, marked
snippet and page; better chunks first; filters and scopes hold; every write counts for the very
next search; no word of a query is ever read as syntax.

Each case runs on SQLite FTS5 (a file of the test's own) and on OpenSearch (an index of the test's
own on the shared node; in CI a missing node fails the test, see tests/engines.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from opensearchpy import OpenSearch

from domain.documents import (
    MARK_END,
    MARK_START,
    TEXT,
    Chunk,
    DocumentIndex,
    DropTool,
    IndexedDocument,
    IndexPosition,
    IndexUnavailable,
    PutDocument,
    PutVectors,
    RemoveDocument,
    query_terms,
)
from projections.chunks_opensearch import OpenSearchDocumentIndex
from projections.chunks_sqlite import SqliteDocumentIndex
from tests.helpers import free_port

TENANT, OTHER_TENANT = "acme", "globex"
TOOL, OTHER_TOOL = "handbook", "wiki"

# Ordinary text, so that a word of a test is rare in the index (as in a real tool) and BM25 has
# something to rank against.
FILLER = [
    "Our office opens at nine in the morning and closes at six in the evening on weekdays.",
    "Expense reports are due on the last Friday of each month with receipts attached.",
    "The cafeteria serves lunch between noon and two o'clock, with vegetarian options daily.",
    "Parking permits are issued by the facilities team; ask at reception for a visitor pass.",
    "Security badges must be worn at all times inside the building and returned on leaving.",
    "Laptops are replaced every three years; the helpdesk keeps spares for emergencies.",
]


@pytest.fixture(params=["sqlite", "opensearch"])
def open_index(request: pytest.FixtureRequest, tmp_path) -> Iterator[Callable[[], DocumentIndex]]:
    """Opens an index on the test's own storage: a second call opens it again (a new process)."""
    opened: list[DocumentIndex] = []
    if request.param == "sqlite":
        def make() -> DocumentIndex:
            opened.append(SqliteDocumentIndex(tmp_path / "documents.sqlite"))
            return opened[-1]
    else:
        url = request.getfixturevalue("opensearch_url")
        name = request.getfixturevalue("opensearch_index")  # deleted after the test

        def make() -> DocumentIndex:
            opened.append(OpenSearchDocumentIndex(OpenSearch(hosts=[url], timeout=30), index=name, replicas=0))
            return opened[-1]
    yield make
    for index in opened:
        index.close()


@pytest.fixture
def index(open_index: Callable[[], DocumentIndex]) -> DocumentIndex:
    return open_index()


def document(document_id: str, title: str | None = None) -> IndexedDocument:
    return IndexedDocument(document_id=document_id, title=title or f"{document_id}.txt", name=f"{document_id}.txt",
                           media_type=TEXT)


def chunks_of(*texts: str, page: int | None = None) -> list[Chunk]:
    chunks, start = [], 0
    for n, text in enumerate(texts):
        chunks.append(Chunk(n=n, start=start, end=start + len(text), text=text, page=page))
        start += len(text) - 10  # overlapping, as the chunker's are
    return chunks


def put(index: DocumentIndex, document_id: str, *texts: str, title: str | None = None, tenant: str = TENANT,
        tool: str = TOOL, page: int | None = None) -> None:
    index.put(tenant, tool, document(document_id, title), chunks_of(*texts, page=page))


def search(index: DocumentIndex, query: str, *, tenant: str = TENANT, tool: str = TOOL, limit: int = 10,
           document_ids: list[str] | None = None):
    terms = query_terms(query)
    assert terms, f"{query!r} has no terms"
    return index.search(tenant, tool, terms, limit, document_ids)


def found(index: DocumentIndex, query: str, **scope: object) -> list[str]:
    return [hit.chunk_id for hit in search(index, query, **scope)]


def with_filler(index: DocumentIndex, tenant: str = TENANT, tool: str = TOOL) -> None:
    put(index, "filler", *FILLER, tenant=tenant, tool=tool)


def test_a_word_in_one_chunk_is_found_with_its_document_title_snippet_and_page(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "manual", "Plug the printer in and wait for the light.",
        "Never open the xylophone cabinet without gloves: the hammers are sharp.", "Call the helpdesk for toner.",
        title="Printer manual", page=3)

    [hit] = search(index, "Xylophone")

    assert (hit.chunk_id, hit.document_id, hit.title, hit.page) == ("manual#1", "manual", "Printer manual", 3)
    assert hit.start == len("Plug the printer in and wait for the light.") - 10
    assert f"{MARK_START}xylophone{MARK_END}" in hit.snippet
    assert "cabinet without gloves" in hit.snippet.replace(MARK_START, "").replace(MARK_END, "")
    assert hit.score > 0


def test_a_hit_by_its_title_alone_still_has_a_snippet(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "onboarding", "Welcome aboard. Your first week is about meeting the team.", title="Quokka guide")

    [hit] = search(index, "quokka")

    assert hit.title == "Quokka guide"
    assert hit.snippet.startswith("Welcome aboard")


def test_more_occurrences_and_a_title_rank_higher(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "once", "The wombat was mentioned once in this long paragraph about the office garden and its hedges.")
    put(index, "often", "Wombat care: feed the wombat at dawn, brush the wombat weekly, and let the wombat sleep.")
    put(index, "titled", "Feeding times and the burrow are described here, along with the garden hedges.",
        title="Wombat")

    hits = search(index, "wombat")

    assert [h.document_id for h in hits][-1] == "once"
    assert {h.document_id for h in hits[:2]} == {"often", "titled"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_any_word_may_match_and_more_words_rank_higher(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "one", "The aardvark digs.")
    put(index, "both", "The aardvark digs for the pangolin.")
    put(index, "other", "The pangolin rolls up.")

    assert found(index, "aardvark pangolin")[0] == "both#0"
    assert set(found(index, "aardvark pangolin")) == {"one#0", "both#0", "other#0"}


def test_limit_keeps_the_best(index: DocumentIndex) -> None:
    with_filler(index)
    for i in range(8):
        put(index, f"d{i}", "llama " * (i + 1) + "in the field near the barn with other animals around.")

    hits = search(index, "llama", limit=3)

    assert [h.document_id for h in hits] == ["d7", "d6", "d5"]


def test_document_ids_filter_keeps_to_those_documents(index: DocumentIndex) -> None:
    with_filler(index)
    for name in ("alpha", "beta", "gamma"):
        put(index, name, f"The narwhal report of {name}.", "Nothing else here.")

    assert {h.document_id for h in search(index, "narwhal", document_ids=["beta", "gamma"])} == {"beta", "gamma"}
    assert found(index, "narwhal", document_ids=["beta"]) == ["beta#0"]
    assert found(index, "narwhal", document_ids=["missing"]) == []


def test_document_ids_are_kept_to_before_the_top_k_however_many(index: DocumentIndex) -> None:
    """A search's metadata filter reaches the index as the documents that pass it (issue 36): the
    index ranks within them, so the best `limit` of those come back even where every chunk of
    the other documents ranks higher, and a list of tens of thousands of ids is one query."""
    with_filler(index)
    for i in range(12):
        put(index, f"strong{i}", f"narwhal narwhal narwhal narwhal tusk {i}")
    for i in range(3):
        put(index, f"weak{i}", f"One narwhal was seen once near the pier among {' '.join(FILLER[i].split()[:12])}")
    weak = ["weak0", "weak1", "weak2"]

    assert {h.document_id for h in search(index, "narwhal", limit=3)} <= {f"strong{i}" for i in range(12)}
    assert sorted(h.document_id for h in search(index, "narwhal", limit=3, document_ids=weak)) == weak
    many = [f"absent{i:05}" for i in range(70_000)] + weak  # past SQLite's parameters and one OpenSearch terms query
    assert sorted(h.document_id for h in search(index, "narwhal", limit=3, document_ids=many)) == weak
    assert found(index, "narwhal", document_ids=many[:70_000]) == []


def test_tenants_and_tools_never_see_each_others_chunks(index: DocumentIndex) -> None:
    # the same document id in two tenants and in two tools of one tenant
    put(index, "policy", "Acme's handbook says the ocelot sleeps.", tenant=TENANT, tool=TOOL)
    put(index, "policy", "Globex's handbook says the ocelot runs.", "and more", tenant=OTHER_TENANT, tool=TOOL)
    put(index, "policy", "Acme's wiki says the ocelot hunts.", "and more", "and more", tenant=TENANT, tool=OTHER_TOOL)
    for tenant, tool in ((TENANT, TOOL), (OTHER_TENANT, TOOL), (TENANT, OTHER_TOOL)):
        with_filler(index, tenant, tool)

    assert [h.snippet for h in search(index, "ocelot")] == [f"Acme's handbook says the {MARK_START}ocelot{MARK_END} sleeps."]
    assert "runs" in search(index, "ocelot", tenant=OTHER_TENANT)[0].snippet
    assert "hunts" in search(index, "ocelot", tool=OTHER_TOOL)[0].snippet
    assert found(index, "ocelot", tenant=OTHER_TENANT, tool=OTHER_TOOL) == []
    assert (index.count(TENANT, TOOL), index.count(OTHER_TENANT, TOOL), index.count(TENANT, OTHER_TOOL)) == (7, 8, 9)
    assert [c.text for c in index.chunks(OTHER_TENANT, TOOL, "policy", 0, 9)] == ["Globex's handbook says the ocelot runs.", "and more"]

    # removing, replacing and dropping in one scope leaves the others as they were
    index.remove(TENANT, TOOL, "policy")
    index.put(OTHER_TENANT, TOOL, document("policy"), chunks_of("Globex rewrote it."))
    index.drop(TENANT, OTHER_TOOL)
    assert found(index, "ocelot") == []
    assert found(index, "ocelot", tenant=OTHER_TENANT) == []
    assert found(index, "rewrote", tenant=OTHER_TENANT) == ["policy#0"]
    assert found(index, "rewrote") == []
    assert (index.count(TENANT, TOOL), index.count(OTHER_TENANT, TOOL), index.count(TENANT, OTHER_TOOL)) == (6, 7, 0)


def test_putting_again_replaces_every_chunk(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "notes", "The first version mentions the tapir.", "Its second chunk mentions the okapi.",
        "Its third chunk mentions the dugong.", title="Old title")

    put(index, "notes", "The second version mentions the tapir again.", title="New title")

    assert found(index, "okapi") == [] and found(index, "dugong") == []
    [hit] = search(index, "tapir")
    assert (hit.chunk_id, hit.title) == ("notes#0", "New title")
    assert "second version" in hit.snippet
    assert [c.chunk_id for c in index.chunks(TENANT, TOOL, "notes", 0, 10)] == ["notes#0"]
    assert index.count(TENANT, TOOL) == len(FILLER) + 1

    # the same put twice leaves the same chunks, once
    put(index, "notes", "The second version mentions the tapir again.", title="New title")
    assert found(index, "tapir") == ["notes#0"]
    assert index.count(TENANT, TOOL) == len(FILLER) + 1


def test_put_many_replaces_every_chunk_of_each_document_across_tools(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "notes", "The first version mentions the tapir.", "Its second chunk mentions the okapi.")
    put(index, "other", "Another tool's note on the tapir.", tool="other-tool")

    index.put_many([
        (TENANT, TOOL, document("notes", "New title"), chunks_of("The second version mentions the tapir again.")),
        (TENANT, TOOL, document("fresh"), chunks_of("A fresh document about the dugong.", "And the manatee.")),
        (TENANT, "other-tool", document("other"), chunks_of("The other tool now says capybara.")),
    ])

    assert found(index, "okapi") == []
    [hit] = search(index, "tapir")
    assert (hit.chunk_id, hit.title) == ("notes#0", "New title")
    assert found(index, "manatee") == ["fresh#1"]
    assert found(index, "tapir", tool="other-tool") == [] and found(index, "capybara", tool="other-tool") == ["other#0"]
    assert index.count(TENANT, TOOL) == len(FILLER) + 3


def test_a_document_put_again_is_found_throughout_by_another_process(open_index: Callable[[], DocumentIndex]) -> None:
    # Two replicas following one log into one index both put each document (the second again):
    # a search between the steps of a put must still find the document, never an empty answer.
    writer, reader = open_index(), open_index()
    with_filler(writer)
    chunks = chunks_of("The first chunk mentions the tapir.", "The second chunk mentions the tapir too.")
    writer.put_many([(TENANT, TOOL, document("notes"), chunks)])
    assert sorted(found(reader, "tapir")) == ["notes#0", "notes#1"]
    done, answers = threading.Event(), []

    other = open_index()

    def search_meanwhile() -> None:
        while not done.is_set():
            answers.append(sorted(found(reader, "tapir")))

    def write_meanwhile() -> None:  # the other replica's writes (each made visible at once)
        while not done.is_set():
            other.put(TENANT, TOOL, document("elsewhere"), chunks_of("A note on the okapi."))

    meanwhile = [threading.Thread(target=search_meanwhile), threading.Thread(target=write_meanwhile)]
    for thread in meanwhile:
        thread.start()
    try:
        for _ in range(40):
            writer.put_many([(TENANT, TOOL, document("notes"), chunks)])
    finally:
        done.set()
        for thread in meanwhile:
            thread.join()
    assert answers and all(answer == ["notes#0", "notes#1"] for answer in answers), \
        [answer for answer in answers if answer != ["notes#0", "notes#1"]][:3]
    # Put again with fewer chunks, the one past the new last is gone.
    writer.put_many([(TENANT, TOOL, document("notes"), chunks[:1])])
    assert found(reader, "tapir") == ["notes#0"]


def test_remove_counts_for_the_very_next_search(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "gone", "The platypus lays eggs.", "The platypus swims.")
    put(index, "kept", "A platypus drawing.")
    assert len(found(index, "platypus")) == 3

    index.remove(TENANT, TOOL, "gone")

    assert found(index, "platypus") == ["kept#0"]
    assert index.chunks(TENANT, TOOL, "gone", 0, 5) == []
    index.remove(TENANT, TOOL, "gone")  # removing what is not there is no error
    index.remove(TENANT, TOOL, "never-was")


def test_drop_counts_for_the_very_next_search(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "a", "The axolotl regrows limbs.")
    put(index, "a", "The axolotl of the other tool.", tool=OTHER_TOOL)

    index.drop(TENANT, TOOL)

    assert found(index, "axolotl") == [] and index.count(TENANT, TOOL) == 0
    assert found(index, "axolotl", tool=OTHER_TOOL) == ["a#0"]


def test_chunks_gives_the_neighbours_in_order(index: DocumentIndex) -> None:
    texts = [f"Chunk number {n} of the long report." for n in range(12)]
    put(index, "report", *texts, page=2)

    middle = index.chunks(TENANT, TOOL, "report", 4, 6)

    assert [(c.chunk_id, c.n, c.text) for c in middle] == [(f"report#{n}", n, texts[n]) for n in (4, 5, 6)]
    expected = chunks_of(*texts)
    assert [(c.start, c.end, c.page, c.document_id) for c in middle] == [(expected[n].start, expected[n].end, 2, "report") for n in (4, 5, 6)]
    assert [c.n for c in index.chunks(TENANT, TOOL, "report", -3, 1)] == [0, 1]
    assert [c.n for c in index.chunks(TENANT, TOOL, "report", 10, 50)] == [10, 11]
    assert index.chunks(TENANT, TOOL, "report", 12, 20) == []
    assert index.chunks(TENANT, TOOL, "report", 6, 4) == []
    assert index.chunks(TENANT, TOOL, "missing", 0, 3) == []


def test_count_is_the_tools_chunks(index: DocumentIndex) -> None:
    assert index.count(TENANT, TOOL) == 0
    put(index, "a", "one", "two", "three")
    put(index, "b", "four")
    put(index, "c", "five", tool=OTHER_TOOL)

    assert index.count(TENANT, TOOL) == 4
    assert index.count(TENANT, OTHER_TOOL) == 1
    assert index.count(OTHER_TENANT, TOOL) == 0


def test_clear_empties_every_tenant_and_tool(index: DocumentIndex) -> None:
    put(index, "a", "The capybara swims.")
    put(index, "a", "The capybara naps.", tenant=OTHER_TENANT, tool=OTHER_TOOL)

    index.clear()

    assert index.count(TENANT, TOOL) == 0 and index.count(OTHER_TENANT, OTHER_TOOL) == 0
    assert found(index, "capybara") == [] and found(index, "capybara", tenant=OTHER_TENANT, tool=OTHER_TOOL) == []
    put(index, "a", "The capybara is back.")  # a rebuild starts from here
    assert found(index, "capybara") == ["a#0"]


def test_apply_makes_the_changes_in_their_order_then_records_the_position(
        open_index: Callable[[], DocumentIndex]) -> None:
    index = open_index()
    assert index.position("Store") is None
    index.apply([
        PutDocument(TENANT, TOOL, document("a"), chunks_of("The capybara swims.")),
        PutDocument(TENANT, TOOL, document("b"), chunks_of("The capybara naps.", "It wakes.")),
        PutDocument(TENANT, OTHER_TOOL, document("c"), chunks_of("The capybara hides.")),
        RemoveDocument(TENANT, TOOL, "a"),
        PutDocument(TENANT, TOOL, document("a"), chunks_of("The capybara is back.")),  # after its removal: kept
        DropTool(TENANT, OTHER_TOOL),
        RemoveDocument(TENANT, TOOL, "never-there"),
    ], IndexPosition("Store", 7, "store-1"))

    assert sorted(found(index, "capybara")) == ["a#0", "b#0"]
    assert index.count(TENANT, OTHER_TOOL) == 0 and index.total() == 3
    # The position is the index's own record: a process opening it again resumes from it.
    assert open_index().position("Store") == IndexPosition("Store", 7, "store-1")
    index.apply([], IndexPosition("Store", 9, "store-1"))
    assert index.position("Store") == IndexPosition("Store", 9, "store-1") and index.position("Other") is None
    # A position is no chunk: no tool counts it, nothing finds it.
    assert index.total() == 3 and found(index, "store") == []

    index.clear()
    assert index.position("Store") is None and index.total() == 0


def test_words_beyond_ascii_are_found(index: DocumentIndex) -> None:
    with_filler(index)
    put(index, "fr", "Le café de la gare ouvre tôt.")
    put(index, "de", "Die Brücke über den Fluss in München.")
    put(index, "ja", "会議 は 日本 の 東京 で 行われます。")
    put(index, "el", "Η Ελληνική γλώσσα.")

    assert found(index, "café") == ["fr#0"]
    assert found(index, "ÜBER") == ["de#0"]
    assert found(index, "münchen") == ["de#0"]
    assert found(index, "ελληνική") == ["el#0"]
    [hit] = search(index, "日本")
    assert hit.chunk_id == "ja#0"
    assert MARK_START in hit.snippet and "日" in hit.snippet


SYNTAX_TERMS = [["AND"], ["OR"], ["NOT"], ["NEAR"], ["and", "or", "not", "near"], ["title"], ["text"], ["scope"], ["rank"],
                query_terms("NEAR(title text)"), query_terms('title:secret OR "a" AND NOT b*'), query_terms("{title} : x"),
                query_terms("tenant:globex"), ["_"], ["x", "_"]]


@pytest.mark.parametrize("terms", SYNTAX_TERMS, ids=lambda terms: " ".join(terms))
def test_query_syntax_words_are_plain_words(index: DocumentIndex, terms: list[str]) -> None:
    with_filler(index)
    put(index, "grammar", "Use AND, OR, NOT and NEAR as plain words; the title and text columns, the scope, "
                          "the rank, the tenant, the secret and x are words too.", title="title")
    put(index, "grammar", "Another tenant's secret x, AND more.", tenant=OTHER_TENANT)

    hits = index.search(TENANT, TOOL, terms, 10)

    # every term but "_" (no word to a tokenizer) is a word of the chunk, best found in this tenant's
    if terms == ["_"]:
        assert hits == []
        return
    assert hits[0].chunk_id == "grammar#0" and hits[0].title == "title"
    assert [hit.chunk_id for hit in hits].count("grammar#0") == 1
    assert not any("Another tenant" in hit.snippet for hit in hits)


def test_writes_are_seen_by_the_next_search_of_another_thread(index: DocumentIndex) -> None:
    with_filler(index)
    seen: list[list[str]] = []

    def write_then_hand_over(n: int) -> None:
        put(index, f"doc{n}", f"The gecko number {n} climbs walls.")

    for n in range(3):
        writer = threading.Thread(target=write_then_hand_over, args=(n,))
        writer.start()
        writer.join()
        reader = threading.Thread(target=lambda: seen.append(found(index, "gecko")))
        reader.start()
        reader.join()

    assert [len(hits) for hits in seen] == [1, 2, 3]


def test_concurrent_writers_and_readers_keep_every_chunk(index: DocumentIndex) -> None:
    errors: list[BaseException] = []

    def work(w: int) -> None:
        try:
            for i in range(5):
                put(index, f"w{w}d{i}", f"Writer {w} wrote the heron note {i}.", "Second chunk.")
                found(index, "heron")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert index.count(TENANT, TOOL) == 40
    assert len(search(index, "heron", limit=50)) == 20


def test_the_chunks_outlive_the_index_object(open_index: Callable[[], DocumentIndex]) -> None:
    first = open_index()
    put(first, "kept", "The pelican dives.")
    first.close()

    again = open_index()

    assert found(again, "pelican") == ["kept#0"]
    assert again.count(TENANT, TOOL) == 1


def test_opensearch_out_of_reach_is_index_unavailable() -> None:
    nobody = OpenSearch(hosts=[f"http://127.0.0.1:{free_port()}"], timeout=2, max_retries=0)
    index = OpenSearchDocumentIndex(nobody, index="toolsmith-chunks-unreachable", replicas=0)

    with pytest.raises(IndexUnavailable):
        index.search(TENANT, TOOL, ["anything"], 10)
    with pytest.raises(IndexUnavailable):
        index.put(TENANT, TOOL, document("a"), chunks_of("text"))
    with pytest.raises(IndexUnavailable):
        index.count(TENANT, TOOL)
    index.close()


def test_opensearch_writes_refused_with_429_are_sent_again(opensearch_url: str, opensearch_index: str) -> None:
    client = OpenSearch(hosts=[opensearch_url], timeout=30)
    index = OpenSearchDocumentIndex(client, index=opensearch_index, replicas=0)
    real_bulk = client.bulk
    sent: list[int] = []

    def overloaded_once(*, body: bytes, **params: object) -> dict:
        # the node's queue is full for the first request's chunks (its other item, the delete of
        # the document's summary record, goes through)
        sent.append(body.count(b"\n"))
        if len(sent) == 1:
            actions = [line for line in body.splitlines() if line.startswith((b'{"index"', b'{"delete"'))]
            return {"errors": True, "items": [
                {"index": {"status": 429, "error": {"type": "es_rejected_execution_exception"}}}
                if action.startswith(b'{"index"') else {"delete": {"status": 404}} for action in actions]}
        return real_bulk(body=body, **params)

    client.bulk = overloaded_once  # type: ignore[method-assign]
    put(index, "busy", "The kestrel hovers.", "The kestrel dives.")

    assert sent == [5, 4]  # then the two chunks, and only they
    assert sorted(found(index, "kestrel")) == ["busy#0", "busy#1"]
    index.close()


# -- vectors (semantic retrieval) and the retrieval set ------------------------------------------
#
# The vector cases run on both engines: sqlite-vec beside FTS5, and the k-NN plugin's Lucene
# engine on OpenSearch (scripts/opensearch.sh puts the plugin on the node).

MODEL = "test-model@1"


@pytest.fixture
def vector_index(open_index: Callable[[], DocumentIndex]) -> DocumentIndex:
    index = open_index()
    assert index.vectors
    return index


def unit(*weights: float) -> bytes:
    """A unit vector of the index's width from its first few coordinates."""
    import numpy as np

    from domain.documents import VECTOR_DIMENSIONS

    vector = np.zeros(VECTOR_DIMENSIONS, dtype="<f4")
    vector[: len(weights)] = weights
    return (vector / np.linalg.norm(vector)).astype("<f4").tobytes()


def put_vectors(index: DocumentIndex, document_id: str, *vectors: bytes, tenant: str = TENANT, tool: str = TOOL,
                model: str | None = MODEL) -> None:
    texts = [f"{document_id} chunk {n} says something about plovers" for n in range(len(vectors))]
    chunks = [Chunk(n=n, start=n * 100, end=n * 100 + len(t), text=t, vector=v) for n, (t, v) in enumerate(zip(texts, vectors))]
    index.put(tenant, tool, IndexedDocument(document_id, f"{document_id}.txt", f"{document_id}.txt", TEXT, model), chunks)


def nearest(index: DocumentIndex, vector: bytes, *, tenant: str = TENANT, tool: str = TOOL, model: str = MODEL,
            limit: int = 10, document_ids: list[str] | None = None) -> list[str]:
    return [hit.chunk_id for hit in index.vector_search(tenant, tool, vector, model, limit, document_ids)]


def test_the_nearest_chunks_come_first_with_their_cosine_as_score(vector_index: DocumentIndex) -> None:
    put_vectors(vector_index, "a", unit(1, 0), unit(0, 1))
    put_vectors(vector_index, "b", unit(1, 1), unit(-1, 0))

    hits = vector_index.vector_search(TENANT, TOOL, unit(1, 0.1), MODEL, 3)

    assert [h.chunk_id for h in hits] == ["a#0", "b#0", "a#1"]
    assert hits[0].score == pytest.approx(1 / (1 + 0.01) ** 0.5, abs=1e-5)
    assert hits[0].document_id == "a" and hits[0].title == "a.txt"
    assert hits[0].snippet.startswith("a chunk 0 says") and MARK_START not in hits[0].snippet


def test_vectors_keep_to_their_tenant_tool_model_and_documents(vector_index: DocumentIndex) -> None:
    put_vectors(vector_index, "mine", unit(1, 0))
    put_vectors(vector_index, "theirs", unit(1, 0), tenant=OTHER_TENANT)
    put_vectors(vector_index, "wiki", unit(1, 0), tool=OTHER_TOOL)
    put_vectors(vector_index, "older", unit(1, 0), model="another-model@0")
    put_vectors(vector_index, "words", unit(1, 0), model=None)  # indexed by its words only
    put_vectors(vector_index, "other", unit(0, 1))

    assert nearest(vector_index, unit(1, 0)) == ["mine#0", "other#0"]
    assert nearest(vector_index, unit(1, 0), document_ids=["other"]) == ["other#0"]
    assert nearest(vector_index, unit(1, 0), document_ids=[]) == []
    assert nearest(vector_index, unit(1, 0), tenant=OTHER_TENANT) == ["theirs#0"]
    assert nearest(vector_index, unit(1, 0), tool=OTHER_TOOL) == ["wiki#0"]
    assert nearest(vector_index, unit(1, 0), model="another-model@0") == ["older#0"]
    assert found(vector_index, "plovers") != []  # the words of every chunk are still found


def test_vector_search_keeps_to_document_ids_before_the_top_k_however_many(vector_index: DocumentIndex) -> None:
    """As `search`: the k nearest of the documents given, not the k nearest filtered after."""
    for i in range(20):
        put_vectors(vector_index, f"near{i:02}", unit(1, 0.01 * i))
    put_vectors(vector_index, "far0", unit(0, 1))
    put_vectors(vector_index, "far1", unit(-1, 0))

    assert set(nearest(vector_index, unit(1, 0), limit=2)) <= {f"near{i:02}#0" for i in range(20)}
    assert nearest(vector_index, unit(1, 0), limit=2, document_ids=["far1", "far0"]) == ["far0#0", "far1#0"]
    many = [f"absent{i:05}" for i in range(70_000)] + ["far1", "far0"]
    assert nearest(vector_index, unit(1, 0), limit=2, document_ids=many) == ["far0#0", "far1#0"]


def test_a_put_remove_drop_and_clear_count_for_the_next_vector_search(vector_index: DocumentIndex) -> None:
    put_vectors(vector_index, "a", unit(1, 0), unit(0, 1))
    put_vectors(vector_index, "a", unit(0, 1))  # put again: its one chunk now
    assert nearest(vector_index, unit(1, 0)) == ["a#0"]
    put_vectors(vector_index, "b", unit(1, 0))
    vector_index.remove(TENANT, TOOL, "a")
    assert nearest(vector_index, unit(1, 0)) == ["b#0"]
    vector_index.drop(TENANT, TOOL)
    assert nearest(vector_index, unit(1, 0)) == []
    put_vectors(vector_index, "c", unit(1, 0))
    vector_index.clear()
    assert nearest(vector_index, unit(1, 0)) == [] and vector_index.total() == 0


def test_a_document_embedded_again_is_found_by_its_new_model_only(vector_index: DocumentIndex) -> None:
    """A change of model (toolkinds/search_tools/reembed.py): the same chunks, their vectors by
    the new model in place of the old, in one change."""
    put_vectors(vector_index, "a", unit(1, 0), unit(0, 1))
    put_vectors(vector_index, "b", unit(1, 0))

    assert vector_index.put_vectors(TENANT, TOOL, "a", "new-model@2", [unit(0, 1), unit(1, 0)]) is True

    assert nearest(vector_index, unit(1, 0), model="new-model@2") == ["a#1", "a#0"]
    assert nearest(vector_index, unit(1, 0)) == ["b#0"]  # the old model's: b's only now
    assert [c.text for c in vector_index.chunks(TENANT, TOOL, "a", 0, 9)] == [
        "a chunk 0 says something about plovers", "a chunk 1 says something about plovers"]
    assert {c.split("#")[0] for c in found(vector_index, "plovers")} == {"a", "b"}  # its words unchanged
    # Through `apply`, as the projection writes it, with its position.
    vector_index.apply([PutVectors(TENANT, TOOL, "b", "new-model@2", [unit(0, 1)])], IndexPosition("app", 7))
    assert nearest(vector_index, unit(1, 0)) == []
    assert nearest(vector_index, unit(0, 1), model="new-model@2") == ["a#0", "b#0", "a#1"]
    assert vector_index.position("app") == IndexPosition("app", 7)


def mean_of(index: DocumentIndex, *, tenant: str = TENANT, tool: str = TOOL, model: str = MODEL):
    import numpy as np

    found = index.vector_mean(tenant, tool, model)
    return None if found is None else np.frombuffer(found, dtype="<f4")


def expected_mean(*vectors: bytes):
    import numpy as np

    rows = [np.frombuffer(v, dtype="<f4").astype(np.float64) for v in vectors]
    return np.mean([r / np.linalg.norm(r) for r in rows], axis=0)


def test_the_tools_mean_is_of_its_own_vectors_by_the_model_and_follows_every_write(vector_index: DocumentIndex) -> None:
    """What semantic retrieval centres the query on (`domain.retrieval`): the mean of the tool's
    vectors by the model, each L2-normalized first, and nobody else's; after a put again, a
    removal, a change of model and a drop, the next mean is of what is left."""
    import numpy as np

    longer = (np.frombuffer(unit(1, 2, 3), dtype="<f4") * 3).astype("<f4").tobytes()  # not of unit length
    put_vectors(vector_index, "a", unit(1, 0), unit(0, 1), unit(1, 1))
    put_vectors(vector_index, "b", longer)
    put_vectors(vector_index, "theirs", unit(0, 0, 0, 1), tenant=OTHER_TENANT)
    put_vectors(vector_index, "wiki", unit(0, 0, 0, 1), tool=OTHER_TOOL)
    put_vectors(vector_index, "older", unit(0, 0, 0, 1), model="another-model@0")
    put_vectors(vector_index, "words", unit(0, 0, 0, 1), model=None)  # no vectors: its words only

    assert np.allclose(mean_of(vector_index), expected_mean(unit(1, 0), unit(0, 1), unit(1, 1), longer), atol=1e-6)
    assert np.allclose(mean_of(vector_index, tenant=OTHER_TENANT), expected_mean(unit(0, 0, 0, 1)), atol=1e-6)
    assert np.allclose(mean_of(vector_index, model="another-model@0"), expected_mean(unit(0, 0, 0, 1)), atol=1e-6)
    assert mean_of(vector_index, model="absent-model@0") is None
    assert mean_of(vector_index, tool="no-such-tool") is None
    # The records that hold the means are nobody's chunks.
    assert vector_index.count(TENANT, TOOL) == 6 and vector_index.total() == 8
    assert {c.split("#")[0] for c in found(vector_index, "plovers")} == {"a", "b", "older", "words"}

    put_vectors(vector_index, "a", unit(0, 1))  # put again: one chunk now
    assert np.allclose(mean_of(vector_index), expected_mean(unit(0, 1), longer), atol=1e-6)
    vector_index.remove(TENANT, TOOL, "b")
    assert np.allclose(mean_of(vector_index), expected_mean(unit(0, 1)), atol=1e-6)
    assert vector_index.put_vectors(TENANT, TOOL, "a", "new-model@2", [unit(0, 0, 1)]) is True
    assert mean_of(vector_index) is None
    assert np.allclose(mean_of(vector_index, model="new-model@2"), expected_mean(unit(0, 0, 1)), atol=1e-6)
    put_vectors(vector_index, "c", unit(1, 0))
    put_vectors(vector_index, "c", unit(1, 0), model=None)  # put again without vectors
    assert mean_of(vector_index) is None
    vector_index.drop(TENANT, TOOL)
    assert mean_of(vector_index, model="new-model@2") is None
    assert np.allclose(mean_of(vector_index, tool=OTHER_TOOL), expected_mean(unit(0, 0, 0, 1)), atol=1e-6)
    vector_index.clear()
    assert mean_of(vector_index, tool=OTHER_TOOL) is None and vector_index.total() == 0


def test_a_tools_mean_follows_another_process_s_writes_soon(open_index: Callable[[], DocumentIndex]) -> None:
    """Two processes on one index (an API and the projection runner): the reader's mean follows
    the writer's put within the time a process keeps a mean (OpenSearch: `mean_seconds`; the
    embedded index reads it in the same snapshot as the vectors, at once)."""
    import time

    import numpy as np

    writer, reader = open_index(), open_index()
    if hasattr(reader, "mean_seconds"):
        reader.mean_seconds = 0.3
    put_vectors(writer, "a", unit(1, 0))
    assert np.allclose(mean_of(reader), expected_mean(unit(1, 0)), atol=1e-6)
    put_vectors(writer, "b", unit(0, 1))
    put_at = time.monotonic()
    while not np.allclose(mean_of(reader), expected_mean(unit(1, 0), unit(0, 1)), atol=1e-6):
        assert time.monotonic() - put_at < 5, "the reader's mean never followed the writer's put"
        time.sleep(0.05)
    assert time.monotonic() - put_at < 0.3 + 0.5  # within the time a mean is kept, give or take a request


def test_the_tools_mean_counts_documents_put_together_as_one_by_one(vector_index: DocumentIndex) -> None:
    """A rebuild's path (`apply` puts a batch together): the same mean as puts one by one."""
    import numpy as np

    vectors = {f"d{i}": [unit(1, i), unit(i, 1)] for i in range(5)}
    changes = [PutDocument(TENANT, TOOL, IndexedDocument(d, f"{d}.txt", f"{d}.txt", TEXT, MODEL),
                           [Chunk(n=n, start=0, end=4, text=f"{d} {n}", vector=v) for n, v in enumerate(vs)])
               for d, vs in vectors.items()]
    vector_index.apply(changes, IndexPosition("app", 3))
    assert np.allclose(mean_of(vector_index), expected_mean(*(v for vs in vectors.values() for v in vs)), atol=1e-6)


def test_vectors_that_do_not_fit_the_chunks_change_nothing(vector_index: DocumentIndex) -> None:
    put_vectors(vector_index, "a", unit(1, 0), unit(0, 1))
    assert vector_index.put_vectors(TENANT, TOOL, "a", "new-model@2", [unit(1, 0)]) is False  # one vector, two chunks
    assert vector_index.put_vectors(TENANT, TOOL, "absent", "new-model@2", [unit(1, 0)]) is False
    assert vector_index.put_vectors(OTHER_TENANT, TOOL, "a", "new-model@2", [unit(1, 0), unit(0, 1)]) is False
    assert nearest(vector_index, unit(1, 0)) == ["a#0", "a#1"]
    assert nearest(vector_index, unit(1, 0), model="new-model@2") == []


def test_a_vector_of_another_width_finds_nothing(vector_index: DocumentIndex) -> None:
    put_vectors(vector_index, "a", unit(1, 0))
    assert vector_index.vector_search(TENANT, TOOL, b"\x00" * 12, MODEL, 5) == []


def test_vectors_outlive_the_index_object(open_index: Callable[[], DocumentIndex]) -> None:
    put_vectors(open_index(), "kept", unit(0, 0, 1))
    assert nearest(open_index(), unit(0, 0, 1)) == ["kept#0"]


def test_an_index_file_of_the_version_before_vectors_is_opened_and_gains_them(tmp_path) -> None:
    """A data dir's documents.sqlite written before vectors (schema 2) keeps its chunks and position."""
    import sqlite3

    path = tmp_path / "documents.sqlite"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE chunks (id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, tool TEXT NOT NULL, document_id TEXT NOT NULL,
            n INTEGER NOT NULL, start INTEGER NOT NULL, "end" INTEGER NOT NULL, page INTEGER, scope TEXT NOT NULL,
            title TEXT NOT NULL, text TEXT NOT NULL, UNIQUE (tenant, tool, document_id, n));
        CREATE VIRTUAL TABLE chunks_fts USING fts5(scope, title, text, content = 'chunks', content_rowid = 'id',
            tokenize = 'unicode61 remove_diacritics 2');
        CREATE TABLE positions (application_name TEXT PRIMARY KEY, notification_id INTEGER NOT NULL, store TEXT);
        INSERT INTO positions VALUES ('app', 7, 'store-1');
        PRAGMA user_version = 2;
    """)
    old.close()
    index = SqliteDocumentIndex(path)
    try:
        put(index, "old", "The grebe dives for fish.")
        assert found(index, "grebe") == ["old#0"]
        assert index.position("app") == IndexPosition("app", 7, "store-1")
        put_vectors(index, "new", unit(1, 0))
        assert nearest(index, unit(1, 0)) == ["new#0"]
    finally:
        index.close()


def test_an_opensearch_index_made_before_vectors_is_rebuilt_with_them(opensearch_url: str, opensearch_index: str) -> None:
    """`index.knn` is fixed when an index is made: an index of the release before vectors (its
    chunks, its position) is copied into a new one with the vector fields behind the same alias;
    its chunks are still found by their words, its position is gone (the projection puts every
    document again, with its vectors), and vectors put then are found."""
    from projections.chunks_opensearch import MAPPINGS, index_settings

    client = OpenSearch(hosts=[opensearch_url], timeout=30)
    client.indices.create(index=f"{opensearch_index}-000001", body={
        "settings": index_settings(0), "mappings": MAPPINGS, "aliases": {opensearch_index: {}}})
    old = OpenSearchDocumentIndex(client, index=opensearch_index, replicas=0)
    old._ready, old._vectors = True, False  # as the release before: no vector fields, nothing checked
    put(old, "old", "The grebe dives for fish.")
    old.apply([], IndexPosition("app", 7, "store-1"))

    index = OpenSearchDocumentIndex(OpenSearch(hosts=[opensearch_url], timeout=30), index=opensearch_index, replicas=0)
    try:
        assert index.vectors
        assert list(client.indices.get_alias(name=opensearch_index)) == [f"{opensearch_index}-000002"]
        assert found(index, "grebe") == ["old#0"]
        assert index.position("app") is None
        put_vectors(index, "new", unit(1, 0))
        assert nearest(index, unit(1, 0)) == ["new#0"]
    finally:
        index.close()
        old.close()


def test_on_the_retrieval_set_hybrid_finds_what_words_alone_cannot_and_keeps_what_they_find(vector_index: DocumentIndex) -> None:
    """tests/fixtures/retrieval_set.json with the offline model, through `domain.retrieval.retrieve`
    as `search` calls it (bench.hybrid_search prints the figures). Issue 36 asks hybrid recall@5 ≥ 0.8
    on the paraphrases, on both engines; this model and weighted RRF give 0.75, semantic alone's
    (plain RRF: 0.67), and 0.83 with the query's vector centred on the tool's mean (which both
    indexes tell), held here as floors of what is reached, so that a change that lowers them
    fails; hybrid is never below semantic alone here (words find nothing right on these questions)."""
    from bench.hybrid_search import embedder_and_query, evaluate, index_set, load_set

    data = load_set()
    embedder, embed = embedder_and_query()
    index_set(vector_index, embedder, data, TENANT, TOOL)
    put(vector_index, "elsewhere", "Staff who become mothers or fathers receive paid absence.", tool=OTHER_TOOL)

    quality = evaluate(vector_index, embed, data, TENANT, TOOL)

    paraphrase, lexical = quality["paraphrase"], quality["lexical"]
    assert paraphrase["lexical"]["recall@5"] <= 0.1  # the set's rule at work: words alone find next to nothing
    assert vector_index.vector_mean(TENANT, TOOL, embedder.model) is not None  # the query is centred
    assert paraphrase["semantic"]["recall@5"] >= 0.8
    assert paraphrase["hybrid"]["recall@5"] >= 0.8
    assert paraphrase["hybrid"]["recall@5"] >= paraphrase["semantic"]["recall@5"]
    assert paraphrase["hybrid"]["recall@5"] >= paraphrase["lexical"]["recall@5"] + 0.25
    assert lexical["lexical"]["recall@5"] == 1.0 and lexical["hybrid"]["recall@5"] == 1.0  # codes and names kept


def test_an_opensearch_index_with_vectors_made_before_summaries_gains_them_and_centres_once_put_again(
        opensearch_url: str, opensearch_index: str) -> None:
    """An index of an earlier build with vectors but no summary records: their fields are added to
    its mapping (writes never fail on the strict mapping), the mean is not told while the
    summaries do not count every chunk's vector (the query is asked as it is), and is told once
    the documents are put again (a rebuild)."""
    import numpy as np

    from projections.chunks_opensearch import MAPPINGS, VECTOR_MAPPINGS, chunk_doc_id, chunk_source, index_settings

    client = OpenSearch(hosts=[opensearch_url], timeout=30)
    client.indices.create(index=f"{opensearch_index}-000001", body={
        "settings": {**index_settings(0), "knn": True},
        "mappings": {**MAPPINGS, "_source": {"excludes": ["vector"]},
                     "properties": {**MAPPINGS["properties"], **VECTOR_MAPPINGS}},
        "aliases": {opensearch_index: {}}})
    # A chunk as that build wrote it: its vector, no summary record.
    client.index(index=opensearch_index, id=chunk_doc_id(TENANT, TOOL, "a", 0), refresh="true", body=chunk_source(
        TENANT, TOOL, IndexedDocument("a", "a.txt", "a.txt", TEXT, MODEL),
        Chunk(n=0, start=0, end=6, text="a says", vector=unit(1, 0)), vectors=True))

    index = OpenSearchDocumentIndex(OpenSearch(hosts=[opensearch_url], timeout=30), index=opensearch_index, replicas=0)
    try:
        assert index.vectors
        put_vectors(index, "b", unit(0, 1))
        assert mean_of(index) is None  # b's summary alone does not count a's chunk
        assert nearest(index, unit(1, 0)) == ["a#0", "b#0"]
        put_vectors(index, "a", unit(1, 0))
        assert np.allclose(mean_of(index), expected_mean(unit(1, 0), unit(0, 1)), atol=1e-6)
    finally:
        index.close()
