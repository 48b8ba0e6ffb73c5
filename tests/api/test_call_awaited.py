"""A tool call awaited on the event loop (issue 30, `Toolbox.acall`): a code tool whose reads ask no
database (SQLite's store, its aggregates in the cache) is checked, bundled and run with no worker
thread, and answers, refuses and raises exactly as `Toolbox.call` in a worker thread does; with a
store that asks its database before each read (PostgreSQL's), the call goes to a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import anyio.to_thread
import pytest
from fastapi.testclient import TestClient

from api.services import Services
from application.context import REST
from application.principals import ADMIN, Principal
from application.queries import call_context
from domain.catalog import EVERYTHING, NOTHING, Permissions
from entrypoints.web import create_app
from infrastructure.settings import Settings
from sandbox.embedded import EmbeddedSandbox
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect

MODULES = "/api/v1/admin/code-modules"
N = {"inputParameters": [{"name": "n", "type": "integer", "required": True, "description": "n"}]}
ADMIN_CONTEXT = call_context(Principal(name="admin", role=ADMIN, tenant="default"), REST)


@pytest.fixture
def served(settings: Settings, shared_sandbox: EmbeddedSandbox) -> Iterator[tuple[TestClient, Services]]:
    services = wire(settings, shared_sandbox)
    with TestClient(create_app(services), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        for name, source, tool, publish in (
            ("addOne", "exports.run = function (input) { log('n=' + input.n); return input.n + 1; };", N, True),
            ("fails", "exports.run = function () { throw new Error('no'); };", {}, True),
            ("off", "exports.run = function () { return 1; };", {"enabled": False}, True),
            ("draft", "exports.run = function () { return 1; };", {}, False),
        ):
            expect(client.post(MODULES, json={"id": name, "description": name, "draftContent": source, "tool": tool}), 201)
            if publish:
                expect(client.post(f"{MODULES}/{name}/publish"), 200)
        yield client, services


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every function sent to a worker thread through anyio (run_in_threadpool's way too)."""
    sent: list[Any] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        sent.append(function)
        return await run_sync(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    return sent


def test_a_code_tool_call_takes_no_worker_thread(served: tuple[TestClient, Services], hops: list[Any]) -> None:
    client, _ = served
    expect(client.post("/api/v1/tools/addOne/call", json={"n": 1}), 200)  # the catalog is up to date from here on
    hops.clear()
    for n in range(3):
        answer = expect(client.post("/api/v1/tools/addOne/call", json={"n": n}), 200).json()
        assert answer["output"] == n + 1 and answer["logs"] == [f"n={n}"]
    assert hops == []


def _outcome(run: Callable[[], Any]) -> Any:
    try:
        result = run()
    except Exception as error:  # a refusal: its type and what it says
        return type(error).__name__, str(error), getattr(error, "__dict__", {}).get("violations")
    return result.output, result.error, result.logs


@pytest.mark.parametrize("name, arguments, permissions", [
    ("addOne", {"n": 41}, EVERYTHING),
    ("addOne", {"n": "x"}, EVERYTHING),  # V1
    ("addOne", {"n": 1, "extra": 2}, EVERYTHING),  # undeclared
    ("addOne", None, EVERYTHING),
    ("fails", {}, EVERYTHING),  # an error result
    ("off", {}, EVERYTHING),  # disabled
    ("draft", {}, EVERYTHING),  # not published: the kind's own reason for an admin
    ("nothing", {}, EVERYTHING),
    ("addOne", {"n": 1}, NOTHING),  # R14
    ("addOne", {"n": 1}, Permissions(tools=frozenset({"addOne"}), tags=frozenset())),
])
def test_awaited_and_threaded_calls_answer_alike(served: tuple[TestClient, Services], name: str, arguments: Any,
                                                 permissions: Permissions) -> None:
    _, services = served
    toolbox = services.toolbox
    toolbox.entry("default", name)  # the catalog up to date, as after any request

    def awaited() -> Any:
        return asyncio.run(toolbox.acall("default", name, arguments, permissions=permissions, context=ADMIN_CONTEXT))

    threaded = _outcome(lambda: toolbox.call("default", name, arguments, permissions=permissions, context=ADMIN_CONTEXT))
    assert _outcome(awaited) == threaded


def test_a_store_that_asks_its_database_first_sends_the_call_to_a_worker_thread(served: tuple[TestClient, Services],
                                                                                hops: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    client, services = served
    expect(client.post("/api/v1/tools/addOne/call", json={"n": 1}), 200)
    monkeypatch.setattr(services.store.repository, "fastforward", True)  # as a PostgreSQL store's is
    hops.clear()
    assert expect(client.post("/api/v1/tools/addOne/call", json={"n": 2}), 200).json()["output"] == 3
    assert len(hops) == 1
