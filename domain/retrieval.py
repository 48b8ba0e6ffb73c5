"""How a File Search tool's `search` finds its chunks (docs/kinds/file-search-tools.md, "Retrieval"):
by their words (`lexical`, BM25), by their meaning (`semantic`, the cosine of embeddings), or both
fused (`hybrid`, reciprocal rank fusion).

A tool's `retrieval` is `{"mode", "rrfK", "minScore", "maxChunksPerDocument"}`. A tool created
without one gets `hybrid`; a tool whose recorded configuration has none (made before retrieval
existed) reads as `lexical`, its answers unchanged, until an admin sets one (`normalise`).

Reciprocal rank fusion: a chunk's fused value is the sum, over the retrievers that found it, of
weight / (rrfK + its rank there) (rank 1 the best; `WEIGHTS`: lexical 0.9, semantic 1). The score
a hybrid result shows is that value divided by the best a chunk can get (first in both:
1.9 / (rrfK + 1)), so it lies in (0, 1] and
`minScore` means the same whatever `rrfK` is. In `lexical` mode the score is BM25's (engine
specific, unbounded) and in `semantic` mode the cosine similarity (-1 to 1); `minScore` is a floor
on the score the mode shows. `maxChunksPerDocument` keeps a document's best chunks only, so that
one long document does not fill every result.
"""

from __future__ import annotations

import contextvars
import math
import struct
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from domain.documents import DocumentIndex, Hit
from domain.errors import Violation

LEXICAL, SEMANTIC, HYBRID = "lexical", "semantic", "hybrid"
MODES = (HYBRID, LEXICAL, SEMANTIC)
RETRIEVERS = {LEXICAL: (LEXICAL,), SEMANTIC: (SEMANTIC,), HYBRID: (LEXICAL, SEMANTIC)}
RRF_K = 60
# Each retriever's weight in File Search's fusion (weighted RRF): a chunk's fused value is the sum,
# over the retrievers that found it, of weight / (rrfK + rank). Lexical weighs a little less, so
# that where the two lists disagree, meaning's best few come before words' best: with k = 60, the
# semantic list's 7th outranks a chunk only the lexical list holds, even first there (0.9 / 61 <
# 1 / 67), and a chunk high in both lists still outranks one in either alone. On
# tests/fixtures/retrieval_set.json (bench.hybrid_search) plain RRF gives hybrid recall@5 0.67 on
# the paraphrases: a question in other words matches some common word of a wrong chunk, and the
# lexical list's first pushed the right one down; lexical 0.9 gives 0.75 (the semantic list's own:
# on these questions the words find nothing right, so fusion cannot pass it), and keeps 1.0 on
# the codes and names. 0.5 gives the same here but lets a code's exact match behind ten chunks of
# vague meaning.
WEIGHTS = {LEXICAL: 0.9, SEMANTIC: 1.0}
# Semantic retrieval asks with the query's vector less the mean of the tool's vectors (by the
# same model), so a chunk counts by what it shares with the query beyond what every chunk of the
# tool shares (a chunk's score, before normalizing, is its cosine with the query less its cosine
# with the tool's mean: the vector side's IDF). A static model's vectors all lean one way (the
# tool's common words, its templates); the query's own lean then favours the most typical chunks.
# On tests/fixtures/retrieval_set.json semantic and hybrid recall@5 go from 0.75 to 0.83 on the
# paraphrases, codes and names stay at 1.0 (bench.hybrid_search); no weight is tuned (the mean
# itself, once). The index tells the mean (`DocumentIndex.vector_mean`); one that cannot asks
# with the vector as it is.
CENTRED = True
MAX_RRF_K = 10_000
MAX_CHUNKS_PER_DOCUMENT = 50
# Each retriever offers the fusion its best `limit` chunks; with `minScore` or
# `maxChunksPerDocument`, which leave some out, `CANDIDATES_PER_RESULT` times as many (at most
# `MAX_CANDIDATES`). Deeper lists fuse worse: a chunk in both lists outranks one in a single list
# at the same rank, so the deeper the lists, the more chunks that one retriever ranks low come
# first (tests/fixtures/retrieval_set.json: hybrid recall@5 0.67 at 10, 0.58 at 20, 0.42 at 50).
CANDIDATES_PER_RESULT = 5
MAX_CANDIDATES = 250
KEYS = ("mode", "rrfK", "minScore", "maxChunksPerDocument")

NEW_TOOL: dict[str, Any] = {"mode": HYBRID, "rrfK": RRF_K, "minScore": None, "maxChunksPerDocument": None}
EXISTING_TOOL: dict[str, Any] = {**NEW_TOOL, "mode": LEXICAL}


