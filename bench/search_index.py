"""Benchmark: the File Search chunk index (docs/kinds/file-search-tools.md) on SQLite FTS5 and on OpenSearch.

Two figures per engine, each against the engine's own floor:

- **Indexing throughput**, MB of document text per second: 1,000 documents of English-like text
  (word frequencies following Zipf's law over common English words and 30,000 made-up ones,
  sentences, paragraphs, a heading now and then; 2-60 KB each), chunked before the clock starts
  (`domain.chunking` when it exists, else a fixed 1,500-character splitter with 200 overlapping),
  then `put()` document by document, each put committed and searchable before the next (as an
  upload is). Floor: the same chunks in one raw write — FTS5: one `executemany` in one
  transaction into a bare FTS5 table with the same tokenizer; OpenSearch: `_bulk` requests of
  4 MB built before the clock, into a bare index with the same mapping, one refresh at the end.
  Ratio = put MB/s / floor MB/s; median over rounds that alternate which runs first.
- **Search latency** over 100,000 chunks of one tool (the index also holds 10,000 chunks of
  another tenant's tool), built once per engine by the quickest path (one transaction; `_bulk`
  with refresh off), then 250 queries of 1-3 words drawn from the vocabulary (common, middling
  and rare words), through `search(…, limit=10)` as the File Search `search` capability calls it.
  Floor: the engine's bare query for the same words, unscoped, without snippet or highlight
  (FTS5: `MATCH … ORDER BY rank LIMIT 10`; OpenSearch: a `match` query on `text`, no `_source`),
  run interleaved with ours. Ratio = floor p95 / ours p95.

Run: `python -m bench.search_index [--quick] [--engine sqlite|opensearch]`. OpenSearch is
`OPENSEARCH_URL`, else the project's node (`scripts/opensearch.sh start`).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench._common import Progress, Row, median, millis, quartiles, rotated, standalone
from domain.documents import CHUNK_CHARS, CHUNK_OVERLAP, TEXT, Chunk, Extracted, IndexedDocument, query_terms

TITLE = "File Search chunk index: put() against a raw write, search over one large tool"
NOTES = ("(put: each document committed and searchable before the next; floor: the same chunks in one raw write.\n"
         " search: limit 10 with snippet, scoped to one tool; floor: the bare engine query, unscoped, no snippet)")
TENANT, TOOL = "bench", "handbook"
BATCH = 100  # documents per put_many() of a rebuild
OTHER_TENANT, OTHER_TOOL, OTHER_CHUNKS = "elsewhere", "wiki", 10_000
BULK_BYTES = 4 * 1024 * 1024
CORPUS_SEED = 11  # the search corpus, the same text for each engine

COMMON = """the of and to a in is that it was for on are as with his they at be this from have or by one had not
but what all were when we there can an your which their said if do will each about how up out them then she many
some so these would other into has more her two like him see time could no make than first been its who now people
my made over did down only way find use may water long little very after words called just where most know get
through back much go good new write our me man too any day same right look think also around another came come work
three word must because does part even place well such here take why things help put years different away again
off went old number great tell men say small every found still between name should home big give air line set own
under read last never us left end along while might next sound below saw something thought both few those always
looked show large often together asked house world going want school important until form food keep children feet
land side without boy once animals life enough took sometimes four head above kind began almost live page got
earth need far hand high year mother light parts country father let night following picture being study second eyes
soon times story boys since white days ever paper hard near sentence better best across during today others sure
means knew its try told young miles sun ways thing whole hear example heard several change answer room sea against
top turned learn point city play toward five using himself usually money seen car morning""".split()
STOP = {"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not",
        "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will",
        "with"}


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


# -- the text ----------------------------------------------------------------------------------

class Language:
    """English-like text: common English words first, then made-up ones, drawn by Zipf's law."""

    def __init__(self, seed: int, invented: int = 30_000) -> None:
        """The vocabulary is the same for every seed; the seed chooses the text."""
        made = random.Random(0)
        words = list(dict.fromkeys(COMMON))
        seen = set(words)
        onsets = "b c d f g h j k l m n p r s t v w z br cl dr fl gr pl st tr ch sh th".split()
        vowels = "a e i o u ai ea ou io".split()
        codas = ["", "", "n", "r", "s", "t", "l", "nd", "st", "rk", "m"]
        while len(words) < len(COMMON) + invented:
            word = "".join(made.choice(onsets) + made.choice(vowels) for _ in range(made.randint(1, 3)))
            word += made.choice(codas)
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        self.random = random.Random(seed)
        self.cumulative = list(itertools.accumulate(1.0 / (rank + 1) ** 1.05 for rank in range(len(words))))

    def sentence(self) -> str:
        words = self.random.choices(self.words, cum_weights=self.cumulative, k=self.random.randint(6, 22))
        return " ".join(words).capitalize() + self.random.choice((".", ".", ".", ",", "?"))

    def document(self, chars: int) -> str:
        parts: list[str] = []
        size = 0
        while size < chars:
            if self.random.random() < 0.15:
                block = "## " + " ".join(self.random.choices(self.words[:3000], k=self.random.randint(2, 5))).title()
            else:
                block = " ".join(self.sentence() for _ in range(self.random.randint(2, 7)))
            parts.append(block)
            size += len(block) + 2
        return "\n\n".join(parts)[:chars]

    def query(self) -> tuple[str, str]:
        """A query of 1-3 words (never only stop words), and its kind: `common` when a word is
        among the 200 most frequent, else `rare` when every word is past the 5,000th."""
        picks = []
        for _ in range(self.random.randint(1, 3)):
            band = self.random.choices(("common", "middling", "rare"), (3, 4, 3))[0]
            low, high = {"common": (0, 200), "middling": (200, 5_000), "rare": (5_000, len(self.words))}[band]
            word = self.words[self.random.randrange(low, high)]
            while word in STOP:
                word = self.words[self.random.randrange(low, high)]
            picks.append((band, word))
        bands = {band for band, _ in picks}
        kind = "common" if "common" in bands else "rare" if bands == {"rare"} else "middling"
        return " ".join(word for _, word in picks), kind


