"""Issue 15: the catalog's full build reads every published tool of a tenant in a few passes over
the event log (`Store.published_tools`, each pass rebuilding a share of the modules) instead of
loading each module; it must answer exactly what loading each module answers, whatever lifecycle
the modules went through, and nothing of another tenant."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from application.store import Store
from domain.model import CodeModule, ImportGraph
from domain.rules import normalise_tool

TENANT, OTHER = "default", "other"


def _definition(i: int, revision: int, tool: bool) -> dict:
    return {
        "description": f"module {i}, revision {revision}",
        "content": f"exports.run = function () {{ return {revision}; }};",
        "imports": [],
        "tool": normalise_tool({"tags": [f"t{i % 3}"], "inputParameters": []}) if tool else None,
    }


def _lifecycles(store: Store, tenant: str, seed: int, count: int) -> None:
    """`count` modules, each taken through random steps as the application takes them: the graph
    links a module when it is published and unlinks it when it is deleted."""
    rng = random.Random(seed)
    graph = ImportGraph(tenant=tenant)
    for i in range(count):
        module = CodeModule(tenant=tenant, module_id=f"m{i}", definition=_definition(i, 0, rng.random() < 0.7), by="t")
        for revision in range(1, rng.randint(1, 7)):
            step = rng.choice(["draft", "publish", "publish", "enable", "discard", "delete"])
            if module.deleted:
                module.recreate(_definition(i, revision, rng.random() < 0.7), by="t")
            elif step == "draft":
                module.change_draft(_definition(i, revision, rng.random() < 0.7), by="t")
            elif step == "publish" and module.draft is not None:
                module.publish(by="t")
                graph.link(module.module_id, published=[], draft=None)
            elif step == "enable":
                module.set_enabled(rng.random() < 0.5, by="t")
            elif step == "discard" and module.published is not None and module.draft is not None:
                module.discard_draft(by="t")
            elif step == "delete":
                module.delete(by="t")
                if module.module_id in graph.nodes:
                    graph.unlink(module.module_id)
        store.save(module, graph)


def _one_by_one(store: Store, tenant: str) -> dict[str, dict]:
    found = {}
    for i in range(200):
        module = store.find(tenant, f"m{i}")
        if module is not None and not module.deleted and module.published is not None and module.published["tool"] is not None:
            found[module.module_id] = (module.version, module.published)
    return found


@pytest.fixture(params=["popo", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "popo":
        env = {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    else:
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "events.db")}
    made = Store(env | {"AGGREGATE_CACHE_MAXSIZE": "50"})
    yield made
    made.close()


def test_one_pass_answers_what_loading_each_module_answers(store: Store) -> None:
    _lifecycles(store, TENANT, seed=15, count=120)
    _lifecycles(store, OTHER, seed=16, count=80)  # the same names, in another tenant
    for tenant in (TENANT, OTHER):
        expected = _one_by_one(store, tenant)
        got = {m.module_id: (m.version, m.published) for m in store.published_tools(tenant)}
        assert got == expected
        assert 10 < len(got) < 120  # the lifecycles left some tools published, and took others away


def test_the_passes_read_past_one_page_and_split_a_large_tenant(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("application.store.TOOLS_PAGE", 7)
    monkeypatch.setattr("application.store.TOOLS_PER_PASS", 6)  # several passes, each rebuilding a share
    _lifecycles(store, TENANT, seed=3, count=40)
    got = [m.module_id for m in store.published_tools(TENANT)]
    assert len(got) == len(set(got)) and set(got) == set(_one_by_one(store, TENANT))


def test_a_service_builds_its_catalog_when_it_starts(settings, shared_sandbox) -> None:  # noqa: ANN001
    """The first request after a restart never waits for (nor is held up by) the whole catalog's
    build: the service builds it at its start, from the store, before it serves."""
    from tests.conftest import wire

    first = wire(settings, shared_sandbox)
    first.start()
    tool = {"inputParameters": [{"name": "x", "type": "integer", "required": True, "description": "a number"}]}
    first.modules.create(TENANT, "double", description="Doubles.", content="exports.run = function (i) { return 2 * i.x; };",
                         imports=[], tool=tool, by="t")
    first.modules.publish(TENANT, "double", by="t")
    first.close()

    again = wire(settings, shared_sandbox)
    builds = []
    whole = again.store.published_tools
    again.store.published_tools = lambda tenant: builds.append(tenant) or whole(tenant)  # type: ignore[method-assign]
    again.start()
    try:
        assert builds == [TENANT]  # built at the start
        entry = again.toolbox.entry(TENANT, "double")
        assert entry is not None and entry.description == "Doubles."
        assert builds == [TENANT]  # the request used what the start built
    finally:
        again.close()
