"""The embedded chunk index: File Search chunks in one SQLite file (the data dir's
`documents.sqlite`), searched with FTS5 and ranked by BM25.

- **Two tables.** `chunks` holds each chunk's row (tenant, tool, document id, number, offsets,
  page, title, text); `chunks_fts` is an FTS5 index over it with external content (the text is
  stored once, in `chunks`). The FTS rows are written and deleted by this module in the same
  transaction as their `chunks` rows (no triggers: `clear` can then empty both at once).
- **Scoped in the index, not after it.** Every FTS row has a `scope` column holding one token
  made of its tenant and tool, and every query is `scope : "<token>" AND {title text} : (…)`.
  FTS5 intersects the scope's doclist with the words', so a query ranks the chunks of its own tool
  only, however many chunks other tools hold (ranking is what costs: about 1.4 µs a matching
  chunk, against 0.05 µs a chunk for the scope, which BM25 counts once a query for its IDF: 5 ms
  for a tool of 100,000 chunks). The join on `chunks` checks tenant and tool again (the token is
  a hash) and applies `document_ids`.
- **Words.** `unicode61` with diacritics removed: "cafe" finds "café" (OpenSearch's standard
  analyzer keeps them apart), and a run of CJK characters is one word, so "日本" finds "日本"
  between spaces or punctuation but not inside "日本語" (OpenSearch indexes each ideograph).
- **Queries are words only.** Each term (from `query_terms`) is quoted as an FTS5 string and the
  strings are OR-ed, so no word (`AND`, `NEAR`, a column name) is ever read as syntax.
- **Ranking.** BM25 with the title weighing twice the text (`rank` is configured when the table is
  created); a hit's score is the negated BM25 value (higher is better). Its IDF is counted over
  the whole file, and FTS5 makes it ~0 for a word in more than half the chunks, so such a word
  barely ranks; scores mean nothing across engines. The snippet is FTS5's
  `snippet()` of the text: about 32 words around the best match, the matched words between
  `MARK_START` and `MARK_END`, cut ends shown as "…". A query's cost grows with the chunks its
  words match: over one tool of 100,000 chunks (bench.search_index), a rare word answers in
  about 5 ms and a word found in three chunks of four in about 110 ms (FTS5 ranks every match).
  A query of several words found in `PRUNE_AT` chunks or more is first ranked over the chunks
  holding one of its rarer words only (`_pruned`, MaxScore): the answer is kept when no other
  chunk can reach its last score (each word's BM25 share is below (k1 + 1) × its IDF), else
  every match is ranked; either way the answer is the same (bench.hybrid_search: questions of
  common words over 100,000 chunks, p95 150 against 67 ms of CPU on a loaded machine).
- **Hybrid's list of words need not be exact** (`search(..., exact=False)`: fusion reads it by
  rank). A query whose words are found `PRUNE_AT` times or more in all is ranked by its words in
  at most `COMMON_SHARE` (1 %) of the file's chunks alone, when it has any, and the commoner
  words neither choose nor score the chunks: index elimination by IDF, as inexact top-k retrieval
  does it (Manning, Raghavan and Schütze, Introduction to Information Retrieval, 7.1.2), or
  Elasticsearch's common terms query's `cutoff_frequency`, whose common words still score. A
  question of common words and a few rare ones then costs the rare words' chunks only.
- **Vectors beside the words.** `chunks_vec` is a `vec0` table of `sqlite-vec` in the same file:
  each chunk embedded (its `vector`, by its document's `model`) has a row of the same rowid, its
  tool's scope as the partition key (a query scans the vectors of its own tool only) and its
  model and document id as metadata, so `vector_search` asks for the k nearest of one tool, one
  model and, when given, some documents, inside the index (exact cosine distance, brute force:
  about 20 ms for a tool of 100,000 chunks, bench.hybrid_search). Python's own `sqlite3` is used
  when it can load extensions, else `pysqlite3` (the same API, an SQLite that can); each
  connection loads the extension.
- **Its own tracking record.** `positions` holds, per application, the last notification the
  chunk projection applied and the event store it is of; `apply` writes a batch's changes and its
  position in one transaction, so the file never holds a position without its changes.
- **Threads.** Writes go through one connection under a lock (`BEGIN IMMEDIATE`, so another
  process's writer waits on the busy timeout); reads borrow a connection from a pool, so readers
  never wait for each other or for a writer (WAL). A committed write is seen by the next query
  of any thread.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3 as _stdlib_sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import sqlite_vec

from domain.documents import (
    MARK_END,
    MARK_START,
    VECTOR_DIMENSIONS,
    Chunk,
    DocumentIndex,
    DropTool,
    Hit,
    IndexChange,
    IndexedDocument,
    IndexPosition,
    IndexUnavailable,
    PutDocument,
    PutVectors,
    StoredChunk,
    chunk_id,
)
from projections import vector_matrix

if hasattr(_stdlib_sqlite3.Connection, "enable_load_extension"):
    sqlite3 = _stdlib_sqlite3
else:  # a Python built without loadable extensions (sqlite-vec is one)
    import pysqlite3.dbapi2 as sqlite3  # type: ignore[import-not-found,no-redef]

SCHEMA_VERSION = 4  # 2: the projection's `positions`; 3: chunks' `model` and `chunks_vec`; 4: `vector_versions`
SNIPPET_TOKENS = 32
ELLIPSIS = "…"
TITLE_WEIGHT = 2.0
BUSY_TIMEOUT_SECONDS = 10.0

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    tool TEXT NOT NULL,
    document_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    start INTEGER NOT NULL,
    "end" INTEGER NOT NULL,
    page INTEGER,
    scope TEXT NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    model TEXT,
    UNIQUE (tenant, tool, document_id, n)
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    scope, title, text,
    content = 'chunks', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TABLE IF NOT EXISTS positions (
    application_name TEXT PRIMARY KEY,
    notification_id INTEGER NOT NULL,
    store TEXT
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vec USING vec0(
    scope TEXT PARTITION KEY, model TEXT, document_id TEXT,
    embedding FLOAT[{VECTOR_DIMENSIONS}] distance_metric=cosine
);
INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('rank', 'bm25(0.0, {TITLE_WEIGHT}, 1.0)');
{vector_matrix.SCHEMA.strip()};
PRAGMA user_version = {SCHEMA_VERSION};
"""

