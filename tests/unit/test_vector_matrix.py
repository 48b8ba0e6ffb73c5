"""The embedded chunk index's in-memory vector matrices (projections/vector_matrix.py): the same
answers as sqlite-vec's own scan, and never stale, whoever wrote the file."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from domain.documents import TEXT, VECTOR_DIMENSIONS, Chunk, IndexedDocument
from projections.chunks_sqlite import SqliteDocumentIndex

TENANT, TOOL, MODEL = "acme", "handbook", "test-model@1"


def vector(rng: np.random.Generator) -> bytes:
    v = rng.standard_normal(VECTOR_DIMENSIONS).astype("<f4")
    return (v / np.linalg.norm(v)).astype("<f4").tobytes()


def put(index: SqliteDocumentIndex, document_id: str, vectors: list[bytes], *, tool: str = TOOL, model: str = MODEL) -> None:
    chunks = [Chunk(n=n, start=n * 10, end=n * 10 + 9, text=f"{document_id} part {n}", vector=v) for n, v in enumerate(vectors)]
    index.put(TENANT, tool, IndexedDocument(document_id, document_id, f"{document_id}.txt", TEXT, model), chunks)


def nearest(index: SqliteDocumentIndex, query: bytes, limit: int = 10, document_ids: list[str] | None = None,
            model: str = MODEL) -> list[tuple[str, float]]:
    return [(h.chunk_id, h.score) for h in index.vector_search(TENANT, TOOL, query, model, limit, document_ids)]


def by_vec0(index: SqliteDocumentIndex, *args, **kwargs) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
    held = index._matrices.max_bytes
    index._matrices.max_bytes = 0  # beyond the cache: sqlite-vec's scan answers
    try:
        return nearest(index, *args, **kwargs)
    finally:
        index._matrices.max_bytes = held


@pytest.fixture
def index(tmp_path: Path):  # type: ignore[no-untyped-def]
    found = SqliteDocumentIndex(tmp_path / "documents.sqlite")
    yield found
    found.close()


def test_the_matrix_answers_as_sqlite_vec_does(index: SqliteDocumentIndex) -> None:
    rng = np.random.default_rng(36)
    for d in range(40):
        put(index, f"doc{d:02}", [vector(rng) for _ in range(5)])
    put(index, "other-model", [vector(rng)], model="another@2")
    put(index, "other-tool", [vector(rng)], tool="wiki")
    picker = random.Random(36)
    for _ in range(20):
        query = vector(rng)
        limit = picker.choice([1, 3, 10, 250])
        ids = picker.choice([None, [f"doc{d:02}" for d in picker.sample(range(40), 4)] + ["absent"]])
        mine, theirs = nearest(index, query, limit, ids), by_vec0(index, query, limit, ids)
        assert [c for c, _ in mine] == [c for c, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=1e-5)
    assert index._matrices.loads == 1  # one read of the tool's vectors for all those searches


def test_a_write_counts_for_the_next_search_even_from_another_connection(index: SqliteDocumentIndex) -> None:
    rng = np.random.default_rng(7)
    query = vector(rng)
    put(index, "a", [vector(rng)])
    assert [c for c, _ in nearest(index, query)] == ["a#0"]
    other = SqliteDocumentIndex(index.path)  # as another process writing the same file
    try:
        put(other, "b", [query])
        assert [c for c, _ in nearest(index, query)] == ["b#0", "a#0"]
        other.remove(TENANT, TOOL, "b")
        assert [c for c, _ in nearest(index, query)] == ["a#0"]
        other.drop(TENANT, TOOL)
        assert nearest(index, query) == []
        put(other, "c", [query])
        assert [c for c, _ in nearest(index, query)] == ["c#0"]
        other.clear()
        assert nearest(index, query) == []
        put(other, "d", [vector(rng)])  # after a clear, rowids start again: never the old matrix's
        assert [c for c, _ in nearest(index, query)] == ["d#0"]
    finally:
        other.close()


def test_a_file_of_the_previous_schema_keeps_its_vectors_found(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    query = vector(rng)
    index = SqliteDocumentIndex(tmp_path / "documents.sqlite")
    put(index, "a", [query])
    with index._write() as db:  # as a file made before vector_versions
        db.execute("DROP TABLE vector_versions")
        db.execute("PRAGMA user_version = 3")
    index.close()
    index = SqliteDocumentIndex(tmp_path / "documents.sqlite")
    try:
        assert [c for c, _ in nearest(index, query)] == ["a#0"]
        put(index, "b", [query])
        assert [c for c, _ in nearest(index, query)] == ["a#0", "b#0"]
    finally:
        index.close()


def test_a_tool_beyond_the_cache_is_answered_by_sqlite_vec(index: SqliteDocumentIndex) -> None:
    rng = np.random.default_rng(5)
    query = vector(rng)
    put(index, "a", [query, vector(rng)])
    index._matrices.max_bytes = 1_000  # less than one tool's matrix
    assert [c for c, _ in nearest(index, query, 1)] == ["a#0"]
    assert index._matrices.loads == 0


def test_the_tools_mean_is_of_its_own_normalized_vectors_by_the_model_cached_or_not(index: SqliteDocumentIndex) -> None:
    """What semantic retrieval centres a query on (domain.retrieval.centred): the same from the
    matrix and, beyond the cache, from the rows; a write counts for the next mean."""
    rng = np.random.default_rng(7)
    mine = [vector(rng) for _ in range(6)]
    put(index, "a", mine[:4])
    put(index, "b", [np.frombuffer(v, dtype="<f4").__mul__(3).astype("<f4").tobytes() for v in mine[4:]])  # not unit length
    put(index, "other-model", [vector(rng)], model="another@2")
    put(index, "other-tool", [vector(rng)], tool="wiki")
    expected = np.mean([np.frombuffer(v, dtype="<f4") for v in mine], axis=0)

    def mean() -> np.ndarray:
        found = index.vector_mean(TENANT, TOOL, MODEL)
        assert found is not None
        return np.frombuffer(found, dtype="<f4")

    assert np.allclose(mean(), expected, atol=1e-6)
    index._matrices.max_bytes = 0  # beyond the cache: summed from the rows
    index._matrices.clear()
    assert np.allclose(mean(), expected, atol=1e-6)
    index.remove(TENANT, TOOL, "b")
    assert np.allclose(mean(), np.mean([np.frombuffer(v, dtype="<f4") for v in mine[:4]], axis=0), atol=1e-6)
    index._matrices.max_bytes = 1 << 30
    assert np.allclose(mean(), np.mean([np.frombuffer(v, dtype="<f4") for v in mine[:4]], axis=0), atol=1e-6)
    assert index.vector_mean(TENANT, TOOL, "absent-model@0") is None
    assert index.vector_mean(TENANT, "no-such-tool", MODEL) is None
