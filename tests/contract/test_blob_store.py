"""The blob store's contract (`domain.documents.BlobStore`), held by both stores: a folder, and a
PostgreSQL table beside the events (docs/kinds/file-search-tools.md).

The PostgreSQL cases need a server: `scripts/postgres.sh start` (see tests/engines.py); in CI a
missing server fails them.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from domain.documents import BlobStore
from infrastructure.blobs import TABLE, FolderBlobStore, PostgresBlobStore, open_blob_store
from infrastructure.settings import Settings

MiB = 1024 * 1024
LARGE = 30 * MiB
# What a 30 MB blob may cost in Python memory while it is stored or read: a few 1 MiB pieces.
STREAMING_PEAK = 8 * MiB
ODD_TENANTS = ["../../escape", "a/b", "tenant with spaces", "ünïcödé", ".", ""]


@dataclass
class Backend:
    """A store under test, how to open another instance on the same storage (another replica),
    and how many blobs the storage holds, counted underneath the store."""

    store: BlobStore
    replica: Callable[[], BlobStore]
    count: Callable[[], int]


def _folder(tmp_path: Path) -> Iterator[Backend]:
    root = tmp_path / "blobs"
    yield Backend(FolderBlobStore(root), lambda: FolderBlobStore(root),
                  lambda: sum(1 for p in root.rglob("*") if p.is_file()) if root.exists() else 0)


def _postgres(store_settings: dict[str, str], tmp_path: Path) -> Iterator[Backend]:
    import psycopg
    from psycopg import sql

    opened: list[PostgresBlobStore] = []

    def replica() -> BlobStore:
        # Each replica has a pool of its own, as each API process has.
        opened.append(PostgresBlobStore.from_env(dict(store_settings), spool_dir=tmp_path))
        return opened[-1]

    def count() -> int:
        connection = psycopg.connect(host=store_settings["POSTGRES_HOST"], port=store_settings["POSTGRES_PORT"],
                                     user=store_settings["POSTGRES_USER"], password=store_settings["POSTGRES_PASSWORD"],
                                     dbname=store_settings["POSTGRES_DBNAME"])
        with connection:
            table = sql.SQL("{}.{}").format(sql.Identifier(store_settings["POSTGRES_SCHEMA"]), sql.Identifier(TABLE))
            made = connection.execute("SELECT to_regclass(%s)", (table.as_string(connection),)).fetchone()
            return connection.execute(sql.SQL("SELECT count(*) FROM {}").format(table)).fetchone()[0] if made[0] else 0

    store = replica()
    yield Backend(store, replica, count)
    for each in opened:
        each.close()


@pytest.fixture(params=["folder", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "folder":
        yield from _folder(tmp_path)
    else:
        yield from _postgres(request.getfixturevalue("postgres_store"), tmp_path)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Recorder(io.RawIOBase):
    """A target that keeps only the hash of what it was given, its size, and its largest write."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.size = 0
        self.writes = 0
        self.largest = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        piece = bytes(data)
        self.digest.update(piece)
        self.size += len(piece)
        self.writes += 1
        self.largest = max(self.largest, len(piece))
        return len(piece)


