"""A change of File Search's embedding model on the embedded defaults (the SQLite chunk index of
the data dir, real extraction workers): `tests/reembedding.py`'s scenario."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from infrastructure.embeddings import model_name
from tests import reembedding
from tests.conftest import wire
from tests.file_search import TOOLS, create, settled, upload
from tests.helpers import ADMIN_TOKEN, expect


def _kind(client: TestClient) -> Any:
    from toolkinds.search_tools.kind import SearchToolKind

    return client.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]


def _index_models(client: TestClient) -> set[str]:
    """The models of the vectors the index holds (the vector table's and the chunks' own column)."""
    index = _kind(client).chunk_index._index()  # the projection caught up
    with index._read() as db:
        vectors = {row[0] for row in db.execute("SELECT DISTINCT model FROM chunks_vec")}
        chunks = {row[0] for row in db.execute("SELECT DISTINCT model FROM chunks WHERE model IS NOT NULL")}
    assert vectors == chunks
    return vectors


def _starter(data: Path, shared_sandbox: Any) -> Any:
    @contextmanager
    def start(choice: str) -> Iterator[TestClient]:
        settings = Settings(data_dir=data, admin_token=ADMIN_TOKEN, extract_timeout_seconds=20, embedding_model=choice)
        with TestClient(create_app(wire(settings, shared_sandbox)),
                        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
            yield client

    return start


def test_a_change_of_embedding_model_keeps_every_document_found(
        tmp_path: Path, shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    reembedding.scenario(_starter(tmp_path / "data", shared_sandbox), monkeypatch, _index_models, _kind)


def test_a_failed_re_embedding_keeps_the_old_vectors_and_an_admin_runs_it_again(
        tmp_path: Path, shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    start = _starter(tmp_path / "data", shared_sandbox)
    questions = reembedding.QUESTIONS[:3]
    with start(reembedding.OLD) as client:
        create(client, "memo", retrieval={"mode": "semantic"})
        made = upload(client, "memo", *[reembedding._document(q) for q in questions])
        ids = {q: settled(client, "memo", d["id"])["id"] for q, d in zip(questions, made, strict=True)}
    with reembedding.gated_embedding(monkeypatch) as gate:
        gate.failing = True  # every worker's embedding fails
        with start(reembedding.NEW) as client:
            deadline = time.monotonic() + 60
            while gate.calls < 3:  # each document tried once, at start
                assert time.monotonic() < deadline, "the documents were not tried again at start"
                time.sleep(0.05)
            assert _kind(client).wait_idle(60)
            # the documents keep their old vectors: still found by their meaning
            assert reembedding.embedding(client) == {"model": model_name(reembedding.NEW), "documents": 3, "embedded": 0,
                                                     "reembedding": False}
            assert _index_models(client) == {model_name(reembedding.OLD)}
            for q, doc_id in ids.items():
                assert doc_id in reembedding.found_by_meaning(client, q), q
            # an admin asks again, the workers embedding now
            gate.failing = False
            gate.release_all()
            answer = expect(client.post(f"{TOOLS}/memo/embedding"), 202).json()
            assert answer["documents"] == 3
            done = reembedding.wait_for(client, 3)
            assert done["embedded"] == 3 and _kind(client).wait_idle(60)
            assert _index_models(client) == {model_name(reembedding.NEW)}
            for q, doc_id in ids.items():
                assert doc_id in reembedding.found_by_meaning(client, q), q
            # nothing left to do: asked again, nothing runs; an unknown tool is 404
            assert expect(client.post(f"{TOOLS}/memo/embedding"), 202).json()["reembedding"] is False
            expect(client.post(f"{TOOLS}/nothing/embedding"), 404)
            expect(client.get(f"{TOOLS}/nothing/embedding"), 404)
