"""An API URL tool's call awaited on the event loop (`ApiToolKind.acall`, issue 30) answers exactly
what the call in a worker thread (`call`, what the REST route and MCP ran) answers: the output,
the error result and its message, the cut, the redaction; a refusal is the same `InvalidInput`.
A tool that reads no secret, fetches no token and runs no module is called without any worker
thread; one that does is called in one, as before. A change to the tool is seen by the next call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from fastapi.testclient import TestClient

from application.context import REST
from application.principals import Principal
from application.queries import call_context
from domain.errors import InvalidInput
from domain.ports import ExecutionResult
from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"
KEY = "sk-awaited-3c9e1f-never-shown"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def services_and_api(tmp_path: Path, upstream: Upstream, shared_sandbox: Any) -> Iterator[tuple[Any, TestClient]]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    services = wire(settings, shared_sandbox)
    with TestClient(create_app(services), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield services, client


def made(api: TestClient, name: str, upstream: Upstream, path: str, **extra: Any) -> None:
    answer = api.post(TOOLS, json={"id": name, "description": name, "urlTemplate": upstream.url + path, **extra})
    assert answer.status_code == 201, answer.text


class Caller:
    """Calls a tool as the kind's `call` (in a thread, as the route did) and as its `acall`."""

    def __init__(self, services: Any) -> None:
        self.services = services
        self.tenant = services.settings.tenant
        self.context = call_context(Principal(name="admin", role="admin", tenant=self.tenant), REST)

    def _entry_and_kind(self, name: str) -> tuple[Any, Any]:
        entry = self.services.toolbox.entry(self.tenant, name)
        assert entry is not None, name
        return entry, self.services.toolbox.kind_of(entry)

    def call(self, name: str, arguments: Any) -> ExecutionResult:
        entry, kind = self._entry_and_kind(name)
        return kind.call(self.tenant, entry, arguments, self.context, self.services.toolbox, 0)

    def acall(self, name: str, arguments: Any) -> ExecutionResult:
        entry, kind = self._entry_and_kind(name)

        async def awaited() -> ExecutionResult:
            return await kind.acall(self.tenant, entry, arguments, self.context, self.services.toolbox, 0)
        return anyio.run(awaited)


def same(result: ExecutionResult) -> ExecutionResult:
    return dataclasses.replace(result, duration_millis=None)