_COLUMNS = 'tenant, tool, document_id, n, start, "end", page, scope, title, text, model'
_INSERT = f"INSERT INTO chunks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_VECTOR = "INSERT INTO chunks_vec (rowid, scope, model, document_id, embedding) VALUES (?, ?, ?, ?, ?)"
MAX_K = 4_096  # sqlite-vec's bound on a query's k
MAX_LISTED_IDS = 1_000  # document ids given as parameters of their own; more go as one JSON array
MMAP_BYTES = 1 << 30
# Pruned ranking (`_pruned`): tried when the query's words are found in `PRUNE_AT` chunks or more
# in all; the essential words are the rarest whose matches are at most `ESSENTIAL_SHARE` of all
# (one at least), and up to `PRUNE_TRIES` sets of them, each with the next rarer word added.
PRUNE_AT = 2_000
ESSENTIAL_SHARE = 0.25
PRUNE_TRIES = 2
# A search that need not be exact (hybrid's list of words, `search`'s `exact`) leaves out the
# words in more than this share of the file's chunks, when the query has rarer ones.
COMMON_SHARE = 0.01
BM25_K1_PLUS_1 = 2.2  # FTS5's bm25: k1 = 1.2
FTS5_MIN_IDF = 1e-6  # FTS5's IDF of a word in half the rows or more
MAX_COUNTED_TERMS = 100_000
_PRUNED = (
    f"SELECT rowid, bm25(chunks_fts, 0.0, {TITLE_WEIGHT}, 1.0) AS score FROM chunks_fts WHERE chunks_fts MATCH ?"
    " AND +rowid IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?) ORDER BY score, rowid LIMIT ?"
)
_INDEX_ROWS = "INSERT INTO chunks_fts (rowid, scope, title, text) SELECT id, scope, title, text FROM chunks WHERE {where}"
_UNINDEX_ROWS = (
    "INSERT INTO chunks_fts (chunks_fts, rowid, scope, title, text) SELECT 'delete', id, scope, title, text FROM chunks WHERE {where}"
)
_DOCUMENT = "tenant = ? AND tool = ? AND document_id = ?"
_TOOL = "tenant = ? AND tool = ?"


