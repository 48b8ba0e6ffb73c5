"""The embedded chunk index's pruned ranking (projections/chunks_sqlite.py, `_pruned`): a query
whose words are common ranks only the chunks holding one of its rarer words, and answers exactly
as ranking every match does: the same chunks, in the same order, with the same scores and
snippets; a write counts for the next search."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import projections.chunks_sqlite as chunks_sqlite
from domain.documents import TEXT, Chunk, IndexedDocument
from projections.chunks_sqlite import SqliteDocumentIndex

TENANT, TOOL = "acme", "handbook"
COMMON = ["alpha", "beta", "gamma", "delta", "omega"]
RARE = [f"rare{i}" for i in range(40)]


def text(rng: random.Random) -> str:
    words = rng.choices(COMMON, k=rng.randint(3, 30)) + rng.choices(RARE, k=rng.randint(0, 2))
    rng.shuffle(words)
    return " ".join(words)


@pytest.fixture
def index(tmp_path: Path):  # type: ignore[no-untyped-def]
    rng = random.Random(36)
    found = SqliteDocumentIndex(tmp_path / "documents.sqlite")
    found.put_many([(TENANT, TOOL, IndexedDocument(f"d{d}", f"{rng.choice(COMMON + RARE)} notes", f"d{d}.txt", TEXT, None),
                     [Chunk(n, 0, 10, text(rng)) for n in range(10)]) for d in range(300)])
    found.put(TENANT, "other-tool", IndexedDocument("x", "x", "x.txt", TEXT, None), [Chunk(0, 0, 10, "alpha rare1")])
    yield found
    found.close()


def searches(index: SqliteDocumentIndex, queries: list[list[str]], monkeypatch: pytest.MonkeyPatch, prune_at: int) -> list:
    monkeypatch.setattr(chunks_sqlite, "PRUNE_AT", prune_at)
    return [index.search(TENANT, TOOL, terms, limit) for terms in queries for limit in (1, 5, 10, 40)]


def test_pruned_ranking_answers_as_ranking_every_match(index: SqliteDocumentIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    queries = [rng.sample(COMMON, rng.randint(1, 3)) + rng.sample(RARE, rng.randint(1, 3)) for _ in range(30)]
    queries += [["alpha", "beta"], ["omega", "rare3"], ["rare5", "absent"], COMMON + RARE[:2]]
    pruned = {}

    def count_pruned(self, *args):  # type: ignore[no-untyped-def]
        rows = original(self, *args)
        pruned[len(pruned)] = rows is not None
        return rows

    original = SqliteDocumentIndex._pruned
    monkeypatch.setattr(SqliteDocumentIndex, "_pruned", count_pruned)

    answers = searches(index, queries, monkeypatch, 0)
    assert sum(pruned.values()) >= len(pruned) // 2  # most of them pruned indeed
    assert answers == searches(index, queries, monkeypatch, 10**12)
    assert all(hit.snippet for hits in searches(index, queries, monkeypatch, 0) for hit in hits)


def test_a_write_counts_for_the_next_pruned_search(index: SqliteDocumentIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks_sqlite, "PRUNE_AT", 0)
    query = ["alpha", "beta", "zebra"]
    assert "late#0" not in [h.chunk_id for h in index.search(TENANT, TOOL, query, 5)]

    index.put(TENANT, TOOL, IndexedDocument("late", "zebra", "late.txt", TEXT, None), [Chunk(0, 0, 10, "zebra zebra alpha")])
    assert [h.chunk_id for h in index.search(TENANT, TOOL, query, 5)][0] == "late#0"

    index.remove(TENANT, TOOL, "late")
    assert "late#0" not in [h.chunk_id for h in index.search(TENANT, TOOL, query, 5)]
    monkeypatch.setattr(chunks_sqlite, "PRUNE_AT", 10**12)


def test_hybrids_list_of_words_ranks_by_the_rarer_words_alone_over_a_large_file(
        index: SqliteDocumentIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    """`exact=False` (hybrid's list, read by rank): a query whose words are found often enough in
    all is ranked by its words in at most `COMMON_SHARE` of the file's chunks alone, as if asked
    for those only; a query of common words only, or one found rarely, answers exactly."""
    monkeypatch.setattr(chunks_sqlite, "COMMON_SHARE", 0.2)  # each rare word is in some 5 % of the chunks (text and titles), each common one in most
    monkeypatch.setattr(chunks_sqlite, "PRUNE_AT", 0)
    rng = random.Random(11)
    queries = [rng.sample(COMMON, rng.randint(1, 4)) + rng.sample(RARE, rng.randint(1, 2)) for _ in range(20)]
    for terms in queries:
        rare = [t for t in terms if t in RARE]
        for limit in (1, 5, 10):
            hits = index.search(TENANT, TOOL, terms, limit, exact=False)
            assert hits == index.search(TENANT, TOOL, rare, limit)
            assert hits and all(any(r in h.snippet or r in h.title for r in rare) for h in hits)
        assert index.search(TENANT, TOOL, terms, 10) == index.search(TENANT, TOOL, terms, 10, exact=True)
        assert index.search(TENANT, TOOL, terms, 10, exact=False) != index.search(TENANT, TOOL, terms, 10)  # the common words left out
    common = COMMON[:3]
    assert index.search(TENANT, TOOL, common, 10, exact=False) == index.search(TENANT, TOOL, common, 10)
    monkeypatch.setattr(chunks_sqlite, "PRUNE_AT", 10**12)  # a small file, or words found rarely: exact
    assert index.search(TENANT, TOOL, queries[0], 10, exact=False) == index.search(TENANT, TOOL, queries[0], 10)
