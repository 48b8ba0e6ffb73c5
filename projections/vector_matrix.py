"""The embedded chunk index's nearest-vector read path (projections/chunks_sqlite.py): a tool's
vectors by one model as one contiguous float32 matrix in the server's memory, scanned exactly
with one matrix product.

sqlite-vec's `vec0` table stays where the vectors are kept (written in the same transaction as
their chunks, rebuilt with them); this is a cache of it. A `vec0` k-nearest scan over a tool of
100,000 chunks in a file shared with the chunks' text costs about 70 ms of CPU (its vector chunks
are scattered among the text's pages), against a few milliseconds for `matrix @ query` with
NumPy (bench.hybrid_search).

- **Always current.** `vector_versions` holds, per tool scope, a number every write that changes
  the scope's vectors raises (`bump`, in the write's own transaction; `clear` raises every
  scope's). A search reads its scope's number and the cached matrix's rows in one read
  transaction (a WAL snapshot): the matrix is used when it was read at that number, else it is
  read again, so a committed write, by this process or another, counts for the next search.
- **Bounded.** At most `max_bytes` of matrices (LRU, `CACHE_BYTES` by default: 512 MiB, about
  500,000 chunks of 256 dimensions); a scope beyond it is answered by `vec0` directly.
- **Exact, as vec0.** Rows and query are L2-normalized, the score is their cosine, ties go to
  the lower rowid; `document_ids` restricts the scan before the top k, never after.
- **The scope's mean.** `mean` is the average of the scope's normalized vectors by a model (what
  semantic retrieval takes out of a query, `domain.retrieval`), of the same snapshot and version
  as the matrix; for a scope beyond the cache it is summed from the rows in batches and kept alone
  (256 floats a scope) until the scope's version changes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

CACHE_BYTES = 512 * 1024 * 1024
MAX_MEANS = 4_096  # means kept of scopes beyond the cache

SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_versions (scope TEXT PRIMARY KEY, version INTEGER NOT NULL);
INSERT OR IGNORE INTO vector_versions (scope, version) SELECT DISTINCT scope, 1 FROM chunks_vec
"""

_BUMP = (
    "INSERT INTO vector_versions (scope, version)"
    " VALUES (?, (SELECT coalesce(max(version), 0) + 1 FROM vector_versions))"
    " ON CONFLICT (scope) DO UPDATE SET version = excluded.version"
)


def bump(db: Any, scope: str) -> None:
    """Marks the scope's vectors changed (inside the write's transaction)."""
    db.execute(_BUMP, (scope,))


def bump_all(db: Any) -> None:
    """Marks every scope's vectors changed (`clear`): numbers only grow, so no cache is reused."""
    db.execute("UPDATE vector_versions SET version = version + (SELECT max(version) FROM vector_versions)")


@dataclass(frozen=True)
class _Matrix:
    version: int
    rowids: np.ndarray  # int64, ascending
    documents: np.ndarray  # int32: each row's document, a position in `names`
    names: dict[str, int]  # document id -> its code
    vectors: np.ndarray  # float32 (rows, dimensions), each row L2-normalized (a zero row stays zero)
    mean: np.ndarray | None  # float32 (dimensions,): the rows' mean; None with no row

    @property
    def nbytes(self) -> int:
        return int(self.vectors.nbytes + self.rowids.nbytes + self.documents.nbytes) + 64 * len(self.names)