def chunker() -> tuple[Callable[[str], list[Chunk]], str]:
    """The project's chunker when it exists, else a fixed splitter (1,500 characters, 200 overlapping)."""
    try:
        from domain.chunking import chunk_text  # noqa: PLC0415 - written in parallel; used once it is there

        chunk_text(Extracted("probe text"), TEXT)
        return (lambda text: list(chunk_text(Extracted(text), TEXT))), "domain.chunking.chunk_text"
    except Exception:  # noqa: BLE001 - absent or not yet working: the fixed splitter stands in
        return fixed_chunks, f"fixed {CHUNK_CHARS:,}/{CHUNK_OVERLAP} splitter"


def fixed_chunks(text: str) -> list[Chunk]:
    chunks, start, step = [], 0, CHUNK_CHARS - CHUNK_OVERLAP
    while True:
        end = min(len(text), start + CHUNK_CHARS)
        chunks.append(Chunk(n=len(chunks), start=start, end=end, text=text[start:end]))
        if end >= len(text):
            return chunks
        start += step


@dataclass(frozen=True)
class Doc:
    document: IndexedDocument
    chunks: list[Chunk]
    size: int  # bytes of the document's text (UTF-8)


def make_documents(language: Language, count: int, split: Callable[[str], list[Chunk]], prefix: str = "doc") -> list[Doc]:
    docs = []
    for i in range(count):
        chars = int(min(60_000, max(2_000, language.random.lognormvariate(8.8, 0.8))))
        text = language.document(chars)
        title = " ".join(language.random.choices(language.words[:2000], k=4)).title()
        docs.append(Doc(IndexedDocument(f"{prefix}{i}", title, f"{prefix}{i}.txt", TEXT), split(text), len(text.encode())))
    return docs


