"""The blob store of File Search tools (docs/kinds/file-search-tools.md): a document's original bytes, and the text
extracted from them, by their SHA-256, per tenant.

**A folder** (`FolderBlobStore`, the default: `blobs/` in the data dir) holds each blob in
`<root>/<tenant key>/<sha[:2]>/<sha>`. The tenant key is the first 32 hex digits of the SHA-256 of
the tenant's name, so that any name (`..`, a slash, a NUL) makes one plain folder name and never a
path; the two-digit shard keeps folders small. A put writes a temporary file in the tenant's folder
while hashing the bytes 1 MiB at a time, fsyncs it and renames it into place (`os.replace`, atomic
on one filesystem): a reader sees the whole blob or none, and two puts of the same bytes at once
both leave that one file. Files are 0600 and folders 0700, as everything in the data dir.

**A PostgreSQL table** (`PostgresBlobStore`, with the PostgreSQL event store): `toolsmith_blobs`
in the event store's schema, reached through the event store's own pooled connections and made on
first use, so that every replica of one store reads the blobs any one wrote. A put spools the bytes
to a temporary file while hashing them (no connection is held while a client is still uploading),
then streams them to the server with a binary `COPY` in 1 MiB pieces (an `INSERT` would hold the
whole blob in memory twice: once in Python, once in libpq's send buffer); bytes already there are
not sent again, and the primary key makes a racing second copy of them a no-op. Reads fetch
`substring`s of 1 MiB from a column stored uncompressed (`STORAGE EXTERNAL`), which PostgreSQL
reads without the rest of the value: a large blob is never whole in memory, and no connection is
held while the reader takes its time with a piece.

Only hashes, sizes and tenants are logged (`toolsmith.blobs`), never contents.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import re
import shutil
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any, BinaryIO

from eventsourcing.persistence import IntegrityError

from domain.documents import BlobStore
from infrastructure.data_dir import DIR_MODE
from infrastructure.postgres_store import created_despite_others
from infrastructure.settings import Settings

log = logging.getLogger("toolsmith.blobs")

BLOBS_DIR = "blobs"  # the folder store's root, in the data dir
TABLE = "toolsmith_blobs"
PIECE = 1024 * 1024
_SHA256 = re.compile(r"[0-9a-f]{64}")


def open_blob_store(settings: Settings, store: Any) -> BlobStore:
    """The service's blob store beside `store`'s events: its PostgreSQL schema, else (SQLite, or
    eventsourcing's in-memory store) the data dir's `blobs` folder."""
    datastore = getattr(store.recorder, "datastore", None)
    if datastore is not None and type(datastore).__module__.startswith("eventsourcing.postgres"):
        return PostgresBlobStore(datastore, spool_dir=settings.data_dir)
    return FolderBlobStore(settings.data_dir / BLOBS_DIR)


def _is_sha256(value: str) -> bool:
    """Whether `value` could name a blob (64 lower-case hex digits); anything else names none."""
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def _pieces(source: BinaryIO) -> Any:
    while piece := source.read(PIECE):
        yield piece


# -- a folder ------------------------------------------------------------------------------------


def tenant_key(tenant: str) -> str:
    """The folder name of a tenant's blobs: a hash, so that no tenant name is ever a path."""
    return hashlib.sha256(tenant.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _make_dir(path: Path) -> None:
    try:
        path.mkdir(mode=DIR_MODE)
    except FileExistsError:
        return
    os.chmod(path, DIR_MODE)  # mkdir's mode is masked by the umask; this is exact


class FolderBlobStore(BlobStore):
    """Blobs as files under `root` (made on the first put, 0700)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, tenant: str, sha256: str) -> Path:
        return self.root / tenant_key(tenant) / sha256[:2] / sha256

    def put(self, tenant: str, source: BinaryIO) -> tuple[str, int]:
        if not self.root.is_dir():
            self.root.parent.mkdir(parents=True, exist_ok=True)
            _make_dir(self.root)
        folder = self.root / tenant_key(tenant)
        _make_dir(folder)
        descriptor, temporary = tempfile.mkstemp(prefix=".put-", dir=folder)  # 0600
        try:
            digest, size = hashlib.sha256(), 0
            with os.fdopen(descriptor, "wb") as file:
                for piece in _pieces(source):
                    digest.update(piece)
                    size += len(piece)
                    file.write(piece)
                file.flush()
                os.fsync(file.fileno())
            sha256 = digest.hexdigest()
            shard = folder / sha256[:2]
            _make_dir(shard)
            target = shard / sha256
            if target.exists():
                os.unlink(temporary)
                log.debug("blob already stored", extra={"tenant": tenant, "sha256": sha256, "size": size})
                return sha256, size
            os.replace(temporary, target)
            _fsync_dir(shard)  # the rename itself survives a crash
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        log.info("blob stored", extra={"tenant": tenant, "sha256": sha256, "size": size})
        return sha256, size

    def put_bytes(self, tenant: str, data: bytes) -> str:
        return self.put(tenant, io.BytesIO(data))[0]

    def get(self, tenant: str, sha256: str) -> bytes:
        if not _is_sha256(sha256):
            raise KeyError(sha256)
        try:
            return self._path(tenant, sha256).read_bytes()
        except FileNotFoundError:
            raise KeyError(sha256) from None

    def copy_to(self, tenant: str, sha256: str, target: BinaryIO) -> None:
        if not _is_sha256(sha256):
            raise KeyError(sha256)
        try:
            file = open(self._path(tenant, sha256), "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            raise KeyError(sha256) from None
        with file:  # an open file outlives a delete meanwhile: the reader gets every byte
            shutil.copyfileobj(file, target, PIECE)

    def exists(self, tenant: str, sha256: str) -> bool:
        return _is_sha256(sha256) and self._path(tenant, sha256).is_file()

    def delete(self, tenant: str, sha256: str) -> None:
        if not _is_sha256(sha256):
            return
        # The shard folder stays: a put may be about to rename a file into it.
        try:
            self._path(tenant, sha256).unlink()
        except FileNotFoundError:
            return
        log.info("blob deleted", extra={"tenant": tenant, "sha256": sha256})


def _fsync_dir(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


# -- a PostgreSQL table --------------------------------------------------------------------------

# A binary COPY stream of one row (PostgreSQL's "Binary Format" of COPY): the signature, no flags
# and no header extension; then per row its number of fields and each field's length and bytes;
# then -1 fields.
_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)
_COPY_TRAILER = struct.pack("!h", -1)


class PostgresBlobStore(BlobStore):
    """Blobs as rows of `toolsmith_blobs` in the schema of `datastore`: the PostgreSQL event
    store's `recorder.datastore`, whose pool it then shares and does not close, or (`from_env`)
    one of its own on the same database and schema. A put spools to a temporary file in
    `spool_dir` (the system's temporary folder when None)."""

    def __init__(self, datastore: Any, *, spool_dir: Path | None = None, owns_datastore: bool = False) -> None:
        from psycopg.sql import SQL, Identifier  # psycopg needs libpq, which a SQLite deployment may lack

        self._datastore = datastore
        self._owns_datastore = owns_datastore
        self._spool_dir = spool_dir
        self._sql = SQL
        self._table = SQL("{}.{}").format(Identifier(datastore.schema), Identifier(TABLE))
        self._made = False
        self._making = threading.Lock()

    @classmethod
    def from_env(cls, env: dict[str, str], *, spool_dir: Path | None = None) -> PostgresBlobStore:
        """A store with a pool of its own, from the event store's settings (`POSTGRES_*`, the
        schema `POSTGRES_SCHEMA` included: `Settings.event_store_env()`); `close` closes it."""
        from eventsourcing.postgres import PostgresFactory

        return cls(PostgresFactory(env).datastore, spool_dir=spool_dir, owns_datastore=True)

    def close(self) -> None:
        if self._owns_datastore:
            self._datastore.close()

    def _query(self, text: str) -> Any:
        return self._sql(text).format(table=self._table)

    def _ready(self) -> None:
        if self._made:
            return
        with self._making:
            # Two processes opening a new store at once may race on creating the table.
            created_despite_others(self._create)
            self._made = True

    def _create(self) -> None:
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(self._query(
                "CREATE TABLE IF NOT EXISTS {table} (tenant text NOT NULL, sha256 text NOT NULL, "
                "size bigint NOT NULL, data bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), "
                "PRIMARY KEY (tenant, sha256))"))
            # Uncompressed, so that a substring is read without the rest of the value
            # (documents are mostly compressed already: little is lost).
            cursor.execute(self._query("ALTER TABLE {table} ALTER COLUMN data SET STORAGE EXTERNAL"))

    def put(self, tenant: str, source: BinaryIO) -> tuple[str, int]:
        with tempfile.SpooledTemporaryFile(max_size=PIECE, dir=self._spool_dir) as spool:
            digest, size = hashlib.sha256(), 0
            for piece in _pieces(source):
                digest.update(piece)
                size += len(piece)
                spool.write(piece)
            sha256 = digest.hexdigest()
            spool.seek(0)
            self._store(tenant, sha256, size, spool)  # type: ignore[arg-type]
        return sha256, size

    def put_bytes(self, tenant: str, data: bytes) -> str:
        sha256 = hashlib.sha256(data).hexdigest()
        self._store(tenant, sha256, len(data), io.BytesIO(data))
        return sha256

    def _store(self, tenant: str, sha256: str, size: int, content: BinaryIO) -> None:
        if self.exists(tenant, sha256):  # the bytes are there: nothing to send
            log.debug("blob already stored", extra={"tenant": tenant, "sha256": sha256, "size": size})
            return
        try:
            with self._datastore.transaction(commit=True) as cursor:
                encoding = cursor.connection.info.encoding  # text fields of a binary COPY are in the client's encoding
                with cursor.copy(self._query("COPY {table} (tenant, sha256, size, data) FROM STDIN (FORMAT BINARY)")) as copy:
                    tenant_bytes, sha_bytes = tenant.encode(encoding), sha256.encode("ascii")
                    copy.write(_COPY_SIGNATURE + struct.pack("!h", 4)
                               + struct.pack("!i", len(tenant_bytes)) + tenant_bytes
                               + struct.pack("!i", len(sha_bytes)) + sha_bytes
                               + struct.pack("!iq", 8, size)
                               + struct.pack("!i", size))
                    for piece in _pieces(content):
                        copy.write(piece)
                    copy.write(_COPY_TRAILER)
        except IntegrityError:
            # A put of the same bytes committed first (the primary key): they are stored.
            if not self.exists(tenant, sha256):
                raise
            log.debug("blob stored meanwhile", extra={"tenant": tenant, "sha256": sha256, "size": size})
            return
        log.info("blob stored", extra={"tenant": tenant, "sha256": sha256, "size": size})

    def get(self, tenant: str, sha256: str) -> bytes:
        self._ready()
        with self._datastore.transaction(commit=False) as cursor:
            cursor.execute(self._query("SELECT data FROM {table} WHERE tenant = %s AND sha256 = %s"),
                           (tenant, sha256), binary=True)
            row = cursor.fetchone()
        if row is None:
            raise KeyError(sha256)
        return bytes(row["data"])

    def copy_to(self, tenant: str, sha256: str, target: BinaryIO) -> None:
        self._ready()
        # One piece per query, each on a connection taken from the pool and given back before the
        # piece is written: a slow reader holds no connection. The bytes of a hash never change,
        # so pieces read at different moments make the one blob.
        offset = 0
        while True:
            with self._datastore.transaction(commit=False) as cursor:
                cursor.execute(self._query(
                    "SELECT size, substring(data from %s for %s) AS piece FROM {table} WHERE tenant = %s AND sha256 = %s"),
                    (offset + 1, PIECE, tenant, sha256), binary=True)
                row = cursor.fetchone()
            if row is None:
                # Missing, or deleted while being read (the target then holds a part: say so).
                raise KeyError(sha256 if offset == 0 else f"{sha256} was deleted while being read")
            if row["piece"]:
                target.write(row["piece"])
                offset += len(row["piece"])
            if offset >= row["size"] or not row["piece"]:
                return

    def exists(self, tenant: str, sha256: str) -> bool:
        self._ready()
        with self._datastore.transaction(commit=False) as cursor:
            cursor.execute(self._query("SELECT 1 AS found FROM {table} WHERE tenant = %s AND sha256 = %s"), (tenant, sha256))
            return cursor.fetchone() is not None

    def delete(self, tenant: str, sha256: str) -> None:
        self._ready()
        with self._datastore.transaction(commit=True) as cursor:
            cursor.execute(self._query("DELETE FROM {table} WHERE tenant = %s AND sha256 = %s"), (tenant, sha256))
            deleted = cursor.rowcount
        if deleted:
            log.info("blob deleted", extra={"tenant": tenant, "sha256": sha256})