def scope_token(tenant: str, tool: str) -> str:
    """One FTS5 token naming a tenant's tool (letters and digits only, so unicode61 keeps it whole)."""
    return "s" + hashlib.blake2b(f"{tenant}\x00{tool}".encode(), digest_size=12).hexdigest()


def match_expression(tenant: str, tool: str, terms: Sequence[str]) -> str:
    """The FTS5 query: the tool's scope token, and any of the terms in the title or the text."""
    words = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return f'scope : "{scope_token(tenant, tool)}" AND {{title text}} : ({words})'


class SqliteDocumentIndex(DocumentIndex):
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._every: list[sqlite3.Connection] = []
        self._closed = False
        self._matrices = vector_matrix.VectorMatrices(VECTOR_DIMENSIONS)
        self._counts_lock = threading.Lock()
        self._counts: dict[str, int] = {}
        self._counts_generation: int | None = None
        self._counted_rows: int | None = None
        self._writer = self._connect()
        with self._write() as db:
            if db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                for statement in _statements(_SCHEMA):
                    db.execute(statement)
                if "model" not in {row[1] for row in db.execute("PRAGMA table_info(chunks)")}:  # a version 2 file
                    db.execute("ALTER TABLE chunks ADD COLUMN model TEXT")

    # -- writes ----------------------------------------------------------------------------------

    def put(self, tenant: str, tool: str, document: IndexedDocument, chunks: Sequence[Chunk]) -> None:
        with self._write() as db:
            _put(db, tenant, tool, document, chunks)

    def put_many(self, documents: Sequence[tuple[str, str, IndexedDocument, Sequence[Chunk]]]) -> None:
        """Every `put` in one transaction."""
        with self._write() as db:
            for tenant, tool, document, chunks in documents:
                _put(db, tenant, tool, document, chunks)

    def apply(self, changes: Sequence[IndexChange], position: IndexPosition | None = None) -> None:
        """The changes and the position in one transaction."""
        with self._write() as db:
            for change in changes:
                if isinstance(change, PutDocument):
                    _put(db, change.tenant, change.tool, change.document, change.chunks)
                elif isinstance(change, DropTool):
                    _delete(db, _TOOL, (change.tenant, change.tool))
                elif isinstance(change, PutVectors):
                    _put_vectors(db, change.tenant, change.tool, change.document_id, change.model, change.vectors)
                else:
                    _delete(db, _DOCUMENT, (change.tenant, change.tool, change.document_id))
            if position is not None:
                db.execute("INSERT INTO positions (application_name, notification_id, store) VALUES (?, ?, ?)"
                           " ON CONFLICT (application_name) DO UPDATE SET notification_id = excluded.notification_id,"
                           " store = excluded.store",
                           (position.application_name, position.notification_id, position.store))

    def position(self, application_name: str) -> IndexPosition | None:
        with self._read() as db:
            row = db.execute("SELECT notification_id, store FROM positions WHERE application_name = ?",
                             (application_name,)).fetchone()
        return None if row is None else IndexPosition(application_name, row[0], row[1])

    def put_vectors(self, tenant: str, tool: str, document_id: str, model: str, vectors: Sequence[bytes]) -> bool:
        with self._write() as db:
            return _put_vectors(db, tenant, tool, document_id, model, vectors)

    def remove(self, tenant: str, tool: str, document_id: str) -> None:
        with self._write() as db:
            _delete(db, _DOCUMENT, (tenant, tool, document_id))

    def drop(self, tenant: str, tool: str) -> None:
        with self._write() as db:
            _delete(db, _TOOL, (tenant, tool))

    def clear(self) -> None:
        with self._write() as db:
            db.execute("DELETE FROM chunks")
            db.execute("DELETE FROM chunks_vec")
            db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')")
            db.execute("DELETE FROM positions")
            vector_matrix.bump_all(db)

    # -- reads -----------------------------------------------------------------------------------

    def search(self, tenant: str, tool: str, terms: Sequence[str], limit: int,
               document_ids: Sequence[str] | None = None, exact: bool = True) -> list[Hit]:
        if not terms or limit <= 0 or (document_ids is not None and not document_ids):
            return []
        if not exact or (document_ids is None and len(terms) > 1):
            # One snapshot for the words' counts and the pruned ranking that reads them.
            with self._read() as db:
                db.execute("BEGIN")
                try:
                    if not exact:
                        terms = self._rarer(db, terms)
                    rows = self._pruned(db, tenant, tool, terms, limit) if document_ids is None and len(terms) > 1 else None
                finally:
                    db.execute("COMMIT")
            if rows is not None:
                return _hits(rows)
        within = ""
        parameters: list[object] = [
            MARK_START, MARK_END, ELLIPSIS, SNIPPET_TOKENS, match_expression(tenant, tool, terms), tenant, tool,
        ]
        if document_ids is not None:
            within, ids = _within("c.document_id", document_ids)
            parameters.extend(ids)
        parameters.append(limit)
        # FTS5 sorts its matches by rank itself (ORDER BY rank), so the join and the snippet
        # run for the rows returned only, not for every match. CROSS JOIN keeps that order: left
        # to choose, SQLite 3.51 reads the tool's chunks first and asks FTS5 about each (seconds
        # for a query of common words over a few thousand chunks, against milliseconds).
        sql = (
            "SELECT c.document_id, c.n, c.start, c.page, c.title, -f.rank, snippet(chunks_fts, 2, ?, ?, ?, ?)"
            " FROM chunks_fts AS f CROSS JOIN chunks AS c ON c.id = f.rowid"
            f" WHERE chunks_fts MATCH ? AND c.tenant = ? AND c.tool = ?{within}"
            " ORDER BY f.rank LIMIT ?"
        )
        with self._read() as db:
            rows = db.execute(sql, parameters).fetchall()
        return _hits(rows)

    def _pruned(self, db: sqlite3.Connection, tenant: str, tool: str, terms: Sequence[str], limit: int) -> list[tuple] | None:
        """`search`'s rows by BM25 over the chunks that hold one of the query's rarer words only
        (MaxScore), when that is the same answer; None when it is not known to be (the caller ranks
        every match). A word adds at most (k1 + 1) × its IDF to a chunk's BM25 (FTS5's formula:
        its frequency term stays below k1 + 1), so a chunk holding none of the `essential` words
        scores at most the sum of the others' bounds; when the `limit`-th best chunk of those
        holding one scores more, no other chunk can be among the `limit` best. The scores are
        FTS5's own bm25(), of the whole query; only the chunks it is computed for are fewer."""
        rows, counts = self._term_counts(db, terms)
        if sum(counts.values()) < PRUNE_AT or not rows:
            return None
        idf = {t: max(math.log((rows - n + 0.5) / (n + 0.5)), FTS5_MIN_IDF) for t, n in counts.items()}
        ordered = sorted(terms, key=lambda t: (counts[t], t))  # the rarest first
        first, share = 1, counts[ordered[0]]
        while first < len(ordered) - 1 and (share < limit or share + counts[ordered[first]] <= sum(counts.values()) * ESSENTIAL_SHARE):
            share += counts[ordered[first]]
            first += 1
        whole = match_expression(tenant, tool, terms)
        # bounds[j]: the most a chunk holding none of the j rarest words can score
        bounds = [sum(BM25_K1_PLUS_1 * idf[t] for t in ordered[j:]) * (1 + 1e-9) + 1e-9 for j in range(len(ordered) + 1)]
        size = first
        for _ in range(PRUNE_TRIES):
            found = db.execute(_PRUNED, (whole, match_expression(tenant, tool, ordered[:size]), limit)).fetchall()
            if len(found) < limit:
                size += 1
            elif -found[limit - 1][1] > bounds[size]:
                break
            else:  # that last score is the least the answer's last can be: the words it takes to pass it
                size = next((j for j in range(size + 1, len(ordered)) if bounds[j] < -found[limit - 1][1]), len(ordered))
            if size >= len(ordered):
                return None
        else:
            return None
        marked = {row[0]: row[1:] for row in db.execute(
            "SELECT c.id, c.document_id, c.n, c.start, c.page, c.title, snippet(chunks_fts, 2, ?, ?, ?, ?)"
            " FROM chunks_fts AS f CROSS JOIN chunks AS c ON c.id = f.rowid"
            f" WHERE chunks_fts MATCH ? AND f.rowid IN ({', '.join('?' * len(found))}) AND c.tenant = ? AND c.tool = ?",
            [MARK_START, MARK_END, ELLIPSIS, SNIPPET_TOKENS, whole, *(r[0] for r in found), tenant, tool])}
        if len(marked) < len(found):  # a chunk of another tool behind the same scope token: rank them all
            return None
        return [(*marked[rowid][:5], -score, marked[rowid][5]) for rowid, score in found]

    def _rarer(self, db: sqlite3.Connection, terms: Sequence[str]) -> Sequence[str]:
        """The terms a search that need not be exact ranks by (`search`, `exact=False`): those in
        at most `COMMON_SHARE` of the file's chunks, when the query also has words in more and
        its words are found `PRUNE_AT` times or more in all; else every term."""
        rows, counts = self._term_counts(db, terms)
        if sum(counts.values()) < PRUNE_AT:
            return terms
        rarer = [t for t in terms if counts[t] <= COMMON_SHARE * rows]
        return rarer or terms

    def _term_counts(self, db: sqlite3.Connection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The file's chunks, and how many hold each term in their title or text: the N and n of
        FTS5's IDF. Kept until the next write to the file (any write raises the largest of
        `vector_versions`), read in the caller's snapshot."""
        generation = db.execute("SELECT coalesce(max(version), 0) FROM vector_versions").fetchone()[0]
        with self._counts_lock:
            if self._counts_generation != generation or len(self._counts) > MAX_COUNTED_TERMS:
                self._counts, self._counts_generation, self._counted_rows = {}, generation, None
            known = dict(self._counts)
            rows = self._counted_rows
        if rows is None:
            rows = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        for term in terms:
            if term not in known:
                known[term] = db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                                         ('{title text} : "' + term.replace('"', '""') + '"',)).fetchone()[0]
        with self._counts_lock:
            if self._counts_generation == generation:
                self._counts.update(known)
                self._counted_rows = rows
        return rows, {t: known[t] for t in terms}

    vectors = True

    def vector_search(self, tenant: str, tool: str, vector: bytes, model: str, limit: int,
                      document_ids: Sequence[str] | None = None) -> list[Hit]:
        if limit <= 0 or (document_ids is not None and not document_ids) or len(vector) != 4 * VECTOR_DIMENSIONS:
            return []
        within = ""
        parameters: list[object] = [vector, min(limit, MAX_K), scope_token(tenant, tool), model]
        if document_ids is not None:
            within, ids = _within("document_id", document_ids)
            parameters.extend(ids)
        parameters.extend((tenant, tool))
        sql = (
            "WITH knn AS (SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?"
            f" AND scope = ? AND model = ?{within})"
            " SELECT c.document_id, c.n, c.start, c.page, c.title, c.text, knn.distance"
            " FROM knn CROSS JOIN chunks AS c ON c.id = knn.rowid WHERE c.tenant = ? AND c.tool = ?"
            " ORDER BY knn.distance, c.id"
        )
        # The k nearest of the tool's vectors by the model: the tool's matrix in memory
        # (projections/vector_matrix.py), read in the same snapshot as the chunks they join;
        # vec0's own scan when the matrix is beyond the cache. Either way the join checks the
        # tenant and tool again (the scope is a hash).
        with self._read() as db:
            db.execute("BEGIN")
            try:
                nearest = self._matrices.nearest(db, parameters[2], model, vector, min(limit, MAX_K), document_ids)
                if nearest is None:
                    rows = db.execute(sql, parameters).fetchall()
                else:
                    rows = _rows_of(db, nearest, tenant, tool)
            finally:
                db.execute("COMMIT")
        return [
            Hit(chunk_id=chunk_id(document_id, n), document_id=document_id, title=title, snippet=lead(text),
                score=1.0 - distance, page=page, start=start)
            for document_id, n, start, page, title, text, distance in rows
        ]

    def vector_mean(self, tenant: str, tool: str, model: str) -> bytes | None:
        with self._read() as db:
            db.execute("BEGIN")
            try:
                mean = self._matrices.mean(db, scope_token(tenant, tool), model)
            finally:
                db.execute("COMMIT")
        return None if mean is None else mean.astype("<f4").tobytes()

    def chunks(self, tenant: str, tool: str, document_id: str, first: int, last: int) -> list[StoredChunk]:
        sql = (
            'SELECT n, start, "end", text, page FROM chunks'
            f" WHERE {_DOCUMENT} AND n BETWEEN ? AND ? ORDER BY n"
        )
        with self._read() as db:
            rows = db.execute(sql, (tenant, tool, document_id, first, last)).fetchall()
        return [
            StoredChunk(chunk_id=chunk_id(document_id, n), document_id=document_id, n=n, start=start, end=end,
                        text=text, page=page)
            for n, start, end, text, page in rows
        ]

    def count(self, tenant: str, tool: str) -> int:
        with self._read() as db:
            return db.execute(f"SELECT count(*) FROM chunks WHERE {_TOOL}", (tenant, tool)).fetchone()[0]

    def total(self) -> int:
        with self._read() as db:
            return db.execute("SELECT count(*) FROM chunks").fetchone()[0]

    def close(self) -> None:
        with self._write_lock, self._pool_lock:
            self._closed = True
            self._matrices.clear()
            for connection in self._every:
                connection.close()
            self._every.clear()
            self._idle.clear()

    # -- connections -----------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # Autocommit mode: transactions are begun and ended here, explicitly.
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
                                     check_same_thread=False)
        connection.enable_load_extension(True)
        sqlite_vec.load(connection)
        connection.enable_load_extension(False)
        connection.execute("PRAGMA journal_mode = WAL")
        # A read model, rebuildable from the events and blobs: a power loss may cost the last
        # commits, never the file's integrity.
        connection.execute("PRAGMA synchronous = NORMAL")
        # Reads through a memory map rather than the page cache's copies: a vector search reads
        # every vector of its tool (100 MB for 100,000 chunks), 37 against 22 ms of CPU so.
        connection.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        self._every.append(connection)
        return connection

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction on the writer connection; writes of this process are serialized."""
        with self._write_lock:
            self._check_open()
            db = self._writer
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                raise IndexUnavailable(f"the chunk index {self.path} is busy: {error}") from None
            try:
                yield db
                db.execute("COMMIT")
            except BaseException as error:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                if isinstance(error, sqlite3.OperationalError) and ("locked" in str(error) or "busy" in str(error)):
                    raise IndexUnavailable(f"the chunk index {self.path} is busy: {error}") from None
                raise

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A connection of the pool, this thread's alone until the read is done."""
        with self._pool_lock:
            self._check_open()
            db = self._idle.pop() if self._idle else self._connect()
        try:
            yield db
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                raise IndexUnavailable(f"the chunk index {self.path} is busy: {error}") from None
            raise
        finally:
            with self._pool_lock:
                if self._closed:
                    db.close()
                else:
                    self._idle.append(db)

    def _check_open(self) -> None:
        if self._closed:
            raise IndexUnavailable(f"the chunk index {self.path} is closed")


