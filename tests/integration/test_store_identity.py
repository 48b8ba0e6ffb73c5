"""Issue 12, finding 10: an OpenSearch read model never serves another event store's documents.

Each event store has an identity, recorded once in the store (SQLite and PostgreSQL alike), never
carried by `audit export`, and new after `audit import`. The read model records it with its
tracking position and every document; a runner that finds another store's position in the index
rebuilds the index from its own store and swaps the alias, saying why in the log. Before, a
server on a fresh or restored store skipped its own events up to the other store's position and
listed the other store's modules.
"""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opensearchpy import OpenSearch

from application.store import Store
from infrastructure.audit import export, import_events
from entrypoints.compose import Services, build_application, build_runner
from infrastructure.settings import Settings
from projections.interface import ListQuery, ReadModelUnavailable
from projections.opensearch import OpenSearchModuleReadModel
from projections.store_identity import renew_store_identity, store_identity
from sandbox.embedded import EmbeddedSandbox
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, environment_without_settings

TENANT = "default"
TOOLSMITH = Path(sys.executable).parent / "toolsmith"
SOURCE = "exports.x = 1;"


def _no_sandbox() -> None:
    raise AssertionError("no code runs here")


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """The settings of a fresh event store of each kind."""
    if request.param == "sqlite":
        yield {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "events.sqlite")}
    else:
        yield request.getfixturevalue("postgres_store")


def test_a_store_keeps_its_identity_and_another_store_has_another(store_env: dict[str, str], tmp_path: Path) -> None:
    first = Store(store_env)
    identity = store_identity(first)
    assert len(identity) == 32 and store_identity(first) == identity
    first.close()
    # reopened (another process, a restart): the same store, the same identity
    again = Store(store_env)
    assert store_identity(again) == identity
    # a restored store is a new store
    assert renew_store_identity(again) != identity
    assert store_identity(again) != identity
    again.close()
    other = Store({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "other.sqlite")})
    assert store_identity(other) not in (identity, store_identity(Store(store_env)))
    other.close()


def test_audit_export_does_not_carry_the_identity_and_import_makes_a_new_one(tmp_path: Path) -> None:
    original = Store({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "a.sqlite")})
    identity = store_identity(original)
    build_application(original, sandbox=_no_sandbox).modules.create(TENANT, "m", description="d", content=SOURCE, imports=[], tool=None, by="t")
    exported = io.BytesIO()
    export(original, exported)
    assert identity.encode() not in exported.getvalue()
    restored = Store({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "b.sqlite")})
    before = store_identity(restored)  # opened (and identified) before the import, as `serve` may have
    import_events(restored, io.BytesIO(exported.getvalue()))
    assert store_identity(restored) not in (identity, before)
    original.close()
    restored.close()


class Deployment:
    """`toolsmith serve`'s services on one SQLite data dir, against the test's OpenSearch alias."""

    def __init__(self, data_dir: Path, url: str, alias: str, sandbox: EmbeddedSandbox) -> None:
        self.settings = Settings(data_dir=data_dir, admin_token=ADMIN_TOKEN, opensearch_url=url,
                                 opensearch_index=alias, opensearch_replicas=0)
        self.sandbox = sandbox
        self.services: Services | None = None

    def __enter__(self) -> Services:
        self.services = wire(self.settings, self.sandbox)
        self.services.start()
        return self.services

    def __exit__(self, *_: object) -> None:
        assert self.services is not None
        self.services.close()


def _create(services: Services, *names: str) -> None:
    for name in names:
        written = services.modules.create(TENANT, name, description=name, content=SOURCE, imports=[], tool=None, by="t")
        assert services.runner.wait(written.position, 10)


def _listed(services: Services) -> list[str]:
    return [m["id"] for m in services.read_model.list(TENANT, ListQuery(limit=100)).collection]


def _concrete(opensearch: OpenSearch, alias: str) -> list[str]:
    return sorted(opensearch.indices.get_alias(name=alias))


