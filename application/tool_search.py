"""Tool search for large catalogs (docs/mcp.md, "Tool search"): an MCP server with `toolSearch` on
lists `find_tool` and `call_tool` beside its pinned tools, and `find_tool` ranks the caller's
offered tools for a query.

`ToolIndex` keeps one index per tenant in memory: each winning tool's text (its name split into
words, its description, tags, parameter names, descriptions and examples) as BM25 postings and as
an embedding (the offline model, `infrastructure.embeddings`, handed in). It follows the tenant's
catalog by its changes (`Toolbox.changes_since`, the same changes the MCP tool watch reads): a tool
is embedded when it changes (the endpoint's refresh loop, a quarter second after its publish), and
a query that finds the index behind brings it up first, so a tool published is found at once. A
query embeds only itself.

The caller's permissions come first: the tools a caller's offer does not show (its usage profile,
the server's attached tools, chat exposure, a kind that cannot run) are masked out before either
retriever ranks anything, so a hidden tool is never found. The two ranked lists are fused by the
File Search kind's reciprocal rank fusion (`domain.retrieval.fuse`, k = 60).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from domain.catalog import ToolEntry
from domain.documents import STOP_WORDS, Hit
from domain.retrieval import HYBRID, LEXICAL, RRF_K, SEMANTIC, fuse

if TYPE_CHECKING:
    from application.toolbox import Toolbox

FIND_TOOL = "find_tool"
CALL_TOOL = "call_tool"
META_TOOLS = frozenset({FIND_TOOL, CALL_TOOL})
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY = 1_000  # characters of a query read
MAX_PINNED = 200
# How deep each retriever's list goes into the fusion, at least (deeper lists fuse worse:
# domain.retrieval's note; 10 measured best for tools, tests/unit/test_tool_search.py's set).
MIN_CANDIDATES = 10
BM25_K1, BM25_B = 1.2, 0.75
MASKS_KEPT = 64

Embed = Callable[[Sequence[str]], np.ndarray]

# Besides File Search's stop words, the function words of a tool's description or a query.
FUNCTION_WORDS = STOP_WORDS | frozenset(
    "about all also am any can do does each every from has have how its many me more most my one our out over "
    "so some than them we what when where which who whose why you your".split())

_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|[0-9]+|[^\W\d_]+", re.UNICODE)


@dataclass(frozen=True)
class ToolSearch:
    """A server's `toolSearch`: on or off, and the tools always listed beside the two."""

    enabled: bool = False
    pinned: tuple[str, ...] = ()


OFF = ToolSearch()


def tool_search_of(record: dict[str, Any] | None) -> ToolSearch:
    found = (record or {}).get("toolSearch")
    if not isinstance(found, dict):
        return OFF
    return ToolSearch(bool(found.get("enabled")), tuple(found.get("pinned") or ()))


def words(text: str) -> list[str]:
    """The lexical terms of a text: words (a name's snake_case and camelCase parts apart), lower
    case, stop words left out, a plural's `s` taken off."""
    found = []
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word in FUNCTION_WORDS or len(word) < 2:
            continue
        found.append(_stem(word))
    return found


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tool_text(entry: ToolEntry) -> str:
    """What is searched of a tool: its name's words, description, tags, parameters (names,
    descriptions, enumerations) and examples."""
    parts = [" ".join(_WORD.findall(entry.name)), entry.description or ""]
    if entry.tags:
        parts.append(" ".join(entry.tags))
    _schema_text(entry.input_schema, parts, 0)
    return ". ".join(p for p in parts if p)


def _schema_text(schema: Any, parts: list[str], depth: int) -> None:
    if not isinstance(schema, dict) or depth > 4:
        return
    for key in ("description", "title"):
        if isinstance(schema.get(key), str) and depth:
            parts.append(schema[key])
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list):
            parts.append(" ".join(str(v) for v in values[:10] if isinstance(v, (str, int, float))))
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, sub in list(properties.items())[:50]:
            parts.append(" ".join(_WORD.findall(str(name))))
            _schema_text(sub, parts, depth + 1)
    _schema_text(schema.get("items"), parts, depth + 1)