def corpus(language: Language, chunks: int, split: Callable[[str], list[Chunk]], prefix: str) -> Iterator[Doc]:
    """Documents of about 50 chunks each until `chunks` chunks are made (the last one cut)."""
    made = 0
    for i in itertools.count():
        text = language.document(50 * (CHUNK_CHARS - CHUNK_OVERLAP))
        title = " ".join(language.random.choices(language.words[:2000], k=4)).title()
        pieces = split(text)[: chunks - made]
        made += len(pieces)
        yield Doc(IndexedDocument(f"{prefix}{i}", title, f"{prefix}{i}.txt", TEXT), pieces, len(text.encode()))
        if made >= chunks:
            return


# -- SQLite FTS5 -------------------------------------------------------------------------------

def sqlite_put(folder: Path, docs: list[Doc], batch: int = 0) -> float:
    """`put()` document by document (an upload's path), or `put_many()` `batch` at a time (a rebuild's)."""
    from projections.chunks_sqlite import SqliteDocumentIndex

    index = SqliteDocumentIndex(folder / "documents.sqlite")
    gc.collect()
    t0 = time.perf_counter()
    put_all(index, docs, batch)
    seconds = time.perf_counter() - t0
    index.close()
    return seconds


def put_all(index: Any, docs: list[Doc], batch: int) -> None:
    if not batch:
        for doc in docs:
            index.put(TENANT, TOOL, doc.document, doc.chunks)
        return
    for at in range(0, len(docs), batch):
        index.put_many([(TENANT, TOOL, doc.document, doc.chunks) for doc in docs[at:at + batch]])


def sqlite_raw(folder: Path, docs: list[Doc]) -> float:
    db = sqlite3.connect(folder / "raw.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE VIRTUAL TABLE raw USING fts5(title, text, tokenize = 'unicode61 remove_diacritics 2')")
    rows = [(doc.document.title, c.text) for doc in docs for c in doc.chunks]
    gc.collect()
    t0 = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO raw (title, text) VALUES (?, ?)", rows)
    db.execute("COMMIT")
    seconds = time.perf_counter() - t0
    db.close()
    return seconds


def sqlite_build(path: Path, parts: Sequence[tuple[str, str, Iterator[Doc]]], progress: Progress) -> None:
    """The quickest path: every row in one transaction, then the FTS index in one statement."""
    from projections.chunks_sqlite import SqliteDocumentIndex, scope_token

    SqliteDocumentIndex(path).close()  # the schema
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("BEGIN")
    for tenant, tool, docs in parts:
        scope = scope_token(tenant, tool)
        db.executemany(
            'INSERT INTO chunks (tenant, tool, document_id, n, start, "end", page, scope, title, text)'
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((tenant, tool, d.document.document_id, c.n, c.start, c.end, c.page, scope, d.document.title, c.text)
             for d in docs for c in d.chunks),
        )
    progress("  FTS5: rows written, indexing them")
    db.execute("INSERT INTO chunks_fts (rowid, scope, title, text) SELECT id, scope, title, text FROM chunks")
    db.execute("COMMIT")
    db.close()


def sqlite_search(folder: Path, chunks: int, queries: list[tuple[str, str]], progress: Progress) -> dict[str, Any]:
    from projections.chunks_sqlite import SqliteDocumentIndex

    path = folder / "search.sqlite"
    language = Language(CORPUS_SEED)
    t0 = time.perf_counter()
    sqlite_build(path, [(TENANT, TOOL, corpus(language, chunks, fixed_chunks, "big")),
                        (OTHER_TENANT, OTHER_TOOL, corpus(language, OTHER_CHUNKS, fixed_chunks, "other"))], progress)
    built = time.perf_counter() - t0
    progress(f"  FTS5: {chunks:,} + {OTHER_CHUNKS:,} chunks built in {built:.0f} s")
    index = SqliteDocumentIndex(path)
    floor_db = sqlite3.connect(path, isolation_level=None)

    def ours(terms: list[str]) -> int:
        return len(index.search(TENANT, TOOL, terms, 10))

    def floor(terms: list[str]) -> int:
        words = " OR ".join(f'"{t}"' for t in terms)
        sql = "SELECT rowid, rank FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 10"
        return len(floor_db.execute(sql, (f"{{title text}} : ({words})",)).fetchall())

    count = index.count(TENANT, TOOL)
    times = time_queries(queries, ours, floor)
    index.close()
    floor_db.close()
    return {**times, "chunks": count, "built": built, "bytes": path.stat().st_size}