def test_a_fresh_store_against_another_stores_index_lists_its_own_modules_only(
    tmp_path: Path, opensearch_url: str, opensearch_index: str, opensearch: OpenSearch, shared_sandbox: EmbeddedSandbox,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store_a = Deployment(tmp_path / "a", opensearch_url, opensearch_index, shared_sandbox)
    with store_a as a:
        _create(a, *(f"a{n}" for n in range(9)))
        assert _listed(a) == [f"a{n}" for n in range(9)]
    index_of_a = _concrete(opensearch, opensearch_index)
    # the same store started again follows the index it built: no rebuild
    with store_a as a:
        assert _listed(a) == [f"a{n}" for n in range(9)]
    assert _concrete(opensearch, opensearch_index) == index_of_a

    # a fresh data dir against the same index: its positions start again from 1
    with caplog.at_level(logging.WARNING, logger="toolsmith.projections"), \
            Deployment(tmp_path / "b", opensearch_url, opensearch_index, shared_sandbox) as b:
        _create(b, "b0", "b1")
        assert _listed(b) == ["b0", "b1"]
        assert b.read_model.summary(TENANT, "a0") is None and not b.read_model.is_taken(TENANT, "a0")
        assert b.read_model.list(TENANT, ListQuery(search="a")).total == 0
    assert _concrete(opensearch, opensearch_index) != index_of_a, "the alias was not swapped to a fresh index"
    said = [r for r in caplog.records if "read model of another event store" in r.getMessage()]
    assert said and "not this event store's" in said[0].__dict__["reason"]


def test_a_store_restored_by_audit_import_lists_its_own_modules_not_the_originals_later_ones(
    tmp_path: Path, opensearch_url: str, opensearch_index: str, shared_sandbox: EmbeddedSandbox,
) -> None:
    exported = io.BytesIO()
    with Deployment(tmp_path / "a", opensearch_url, opensearch_index, shared_sandbox) as a:
        _create(a, "m0", "m1", "m2")
        export(a.store, exported)
        # the original goes on after the export: its index is ahead of what the export holds
        _create(a, "later0", "later1", "later2")
        assert _listed(a) == ["later0", "later1", "later2", "m0", "m1", "m2"]
    (tmp_path / "b").mkdir()
    restored = Store({"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                                 "SQLITE_DBNAME": str(tmp_path / "b" / "events.sqlite")})
    import_events(restored, io.BytesIO(exported.getvalue()))
    restored.close()
    with Deployment(tmp_path / "b", opensearch_url, opensearch_index, shared_sandbox) as b:
        _create(b, "b0")  # position 4 in the restored store: the original's index was at 6
        assert _listed(b) == ["b0", "m0", "m1", "m2"]


def test_the_projections_runner_process_rebuilds_an_index_of_another_store_too(
    tmp_path: Path, opensearch_url: str, opensearch_index: str, opensearch: OpenSearch, shared_sandbox: EmbeddedSandbox,
) -> None:
    with Deployment(tmp_path / "a", opensearch_url, opensearch_index, shared_sandbox) as a:
        _create(a, "a0", "a1", "a2")
    # another store, followed by `toolsmith projections run` instead of an API's own runner
    (tmp_path / "b").mkdir()
    store_b = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "b" / "events.sqlite")}
    b = Store(store_b)
    build_application(b, sandbox=_no_sandbox).modules.create(TENANT, "b0", description="b0", content=SOURCE, imports=[], tool=None, by="t")
    view = OpenSearchModuleReadModel(opensearch, index=opensearch_index, store=store_identity(b))
    env = {**environment_without_settings(), "OPENSEARCH_URL": opensearch_url, "TOOLSMITH_OPENSEARCH_INDEX": opensearch_index,
           "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "TOOLSMITH_DATA_DIR": str(tmp_path / "b")}
    log = tmp_path / "runner.log"
    runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while [m["id"] for m in view.list(TENANT, ListQuery()).collection] != ["b0"]:
            assert time.monotonic() < deadline and runner.poll() is None, log.read_text()
            time.sleep(0.2)
    finally:
        runner.terminate()
        assert runner.wait(timeout=30) == 0, log.read_text()
        b.close()
    assert "rebuilding it from this one" in log.read_text()
    assert view.max_tracking_id("toolsmith") == 1


def test_two_stores_writing_one_index_are_reported_not_rebuilt_back_and_forth(
    tmp_path: Path, opensearch_url: str, opensearch_index: str, opensearch: OpenSearch,
) -> None:
    stores = []
    for name in ("a", "b"):
        app = Store({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / f"{name}.sqlite")})
        build_application(app, sandbox=_no_sandbox).modules.create(TENANT, f"{name}0", description=name, content=SOURCE, imports=[], tool=None, by="t")
        view = OpenSearchModuleReadModel(opensearch, index=opensearch_index, replicas=0, store=store_identity(app))
        stores.append((app, view, build_runner(app, view)))
    (a, view_a, runner_a), (b, view_b, runner_b) = stores
    try:
        runner_a.catch_up()
        runner_b.catch_up()  # B finds A's index: it rebuilds it from its own store, once
        assert [m["id"] for m in view_b.list(TENANT, ListQuery()).collection] == ["b0"]
        runner_a.catch_up()  # and A, finding B's, does the same
        assert [m["id"] for m in view_a.list(TENANT, ListQuery()).collection] == ["a0"]
        # B finds another store's index again: two deployments share it; B says so and leaves it
        index = _concrete(opensearch, opensearch_index)
        with pytest.raises(ReadModelUnavailable, match="another deployment writes the same index"):
            runner_b.catch_up()
        assert _concrete(opensearch, opensearch_index) == index
        assert view_b.list(TENANT, ListQuery()).total == 0  # never A's documents
    finally:
        a.close()
        b.close()