def normalise(given: Any, previous: Mapping[str, Any] | None, creating: bool) -> dict[str, Any]:
    """The retrieval a configuration stores: what is given over the defaults (a new tool's `hybrid`;
    a tool changed without naming one keeps what it had, `lexical` when it had none)."""
    base = dict(NEW_TOOL if creating else (previous or EXISTING_TOOL))
    if isinstance(given, Mapping):
        base.update({k: given[k] for k in KEYS if k in given})
    return base


def of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The retrieval of a stored configuration (one recorded before retrieval existed is lexical)."""
    found = config.get("retrieval")
    return dict(found) if isinstance(found, Mapping) else dict(EXISTING_TOOL)


def given_violations(given: Any, field: str = "retrieval") -> list[Violation]:
    if given is None:
        return []
    if not isinstance(given, Mapping):
        return [Violation(field, "R4", "must be an object with mode, rrfK, minScore and maxChunksPerDocument")]
    return [Violation(f"{field}.{key}", "R4", f"is not a setting of retrieval (they are {', '.join(KEYS)})")
            for key in given if key not in KEYS]


def violations(retrieval: Mapping[str, Any], field: str = "retrieval") -> list[Violation]:
    found = []
    if retrieval.get("mode") not in MODES:
        found.append(Violation(f"{field}.mode", "R4", f"must be one of {', '.join(MODES)}, got {retrieval.get('mode')!r}"))
    k = retrieval.get("rrfK")
    if not _is_int(k) or not 1 <= k <= MAX_RRF_K:
        found.append(Violation(f"{field}.rrfK", "R4", f"must be an integer from 1 to {MAX_RRF_K}, got {k!r}"))
    floor = retrieval.get("minScore")
    if floor is not None and (not isinstance(floor, (int, float)) or isinstance(floor, bool) or not math.isfinite(floor)):
        found.append(Violation(f"{field}.minScore", "R4", f"must be a number or null, got {floor!r}"))
    cap = retrieval.get("maxChunksPerDocument")
    if cap is not None and (not _is_int(cap) or not 1 <= cap <= MAX_CHUNKS_PER_DOCUMENT):
        found.append(Violation(f"{field}.maxChunksPerDocument", "R4",
                               f"must be an integer from 1 to {MAX_CHUNKS_PER_DOCUMENT} or null, got {cap!r}"))
    return found


def candidates(limit: int, retrieval: Mapping[str, Any]) -> int:
    """How many chunks each retriever offers the fusion for `limit` results."""
    if retrieval.get("minScore") is None and retrieval.get("maxChunksPerDocument") is None:
        return limit
    return min(MAX_CANDIDATES, max(limit, limit * CANDIDATES_PER_RESULT))


def fuse(found: Mapping[str, Sequence[Hit]], *, mode: str, limit: int, rrf_k: int = RRF_K,
         min_score: float | None = None, max_per_document: int | None = None,
         weights: Mapping[str, float] | None = None) -> list[Hit]:
    """The best `limit` hits of the retrievers' ranked lists (`found[retriever]`, best first), each
    saying which retrievers found it: fused by reciprocal rank in `hybrid` mode, else the one
    list as it is; then `min_score` and `max_per_document` applied. A hit found by both keeps the
    lexical one's snippet (its words marked). `weights[retriever]` multiplies that retriever's
    1 / (rrf_k + rank) (1 each when not given: plain RRF)."""
    if mode == HYBRID:
        fused: dict[str, float] = {}
        hits: dict[str, Hit] = {}
        by: dict[str, list[str]] = {}
        for retriever in RETRIEVERS[HYBRID]:
            weight = 1.0 if weights is None else weights.get(retriever, 1.0)
            for rank, hit in enumerate(found.get(retriever, ()), start=1):
                fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + weight / (rrf_k + rank)
                hits.setdefault(hit.chunk_id, hit)
                by.setdefault(hit.chunk_id, []).append(retriever)
        best = sum(1.0 if weights is None else weights.get(r, 1.0) for r in RETRIEVERS[HYBRID]) / (rrf_k + 1)
        ranked = sorted(fused, key=lambda c: (-fused[c], c))
        ordered = [replace(hits[c], score=fused[c] / best, retrievers=tuple(by[c])) for c in ranked]
    else:
        ordered = [replace(hit, retrievers=(mode,)) for hit in found.get(mode, ())]
    answer: list[Hit] = []
    per_document: dict[str, int] = {}
    for hit in ordered:
        if min_score is not None and hit.score < min_score:
            continue
        if max_per_document is not None:
            if per_document.get(hit.document_id, 0) >= max_per_document:
                continue
            per_document[hit.document_id] = per_document.get(hit.document_id, 0) + 1
        answer.append(hit)
        if len(answer) >= limit:
            break
    return answer


def retrieve(index: DocumentIndex, embed: Callable[[str], tuple[str, bytes]] | None, tenant: str, tool: str,
             query: str, terms: Sequence[str], limit: int, document_ids: Sequence[str] | None,
             retrieval: Mapping[str, Any]) -> list[Hit]:
    """The best `limit` chunks of the tool by its `retrieval`: BM25 over `terms` (`query_terms`),
    the cosine of `query`'s embedding (`embed(query)` is the model's name and the vector, or a
    list of those, one per model the tool's chunks have), or
    both fused; each hit says which found it. With no embedder or an index without vectors,
    semantic retrieval finds nothing, and hybrid is lexical."""
    mode = retrieval.get("mode", LEXICAL)
    wanted = candidates(limit, retrieval)
    found: dict[str, list[Hit]] = {}
    semantic = SEMANTIC in RETRIEVERS[mode] and embed is not None and index.vectors
    if LEXICAL in RETRIEVERS[mode] and semantic and index.remote:
        # The words asked on another thread while this one embeds the query and asks its meaning:
        # the wall clock of the slower, not of both (OpenSearch over 100,000 chunks: about 2.5 ms
        # for the words, 2 for the tool's mean and 4.5 for the nearest vectors, one after another).
        words = _pool().submit(contextvars.copy_context().run, index.search, tenant, tool, terms, wanted, document_ids,
                               exact=False)
        meaning = _semantic(index, embed, tenant, tool, query, wanted, document_ids, retrieval)
        found = {LEXICAL: words.result(), SEMANTIC: meaning}
    else:
        if LEXICAL in RETRIEVERS[mode]:
            # fused (hybrid, with the meaning beside it): read by rank, the index may rank the
            # chunks of the query's rarer words only (`DocumentIndex.search`, `exact`)
            found[LEXICAL] = index.search(tenant, tool, terms, wanted, document_ids, exact=not semantic)
        if semantic:
            found[SEMANTIC] = _semantic(index, embed, tenant, tool, query, wanted, document_ids, retrieval)
    return fuse(found, mode=mode, limit=limit, rrf_k=retrieval.get("rrfK") or RRF_K,
                min_score=retrieval.get("minScore"), max_per_document=retrieval.get("maxChunksPerDocument"),
                weights=WEIGHTS)


def _semantic(index: DocumentIndex, embed: Callable[[str], Any], tenant: str, tool: str, query: str, wanted: int,
              document_ids: Sequence[str] | None, retrieval: Mapping[str, Any]) -> list[Hit]:
    embedded = embed(query)
    # A list while the tool's documents are of two models (a change of model under way): each
    # model's nearest, merged by rank, so that no document is missing meanwhile.
    lists = [index.vector_search(tenant, tool, _asked(index, tenant, tool, model, vector), model, wanted, document_ids)
             for model, vector in ([embedded] if isinstance(embedded, tuple) else embedded)]
    return lists[0] if len(lists) == 1 else by_rank(lists, wanted, rrf_k=retrieval.get("rrfK") or RRF_K)


# The threads that ask a remote index's words beside its meaning (`retrieve`): at most this many
# at once; past them a search waits for a thread, as it would for the index.
LEXICAL_THREADS = 8
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = ThreadPoolExecutor(max_workers=LEXICAL_THREADS, thread_name_prefix="retrieve-lexical")
    return _executor


def _asked(index: DocumentIndex, tenant: str, tool: str, model: str, vector: bytes) -> bytes:
    """The vector semantic retrieval asks the index with: the query's, centred on the tool's mean."""
    return centred(vector, index.vector_mean(tenant, tool, model)) if CENTRED else vector


def centred(vector: bytes, mean: bytes | None) -> bytes:
    """The query's vector less the mean of the tool's vectors (`CENTRED`), L2-normalized again;
    the vector as it is when there is no mean (or nothing is left of it)."""
    if mean is None or len(mean) != len(vector) or len(vector) % 4:
        return vector
    shape = f"<{len(vector) // 4}f"
    rest = [q - m for q, m in zip(struct.unpack(shape, vector), struct.unpack(shape, mean))]
    norm = math.sqrt(sum(x * x for x in rest))
    if not math.isfinite(norm) or norm < 1e-6:
        return vector
    return struct.pack(shape, *(x / norm for x in rest))


def by_rank(lists: Sequence[Sequence[Hit]], limit: int, rrf_k: int = RRF_K) -> list[Hit]:
    """One ranked list of several (best first each), by reciprocal rank; each hit keeps its own
    score. The cosines of two models are not comparable, their ranks are."""
    fused: dict[str, float] = {}
    hits: dict[str, Hit] = {}
    for found in lists:
        for rank, hit in enumerate(found, start=1):
            fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + 1.0 / (rrf_k + rank)
            hits.setdefault(hit.chunk_id, hit)
    return [hits[c] for c in sorted(fused, key=lambda c: (-fused[c], c))][:limit]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