def large_file(path: Path, size: int) -> tuple[str, int]:
    """Writes `size` random bytes to `path` in pieces; answers their SHA-256 and size."""
    digest = hashlib.sha256()
    with path.open("wb") as file:
        for _ in range(size // MiB):
            piece = os.urandom(MiB)
            digest.update(piece)
            file.write(piece)
    return digest.hexdigest(), size


def peak_memory(action: Callable[[], Any]) -> int:
    """The most Python memory that `action` held at once (bytes objects included)."""
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- the contract --------------------------------------------------------------------------------


def test_put_answers_the_true_sha256_and_size_and_get_gives_the_bytes(backend: Backend) -> None:
    data = b"%PDF-1.7 the original bytes of a document\x00\xff" * 1000
    assert backend.store.put("acme", io.BytesIO(data)) == (sha256_of(data), len(data))
    assert backend.store.exists("acme", sha256_of(data))
    assert backend.store.get("acme", sha256_of(data)) == data
    # put_bytes answers the same hash for the same bytes
    assert backend.store.put_bytes("acme", data) == sha256_of(data)


def test_empty_and_piece_sized_blobs_round_trip(backend: Backend) -> None:
    for data in (b"", b"x", os.urandom(MiB - 1), os.urandom(MiB), os.urandom(MiB + 1), os.urandom(2 * MiB)):
        sha, size = backend.store.put("acme", io.BytesIO(data))
        assert (sha, size) == (sha256_of(data), len(data))
        assert backend.store.get("acme", sha) == data
        target = io.BytesIO()
        backend.store.copy_to("acme", sha, target)
        assert target.getvalue() == data


def test_the_same_bytes_twice_are_one_blob(backend: Backend) -> None:
    data = b"the same bytes, uploaded twice"
    first = backend.store.put("acme", io.BytesIO(data))
    second = backend.store.put("acme", io.BytesIO(data))
    assert first == second
    assert backend.store.put_bytes("acme", data) == first[0]
    assert backend.count() == 1
    # one delete and they are gone
    backend.store.delete("acme", first[0])
    assert not backend.store.exists("acme", first[0])
    assert backend.count() == 0


def test_a_tenant_never_reads_another_tenants_blob_even_knowing_its_hash(backend: Backend) -> None:
    data = b"acme's confidential contract"
    sha, _ = backend.store.put("acme", io.BytesIO(data))
    # another tenant, given the hash, finds nothing
    assert not backend.store.exists("globex", sha)
    with pytest.raises(KeyError):
        backend.store.get("globex", sha)
    with pytest.raises(KeyError):
        backend.store.copy_to("globex", sha, io.BytesIO())
    backend.store.delete("globex", sha)  # deleting "its" copy removes nothing of acme's
    assert backend.store.get("acme", sha) == data
    # the same bytes uploaded by the other tenant are a blob of its own
    assert backend.store.put("globex", io.BytesIO(data))[0] == sha
    backend.store.delete("acme", sha)
    assert backend.store.get("globex", sha) == data
    assert not backend.store.exists("acme", sha)


@pytest.mark.parametrize("tenant", ODD_TENANTS)
def test_any_tenant_name_is_a_tenant_of_its_own(backend: Backend, tenant: str) -> None:
    data = f"blob of {tenant!r}".encode()
    sha, _ = backend.store.put(tenant, io.BytesIO(data))
    assert backend.store.get(tenant, sha) == data
    others = [t for t in ODD_TENANTS + ["acme"] if t != tenant]
    assert not any(backend.store.exists(other, sha) for other in others)


def test_delete_removes_the_blob_and_deleting_a_missing_one_is_no_error(backend: Backend) -> None:
    sha = backend.store.put_bytes("acme", b"to be deleted")
    backend.store.delete("acme", sha)
    assert not backend.store.exists("acme", sha)
    with pytest.raises(KeyError):
        backend.store.get("acme", sha)
    backend.store.delete("acme", sha)
    backend.store.delete("nobody", "0" * 64)
    # stored again after a delete, it is there again
    assert backend.store.put_bytes("acme", b"to be deleted") == sha
    assert backend.store.get("acme", sha) == b"to be deleted"


@pytest.mark.parametrize("sha", ["0" * 64, sha256_of(b"never stored"), "../../etc/passwd", "", "A" * 64, "zz"])
def test_a_missing_blob_is_a_key_error(backend: Backend, sha: str) -> None:
    backend.store.put_bytes("acme", b"something else")
    assert not backend.store.exists("acme", sha)
    with pytest.raises(KeyError):
        backend.store.get("acme", sha)
    target = io.BytesIO()
    with pytest.raises(KeyError):
        backend.store.copy_to("acme", sha, target)
    assert target.getvalue() == b""
    backend.store.delete("acme", sha)


def test_a_put_whose_source_fails_stores_nothing(backend: Backend) -> None:
    class Broken(io.RawIOBase):
        def __init__(self) -> None:
            self.reads = 0

        def readable(self) -> bool:
            return True

        def read(self, size: int = -1) -> bytes:
            self.reads += 1
            if self.reads > 3:
                raise ConnectionResetError("the upload was cut")
            return os.urandom(MiB)

    with pytest.raises(ConnectionResetError):
        backend.store.put("acme", Broken())  # type: ignore[arg-type]
    assert backend.count() == 0  # not even a temporary file


def test_a_30_mb_blob_is_stored_and_copied_in_pieces(backend: Backend, tmp_path: Path) -> None:
    # a 30 MB upload, streamed from a file
    sha, size = large_file(tmp_path / "large.bin", LARGE)
    with (tmp_path / "large.bin").open("rb") as source:
        stored: list[tuple[str, int]] = []
        put_peak = peak_memory(lambda: stored.append(backend.store.put("acme", source)))
    assert stored == [(sha, size)]
    # copied out: every byte, in pieces, never whole in memory
    target = Recorder()
    copy_peak = peak_memory(lambda: backend.store.copy_to("acme", sha, target))  # type: ignore[arg-type]
    assert (target.digest.hexdigest(), target.size) == (sha, size)
    assert target.writes >= LARGE // (4 * MiB) and target.largest <= 4 * MiB
    assert put_peak < STREAMING_PEAK, f"put held {put_peak / MiB:.1f} MiB at once"
    assert copy_peak < STREAMING_PEAK, f"copy_to held {copy_peak / MiB:.1f} MiB at once"
    # and get gives the same bytes whole
    assert sha256_of(backend.store.get("acme", sha)) == sha


def test_two_replicas_of_one_store_see_each_others_blobs(backend: Backend) -> None:
    other = backend.replica()
    sha = backend.store.put_bytes("acme", b"uploaded through replica a")
    # written on one replica, read on the other
    assert other.exists("acme", sha)
    assert other.get("acme", sha) == b"uploaded through replica a"
    target = io.BytesIO()
    other.copy_to("acme", sha, target)
    assert target.getvalue() == b"uploaded through replica a"
    # stored again on the other: still one blob
    assert other.put_bytes("acme", b"uploaded through replica a") == sha
    assert backend.count() == 1
    # deleted on the other, gone from both
    other.delete("acme", sha)
    assert not backend.store.exists("acme", sha)
    with pytest.raises(KeyError):
        backend.store.get("acme", sha)


def test_concurrent_puts_of_the_same_bytes_make_one_blob(backend: Backend) -> None:
    data = os.urandom(3 * MiB)
    other = backend.replica()
    start = threading.Barrier(8)
    answers: list[tuple[str, int]] = []
    errors: list[BaseException] = []

    def upload(store: BlobStore) -> None:
        try:
            start.wait()
            answers.append(store.put("acme", io.BytesIO(data)))
        except BaseException as error:  # noqa: BLE001 - the test reports it
            errors.append(error)

    # eight uploads at once, through two replicas
    threads = [threading.Thread(target=upload, args=(backend.store if n % 2 else other,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert answers == [(sha256_of(data), len(data))] * 8
    assert backend.count() == 1
    assert backend.store.get("acme", sha256_of(data)) == data


def test_concurrent_puts_of_different_bytes_each_keep_their_own(backend: Backend) -> None:
    blobs = [os.urandom(MiB + n) for n in range(8)]
    with_threads: list[threading.Thread] = [
        threading.Thread(target=backend.store.put, args=("acme", io.BytesIO(blob))) for blob in blobs]
    for thread in with_threads:
        thread.start()
    for thread in with_threads:
        thread.join()
    assert backend.count() == 8
    assert all(backend.store.get("acme", sha256_of(blob)) == blob for blob in blobs)


# -- the folder's files ---------------------------------------------------------------------------


def test_the_folder_keeps_every_blob_inside_its_root_readable_by_the_service_only(tmp_path: Path) -> None:
    root = tmp_path / "data" / "blobs"
    store = FolderBlobStore(root)
    shas = [store.put_bytes(tenant, b"bytes of " + tenant.encode()) for tenant in ODD_TENANTS]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    # one file per blob, named by its hash, under root/<tenant key>/<sha[:2]>/
    assert sorted(p.name for p in files) == sorted(shas)
    for path in files:
        assert path.relative_to(root).parts[1] == path.name[:2]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # a tenant's name never appears as a path
    assert not any("escape" in str(p) or "tenant with spaces" in str(p) for p in tmp_path.rglob("*"))


# -- wiring ---------------------------------------------------------------------------------------


def test_a_sqlite_service_keeps_blobs_in_its_data_dir(tmp_path: Path) -> None:
    from application.store import Store

    settings = Settings(data_dir=tmp_path / "data")
    settings.data_dir.mkdir()
    store = Store(settings.event_store_env())
    try:
        blobs = open_blob_store(settings, store)
        assert isinstance(blobs, FolderBlobStore) and blobs.root == settings.data_dir / "blobs"
    finally:
        store.close()


def test_a_postgres_service_keeps_blobs_beside_its_events_for_every_replica(
        tmp_path: Path, postgres_store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from application.store import Store

    for name, value in postgres_store.items():
        monkeypatch.setenv(name, value)
    settings = Settings(data_dir=tmp_path / "data", persistence_module="eventsourcing.postgres")
    settings.data_dir.mkdir()
    store = Store(settings.event_store_env())
    own_pool = PostgresBlobStore.from_env(settings.event_store_env(), spool_dir=settings.data_dir)
    try:
        # on the event store's own connections
        beside = open_blob_store(settings, store)
        assert isinstance(beside, PostgresBlobStore)
        sha = beside.put_bytes("acme", b"beside the events")
        # a store with a pool of its own, from the same settings, reads the same table
        assert own_pool.get("acme", sha) == b"beside the events"
        # closing the blob store that shares the event store's pool leaves the event store open
        beside.close()
        assert beside.exists("acme", sha)
        assert store.recorder.max_notification_id() is None  # the event store's pool answers (no events yet)
    finally:
        own_pool.close()
        store.close()