# -- OpenSearch --------------------------------------------------------------------------------

def opensearch_url(progress: Progress) -> str:
    url = os.environ.get("OPENSEARCH_URL")
    if url:
        return url
    progress("OPENSEARCH_URL is unset: starting the project's node (scripts/opensearch.sh start)")
    root = Path(__file__).resolve().parent.parent
    started = subprocess.run([str(root / "scripts" / "opensearch.sh"), "start"], capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"bench.search_index: no OpenSearch: {started.stderr.strip()[-500:]}")
    return started.stdout.strip().splitlines()[-1]


def settle(client: Any) -> None:
    """Lets the node finish its merges before the clock starts."""
    gc.collect()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        merges = client.nodes.stats(metric="indices", index_metric="merge")["nodes"]
        if all(node["indices"]["merges"]["current"] == 0 for node in merges.values()):
            break
        time.sleep(0.5)
    time.sleep(1)


def bulk_bodies(tenant: str, tool: str, docs: Iterator[Doc] | list[Doc]) -> Iterator[bytes]:
    from projections.chunks_opensearch import chunk_doc_id, chunk_source

    lines: list[bytes] = []
    size = 0
    for doc in docs:
        for c in doc.chunks:
            line = (orjson.dumps({"index": {"_id": chunk_doc_id(tenant, tool, doc.document.document_id, c.n)}}) + b"\n"
                    + orjson.dumps(chunk_source(tenant, tool, doc.document, c)) + b"\n")
            lines.append(line)
            size += len(line)
            if size >= BULK_BYTES:
                yield b"".join(lines)
                lines, size = [], 0
    if lines:
        yield b"".join(lines)


def send(client: Any, index: str, body: bytes) -> None:
    answer = client.bulk(body=body, index=index, filter_path="errors")
    if answer.get("errors"):
        raise SystemExit("bench.search_index: a raw _bulk had failed items")


def opensearch_put(client: Any, name: str, docs: list[Doc], batch: int = 0) -> float:
    from projections.chunks_opensearch import OpenSearchDocumentIndex

    index = OpenSearchDocumentIndex(client, index=name, replicas=0)
    index.prepare()
    settle(client)
    t0 = time.perf_counter()
    put_all(index, docs, batch)
    return time.perf_counter() - t0


def opensearch_raw(client: Any, name: str, docs: list[Doc]) -> float:
    from projections.chunks_opensearch import MAPPINGS, index_settings

    bodies = list(bulk_bodies(TENANT, TOOL, docs))
    client.indices.create(index=name, body={"settings": index_settings(0), "mappings": MAPPINGS})
    settle(client)
    t0 = time.perf_counter()
    for body in bodies:
        send(client, name, body)
    client.indices.refresh(index=name)
    return time.perf_counter() - t0


def opensearch_search(client: Any, name: str, chunks: int, queries: list[tuple[str, str]],
                      progress: Progress) -> dict[str, Any]:
    from projections.chunks_opensearch import OpenSearchDocumentIndex

    language = Language(CORPUS_SEED)

    index = OpenSearchDocumentIndex(client, index=name, replicas=0)
    index.prepare()
    client.indices.put_settings(index=name, body={"index": {"refresh_interval": "-1"}})
    t0 = time.perf_counter()
    for tenant, tool, docs in ((TENANT, TOOL, corpus(language, chunks, fixed_chunks, "big")),
                               (OTHER_TENANT, OTHER_TOOL, corpus(language, OTHER_CHUNKS, fixed_chunks, "other"))):
        for body in bulk_bodies(tenant, tool, docs):
            send(client, name, body)
    client.indices.put_settings(index=name, body={"index": {"refresh_interval": None}})
    client.indices.refresh(index=name)
    built = time.perf_counter() - t0
    progress(f"  OpenSearch: {chunks:,} + {OTHER_CHUNKS:,} chunks built in {built:.0f} s; waiting for merges")
    settle(client)

    def ours(terms: list[str]) -> int:
        return len(index.search(TENANT, TOOL, terms, 10))

    def floor(terms: list[str]) -> int:
        body = {"size": 10, "track_total_hits": False, "_source": False, "query": {"match": {"text": " ".join(terms)}}}
        return len(client.search(index=name, body=body)["hits"]["hits"])

    count = index.count(TENANT, TOOL)
    times = time_queries(queries, ours, floor)
    stats = client.indices.stats(index=name, metric="store")
    return {**times, "chunks": count, "built": built, "bytes": stats["_all"]["primaries"]["store"]["size_in_bytes"]}


