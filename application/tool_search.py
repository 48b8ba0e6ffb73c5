"""Tool search for large catalogs (docs/mcp.md, "Tool search"): an MCP server with `toolSearch` on
lists `find_tool` and `call_tool` beside its pinned tools, and `find_tool` ranks the caller's
offered tools for a query.

`ToolIndex` keeps one index per tenant in memory: each winning tool's text (its name split into
words, its description, tags, parameter names, descriptions and examples) as BM25 postings of
stemmed words (`words`) and as an embedding (the offline model, `infrastructure.embeddings`,
handed in; the whole text's and the name, description and tags' summed). It follows the tenant's
catalog by its changes (`Toolbox.changes_since`, the same changes the MCP tool watch reads): a tool
is embedded when it changes (the endpoint's refresh loop, a quarter second after its publish), and
a query that finds the index behind brings it up first, so a tool published is found at once. A
query embeds only itself.

The caller's permissions come first: the tools a caller's offer does not show (its usage profile,
the server's attached tools, chat exposure, a kind that cannot run) are masked out before either
retriever ranks anything, so a hidden tool is never found. A query's words also look for their
synonyms in a small thesaurus of what tools do (`SYNONYMS`: "erase" finds "delete"), in BM25 and
in the text embedded. The two scores are fused as the cosine plus a weighed relative BM25
(`LEXICAL_WEIGHT`), not by RRF (its note says why).
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
from domain.retrieval import HYBRID, LEXICAL, SEMANTIC, fuse

if TYPE_CHECKING:
    from application.toolbox import Toolbox

FIND_TOOL = "find_tool"
CALL_TOOL = "call_tool"
META_TOOLS = frozenset({FIND_TOOL, CALL_TOOL})
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY = 1_000  # characters of a query read
MAX_PINNED = 200
# How deep a lone retriever's list goes (lexical or semantic mode), at least.
MIN_CANDIDATES = 10
BM25_K1, BM25_B = 1.2, 0.75
MASKS_KEPT = 64
# Hybrid's fusion (`ToolIndex._hybrid`): a tool's score is its cosine plus `LEXICAL_WEIGHT` times its
# BM25 over the best BM25 of the offer (a relative score fusion). Measured on the generated catalog's
# four query sets (tests/unit/test_tool_search.py; docs/mcp.md, "Tool search"): File Search's RRF
# (k = 60) gives recall@5 0.91 asked / 0.98 object named / 1.00 own words / 0.25 reworded; this
# 0.94 / 0.95 / 1.00 / 0.28. RRF ranks ties apart: a query whose only matching word is its
# action ("erase") ties hundreds of tools in BM25, and RRF gives the first ten of them, in no
# order of meaning, the lexical list's ranks; a score keeps them level and lets meaning choose.
LEXICAL_WEIGHT = 0.3

Embed = Callable[[Sequence[str]], np.ndarray]

# Besides File Search's stop words, the function words of a tool's description or a query.
FUNCTION_WORDS = STOP_WORDS | frozenset(
    "about all also am any can do does each every from has have how its many me more most my one our out over "
    "so some than them we what when where which who whose why you your".split())

# A small thesaurus of what tools do, for the lexical side: a query's word (or phrase) also looks
# for the words a tool's description would use for the same thing, at `SYNONYM_WEIGHT` of its own
# weight. General English for the operations of an API catalog (CRUD and the like) and the words
# around them, as a search engine's synonym list holds them; never a catalog's own nouns (which
# objects are which is the embedding's part).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "create": ("add", "make", "new", "insert", "register", "generate", "set up", "submit", "open"),
    "delete": ("remove", "erase", "destroy", "drop", "purge", "wipe", "discard", "get rid of", "trash"),
    "list": ("enumerate", "show all", "browse", "every", "all", "each", "list out"),
    "get": ("fetch", "retrieve", "read", "look up", "lookup", "view", "show", "details", "info", "inspect"),
    "update": ("change", "modify", "edit", "alter", "amend", "adjust", "patch", "rename", "correct"),
    "search": ("find", "query", "look for", "seek", "filter", "match", "matching", "lookup"),
    "export": ("download", "dump", "extract", "spreadsheet", "excel", "comma separated values", "save as"),
    "archive": ("shelve", "put away", "hide", "retire", "stash", "deactivate", "mothball", "out of sight"),
    "approve": ("accept", "sign off", "confirm", "authorize", "authorise", "endorse", "okay", "green light"),
    "count": ("tally", "how many", "number of", "total", "quantity"),
    "permanently": ("for good", "forever", "irreversibly", "irrevocably"),
    "new": ("fresh", "another", "additional"),
    "old": ("outdated", "stale", "obsolete", "aged", "former"),
    "pending": ("waiting", "awaiting", "outstanding", "unapproved"),
    "existing": ("current", "already"),
    "id": ("identifier", "unique code", "key", "reference"),
    "fields": ("attributes", "properties", "values"),
    "keyword": ("text", "phrase", "term", "terms"),
    "csv": ("comma separated values", "spreadsheet"),
    "hidden": ("out of sight", "invisible"),
    "details": ("information", "info", "particulars"),
}
SYNONYM_WEIGHT = 0.6

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
    case, stop words left out, each reduced to its stem (`_stem`)."""
    found = []
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word in FUNCTION_WORDS or len(word) < 2:
            continue
        found.append(_stem(word))
    return found