@dataclass(frozen=True)
class Found:
    entry: ToolEntry
    score: float
    retrievers: tuple[str, ...]


class _TenantIndex:
    """One tenant's winners: a slot each, its BM25 postings, its vector."""

    def __init__(self, dimensions: int) -> None:
        self.lock = threading.Lock()
        self.position = -1
        self.version = 0
        self.slots: dict[str, int] = {}
        self.entries: list[ToolEntry | None] = []
        self.texts: list[str] = []
        self.terms: list[dict[str, int]] = []
        self.free: list[int] = []
        self.vectors = np.zeros((0, dimensions), dtype=np.float32)
        self.lengths = np.zeros(0, dtype=np.float32)
        self.live = np.zeros(0, dtype=bool)
        self.postings: dict[str, dict[int, int]] = {}
        self.arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.total_length = 0.0
        self.masks: dict[Hashable, np.ndarray] = {}

    def _grow(self, needed: int) -> None:
        capacity = len(self.entries)
        if needed <= capacity:
            return
        size = max(needed, capacity * 2, 64)
        grown = np.zeros((size, self.vectors.shape[1]), dtype=np.float32)
        grown[:capacity] = self.vectors
        self.vectors = grown
        self.lengths = np.concatenate([self.lengths, np.zeros(size - capacity, dtype=np.float32)])
        self.live = np.concatenate([self.live, np.zeros(size - capacity, dtype=bool)])
        self.entries.extend([None] * (size - capacity))
        self.texts.extend([""] * (size - capacity))
        self.terms.extend([{}] * (size - capacity))
        self.free.extend(range(size - 1, capacity - 1, -1))

    def remove(self, name: str) -> None:
        slot = self.slots.pop(name, None)
        if slot is None:
            return
        self._unpost(slot)
        self.entries[slot] = None
        self.texts[slot] = ""
        self.live[slot] = False
        self.free.append(slot)

    def _unpost(self, slot: int) -> None:
        for term in self.terms[slot]:
            postings = self.postings.get(term)
            if postings is not None:
                postings.pop(slot, None)
                if not postings:
                    del self.postings[term]
                self.arrays.pop(term, None)
        self.total_length -= float(self.lengths[slot])
        self.terms[slot] = {}
        self.lengths[slot] = 0

    def put(self, entry: ToolEntry, text: str, vector: np.ndarray | None) -> None:
        slot = self.slots.get(entry.name)
        if slot is None:
            self._grow(len(self.slots) + 1)
            slot = self.free.pop()
            self.slots[entry.name] = slot
        elif self.texts[slot] == text:
            self.entries[slot] = entry  # the text is the same: neither list changes
            return
        else:
            self._unpost(slot)
        counts: dict[str, int] = {}
        for term in words(text):
            counts[term] = counts.get(term, 0) + 1
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[slot] = tf
            self.arrays.pop(term, None)
        self.terms[slot] = counts
        self.lengths[slot] = sum(counts.values())
        self.total_length += float(self.lengths[slot])
        self.entries[slot] = entry
        self.texts[slot] = text
        self.live[slot] = True
        if vector is not None:
            self.vectors[slot] = vector

    def postings_of(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        arrays = self.arrays.get(term)
        if arrays is None:
            postings = self.postings.get(term)
            if not postings:
                return None
            arrays = (np.fromiter(postings.keys(), dtype=np.int64, count=len(postings)),
                      np.fromiter(postings.values(), dtype=np.float32, count=len(postings)))
            self.arrays[term] = arrays
        return arrays


class ToolIndex:
    """Every indexed tenant's tools (see the module)."""

    def __init__(self, toolbox: Toolbox, embed: Callable[[], tuple[Embed, int]]) -> None:
        self._toolbox = toolbox
        self._embedder = embed  # loaded on first use: (embed, dimensions)
        self._loaded: tuple[Embed, int] | None = None
        self._tenants: dict[str, _TenantIndex] = {}
        self._lock = threading.Lock()

    def _model(self) -> tuple[Embed, int]:
        if self._loaded is None:
            self._loaded = self._embedder()
        return self._loaded

    def tenants(self) -> list[str]:
        return list(self._tenants)

    def size(self, tenant: str) -> int:
        index = self._tenants.get(tenant)
        return len(index.slots) if index is not None else 0

    # -- following the catalog --------------------------------------------------------------------

    def refresh(self, tenant: str) -> _TenantIndex:
        """The tenant's index brought up to its catalog (blocking: run it in a thread)."""
        with self._lock:
            index = self._tenants.get(tenant)
            if index is None:
                index = self._tenants[tenant] = _TenantIndex(self._model()[1])
        if index.position >= 0 and index.position >= self._toolbox.position(tenant):
            return index
        with index.lock:
            changes, position = self._toolbox.changes_since(tenant, index.position) if index.position >= 0 else (None, 0)
            if index.position >= 0 and position <= index.position:
                return index
            if changes is None:
                self._rebuild(tenant, index)
            else:
                names = sorted({c.name for c in changes if c.name is not None})
                self._reindex(tenant, index, names)
                index.position = position
        return index

    def refresh_all(self) -> None:
        for tenant in self.tenants():
            self.refresh(tenant)

    def _rebuild(self, tenant: str, index: _TenantIndex) -> None:
        position = self._toolbox.position(tenant)
        winners = [e for e in self._toolbox.entries(tenant) if e.shadowed_by is None]
        for name in [n for n in index.slots if n not in {e.name for e in winners}]:
            index.remove(name)
        self._put(index, winners)
        index.position = position
        index.version += 1
        index.masks.clear()

    def _reindex(self, tenant: str, index: _TenantIndex, names: list[str]) -> None:
        if not names:
            return
        fresh = []
        for name in names:
            entry = self._toolbox.entry_as_read(tenant, name)
            if entry is None:
                index.remove(name)
            else:
                fresh.append(entry)
        self._put(index, fresh)
        index.version += 1
        index.masks.clear()

    def _put(self, index: _TenantIndex, entries: list[ToolEntry]) -> None:
        texts = [tool_text(e) for e in entries]
        changed = [i for i, (e, t) in enumerate(zip(entries, texts))
                   if (slot := index.slots.get(e.name)) is None or index.texts[slot] != t]
        embed, _ = self._model()
        vectors = embed([texts[i] for i in changed]) if changed else None
        done = set(changed)
        for j, i in enumerate(changed):
            index.put(entries[i], texts[i], vectors[j])  # type: ignore[index]
        for i, entry in enumerate(entries):
            if i not in done:
                index.put(entry, texts[i], None)

    # -- finding ---------------------------------------------------------------------------------

    def find(self, tenant: str, shows: Callable[[ToolEntry], bool], terms: Hashable, query: str,
             limit: int = DEFAULT_LIMIT, among: Sequence[str] | None = None, mode: str = HYBRID) -> list[Found]:
        """The best `limit` tools for `query` among those `shows` accepts (the caller's offer,
        whose `terms` key the mask kept for it; `among`: the only names it can show, a server's
        attached tools), fused by RRF (blocking). `mode` lexical or semantic: one retriever alone
        (what the quality test compares hybrid with)."""
        index = self.refresh(tenant)
        embed, _ = self._model()
        query = query[:MAX_QUERY]
        vector = embed([query])[0]
        with index.lock:
            allowed = self._mask(index, shows, terms, among)
            if not allowed.any():
                return []
            depth = max(limit, MIN_CANDIDATES)
            found = {}
            if mode in (HYBRID, SEMANTIC):
                found[SEMANTIC] = self._semantic(index, allowed, vector, depth)
            if mode in (HYBRID, LEXICAL):
                found[LEXICAL] = self._lexical(index, allowed, query, depth)
            fused = fuse(found, mode=mode, limit=limit, rrf_k=RRF_K)
            return [Found(index.entries[index.slots[hit.chunk_id]], round(hit.score, 4), hit.retrievers)  # type: ignore[arg-type]
                    for hit in fused]

    def _mask(self, index: _TenantIndex, shows: Callable[[ToolEntry], bool], terms: Hashable,
              among: Sequence[str] | None) -> np.ndarray:
        availability = tuple(kind.available for kind in self._toolbox.kinds)
        key = (terms, availability)
        mask = index.masks.get(key)
        if mask is not None and len(mask) == len(index.entries):
            return mask
        mask = np.zeros(len(index.entries), dtype=bool)
        if among is not None:
            for name in among:
                slot = index.slots.get(name)
                if slot is not None and shows(index.entries[slot]):  # type: ignore[arg-type]
                    mask[slot] = True
        else:
            for name, slot in index.slots.items():
                if shows(index.entries[slot]):  # type: ignore[arg-type]
                    mask[slot] = True
        if len(index.masks) >= MASKS_KEPT:
            index.masks.pop(next(iter(index.masks)))
        index.masks[key] = mask
        return mask

    @staticmethod
    def _semantic(index: _TenantIndex, allowed: np.ndarray, vector: np.ndarray, depth: int) -> list[Hit]:
        if not np.any(vector):
            return []
        slots = np.flatnonzero(allowed)
        if len(slots) * 4 < len(allowed):  # a few allowed (a server's tools, a profile's): only theirs
            scores = index.vectors[slots] @ vector
        else:  # most: one pass over the whole matrix, in place, costs less than gathering rows
            scores = (index.vectors @ vector)[slots]
        top = _top(scores, depth)
        return [_hit(index, int(slots[i]), float(scores[i])) for i in top]

    @staticmethod
    def _lexical(index: _TenantIndex, allowed: np.ndarray, query: str, depth: int) -> list[Hit]:
        terms = list(dict.fromkeys(words(query)))
        live = len(index.slots)
        if not terms or not live:
            return []
        scores = np.zeros(len(index.entries), dtype=np.float32)
        average = max(index.total_length / live, 1.0)
        for term in terms:
            arrays = index.postings_of(term)
            if arrays is None:
                continue
            slots, tf = arrays
            idf = math.log(1 + (live - len(slots) + 0.5) / (len(slots) + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * index.lengths[slots] / average)
            scores[slots] += idf * tf * (BM25_K1 + 1) / (tf + norm)
        scores[~allowed] = 0
        hits = np.flatnonzero(scores > 0)
        if not len(hits):
            return []
        top = _top(scores[hits], depth)
        return [_hit(index, int(hits[i]), float(scores[hits[i]])) for i in top]


def _top(scores: np.ndarray, depth: int) -> list[int]:
    """The positions of the `depth` highest scores, best first (ties by position)."""
    if len(scores) > depth:
        part = np.argpartition(-scores, depth - 1)[:depth]
    else:
        part = np.arange(len(scores))
    return sorted(part.tolist(), key=lambda i: (-scores[i], i))


def _hit(index: _TenantIndex, slot: int, score: float) -> Hit:
    name = index.entries[slot].name  # type: ignore[union-attr]
    return Hit(chunk_id=name, document_id=name, title=name, snippet="", score=score)


def described(found: Found) -> dict[str, Any]:
    """A found tool as `find_tool` answers it."""
    entry = found.entry
    return {"name": entry.name, "description": entry.description, "inputSchema": entry.input_schema,
            "score": found.score, "matchedBy": list(found.retrievers)}
