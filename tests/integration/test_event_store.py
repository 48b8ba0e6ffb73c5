"""The write side on its real SQLite event store: who and when on every event, restart, concurrency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Barrier

import pytest

from domain.application import ModuleRepository, ThreadGraphLock
from domain.errors import CheckFailed, ImportCycle, InvalidDefinition
from domain.model import CodeModule
from infrastructure.bootstrap import bootstrap
from infrastructure.settings import Settings
from projections.interface import ListQuery
from sandbox.embedded import EmbeddedSandbox

TENANT = "default"


def _repository(path: Path) -> ModuleRepository:
    """A repository of its own (own cache, own publish lock), as another process would have."""
    sandbox = EmbeddedSandbox(workers=1)
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path), "SQLITE_LOCK_TIMEOUT": "10"}
    return ModuleRepository(env, sandbox=lambda: sandbox, graph_lock=ThreadGraphLock())


def test_every_event_records_who_and_when(tmp_path: Path) -> None:
    app = _repository(tmp_path / "events.sqlite")
    app.create(TENANT, "dates", description="d", content="exports.x = 1;", imports=[], tool=None, by="ada")
    app.publish(TENANT, "dates", by="grace")
    app.update(TENANT, "dates", description="changed", by="ada")
    app.discard_draft(TENANT, "dates", by="grace")
    app.delete(TENANT, "dates", by="ada")
    app.create(TENANT, "dates", description="again", content="exports.x = 2;", imports=[], tool=None, by="grace")
    events = [app.mapper.to_domain_event(n) for n in app.recorder.select_notifications(start=1, limit=100)]
    module_events = [e for e in events if isinstance(e, CodeModule.Event)]
    assert [type(e).__name__ for e in module_events] == ["Created", "Published", "DraftChanged", "DraftDiscarded", "Deleted", "Recreated"]
    assert [e.by for e in module_events] == ["ada", "grace", "ada", "grace", "ada", "grace"]
    assert all(e.timestamp.tzinfo is not None for e in module_events)
    assert all(e.module_id == "dates" and e.tenant == TENANT for e in module_events)


def test_a_refused_command_writes_nothing(tmp_path: Path) -> None:
    app = _repository(tmp_path / "events.sqlite")
    app.create(TENANT, "lib", description="d", content="exports.f = function () {};", imports=[], tool=None, by="t")
    app.publish(TENANT, "lib", by="t")
    app.create(TENANT, "user", description="d", content="exports.g = lib.f;", imports=["lib"], tool=None, by="t")
    app.publish(TENANT, "user", by="t")
    before = app.position()
    with pytest.raises(InvalidDefinition):
        app.update(TENANT, "lib", description="", by="t")
    with pytest.raises(ImportCycle):
        app.update(TENANT, "lib", imports=["user"], by="t")
    app.update(TENANT, "lib", content="exports.h = 1;", by="t")
    with pytest.raises(CheckFailed) as refused:
        app.publish(TENANT, "lib", by="t")
    assert refused.value.failing_module == "user"
    assert app.position() == before + 1  # only the accepted draft change
    assert app.module(TENANT, "lib").published_version == 1


def test_concurrent_publishes_from_two_processes_never_close_a_cycle(tmp_path: Path) -> None:
    # two repositories share one event store but no lock: only the graph's version keeps them apart
    path = tmp_path / "events.sqlite"
    first, second = _repository(path), _repository(path)
    outcomes = []
    with ThreadPoolExecutor(max_workers=2) as pool:
        for race in range(50):
            a, b = f"a{race}", f"b{race}"
            for name in (a, b):
                first.create(TENANT, name, description=name, content=f"exports.{name} = 1;", imports=[], tool=None, by="t")
                first.publish(TENANT, name, by="t")
            first.update(TENANT, a, imports=[b], by="t")
            first.update(TENANT, b, imports=[a], by="t")
            barrier = Barrier(2)

            def publish(app: ModuleRepository, name: str) -> str:
                barrier.wait()
                try:
                    app.publish(TENANT, name, by="t")
                except ImportCycle:
                    return "refused"
                return "published"

            results = sorted(pool.map(publish, (first, second), (a, b)))
            outcomes.append(results)
            assert results == ["published", "refused"], f"race {race}: {results}"
            graph = first.graph(TENANT).published_imports()
            assert not (b in graph[a] and a in graph[b])
    assert len(outcomes) == 50


def test_the_read_model_is_rebuilt_from_the_event_store_at_start(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, admin_token="t")
    services = bootstrap(settings)
    services.start()
    modules = services.modules
    modules.create(TENANT, "lib", description="Library", content="exports.x = 1;", imports=[], tool=None, by="t")
    modules.publish(TENANT, "lib", by="t")
    modules.create(TENANT, "tool", description="Tool", content="exports.run = () => lib.x;", imports=["lib"], tool={"tags": ["a"]}, by="t")
    services.runner.wait(modules.position(), 5)
    before = services.read_model.list(TENANT, ListQuery())
    services.close()

    again = bootstrap(settings)
    again.start()
    after = again.read_model.list(TENANT, ListQuery())
    assert after == before and after.total == 2
    assert again.read_model.used_by(TENANT, "lib") == ["tool"]
    again.close()
