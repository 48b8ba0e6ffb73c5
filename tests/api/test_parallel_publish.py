"""A publish checks its module's importers on every worker of the sandbox at once (issue 15), and
answers as one check after the other would: the failure reported is the first in the checks'
order (module first, then importers dependencies first) even when a later one fails sooner,
nothing more starts once a failure is known, and the dry run reports every check, in order.

The first tests watch the real pools (the embedded one, and a `toolsmith sandbox` service's) run
two checks at once; the others use a scripted sandbox that says which check fails and when."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from domain.errors import SandboxBusy
from domain.ports import ExecutionError, ExecutionResult, Sandbox
from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure.settings import Settings
from sandbox.embedded import EmbeddedSandbox
from tests.helpers import ADMIN_TOKEN, expect, unique_id
from tests.sandbox_service import SECRET, SandboxService, running_service, service_log_on_failure

BASE = "/api/v1/admin/code-modules"
# Loading this module keeps its worker busy for 300 ms: long enough to see two checks overlap.
SLOW_LOAD = "var until = Date.now() + 300; while (Date.now() < until) {}\n"


def create(client: TestClient, module_id: str, content: str, imports: list[str] | None = None) -> None:
    body = {"id": module_id, "description": f"about {module_id}", "draftContent": content, "draftImports": imports or []}
    expect(client.post(BASE, json=body), 201)


def published_library_with_importers(client: TestClient, importers: int, content: str = "") -> tuple[str, list[str]]:
    """A published library `f` and `importers` published modules that use it; the library has a
    compatible new draft, ready to publish."""
    lib = unique_id("lib")
    create(client, lib, "exports.f = function (x) { return x; };")
    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    names = [unique_id("user") for _ in range(importers)]
    for name in names:
        create(client, name, content + f"exports.g = function () {{ return {lib}.f(1); }};", [lib])
        expect(client.post(f"{BASE}/{name}/publish"), 200)
    expect(client.put(f"{BASE}/{lib}", json={"draftContent": "exports.f = function (x) { return x + 0; };"}), 200)
    return lib, names


def while_watching(sample: Callable[[], Any], action: Callable[[], Any]) -> tuple[Any, list[Any]]:
    """`action`'s answer, and what `sample` said every few milliseconds while it ran."""
    seen: list[Any] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(sample())
            time.sleep(0.003)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        answer = action()
    finally:
        done.set()
        watcher.join()
    return answer, seen


# -- the real pools -------------------------------------------------------------------------------------


def test_a_publish_checks_its_importers_on_both_workers_of_the_pool(client: TestClient, shared_sandbox: EmbeddedSandbox) -> None:
    assert shared_sandbox.parallelism() == 2  # the default: two workers
    lib, _ = published_library_with_importers(client, 4, SLOW_LOAD)

    published, busy = while_watching(
        lambda: set(shared_sandbox._busy_pids()),  # noqa: SLF001 - which workers run a check right now
        lambda: client.post(f"{BASE}/{lib}/publish"),
    )
    assert published.status_code == 200, published.text
    assert max(len(pids) for pids in busy) == 2, "two workers were never checking at the same time"


@pytest.fixture(scope="module")
def sandbox_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxService]:
    with running_service(tmp_path_factory.mktemp("sandbox-service"), CODESANDBOX_SECRET=SECRET, CODESANDBOX_WORKERS="2") as service:
        yield service


