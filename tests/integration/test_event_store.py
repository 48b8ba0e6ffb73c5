"""The write side on its real event stores, SQLite and PostgreSQL: who and when on every event,
restart, concurrency. Every test runs on both (the `store` fixture)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier
from typing import Any

import pytest

from application.commands import ThreadGraphLock
from application.store import Store
from domain.errors import CheckFailed, ConcurrentChange, ImportCycle, InvalidDefinition
from domain.model import CodeModule
from entrypoints.compose import ApplicationServices, bootstrap, build_application
from infrastructure.settings import Settings
from projections.interface import ListQuery
from sandbox.embedded import EmbeddedSandbox

TENANT = "default"


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The event store's settings, also put in the environment (where `Settings` reads them)."""
    if request.param == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "events.sqlite"), "SQLITE_LOCK_TIMEOUT": "10"}
    else:
        env = request.getfixturevalue("postgres_store")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def repository(store: dict[str, str]) -> Iterator[Callable[[], ApplicationServices]]:
    """Makes repositories of their own (no cache, own publish lock), as other processes would have."""
    made: list[ApplicationServices] = []
    sandbox = EmbeddedSandbox(workers=1)

    def make() -> ApplicationServices:
        made.append(build_application(Store(store), sandbox=lambda: sandbox, graph_lock=ThreadGraphLock()))
        return made[-1]

    yield make
    for app in made:
        app.store.close()
    sandbox.close()


def test_every_event_records_who_and_when(repository: Callable[[], ApplicationServices]) -> None:
    app = repository()
    app.modules.create(TENANT, "dates", description="d", content="exports.x = 1;", imports=[], tool=None, by="ada")
    app.modules.publish(TENANT, "dates", by="grace")
    app.modules.update(TENANT, "dates", description="changed", by="ada")
    app.modules.discard_draft(TENANT, "dates", by="grace")
    app.modules.delete(TENANT, "dates", by="ada")
    app.modules.create(TENANT, "dates", description="again", content="exports.x = 2;", imports=[], tool=None, by="grace")
    events = [app.store.mapper.to_domain_event(n) for n in app.store.recorder.select_notifications(start=1, limit=100)]
    module_events = [e for e in events if isinstance(e, CodeModule.Event)]
    assert [type(e).__name__ for e in module_events] == ["Created", "Published", "DraftChanged", "DraftDiscarded", "Deleted", "Recreated"]
    assert [e.by for e in module_events] == ["ada", "grace", "ada", "grace", "ada", "grace"]
    assert all(e.timestamp.tzinfo is not None for e in module_events)
    assert all(e.module_id == "dates" and e.tenant == TENANT for e in module_events)


def test_a_refused_command_writes_nothing(repository: Callable[[], ApplicationServices]) -> None:
    app = repository()
    app.modules.create(TENANT, "lib", description="d", content="exports.f = function () {};", imports=[], tool=None, by="t")
    app.modules.publish(TENANT, "lib", by="t")
    app.modules.create(TENANT, "user", description="d", content="exports.g = lib.f;", imports=["lib"], tool=None, by="t")
    app.modules.publish(TENANT, "user", by="t")
    before = app.store.position()
    with pytest.raises(InvalidDefinition):
        app.modules.update(TENANT, "lib", description="", by="t")
    with pytest.raises(ImportCycle):
        app.modules.update(TENANT, "lib", imports=["user"], by="t")
    app.modules.update(TENANT, "lib", content="exports.h = 1;", by="t")
    with pytest.raises(CheckFailed) as refused:
        app.modules.publish(TENANT, "lib", by="t")
    assert refused.value.failing_module == "user"
    assert app.store.position() == before + 1  # only the accepted draft change
    assert app.store.module(TENANT, "lib").published_version == 1


