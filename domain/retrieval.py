"""How a File Search tool's `search` finds its chunks (docs/kinds/file-search-tools.md, "Retrieval"):
by their words (`lexical`, BM25), by their meaning (`semantic`, the cosine of embeddings), or both
fused (`hybrid`, reciprocal rank fusion).

A tool's `retrieval` is `{"mode", "rrfK", "minScore", "maxChunksPerDocument"}`. A tool created
without one gets `hybrid`; a tool whose recorded configuration has none (made before retrieval
existed) reads as `lexical`, its answers unchanged, until an admin sets one (`normalise`).

Reciprocal rank fusion: a chunk's fused value is the sum, over the retrievers that found it, of
1 / (rrfK + its rank there) (rank 1 the best). The score a hybrid result shows is that value
divided by the best a chunk can get (first in both: 2 / (rrfK + 1)), so it lies in (0, 1] and
`minScore` means the same whatever `rrfK` is. In `lexical` mode the score is BM25's (engine
specific, unbounded) and in `semantic` mode the cosine similarity (-1 to 1); `minScore` is a floor
on the score the mode shows. `maxChunksPerDocument` keeps a document's best chunks only, so that
one long document does not fill every result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from domain.documents import DocumentIndex, Hit
from domain.errors import Violation

LEXICAL, SEMANTIC, HYBRID = "lexical", "semantic", "hybrid"
MODES = (HYBRID, LEXICAL, SEMANTIC)
RETRIEVERS = {LEXICAL: (LEXICAL,), SEMANTIC: (SEMANTIC,), HYBRID: (LEXICAL, SEMANTIC)}
RRF_K = 60
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
         min_score: float | None = None, max_per_document: int | None = None) -> list[Hit]:
    """The best `limit` hits of the retrievers' ranked lists (`found[retriever]`, best first), each
    saying which retrievers found it: fused by reciprocal rank in `hybrid` mode, else the one
    list as it is; then `min_score` and `max_per_document` applied. A hit found by both keeps the
    lexical one's snippet (its words marked)."""
    if mode == HYBRID:
        fused: dict[str, float] = {}
        hits: dict[str, Hit] = {}
        by: dict[str, list[str]] = {}
        for retriever in RETRIEVERS[HYBRID]:
            for rank, hit in enumerate(found.get(retriever, ()), start=1):
                fused[hit.chunk_id] = fused.get(hit.chunk_id, 0.0) + 1.0 / (rrf_k + rank)
                hits.setdefault(hit.chunk_id, hit)
                by.setdefault(hit.chunk_id, []).append(retriever)
        best = len(RETRIEVERS[HYBRID]) / (rrf_k + 1)
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
    the cosine of `query`'s embedding (`embed(query)` is the model's name and the vector), or
    both fused; each hit says which found it. With no embedder or an index without vectors,
    semantic retrieval finds nothing, and hybrid is lexical."""
    mode = retrieval.get("mode", LEXICAL)
    wanted = candidates(limit, retrieval)
    found: dict[str, list[Hit]] = {}
    if LEXICAL in RETRIEVERS[mode]:
        found[LEXICAL] = index.search(tenant, tool, terms, wanted, document_ids)
    if SEMANTIC in RETRIEVERS[mode] and embed is not None and index.vectors:
        model, vector = embed(query)
        found[SEMANTIC] = index.vector_search(tenant, tool, vector, model, wanted, document_ids)
    return fuse(found, mode=mode, limit=limit, rrf_k=retrieval.get("rrfK") or RRF_K,
                min_score=retrieval.get("minScore"), max_per_document=retrieval.get("maxChunksPerDocument"))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
