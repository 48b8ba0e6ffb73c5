"""A change of File Search's embedding model, as a person sees it (issue 36; docs/kinds/file-search-tools.md,
"Embedding model"), run against each chunk index (SQLite in `tests/api/test_search_tools_reembed.py`,
OpenSearch in `tests/integration/test_search_tools_opensearch.py`).

The service runs with one model, documents are uploaded, and it is started again with the other:
the documents are embedded again in the background, held at a gate the test opens a document at a
time (`Gate`, around the extraction pool's `embed`: the real worker embeds), so that the middle of
the change can be looked at. Meanwhile every document stays found by its meaning (a semantic-only
tool, questions sharing no content word with their passage), the progress counts up to the total,
a document uploaded meanwhile is embedded by the new model and found, and a rebuild from the events
and the blobs answers the same; after it, the index holds vectors of the new model only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from tests.file_search import TOOLS, call, create, settled, upload
from tests.console.test_console_others import console
from tests.helpers import ADMIN_TOKEN, expect

OLD, NEW = "l2_supercat_256", "l2_supercat_128"
# Paraphrase questions of tests/fixtures/retrieval_set.json whose passage each model ranks first
# among these passages (so it stays within the first three while the two models' lists are merged).
QUESTIONS = ("q000", "q001", "q003", "q004", "q006", "q007", "q008", "q009", "q013", "q014", "q015", "q016", "q017")
UPLOADED_MEANWHILE = "q018"
TOP = 3

_SET = json.loads((Path(__file__).parent / "fixtures" / "retrieval_set.json").read_text())
_PASSAGES = {p["id"]: p["text"] for p in _SET["passages"]}
_QUESTIONS = {q["id"]: q for q in _SET["questions"]}


class Gate:
    """Holds each call of the wrapped function until the test lets one more through."""

    def __init__(self) -> None:
        self._permits = threading.Semaphore(0)
        self.open_all = False
        self.failing = False  # each call fails as a worker's failure does
        self.calls = 0

    def let(self, n: int = 1) -> None:
        for _ in range(n):
            self._permits.release()

    def release_all(self) -> None:
        self.open_all = True
        self.let(1_000)

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.failing:
                from domain.documents import ExtractionFailed

                raise ExtractionFailed("extraction took longer than 20 s (the limit)")
            if not self.open_all:
                assert self._permits.acquire(timeout=120), "the test never let this embedding through"
            return function(*args, **kwargs)

        return held


@contextmanager
def gated_embedding(monkeypatch: Any) -> Iterator[Gate]:
    from infrastructure.extraction.pool import ExtractorPool

    gate = Gate()
    monkeypatch.setattr(ExtractorPool, "embed", gate.wrap(ExtractorPool.embed))
    try:
        yield gate
    finally:
        gate.release_all()


def _document(question: str) -> tuple[str, bytes]:
    passage = _QUESTIONS[question]["passage"]
    return f"{passage}.txt", _PASSAGES[passage].encode()


def found_by_meaning(client: TestClient, question: str) -> list[str]:
    """The documents of the first `TOP` semantic results for the question."""
    results = call(client, "memo_search", {"query": _QUESTIONS[question]["question"], "maxResults": TOP})["output"]["results"]
    assert all(hit["retrievers"] == ["semantic"] for hit in results)
    return [hit["documentId"] for hit in results]


def embedding(client: TestClient) -> dict[str, Any]:
    return expect(client.get(f"{TOOLS}/memo/embedding"), 200).json()


def wait_for(client: TestClient, embedded: int, timeout: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        now = embedding(client)
        if now["embedded"] >= embedded:
            return now
        assert time.monotonic() < deadline, f"{embedded} documents not embedded again after {timeout} s: {now}"
        time.sleep(0.05)


def answers(client: TestClient, questions: dict[str, str]) -> dict[str, list[str]]:
    return {q: found_by_meaning(client, q) for q in questions}


def scenario(start: Callable[[str], Any], monkeypatch: Any, index_models: Callable[[Any], set[str]],
             kind_of: Callable[[TestClient], Any]) -> None:
    """`start(choice)` is a context manager of a client of the service on the same data, with that
    embedding model; `index_models(client)` the models of the vectors the index holds."""
    from infrastructure.embeddings import model_name

    old, new = model_name(OLD), model_name(NEW)
    # the service with the first model: a semantic tool and its documents
    with start(OLD) as client:
        create(client, "memo", retrieval={"mode": "semantic"})
        made = upload(client, "memo", *[_document(q) for q in QUESTIONS])
        docs = {q: settled(client, "memo", d["id"]) for q, d in zip(QUESTIONS, made, strict=True)}
        assert {d["state"] for d in docs.values()} == {"READY"}
        assert {d["embeddingModel"] for d in docs.values()} == {old}
        by_question = {q: d["id"] for q, d in docs.items()}
        for q, doc_id in by_question.items():
            assert doc_id in found_by_meaning(client, q), q
        assert embedding(client) == {"model": old, "documents": len(QUESTIONS), "embedded": len(QUESTIONS),
                                     "reembedding": False}

    # started again with the other model: the documents are embedded again, a gated one at a time
    with gated_embedding(monkeypatch) as gate, start(NEW) as client:
        try:
            _change(client, gate, by_question, old, new, index_models, kind_of)
        finally:
            gate.release_all()  # before the service stops: its workers wait on the gate


def _change(client: TestClient, gate: Gate, by_question: dict[str, str], old: str, new: str,
            index_models: Callable[[Any], set[str]], kind_of: Callable[[TestClient], Any]) -> None:
    total = len(QUESTIONS)
    # progress, from 0 to the total
    at_start = embedding(client)
    assert at_start["model"] == new and at_start["documents"] == total and at_start["embedded"] == 0
    # every document is found by its meaning before any is embedded again
    for q, doc_id in by_question.items():
        assert doc_id in found_by_meaning(client, q), q

    # half of them through: the tool's documents are of two models, each still found
    half = total // 2
    gate.let(half)
    now = wait_for(client, half)
    assert now["embedded"] == half and now["reembedding"] is True
    assert index_models(client) == {old, new}
    for q, doc_id in by_question.items():
        assert doc_id in found_by_meaning(client, q), q
    page = console(client, ADMIN_TOKEN).get("/console/search-tools/memo/documents")
    assert f"Re-embedding: {half} of {total} documents" in expect(page, 200).text
    middle = answers(client, by_question)
    kind_of(client).rebuild()  # from the events and the blobs, in the middle of the change
    assert answers(client, by_question) == middle

    # a document uploaded meanwhile: embedded by the new model, found by its meaning
    extra = upload(client, "memo", _document(UPLOADED_MEANWHILE))[0]["id"]
    gate.let(1)  # a worker held at the gate takes the next job: the upload goes before the re-embeddings
    added = settled(client, "memo", extra)
    assert added["state"] == "READY" and added["embeddingModel"] == new
    assert extra in found_by_meaning(client, UPLOADED_MEANWHILE)
    assert embedding(client)["reembedding"] is True  # the change still under way

    # the rest through: every document of the new model, the old vectors gone from the index
    gate.release_all()
    done = wait_for(client, total + 1)
    assert done == {"model": new, "documents": total + 1, "embedded": total + 1, "reembedding": done["reembedding"]}
    assert kind_of(client).wait_idle(60)
    assert embedding(client)["reembedding"] is False
    page = console(client, ADMIN_TOKEN).get("/console/search-tools/memo/documents")
    assert "Re-embedding" not in expect(page, 200).text
    by_question[UPLOADED_MEANWHILE] = extra
    assert {settled(client, "memo", d)["embeddingModel"] for d in by_question.values()} == {new}
    assert index_models(client) == {new}
    for q, doc_id in by_question.items():
        assert doc_id in found_by_meaning(client, q), q
    after = answers(client, by_question)
    kind_of(client).rebuild()
    assert answers(client, by_question) == after
    assert index_models(client) == {new}