def test_concurrent_publishes_from_two_processes_never_close_a_cycle(repository: Callable[[], ApplicationServices]) -> None:
    # two repositories share one event store but no lock: only the graph's version keeps them apart
    first, second = repository(), repository()
    outcomes = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for race in range(50):
            a, b = f"a{race}", f"b{race}"
            for name in (a, b):
                first.modules.create(TENANT, name, description=name, content=f"exports.{name} = 1;", imports=[], tool=None, by="t")
                first.modules.publish(TENANT, name, by="t")
            first.modules.update(TENANT, a, imports=[b], by="t")
            first.modules.update(TENANT, b, imports=[a], by="t")
            barrier = Barrier(2)

            def publish(app: ApplicationServices, name: str) -> str:
                barrier.wait()
                try:
                    app.modules.publish(TENANT, name, by="t")
                except ImportCycle:
                    return "refused"
                return "published"

            results = sorted(pool.map(publish, (first, second), (a, b)))
            outcomes.append(results)
            assert results == ["published", "refused"], f"race {race}: {results}"
            graph = first.store.graph(TENANT).published_imports()
            assert not (b in graph[a] and a in graph[b])
    assert len(outcomes) == 50


def _just_before_its_save(app: ApplicationServices, monkeypatch: pytest.MonkeyPatch, other_write: Callable[[], Any]) -> None:
    """Makes `other_write` happen once, after `app` loaded what it changes and before it saves."""
    save = app.store.save_or_conflict
    pending = [other_write]

    def save_after_the_other_write(*aggregates: Any) -> int | None:
        while pending:
            pending.pop()()
        return save(*aggregates)

    monkeypatch.setattr(app.store, "save_or_conflict", save_after_the_other_write)


def test_an_edit_raced_by_another_edit_of_the_module_is_refused_and_writes_nothing(
    repository: Callable[[], ApplicationServices], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = repository(), repository()
    first.modules.create(TENANT, "m", description="d", content="exports.x = 1;", imports=[], tool=None, by="t")
    _just_before_its_save(first, monkeypatch, lambda: second.modules.update(TENANT, "m", description="second", by="t"))
    with pytest.raises(ConcurrentChange):
        first.modules.update(TENANT, "m", content="exports.x = 2;", by="t")
    # the other edit stands, and nothing of the refused one was written
    module = second.store.module(TENANT, "m")
    assert module.version == 2
    assert (module.current["description"], module.current["content"]) == ("second", "exports.x = 1;")


def test_a_publish_raced_by_an_edit_of_the_module_is_refused(
    repository: Callable[[], ApplicationServices], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = repository(), repository()
    first.modules.create(TENANT, "m", description="d", content="exports.x = 1;", imports=[], tool=None, by="t")
    _just_before_its_save(first, monkeypatch, lambda: second.modules.update(TENANT, "m", content="exports.x = 2;", by="t"))
    with pytest.raises(ConcurrentChange):
        first.modules.publish(TENANT, "m", by="t")
    # the draft it checked is no longer the draft: nothing was published
    assert second.store.module(TENANT, "m").published is None


def test_a_save_raced_only_on_the_import_graph_is_retried(
    repository: Callable[[], ApplicationServices], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = repository(), repository()
    for name in ("lib", "m", "other"):
        first.modules.create(TENANT, name, description=name, content=f"exports.{name} = 1;", imports=[], tool=None, by="t")
    first.modules.publish(TENANT, "lib", by="t")
    # another module's import change moves the graph between this save's load and its write
    _just_before_its_save(first, monkeypatch, lambda: second.modules.update(TENANT, "other", imports=["lib"], by="t"))
    first.modules.update(TENANT, "m", imports=["lib"], by="t")
    assert second.store.module(TENANT, "m").current["imports"] == ["lib"]
    nodes = second.store.graph(TENANT).nodes
    assert (nodes["m"]["draft"], nodes["other"]["draft"]) == (["lib"], ["lib"])


def test_the_read_model_is_rebuilt_from_the_event_store_at_start(store: dict[str, str], tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, admin_token="t")
    services = bootstrap(settings)
    services.start()
    modules = services.modules
    modules.create(TENANT, "lib", description="Library", content="exports.x = 1;", imports=[], tool=None, by="t")
    modules.publish(TENANT, "lib", by="t")
    modules.create(TENANT, "tool", description="Tool", content="exports.run = () => lib.x;", imports=["lib"], tool={"tags": ["a"]}, by="t")
    services.runner.wait(services.store.position(), 5)
    before = services.read_model.list(TENANT, ListQuery())
    services.close()

    again = bootstrap(settings)
    again.start()
    after = again.read_model.list(TENANT, ListQuery())
    assert after == before and after.total == 2
    assert again.read_model.used_by(TENANT, "lib") == ["tool"]
    again.close()