def _put(db: sqlite3.Connection, tenant: str, tool: str, document: IndexedDocument, chunks: Sequence[Chunk]) -> None:
    key = (tenant, tool, document.document_id)
    scope = scope_token(tenant, tool)
    _delete(db, _DOCUMENT, key)
    model = document.model
    db.executemany(_INSERT, [(tenant, tool, document.document_id, c.n, c.start, c.end, c.page, scope, document.title, c.text,
                              model if c.vector is not None else None) for c in chunks])
    db.execute(_INDEX_ROWS.format(where=_DOCUMENT), key)
    vectors = {c.n: c.vector for c in chunks if c.vector is not None and len(c.vector) == 4 * VECTOR_DIMENSIONS}
    if model and vectors:
        ids = db.execute(f"SELECT n, id FROM chunks WHERE {_DOCUMENT}", key).fetchall()
        db.executemany(_INSERT_VECTOR, [(rowid, scope, model, document.document_id, vectors[n]) for n, rowid in ids
                                        if n in vectors])
    vector_matrix.bump(db, scope)  # its vectors changed (the old ones deleted, maybe new ones put)


def _put_vectors(db: sqlite3.Connection, tenant: str, tool: str, document_id: str, model: str,
                 vectors: Sequence[bytes]) -> bool:
    key = (tenant, tool, document_id)
    ids = db.execute(f"SELECT n, id FROM chunks WHERE {_DOCUMENT} ORDER BY n", key).fetchall()
    if (not ids or len(ids) != len(vectors) or [n for n, _ in ids] != list(range(len(ids)))
            or any(len(v) != 4 * VECTOR_DIMENSIONS for v in vectors)):
        return False
    scope = scope_token(tenant, tool)
    db.execute(f"DELETE FROM chunks_vec WHERE rowid IN (SELECT id FROM chunks WHERE {_DOCUMENT})", key)
    db.executemany(_INSERT_VECTOR, [(rowid, scope, model, document_id, vectors[n]) for n, rowid in ids])
    db.execute(f"UPDATE chunks SET model = ? WHERE {_DOCUMENT}", (model, *key))
    vector_matrix.bump(db, scope)
    return True