class VectorMatrices:
    def __init__(self, dimensions: int, max_bytes: int = CACHE_BYTES) -> None:
        self.dimensions = dimensions
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._held: OrderedDict[tuple[str, str], _Matrix] = OrderedDict()
        self._bytes = 0
        self._means: OrderedDict[tuple[str, str], tuple[int, np.ndarray | None]] = OrderedDict()
        self.loads = 0  # matrices read from the file (tests and the bench watch it)

    def nearest(self, db: Any, scope: str, model: str, vector: bytes, k: int,
                document_ids: Sequence[str] | None) -> list[tuple[int, float]] | None:
        """The `k` (rowid, cosine) nearest to `vector` among the scope's vectors by `model`, best
        first; None when the scope's matrix is beyond the cache (the caller asks vec0). Call it
        inside a read transaction, so that the version and the rows read are of one snapshot."""
        matrix = self._matrix(db, scope, model, self._version(db, scope))
        if matrix is None:
            return None
        query = np.frombuffer(vector, dtype="<f4").astype(np.float32)
        norm = float(np.linalg.norm(query))
        if norm == 0 or not len(matrix.rowids):
            return []
        query = query / norm
        if document_ids is None:
            rows = None
            scores = matrix.vectors @ query
        else:
            codes = [matrix.names[d] for d in set(document_ids) if d in matrix.names]
            if not codes:
                return []
            rows = np.flatnonzero(np.isin(matrix.documents, np.asarray(codes, dtype=np.int32)))
            scores = matrix.vectors[rows] @ query
        k = min(k, len(scores))
        if k <= 0:
            return []
        best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        picked = best if rows is None else rows[best]
        order = np.lexsort((matrix.rowids[picked], -scores[best]))
        return [(int(matrix.rowids[picked[i]]), float(scores[best[i]])) for i in order]

    def mean(self, db: Any, scope: str, model: str) -> np.ndarray | None:
        """The mean of the scope's normalized vectors by `model` (None: it has none). Call it
        inside a read transaction, as `nearest`."""
        version = self._version(db, scope)
        matrix = self._matrix(db, scope, model, version)
        if matrix is not None:
            return matrix.mean
        key = (scope, model)
        with self._lock:
            kept = self._means.get(key)
            if kept is not None and kept[0] == version:
                return kept[1]
        total, count = np.zeros(self.dimensions, dtype=np.float64), 0
        cursor = db.execute("SELECT embedding FROM chunks_vec WHERE scope = ? AND model = ?", (scope, model))
        while rows := cursor.fetchmany(4_096):
            vectors = normalized(np.frombuffer(b"".join(r[0] for r in rows), dtype="<f4").reshape(len(rows), self.dimensions))
            total += vectors.sum(axis=0, dtype=np.float64)
            count += len(rows)
        found = (total / count).astype(np.float32) if count else None
        with self._lock:
            self._means[key] = (version, found)
            while len(self._means) > MAX_MEANS:
                self._means.popitem(last=False)
        return found

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._means.clear()
            self._bytes = 0

    @staticmethod
    def _version(db: Any, scope: str) -> int:
        row = db.execute("SELECT version FROM vector_versions WHERE scope = ?", (scope,)).fetchone()
        return 0 if row is None else int(row[0])

    def _matrix(self, db: Any, scope: str, model: str, version: int) -> _Matrix | None:
        key = (scope, model)
        with self._lock:
            held = self._held.get(key)
            if held is not None and held.version == version:
                self._held.move_to_end(key)
                return held
        count = db.execute("SELECT count(*) FROM chunks_vec WHERE scope = ? AND model = ?", (scope, model)).fetchone()[0]
        if count * (4 * self.dimensions + 12) > self.max_bytes:
            return None
        rows = db.execute("SELECT rowid, document_id, embedding FROM chunks_vec WHERE scope = ? AND model = ?"
                          " ORDER BY rowid", (scope, model)).fetchall()
        names: dict[str, int] = {}
        rowids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        documents = np.fromiter((names.setdefault(r[1], len(names)) for r in rows), dtype=np.int32, count=len(rows))
        vectors = np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), self.dimensions)
        vectors = normalized(vectors)
        mean = vectors.mean(axis=0, dtype=np.float64).astype(np.float32) if len(rows) else None
        matrix = _Matrix(version, rowids, documents, names, vectors, mean)
        with self._lock:
            self.loads += 1
            previous = self._held.pop(key, None)
            if previous is not None:
                self._bytes -= previous.nbytes
            if previous is None or previous.version <= version:
                self._held[key] = matrix
                self._bytes += matrix.nbytes
            elif previous is not None:  # a newer one was read meanwhile: keep it
                self._held[key] = previous
                self._bytes += previous.nbytes
            while self._bytes > self.max_bytes and self._held:
                _, evicted = self._held.popitem(last=False)
                self._bytes -= evicted.nbytes
        return matrix


def normalized(vectors: np.ndarray) -> np.ndarray:
    """A float32 copy of the rows, each L2-normalized (a zero row stays zero)."""
    out = vectors.astype(np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out
