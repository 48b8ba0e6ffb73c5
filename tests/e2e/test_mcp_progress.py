"""Progress and logs during a call (issue 33, point 6), with the official Python SDK client in both
eras against a real `toolsmith serve`: `ai.progress` reaches the client's progress callback when
the call carries a progress token, the module's `log()` lines reach its logging callback at the
level it asked for (`logging/setLevel` in the session era, the request's `_meta` level in
2026-07-28) and stay in the call's logs, and a module that reports progress in a tight loop
neither floods the client nor hangs."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.conftest import Server, printed_tokens
from tests.sandbox_service import SECRET, SandboxService, running_service
from tests.helpers import expect

CODE_MODULES = "/api/v1/admin/code-modules"
MODERN = "2026-07-28"
PAUSE = "function pause(ms) { var until = Date.now() + ms; while (Date.now() < until) {} }\n"
STEPS = ("exports.run = function () {\n" + PAUSE +
         "  log('started'); ai.progress(0, 3, 'first'); pause(80);\n"
         "  ai.progress(1, 3); pause(80); log('half way');\n"
         "  ai.progress(3, 3, 'done'); log('ended'); return 'three steps';\n};\n")
FLOOD = ("exports.run = function () {\n  var n = 0, until = Date.now() + 600;\n"
         "  while (Date.now() < until) { n++; ai.progress(n, null, 'item ' + n); }\n  return n;\n};\n")


def publish(server: Server, name: str, source: str) -> None:
    with server.client() as http:
        body = {"id": name, "description": f"The tool {name}.", "draftContent": source, "tool": {"inputParameters": [], "exposeInChat": True, "timeoutMillis": 5000}}
        expect(http.post(CODE_MODULES, json=body), 201)
        expect(http.post(f"{CODE_MODULES}/{name}/publish"), 200)


@asynccontextmanager
async def client(server: Server, mode: str, **options: Any) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"}, timeout=httpx2.Timeout(30, read=300)) as http:
        async with Client(streamable_http_client(server.url + "/mcp", http_client=http), mode=mode, read_timeout_seconds=30, **options) as connected:
            yield connected


@pytest.fixture(scope="module")
def sandbox_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxService]:
    with running_service(tmp_path_factory.mktemp("sandbox-service"), CODESANDBOX_SECRET=SECRET) as service:
        yield service


@pytest.fixture
def remote_server(tmp_path: Path, sandbox_service: SandboxService) -> Iterator[Server]:
    """`toolsmith serve` whose code runs in a `toolsmith sandbox` service (CODESANDBOX_URL)."""
    running = Server(data_dir=tmp_path / "data", env={"CODESANDBOX_URL": sandbox_service.url, "CODESANDBOX_SECRET": SECRET}).start()
    running.token = printed_tokens(running.output)[0]
    yield running
    if running.process and running.process.poll() is None:
        running.stop()


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_progress_and_log_lines_reach_the_client_while_the_call_runs(server: Server, mode: str) -> None:
    steps_are_told_while_they_run(server, mode)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_progress_and_log_lines_reach_the_client_while_the_call_runs_on_a_remote_sandbox(
        remote_server: Server, sandbox_service: SandboxService, mode: str) -> None:
    with remote_server.client() as http:
        assert http.get("/healthz").json()["sandbox"] == sandbox_service.url  # the code runs there
    steps_are_told_while_they_run(remote_server, mode)


def steps_are_told_while_they_run(server: Server, mode: str) -> None:
    publish(server, "steps", STEPS)
    progress: list[tuple[float, float | None, str | None, float]] = []
    lines: list[tuple[str, Any, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message, time.monotonic()))

    async def on_log(params: Any) -> None:
        lines.append((params.level, params.data, params.logger))

    async def scenario() -> Any:
        options = {"logging_callback": on_log} | ({"log_level": "info"} if mode == MODERN else {})
        async with client(server, mode, **options) as connected:
            if mode != MODERN:
                await connected.set_logging_level("debug")
            started = time.monotonic()
            result = await connected.call_tool("steps", {}, progress_callback=on_progress)
            return result, started, time.monotonic()

    result, started, ended = anyio.run(scenario)
    assert not result.is_error and result.content[0].text == "three steps"
    assert [(d, t, m) for d, t, m, _ in progress] == [(0, 3, "first"), (1, 3, None), (3, 3, "done")]
    # They came while it ran, not all at the end: the first well before the answer.
    assert progress[0][3] < ended - 0.1, (progress, started, ended)
    assert lines == [("info", "started", "steps"), ("info", "half way", "steps"), ("info", "ended", "steps")]
    # ... and the call's logs still hold them.
    assert result.meta["toolsmith/logs"] == ["started", "half way", "ended"]


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_without_a_token_or_a_level_nothing_is_sent_and_a_higher_level_filters_lines(server: Server, mode: str) -> None:
    publish(server, "steps", STEPS)
    lines: list[Any] = []

    async def on_log(params: Any) -> None:
        lines.append(params)

    async def scenario(level: str | None) -> Any:
        options = {"logging_callback": on_log} | ({"log_level": level} if mode == MODERN and level else {})
        async with client(server, mode, **options) as connected:
            if mode != MODERN and level:
                await connected.set_logging_level(level)
            return await connected.call_tool("steps", {})

    plain = anyio.run(scenario, None)
    assert not plain.is_error and lines == []
    warned = anyio.run(scenario, "warning")  # a module's lines are at info: none goes out
    assert not warned.is_error and lines == [] and warned.meta["toolsmith/logs"] == ["started", "half way", "ended"]


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_a_flood_of_progress_reports_is_thinned_and_the_call_ends(server: Server, mode: str) -> None:
    publish(server, "flood", FLOOD)
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async def scenario() -> tuple[Any, float]:
        async with client(server, mode) as connected:
            started = time.monotonic()
            with anyio.fail_after(20):
                result = await connected.call_tool("flood", {}, progress_callback=on_progress)
            return result, time.monotonic() - started

    result, seconds = anyio.run(scenario)
    assert not result.is_error
    reports = int(result.content[0].text)
    assert reports > 1_000, reports  # the module reported thousands of times in 0.6 s
    # At most one every 50 ms (and the last one held back): about a dozen, never thousands.
    assert 2 <= len(progress) <= 0.6 / 0.05 + 3, progress
    assert progress == sorted(set(progress)) and progress[-1] == reports  # increasing, the last state kept
    assert seconds < 10


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_tools_list_carries_the_annotations_and_icons_in_both_eras(server: Server, mode: str) -> None:
    icon = {"src": "https://example.com/steps.png", "mimeType": "image/png", "sizes": ["48x48"]}
    with server.client() as http:
        body = {"id": "titled", "description": "Counts steps.", "draftContent": "exports.run = function () { return 1; };",
                "tool": {"inputParameters": [], "exposeInChat": True, "annotations": {"title": "Steps"}, "icons": [icon]}}
        expect(http.post(CODE_MODULES, json=body), 201)
        expect(http.post(f"{CODE_MODULES}/titled/publish"), 200)

    async def scenario() -> Any:
        async with client(server, mode) as connected:
            return {tool.name: tool for tool in (await connected.list_tools()).tools}

    tool = anyio.run(scenario)["titled"]
    assert tool.annotations.title == "Steps" and tool.annotations.read_only_hint is True
    assert tool.annotations.open_world_hint is False and tool.annotations.idempotent_hint is True
    assert [i.model_dump(by_alias=True, exclude_none=True) for i in tool.icons] == [icon]