@pytest.fixture
def no_worker_thread(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Records every hand-off to anyio's worker threads (and still makes it)."""
    handed: list[Any] = []
    run_sync = anyio.to_thread.run_sync

    async def recorded(function: Any, *args: Any, **kwargs: Any) -> Any:
        handed.append(function)
        return await run_sync(function, *args, **kwargs)
    monkeypatch.setattr(anyio.to_thread, "run_sync", recorded)
    return handed


def test_an_awaited_call_answers_what_the_call_answers_without_a_worker_thread(
        services_and_api: tuple[Any, TestClient], upstream: Upstream, no_worker_thread: list[Any]) -> None:
    services, api = services_and_api
    city = [{"name": "city", "type": "string", "required": True, "location": "path"}]
    made(api, "weather", upstream, "/v1/weather/{city}{?units}",
         parameters=[*city, {"name": "units", "type": "string", "location": "query", "default": "metric"}])
    made(api, "temperature", upstream, "/v1/weather/{city}", parameters=city, response={"jmespath": "current.temp"})
    made(api, "posted", upstream, "/echo", method="POST", headers={"X-Fixed": "yes"}, fixedBody={"a": {"b": 1}},
         parameters=[{"name": "q", "type": "string", "location": "body", "bodyPath": "a.q"}])
    made(api, "teapot", upstream, "/status/{code}", parameters=[{"name": "code", "type": "integer", "location": "path"}])
    made(api, "short", upstream, "/text", response={"maxOutputChars": 100})
    made(api, "big", upstream, "/big")
    made(api, "deep", upstream, "/deep")
    made(api, "gzipped", upstream, "/gzip-bomb")
    made(api, "metadata", upstream, "/redirect", fixedQuery={"to": "http://169.254.169.254/latest"})
    made(api, "elsewhere", upstream, "/redirect", fixedQuery={"to": f"http://127.0.0.1:{upstream.port + 1}/x"})
    calls: list[tuple[str, dict[str, Any]]] = [
        ("weather", {"city": "Zürich", "units": "imperial"}), ("temperature", {"city": "Oslo"}), ("posted", {"q": "x"}),
        ("teapot", {"code": 418}), ("short", {}), ("big", {}), ("deep", {}), ("gzipped", {}), ("metadata", {}), ("elsewhere", {})]
    for name, arguments in calls:
        threaded = same(Caller(services).call(name, arguments))
        handed = len(no_worker_thread)
        awaited = same(Caller(services).acall(name, arguments))
        assert awaited == threaded, name
        assert len(no_worker_thread) == handed, f"{name}: a worker thread was used"
    results = {name: Caller(services).acall(name, arguments) for name, arguments in calls}
    assert results["weather"].output["city"] == "Z%C3%BCrich" and results["temperature"].output == 21.5
    assert results["teapot"].error.type == "http" and "418" in results["teapot"].error.message
    assert results["big"].error.message == "response body larger than 1048576 bytes"
    assert results["metadata"].error.type == "egress" and results["elsewhere"].error.type == "egress"
    assert upstream.last("/echo").json == {"a": {"b": 1, "q": "x"}}


def test_an_awaited_call_refuses_bad_arguments_as_the_call_does(services_and_api: tuple[Any, TestClient], upstream: Upstream) -> None:
    services, api = services_and_api
    made(api, "weather", upstream, "/v1/weather/{city}", parameters=[{"name": "city", "type": "string", "required": True, "location": "path"}])
    seen = len(upstream.seen)
    for arguments in ({}, {"city": 3}):
        with pytest.raises(InvalidInput) as threaded:
            Caller(services).call("weather", arguments)
        with pytest.raises(InvalidInput) as awaited:
            Caller(services).acall("weather", arguments)
        assert awaited.value.violations == threaded.value.violations
    assert len(upstream.seen) == seen


def test_a_tool_with_a_secret_is_called_in_a_worker_thread_and_its_secret_never_comes_back(
        services_and_api: tuple[Any, TestClient], upstream: Upstream, no_worker_thread: list[Any]) -> None:
    services, api = services_and_api
    assert api.post("/api/v1/admin/secrets", json={"id": "key", "value": KEY, "description": "k"}).status_code == 201
    made(api, "keyed", upstream, "/echo", auth={"type": "apiKey", "in": "header", "name": "X-Api-Key", "secret": "key"})
    handed = len(no_worker_thread)
    result = Caller(services).acall("keyed", {})
    assert len(no_worker_thread) == handed + 1
    assert upstream.last("/echo").headers["x-api-key"] == KEY
    assert KEY not in repr(result) and result.error is None


def test_a_changed_tool_is_seen_by_the_next_awaited_call(services_and_api: tuple[Any, TestClient], upstream: Upstream) -> None:
    services, api = services_and_api
    made(api, "temperature", upstream, "/v1/weather/{city}", parameters=[{"name": "city", "type": "string", "required": True, "location": "path"}],
         response={"jmespath": "current.temp"})
    assert Caller(services).acall("temperature", {"city": "Oslo"}).output == 21.5
    current = api.get(f"{TOOLS}/temperature")
    changed = {k: v for k, v in current.json().items() if k in ("description", "urlTemplate", "parameters")}
    answer = api.put(f"{TOOLS}/temperature", json={**changed, "response": {"jmespath": "current.wind"}}, headers={"If-Match": current.headers["ETag"]})
    assert answer.status_code == 200, answer.text
    assert Caller(services).acall("temperature", {"city": "Oslo"}).output == 3