# -- measuring ---------------------------------------------------------------------------------

def time_queries(queries: list[tuple[str, str]], ours: Callable[[list[str]], int],
                 floor: Callable[[list[str]], int]) -> dict[str, Any]:
    """Each query through ours and the floor, in alternating order, after a warm-up of 20."""
    for query, _ in queries[:20]:
        ours(query_terms(query))
        floor(query_terms(query))
    times: dict[str, list[float]] = {"ours": [], "floor": []}
    kinds: dict[str, list[float]] = {}
    empty = 0
    for i, (query, kind) in enumerate(queries):
        terms = query_terms(query)
        for arm in (("ours", "floor") if i % 2 == 0 else ("floor", "ours")):
            t0 = time.perf_counter()
            found = (ours if arm == "ours" else floor)(terms)
            elapsed = time.perf_counter() - t0
            times[arm].append(elapsed)
            if arm == "ours":
                kinds.setdefault(kind, []).append(elapsed)
                empty += found == 0
    return {**times, "kinds": kinds, "empty": empty}


def indexing_rounds(name: str, rounds: int, put: Callable[[int], float], raw: Callable[[int], float],
                    progress: Progress, batched: Callable[[int], float] | None = None) -> dict[str, list[float]]:
    arms: dict[str, Callable[[int], float]] = {"put": put, "raw": raw, **({"batch": batched} if batched else {})}
    result: dict[str, list[float]] = {arm: [] for arm in arms}
    for r in range(rounds):
        for arm in rotated(list(arms), r):
            result[arm].append(arms[arm](r))
            progress(f"  {name} round {r + 1}: {arm} in {result[arm][-1]:.1f} s")
    return result


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    args = parse_args(argv)
    progress = Progress("search_index", quiet=quiet)
    language = Language(seed=7)
    split, chunker_name = chunker()
    docs = make_documents(language, args.documents, split)
    megabytes = sum(d.size for d in docs) / 1e6
    chunk_count = sum(len(d.chunks) for d in docs)
    queries = [language.query() for _ in range(args.queries)]
    progress(f"{args.documents:,} documents, {megabytes:.1f} MB of text, {chunk_count:,} chunks ({chunker_name})")
    rows: list[Row] = []
    info: dict[str, Any] = {"args": vars(args), "chunker": chunker_name, "megabytes": megabytes, "chunks": chunk_count}

    engines = ("sqlite", "opensearch") if args.engine is None else (args.engine,)
    for engine in engines:
        with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
            folder = Path(tmp)
            if engine == "sqlite":
                label = "FTS5"
                progress(f"FTS5: indexing, {args.rounds} rounds")

                def fresh(r: int, what: str) -> Path:
                    path = folder / f"{what}{r}"
                    path.mkdir()
                    return path

                indexed = indexing_rounds(label, args.rounds, lambda r: sqlite_put(fresh(r, "put"), docs),
                                          lambda r: sqlite_raw(fresh(r, "raw"), docs), progress,
                                          lambda r: sqlite_put(fresh(r, "batch"), docs, BATCH))
                progress(f"FTS5: search over {args.chunks:,} chunks")
                searched = sqlite_search(folder, args.chunks, queries, progress)
            else:
                from opensearchpy import OpenSearch

                label = "OpenSearch"
                client = OpenSearch(hosts=[opensearch_url(progress)], timeout=300)
                prefix = f"bench-chunks-{os.getpid()}"
                try:
                    progress(f"OpenSearch: indexing, {args.rounds} rounds")
                    indexed = indexing_rounds(label, args.rounds, lambda r: opensearch_put(client, f"{prefix}-put{r}", docs),
                                              lambda r: opensearch_raw(client, f"{prefix}-raw{r}", docs), progress,
                                              lambda r: opensearch_put(client, f"{prefix}-batch{r}", docs, BATCH))
                    client.indices.delete(index=f"{prefix}-*", ignore_unavailable=True, expand_wildcards="all")
                    progress(f"OpenSearch: search over {args.chunks:,} chunks")
                    searched = opensearch_search(client, f"{prefix}-search", args.chunks, queries, progress)
                finally:
                    client.indices.delete(index=f"{prefix}-*", ignore_unavailable=True, expand_wildcards="all")
                    client.close()
        rows += engine_rows(label, indexed, searched, megabytes, args.documents)
        info[engine] = {"put_seconds": indexed["put"], "raw_seconds": indexed["raw"], "built_seconds": searched["built"],
                        "index_bytes": searched["bytes"], "queries_without_hits": searched["empty"]}
    return rows, info


