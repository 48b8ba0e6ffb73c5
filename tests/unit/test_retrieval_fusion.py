"""File Search's weighted reciprocal rank fusion (domain/retrieval.py, `WEIGHTS`), and how `retrieve` asks an index."""

from __future__ import annotations

import contextvars

import pytest

from domain.documents import Hit
from domain.retrieval import HYBRID, LEXICAL, RRF_K, SEMANTIC, WEIGHTS, fuse


def hits(*ids: str) -> list[Hit]:
    return [Hit(chunk_id=i, document_id=i.split("#")[0], title=i, snippet=i, score=1.0) for i in ids]


def ranked(found: dict[str, list[Hit]], limit: int = 10, **kwargs) -> list[str]:  # type: ignore[no-untyped-def]
    return [h.chunk_id for h in fuse(found, mode=HYBRID, limit=limit, weights=WEIGHTS, **kwargs)]


def test_where_the_lists_disagree_meanings_best_few_come_first() -> None:
    semantic = hits(*(f"s{i}#0" for i in range(1, 11)))
    lexical = hits(*(f"w{i}#0" for i in range(1, 11)))
    order = ranked({LEXICAL: lexical, SEMANTIC: semantic}, limit=20)
    assert order[:7] == [f"s{i}#0" for i in range(1, 8)]  # 1 / (60 + 7) > 0.9 / (60 + 1)
    assert order[7] == "w1#0"  # a code's exact match is not pushed behind every vague one
    assert set(order) == {h.chunk_id for h in semantic + lexical}


def test_a_chunk_high_in_both_lists_outranks_the_first_of_either_alone() -> None:
    order = ranked({LEXICAL: hits("w1#0", "both#0"), SEMANTIC: hits("s1#0", "both#0")})
    assert order[0] == "both#0"


def test_scores_are_over_the_best_possible_and_the_weights_are_optional() -> None:
    found = {LEXICAL: hits("a#0", "b#0"), SEMANTIC: hits("a#0", "c#0")}
    top = fuse(found, mode=HYBRID, limit=3, weights=WEIGHTS)[0]
    assert top.chunk_id == "a#0" and top.score == pytest.approx(1.0) and top.retrievers == (LEXICAL, SEMANTIC)
    # plain RRF when no weights are given (tool search fuses so): a tie goes to the chunk id
    plain = fuse({LEXICAL: hits("w#0"), SEMANTIC: hits("s#0")}, mode=HYBRID, limit=2, rrf_k=RRF_K)
    assert [h.chunk_id for h in plain] == ["s#0", "w#0"] and plain[0].score == pytest.approx(0.5)
    weighted = fuse({LEXICAL: hits("a#0"), SEMANTIC: hits("s#0")}, mode=HYBRID, limit=2, weights=WEIGHTS)
    assert [h.chunk_id for h in weighted] == ["s#0", "a#0"]  # "a" would win the plain tie
    assert weighted[0].score == pytest.approx(1.0 / 1.9)


def test_a_query_is_centred_on_the_tools_mean_and_normalized_again() -> None:
    import struct

    from domain.retrieval import centred

    def pack(*values: float) -> bytes:
        return struct.pack(f"<{len(values)}f", *values)

    asked = struct.unpack("<3f", centred(pack(0.6, 0.8, 0.0), pack(0.6, 0.0, 0.0)))
    assert asked == pytest.approx((0.0, 1.0, 0.0), abs=1e-6)
    assert centred(pack(0.6, 0.8, 0.0), None) == pack(0.6, 0.8, 0.0)  # an index that cannot tell
    assert centred(pack(1.0, 0.0, 0.0), pack(1.0, 0.0, 0.0)) == pack(1.0, 0.0, 0.0)  # nothing left: as it is
    assert centred(pack(1.0, 0.0), pack(1.0, 0.0, 0.0)) == pack(1.0, 0.0)  # another width: as it is


class _Index:
    """A stand-in index that records where and when `retrieve` asks it."""

    vectors = True

    def __init__(self, remote: bool) -> None:
        import threading

        self.remote = remote
        self.asked_meaning = threading.Event()
        self.words_waited = False
        self.words_thread = ""

    def search(self, tenant, tool, terms, limit, document_ids=None, exact=True):  # type: ignore[no-untyped-def]
        import threading

        self.words_thread = threading.current_thread().name
        self.exact = exact
        self.seen = ASKED.get()
        if self.remote:  # a remote index's words wait until the meaning is asked beside them
            self.words_waited = self.asked_meaning.wait(5)
        return hits("a#0", "b#0")

    def vector_mean(self, tenant, tool, model):  # type: ignore[no-untyped-def]
        return None

    def vector_search(self, tenant, tool, vector, model, limit, document_ids=None):  # type: ignore[no-untyped-def]
        self.asked_meaning.set()
        return hits("b#0", "c#0")


ASKED: contextvars.ContextVar[str] = contextvars.ContextVar("ASKED", default="")


@pytest.mark.parametrize("remote", [False, True])
def test_hybrid_asks_a_remote_index_its_words_beside_its_meaning_with_the_same_answer(remote: bool) -> None:
    """OpenSearch (`remote`): the words are asked on another thread while the meaning is asked,
    in the caller's context (its trace, its request); the embedded index: one after the other, on
    the caller's thread. The answer is the same."""
    import threading

    from domain.retrieval import retrieve

    index = _Index(remote)
    ASKED.set("request-7")
    found = retrieve(index, lambda query: ("m@1", b"\x00" * 4), "acme", "handbook", "q", ["q"], 3, None,  # type: ignore[arg-type]
                     {"mode": HYBRID})

    assert [h.chunk_id for h in found] == ["b#0", "c#0", "a#0"]  # meaning's second before words' first alone
    assert found[0].retrievers == (LEXICAL, SEMANTIC)
    assert index.seen == "request-7"
    assert index.exact is False  # hybrid's list of words is read by rank (`DocumentIndex.search`)
    if remote:
        assert index.words_waited and index.words_thread != threading.current_thread().name
    else:
        assert index.words_thread == threading.current_thread().name
    retrieve(index, None, "acme", "handbook", "q", ["q"], 3, None, {"mode": HYBRID})  # type: ignore[arg-type]
    assert index.exact is True  # no meaning beside it (no embedder): the words alone, exactly
