"""How many calls a sandbox runs side by side (issue 15: a publish gives it that many checks at
once): the embedded runner's workers, and a `toolsmith sandbox` service's, as its /healthz says."""

from __future__ import annotations

import httpx

from domain.ports import Sandbox
from sandbox.config import SandboxConfig
from sandbox.remote import RemoteSandbox
from tests.sandbox_service import SECRET


def test_each_sandbox_runs_as_many_calls_side_by_side_as_it_keeps_workers(sandbox: Sandbox) -> None:
    assert sandbox.parallelism() == SandboxConfig().workers == 2


def _service_answering(health: httpx.Response, asked: list[str]) -> RemoteSandbox:
    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request.url.path)
        return health

    return RemoteSandbox("http://sandbox.test", secret=SECRET, caller_name="t", capability_profile="default",
                         transport=httpx.MockTransport(answer))


def test_the_remote_sandbox_asks_its_service_once() -> None:
    asked: list[str] = []
    client = _service_answering(httpx.Response(200, json={"status": "ok", "maxActiveSessions": 16, "parallelism": 3}), asked)
    assert client.parallelism() == 3
    assert client.parallelism() == 3
    assert asked == ["/healthz"]


def test_a_service_that_does_not_say_is_given_one_check_at_a_time() -> None:
    asked: list[str] = []
    older = _service_answering(httpx.Response(200, json={"status": "ok", "maxActiveSessions": 16}), asked)
    assert older.parallelism() == 1
    nonsense = _service_answering(httpx.Response(200, json={"parallelism": "two"}), asked)
    assert nonsense.parallelism() == 1
    failing = _service_answering(httpx.Response(500, json={"detail": "broken"}), asked)
    assert failing.parallelism() == 1


def test_a_service_that_cannot_be_reached_is_asked_again_later() -> None:
    up = False

    def answer(request: httpx.Request) -> httpx.Response:
        if not up:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"status": "ok", "parallelism": 4})

    client = RemoteSandbox("http://sandbox.test", secret=SECRET, caller_name="t", capability_profile="default",
                           transport=httpx.MockTransport(answer))
    assert client.parallelism() == 1
    up = True  # the service has started
    assert client.parallelism() == 4