def engine_rows(label: str, indexed: dict[str, list[float]], searched: dict[str, Any], megabytes: float,
                documents: int) -> list[Row]:
    ratios = [raw / put for put, raw in zip(indexed["put"], indexed["raw"])]
    q1, q3 = quartiles(ratios)
    put_s, raw_s = median(indexed["put"]), median(indexed["raw"])
    rows = [Row(f"{label}: put() of {documents:,} documents ({megabytes:.1f} MB), one by one (uploads)",
                f"{megabytes / put_s:.2f} MB/s ({put_s * 1000 / documents:.1f} ms/doc)", f"raw {megabytes / raw_s:.2f} MB/s",
                median(ratios), spread=f"{q1:.2f}–{q3:.2f}")]
    if indexed.get("batch"):
        batch_ratios = [raw / put for put, raw in zip(indexed["batch"], indexed["raw"])]
        b1, b3 = quartiles(batch_ratios)
        batch_s = median(indexed["batch"])
        rows.append(Row(f"{label}: put_many() of the same, {BATCH} at a time (a rebuild)",
                        f"{megabytes / batch_s:.2f} MB/s", f"raw {megabytes / raw_s:.2f} MB/s", median(batch_ratios),
                        spread=f"{b1:.2f}–{b3:.2f}"))
    ours, floor = searched["ours"], searched["floor"]
    rows.append(Row(f"{label}: search over {searched['chunks']:,} chunks, p50 / p95",
                    f"{millis(median(ours))} / {millis(percentile(ours, 95))}",
                    f"bare {millis(median(floor))} / {millis(percentile(floor, 95))}",
                    percentile(floor, 95) / percentile(ours, 95)))
    for kind in ("common", "middling", "rare"):
        values = searched["kinds"].get(kind, [])
        if values:
            rows.append(Row(f"  {label}: {len(values)} queries with a {kind} word{' only' if kind == 'rare' else ''}",
                            f"{millis(median(values))} / {millis(percentile(values, 95))}", ""))
    rows.append(Row(f"  {label}: index of {searched['chunks']:,} chunks built by the quickest path",
                    f"{searched['built']:.0f} s, {searched['bytes'] / 1e6:,.0f} MB on disk", ""))
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.search_index", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller data (200 documents, 20,000 chunks, 100 queries, 1 round)")
    parser.add_argument("--engine", choices=("sqlite", "opensearch"), help="one engine only (default both)")
    parser.add_argument("--documents", type=int, help="documents put one by one (default 1,000)")
    parser.add_argument("--chunks", type=int, help="chunks of the searched tool (default 100,000)")
    parser.add_argument("--queries", type=int, help="timed queries (default 250)")
    parser.add_argument("--rounds", type=int, help="indexing rounds, each a put and a raw write (default 2)")
    args = parser.parse_args(argv)
    args.documents = args.documents or (200 if args.quick else 1_000)
    args.chunks = args.chunks or (20_000 if args.quick else 100_000)
    args.queries = args.queries or (100 if args.quick else 250)
    args.rounds = args.rounds or (1 if args.quick else 2)
    return args


main = standalone(run, TITLE, NOTES)


if __name__ == "__main__":
    sys.exit(main())