def _stem(word: str) -> str:
    """A light English stemmer: a plural's or third person's `s`/`es`/`ies`, then `ing` and `ed`,
    then a final `e` (deletes, deleted, deleting and delete are all `delet`; searches, search)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "shes", "ches", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("ed") and len(word) > 4 and not word.endswith("eed"):
        word = word[:-2]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] in "bdgmnprt":  # stopped, planning
        word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _phrase(text: str) -> tuple[str, ...]:
    return tuple(_stem(m.group(0).lower()) for m in _WORD.finditer(text))


_HEAD_TERMS = frozenset(_stem(h) for h in SYNONYMS)


def _expansions() -> dict[tuple[str, ...], dict[str, float]]:
    """Each thesaurus phrase (its stems) -> the other words of its group (their terms, weighed)."""
    found: dict[tuple[str, ...], dict[str, float]] = {}
    for head, others in SYNONYMS.items():
        group = (head, *others)
        for member in group:
            into = found.setdefault(_phrase(member), {})
            for other in group:
                terms = words(other)
                if len(terms) > 1:  # a phrase's words that head a group of their own are not it ("get" of "get rid of")
                    terms = [t for t in terms if t not in _HEAD_TERMS] or terms
                for term in terms:
                    into[term] = max(into.get(term, 0.0), SYNONYM_WEIGHT / len(terms))
    return found


_EXPANSIONS = _expansions()
_HEADS: dict[tuple[str, ...], list[str]] = {}
for _head, _others in SYNONYMS.items():
    for _member in (_head, *_others):
        _HEADS.setdefault(_phrase(_member), []).append(_head)


def meant(query: str) -> str:
    """The text embedded for a query: the query, and the thesaurus's head word of each of its
    words or phrases that has one ("erase" adds "delete")."""
    stems = [_stem(m.group(0).lower()) for m in _WORD.finditer(query)]
    heads: list[str] = []
    for i in range(len(stems)):
        for n in range(min(_LONGEST, len(stems) - i), 0, -1):
            found = _HEADS.get(tuple(stems[i:i + n]))
            if found:
                heads.extend(h for h in found if h not in heads and _phrase(h) != tuple(stems[i:i + n]))
                break
    return f"{query} {' '.join(heads)}" if heads else query
_LONGEST = max(len(k) for k in _EXPANSIONS)


def query_terms(query: str) -> dict[str, float]:
    """A query's lexical terms and their weights: its own words (1), and the thesaurus's words for
    each of its words or phrases (`SYNONYM_WEIGHT`, shared among a phrase's words)."""
    terms = dict.fromkeys(words(query), 1.0)
    stems = [_stem(m.group(0).lower()) for m in _WORD.finditer(query)]
    for i in range(len(stems)):
        for n in range(min(_LONGEST, len(stems) - i), 0, -1):
            expanded = _EXPANSIONS.get(tuple(stems[i:i + n]))
            if expanded:
                for term, weight in expanded.items():
                    if terms.get(term, 0.0) < weight:
                        terms[term] = weight
                break
    return terms


def tool_text(entry: ToolEntry) -> str:
    """What is searched of a tool: its name's words, description, tags, parameters (names,
    descriptions, enumerations) and examples."""
    parts = [" ".join(_WORD.findall(entry.name)), entry.description or ""]
    if entry.tags:
        parts.append(" ".join(entry.tags))
    _schema_text(entry.input_schema, parts, 0)
    return ". ".join(p for p in parts if p)


def meaning_text(entry: ToolEntry) -> str:
    """What is embedded of a tool: its name's words, description and tags (its parameters' words,
    mostly the same for every tool of an API, blur what tells tools apart)."""
    parts = [" ".join(_WORD.findall(entry.name)), entry.description or "", " ".join(entry.tags or ())]
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
        vectors = None
        if changed:
            # A tool's vector: its whole text's and its name, description and tags' (`meaning_text`),
            # summed and normalized. The whole text alone lets the parameters' words, alike across an
            # API, blur what tells its tools apart; without them a tool loses its parameters'
            # meaning (measured: recall@5 asked 0.90 whole, 0.86 short, 0.89 both; reworded 0.34,
            # 0.40, 0.37; the semantic retriever alone).
            vectors = embed([texts[i] for i in changed]) + embed([meaning_text(entries[i]) for i in changed])
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
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
        attached tools), by meaning and words (`_hybrid`; blocking). `mode` lexical or semantic:
        one retriever alone, ranked as File Search's are (what the quality test compares hybrid
        with). The query is embedded with its thesaurus words (`meant`)."""
        index = self.refresh(tenant)
        embed, _ = self._model()
        query = query[:MAX_QUERY]
        vector = embed([meant(query)])[0]
        with index.lock:
            allowed = self._mask(index, shows, terms, among)
            if not allowed.any():
                return []
            if mode == HYBRID:
                return self._hybrid(index, allowed, vector, query, limit)
            depth = max(limit, MIN_CANDIDATES)
            found = {}
            if mode == SEMANTIC:
                found[SEMANTIC] = self._semantic(index, allowed, vector, depth)
            else:
                found[LEXICAL] = self._lexical(index, allowed, query, depth)
            fused = fuse(found, mode=mode, limit=limit)
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

    def _hybrid(self, index: _TenantIndex, allowed: np.ndarray, vector: np.ndarray, query: str, limit: int) -> list[Found]:
        """The allowed tools by their cosine plus `LEXICAL_WEIGHT` times their BM25 relative to the
        best; each says which retriever found it (a word of the query matched, a positive cosine).
        Its score is that sum over its most, 1 + LEXICAL_WEIGHT."""
        slots = np.flatnonzero(allowed)
        if np.any(vector):
            if len(slots) * 4 < len(allowed):
                meaning = index.vectors[slots] @ vector
            else:
                meaning = (index.vectors @ vector)[slots]
        else:
            meaning = np.zeros(len(slots), dtype=np.float32)
        lexical = self._bm25(index, query)
        words_ = lexical[slots] if lexical is not None else np.zeros(len(slots), dtype=np.float32)
        best = float(words_.max()) if len(words_) else 0.0
        combined = meaning + (LEXICAL_WEIGHT / best) * words_ if best > 0 else meaning
        top = _top(combined, limit)
        found = []
        for i in top:
            retrievers = tuple(r for r, v in ((LEXICAL, words_[i]), (SEMANTIC, meaning[i])) if v > 0)
            found.append(Found(index.entries[int(slots[i])], round(float(combined[i]) / (1 + LEXICAL_WEIGHT), 4), retrievers))  # type: ignore[arg-type]
        return found

    @staticmethod
    def _bm25(index: _TenantIndex, query: str) -> np.ndarray | None:
        terms = query_terms(query)
        live = len(index.slots)
        if not terms or not live:
            return None
        scores = np.zeros(len(index.entries), dtype=np.float32)
        average = max(index.total_length / live, 1.0)
        for term, weight in terms.items():
            arrays = index.postings_of(term)
            if arrays is None:
                continue
            slots, tf = arrays
            idf = math.log(1 + (live - len(slots) + 0.5) / (len(slots) + 0.5))
            norm = BM25_K1 * (1 - BM25_B + BM25_B * index.lengths[slots] / average)
            scores[slots] += weight * idf * tf * (BM25_K1 + 1) / (tf + norm)
        return scores

    @staticmethod
    def _lexical(index: _TenantIndex, allowed: np.ndarray, query: str, depth: int) -> list[Hit]:
        scores = ToolIndex._bm25(index, query)
        if scores is None:
            return []
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