def _delete(db: sqlite3.Connection, where: str, parameters: tuple[str, ...]) -> None:
    """Deletes the matching chunks from the FTS index (which needs their text), the vectors and the table."""
    db.execute(_UNINDEX_ROWS.format(where=where), parameters)
    db.execute(f"DELETE FROM chunks_vec WHERE rowid IN (SELECT id FROM chunks WHERE {where})", parameters)
    db.execute(f"DELETE FROM chunks WHERE {where}", parameters)
    vector_matrix.bump(db, scope_token(parameters[0], parameters[1]))


def _hits(rows: Sequence[tuple]) -> list[Hit]:
    return [
        Hit(chunk_id=chunk_id(document_id, n), document_id=document_id, title=title, snippet=snippet,
            score=score, page=page, start=start)
        for document_id, n, start, page, title, score, snippet in rows
    ]


def _rows_of(db: sqlite3.Connection, nearest: list[tuple[int, float]], tenant: str, tool: str) -> list[tuple]:
    """The chunks of the (rowid, cosine) pairs, in their order, as the vec0 query's rows (distance 1 - cosine)."""
    if not nearest:
        return []
    found = {row[0]: row[1:] for row in db.execute(
        'SELECT id, document_id, n, start, page, title, text FROM chunks'
        # `+`: the rows by their ids; left to choose, SQLite reads every chunk of the tool through
        # the (tenant, tool, …) index to find ten (7 ms for 100,000 chunks, against microseconds)
        f" WHERE id IN ({', '.join('?' * len(nearest))}) AND +tenant = ? AND +tool = ?",
        [rowid for rowid, _ in nearest] + [tenant, tool])}
    return [(*found[rowid], 1.0 - cosine) for rowid, cosine in nearest if rowid in found]


def _within(column: str, document_ids: Sequence[str]) -> tuple[str, list[str]]:
    """`AND <column> IN (…)`: one parameter a document for a few, one JSON array (`json_each`) for
    many (a metadata filter's documents may pass SQLite's bound on a statement's parameters);
    vec0 takes either as a constraint of its k-nearest scan."""
    if len(document_ids) <= MAX_LISTED_IDS:
        return f" AND {column} IN ({', '.join('?' * len(document_ids))})", list(document_ids)
    return f" AND {column} IN (SELECT value FROM json_each(?))", [json.dumps(list(document_ids))]


def lead(text: str, words: int = SNIPPET_TOKENS) -> str:
    """A snippet of a chunk found by its meaning: its first `words` words (nothing to mark)."""
    found = text.split()
    return " ".join(found[:words]) + (f" {ELLIPSIS}" if len(found) > words else "")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";\n") if s.strip()]
