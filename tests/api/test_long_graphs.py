"""R5 and R10 on long import chains (issue 15): the cycle check searches from the new edges and
the publish checks walk the importers' reverse index, and both still refuse what they refused
when they looked at the whole graph, naming the same cycle and the same failing module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from application.store import Store
from domain.model import CodeModule, ImportGraph
from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect

BASE = "/api/v1/admin/code-modules"
CHAIN = 1_000


def chain(n: int = CHAIN) -> list[str]:
    """`m0` imports `m1`, which imports `m2`, … up to the last."""
    return [f"m{i}" for i in range(n)]


def write_published(settings: Settings, modules: dict[str, list[str]], drafts: dict[str, list[str]] | None = None) -> None:
    """Each module published with its imports (and, for `drafts`, a draft importing those), written
    as the events the commands record: a thousand publishes through the API would check the
    thousand-module bundle at the bottom of the chain a thousand times."""
    env = settings.event_store_env()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = Store(env)
    graph = ImportGraph(tenant=settings.tenant)
    saved: list[Any] = [graph]
    for name, imports in modules.items():
        module = CodeModule(tenant=settings.tenant, module_id=name, definition=definition(imports), by="setup")
        module.publish("setup")
        draft = (drafts or {}).get(name)
        if draft is not None:
            module.change_draft(definition(draft), "setup")
        graph.link(name, published=imports, draft=draft)
        saved.append(module)
    store.save(*saved)
    store.close()


def definition(imports: list[str]) -> dict[str, Any]:
    return {"description": "a link of the chain", "content": "exports.x = 1;", "imports": imports, "tool": None}


@pytest.fixture
def open_client(settings: Settings, shared_sandbox: Any) -> Iterator[Any]:
    """Opens the app on the data dir the test wrote (after writing it)."""
    clients: list[TestClient] = []

    def open_() -> TestClient:
        clients.append(TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}))
        return clients[-1].__enter__()

    yield open_
    for client in clients:
        client.__exit__(None, None, None)


def test_a_draft_closing_a_chain_of_a_thousand_modules_is_refused_naming_the_whole_cycle(settings: Settings, open_client: Any) -> None:
    names = chain()
    write_published(settings, {name: names[i + 1:i + 2] for i, name in enumerate(names)})
    client = open_client()
    last = names[-1]

    refused = client.put(f"{BASE}/{last}", json={"draftImports": [names[0]]})

    assert refused.status_code == 400 and refused.json()["code"] == "import-cycle", refused.text
    assert refused.json()["cycle"] == [last, *names]
    assert client.get(f"{BASE}/{last}").json()["state"] == "PUBLISHED"  # nothing was saved


def test_a_publish_closing_a_chain_of_a_thousand_modules_is_refused_naming_the_whole_cycle(settings: Settings, open_client: Any) -> None:
    # m0 -> … -> m998 and m999 -> m0 are published; m998's draft imports m999, which closes the
    # chain only once it is published (a draft importing a published module saves).
    names = chain()
    closing, last = names[-2], names[-1]
    links = {name: names[i + 1:i + 2] for i, name in enumerate(names[:-2])}
    write_published(settings, {**links, closing: [], last: [names[0]]}, drafts={closing: [last]})
    client = open_client()

    refused = client.post(f"{BASE}/{closing}/publish")

    assert refused.status_code == 422 and refused.json()["code"] == "import-cycle", refused.text
    assert refused.json()["cycle"] == [closing, last, *names[:-1]]
    module = client.get(f"{BASE}/{closing}").json()
    assert (module["state"], module["published"]["imports"], module["draft"]["imports"]) == ("DRAFT", [], [last])


def test_a_publish_that_breaks_an_importer_fifty_levels_up_is_refused_naming_it(client: TestClient) -> None:
    # lib exports f and g; i1 passes lib on, i2 passes what i1 passed, … and i50 calls lib's g when
    # it loads. A lib that drops g breaks only i50, fifty imports away (the others name no member
    # of lib that it drops).
    source = "exports.f = function (x) { return x; };"
    expect(client.post(BASE, json={"id": "lib", "description": "a library", "draftContent": source + " exports.g = exports.f;"}), 201)
    expect(client.post(f"{BASE}/lib/publish"), 200)
    below = "lib"
    for level in range(1, 51):
        passed = "lib" if level == 1 else f"{below}.lib"
        content = f"exports.lib = {passed};" if level < 50 else f"exports.value = {passed}.g(1);"
        module = {"id": f"i{level}", "description": f"importer {level}", "draftContent": content, "draftImports": [below]}
        expect(client.post(BASE, json=module), 201)
        expect(client.post(f"{BASE}/i{level}/publish"), 200)
        below = f"i{level}"
    expect(client.put(f"{BASE}/lib", json={"draftContent": source}), 200)

    refused = client.post(f"{BASE}/lib/publish")

    assert refused.status_code == 422 and refused.json()["code"] == "check-failed", refused.text
    assert refused.json()["failingModule"] == "i50"
    assert client.get(f"{BASE}/lib").json()["published"]["version"] == 1
    # every check, dependencies first: lib, then each importer after the one it imports
    checks = expect(client.post(f"{BASE}/lib/publish", params={"dryRun": "true"}), 200).json()["checks"]
    assert [c["module"] for c in checks] == ["lib", *(f"i{level}" for level in range(1, 51))]
    assert [c["module"] for c in checks if not c["ok"]] == ["i50"]
