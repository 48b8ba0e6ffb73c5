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
    StoredChunk,
    chunk_id,
)

if hasattr(_stdlib_sqlite3.Connection, "enable_load_extension"):
    sqlite3 = _stdlib_sqlite3
else:  # a Python built without loadable extensions (sqlite-vec is one)
    import pysqlite3.dbapi2 as sqlite3  # type: ignore[import-not-found,no-redef]

SCHEMA_VERSION = 3  # 2: the projection's `positions`; 3: chunks' `model` and `chunks_vec`
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
PRAGMA user_version = {SCHEMA_VERSION};
"""

_COLUMNS = 'tenant, tool, document_id, n, start, "end", page, scope, title, text, model'
_INSERT = f"INSERT INTO chunks ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_INSERT_VECTOR = "INSERT INTO chunks_vec (rowid, scope, model, document_id, embedding) VALUES (?, ?, ?, ?, ?)"
MAX_K = 4_096  # sqlite-vec's bound on a query's k
MMAP_BYTES = 1 << 30
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

    # -- reads -----------------------------------------------------------------------------------

    def search(self, tenant: str, tool: str, terms: Sequence[str], limit: int,
               document_ids: Sequence[str] | None = None) -> list[Hit]:
        if not terms or limit <= 0 or (document_ids is not None and not document_ids):
            return []
        within = ""
        parameters: list[object] = [
            MARK_START, MARK_END, ELLIPSIS, SNIPPET_TOKENS, match_expression(tenant, tool, terms), tenant, tool,
        ]
        if document_ids is not None:
            within = f" AND c.document_id IN ({', '.join('?' * len(document_ids))})"
            parameters.extend(document_ids)
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
        return [
            Hit(chunk_id=chunk_id(document_id, n), document_id=document_id, title=title, snippet=snippet,
                score=score, page=page, start=start)
            for document_id, n, start, page, title, score, snippet in rows
        ]

    vectors = True

    def vector_search(self, tenant: str, tool: str, vector: bytes, model: str, limit: int,
                      document_ids: Sequence[str] | None = None) -> list[Hit]:
        if limit <= 0 or (document_ids is not None and not document_ids) or len(vector) != 4 * VECTOR_DIMENSIONS:
            return []
        within = ""
        parameters: list[object] = [vector, min(limit, MAX_K), scope_token(tenant, tool), model]
        if document_ids is not None:
            within = f" AND document_id IN ({', '.join('?' * len(document_ids))})"
            parameters.extend(document_ids)
        parameters.extend((tenant, tool))
        # The k nearest of the tool's partition and the model, inside vec0; the join checks the
        # tenant and tool again (the scope is a hash).
        sql = (
            "WITH knn AS (SELECT rowid, distance FROM chunks_vec WHERE embedding MATCH ? AND k = ?"
            f" AND scope = ? AND model = ?{within})"
            " SELECT c.document_id, c.n, c.start, c.page, c.title, c.text, knn.distance"
            " FROM knn CROSS JOIN chunks AS c ON c.id = knn.rowid WHERE c.tenant = ? AND c.tool = ?"
            " ORDER BY knn.distance, c.id"
        )
        with self._read() as db:
            rows = db.execute(sql, parameters).fetchall()
        return [
            Hit(chunk_id=chunk_id(document_id, n), document_id=document_id, title=title, snippet=lead(text),
                score=1.0 - distance, page=page, start=start)
            for document_id, n, start, page, title, text, distance in rows
        ]

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


def _delete(db: sqlite3.Connection, where: str, parameters: tuple[str, ...]) -> None:
    """Deletes the matching chunks from the FTS index (which needs their text), the vectors and the table."""
    db.execute(_UNINDEX_ROWS.format(where=where), parameters)
    db.execute(f"DELETE FROM chunks_vec WHERE rowid IN (SELECT id FROM chunks WHERE {where})", parameters)
    db.execute(f"DELETE FROM chunks WHERE {where}", parameters)


def lead(text: str, words: int = SNIPPET_TOKENS) -> str:
    """A snippet of a chunk found by its meaning: its first `words` words (nothing to mark)."""
    found = text.split()
    return " ".join(found[:words]) + (f" {ELLIPSIS}" if len(found) > words else "")


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";\n") if s.strip()]