def test_over_a_remote_sandbox_a_publish_checks_on_both_of_the_services_workers(tmp_path: Path, sandbox_service: SandboxService,
                                                                               request: pytest.FixtureRequest) -> None:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, sandbox_url=sandbox_service.url, sandbox_secret=SECRET)
    with service_log_on_failure(request), TestClient(create_app(bootstrap(settings)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        lib, _ = published_library_with_importers(client, 4, SLOW_LOAD)
        health = httpx.get(f"{sandbox_service.url}/healthz").json()
        assert health["parallelism"] == 2

        published, active = while_watching(
            lambda: httpx.get(f"{sandbox_service.url}/healthz").json()["activeSessions"],
            lambda: client.post(f"{BASE}/{lib}/publish"),
        )
        assert published.status_code == 200, published.text
        assert max(active) == 2, "the service never had two checks of the publish at once"


# -- the order of the answers, with a scripted sandbox ----------------------------------------------------


class ScriptedSandbox(Sandbox):
    """Two checks at a time; `failing[name]` makes the check of `name` fail after that many seconds;
    with `refuse_second`, the first check asked waits for the second, which is refused a session.
    Records the checks asked and started, and the most that ran at once."""

    max_active_sessions = 4

    def __init__(self) -> None:
        self.failing: dict[str, float] = {}
        self.full = False
        self.refuse_second = False
        self.asked = 0
        self.started: list[str] = []
        self.most_at_once = 0
        self._running = 0
        self._second_asked = threading.Event()
        self._lock = threading.Lock()

    def parallelism(self) -> int:
        return 2

    def busy(self) -> bool:
        return self.full

    def run(self, execution: Any) -> ExecutionResult:
        return ExecutionResult(output="ran")

    def check(self, execution: Any) -> ExecutionResult:
        name = execution.target.name
        with self._lock:
            self.asked += 1
            asked = self.asked
        if self.refuse_second and asked == 1:
            self._second_asked.wait(5)
        if self.refuse_second and asked == 2:
            self._second_asked.set()
            raise SandboxBusy(self.max_active_sessions)  # another caller took the session first
        with self._lock:
            self.started.append(name)
            self._running += 1
            self.most_at_once = max(self.most_at_once, self._running)
        try:
            time.sleep(self.failing.get(name, 0.02))
            if name in self.failing:
                return ExecutionResult(error=ExecutionError("link", f"LinkError: {name} breaks"))
            return ExecutionResult()
        finally:
            with self._lock:
                self._running -= 1


@pytest.fixture
def scripted() -> ScriptedSandbox:
    return ScriptedSandbox()


@pytest.fixture
def scripted_client(settings: Settings, scripted: ScriptedSandbox) -> Iterator[TestClient]:
    with TestClient(create_app(bootstrap(settings, sandbox=scripted)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def order_of_checks(client: TestClient, lib: str) -> list[str]:
    preview = expect(client.post(f"{BASE}/{lib}/publish", params={"dryRun": "true"}), 200).json()
    return [check["module"] for check in preview["checks"]]


def test_the_failure_reported_is_the_first_in_order_even_when_a_later_one_fails_sooner(
    scripted_client: TestClient, scripted: ScriptedSandbox
) -> None:
    client = scripted_client
    lib, importers = published_library_with_importers(client, 6)
    order = order_of_checks(client, lib)
    assert order[0] == lib and sorted(order[1:]) == sorted(importers)
    # the second importer in order fails after a second, the fourth at once
    slow, fast = order[2], order[4]
    scripted.failing = {slow: 1.0, fast: 0.0}
    scripted.started.clear()

    refused = client.post(f"{BASE}/{lib}/publish")
    assert refused.status_code == 422, refused.text
    assert refused.json()["failingModule"] == slow
    # nothing started once the fast failure was known, and nothing was published
    assert sorted(scripted.started) == sorted(order[:5])
    assert client.get(f"{BASE}/{lib}").json()["published"]["version"] == 1


def test_the_dry_run_reports_every_check_in_order_checked_two_at_a_time(scripted_client: TestClient, scripted: ScriptedSandbox) -> None:
    client = scripted_client
    lib, _ = published_library_with_importers(client, 6)
    order = order_of_checks(client, lib)
    scripted.failing = {order[2]: 0.3, order[4]: 0.0, order[6]: 0.0}
    scripted.most_at_once = 0

    preview = expect(client.post(f"{BASE}/{lib}/publish", params={"dryRun": "true"}), 200).json()
    assert preview["wouldPublish"] is False
    assert [c["module"] for c in preview["checks"]] == order
    assert [c["ok"] for c in preview["checks"]] == [True, True, False, True, False, True, False]
    assert preview["checks"][2]["error"]["message"] == f"LinkError: {order[2]} breaks"
    assert scripted.most_at_once == 2


def test_with_every_session_taken_a_publish_checks_one_at_a_time_and_leaves_the_rest(
    scripted_client: TestClient, scripted: ScriptedSandbox
) -> None:
    client = scripted_client
    lib, _ = published_library_with_importers(client, 4)
    scripted.full = True  # other callers' tool calls hold the sessions
    scripted.most_at_once = 0

    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    assert scripted.most_at_once == 1


def test_a_check_refused_for_a_session_while_another_runs_is_checked_again(scripted_client: TestClient, scripted: ScriptedSandbox) -> None:
    client = scripted_client
    lib, importers = published_library_with_importers(client, 4)
    scripted.refuse_second, scripted.asked = True, 0  # someone takes the session our second check asks for
    scripted.started.clear()

    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    assert scripted.asked == 6  # five checks, one of them asked twice
    assert sorted(scripted.started) == sorted([lib, *importers])  # and every module was checked once
