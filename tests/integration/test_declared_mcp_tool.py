"""External MCP tools against a real MCP server: the SDK's `MCPServer` over streamable HTTP, served
by uvicorn on a free port, declared in a tools file and called through `DeclaredTool.call`."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from starlette.responses import PlainTextResponse

from infrastructure.declared_tools import load_declared_tools
from domain.catalog import DeclaredTool
from tests.helpers import free_port

SECRET = "s3cr3t-weather-token"


def weather_server() -> Any:
    server = MCPServer("weather")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails, saying why."""
        raise ToolError(reason)

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The Authorization header this call came with."""
        return (ctx.headers or {}).get("authorization", "(none)")

    @server.tool()
    def leak(ctx: Context) -> str:
        """Fails, quoting the caller's credentials back (a careless server)."""
        raise ToolError(f"token {(ctx.headers or {}).get('authorization')} is not allowed here")

    @server.tool(structured_output=False)
    def shout(text: str) -> str:
        """Text content only, no structured content."""
        return text.upper()

    @server.tool()
    async def slow() -> str:
        """Takes two seconds."""
        await asyncio.sleep(2)
        return "late"

    app = server.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        # A server that refuses a wrong token before MCP sees the request, as an API gateway would.
        authorization = dict(scope.get("headers", [])).get(b"authorization")
        if scope["type"] == "http" and authorization not in (None, f"Bearer {SECRET}".encode()):
            return await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
        return await app(scope, receive, send)

    return guarded


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(weather_server(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the MCP test server did not start within 10 s"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    server.should_exit = True
    thread.join(timeout=10)


def declared(tmp_path: Path, url: str, remote_name: str, **more: Any) -> DeclaredTool:
    document = {"mcp": [{"name": f"remote_{remote_name}", "description": f"{remote_name} over MCP", "url": url,
                         "remoteName": remote_name, "inputSchema": {"type": "object"}, **more}]}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(document))
    [tool] = load_declared_tools(path)
    return tool


def test_a_remote_tool_returns_its_structured_content(tmp_path: Path, server_url: str) -> None:
    result = declared(tmp_path, server_url, "add").call({"a": 40, "b": 2}, {})
    assert result.error is None
    assert result.output == {"result": 42}
    assert result.duration_millis > 0


def test_a_remote_tool_without_structured_content_returns_its_text(tmp_path: Path, server_url: str) -> None:
    assert declared(tmp_path, server_url, "shout").call({"text": "hi"}, {}).output == "HI"


def test_a_remote_error_result_is_an_mcp_error_with_its_text(tmp_path: Path, server_url: str) -> None:
    result = declared(tmp_path, server_url, "fail").call({"reason": "the sky fell"}, {})
    assert result.output is None
    assert result.error is not None and result.error.type == "mcp"
    assert "the sky fell" in result.error.message


def test_the_headers_reach_the_server_with_the_variable_expanded(tmp_path: Path, server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEATHER_TOKEN", SECRET)
    tool = declared(tmp_path, server_url, "whoami", headers={"Authorization": "Bearer ${WEATHER_TOKEN}"})
    # the server answers only the expanded token (any other is a 401); quoted back, it is redacted
    assert tool.call({}, {}).output == {"result": "Bearer [secret]"}


def test_a_refused_token_is_an_error_naming_the_status_not_the_token(tmp_path: Path, server_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEATHER_TOKEN", "not-the-token")
    result = declared(tmp_path, server_url, "whoami", headers={"Authorization": "Bearer ${WEATHER_TOKEN}"}).call({}, {})
    assert result.error is not None and result.error.type == "mcp"
    assert "answered HTTP 401" in result.error.message
    assert "not-the-token" not in result.error.message


def test_a_server_that_quotes_the_secret_back_does_not_leak_it_in_the_result(
    tmp_path: Path, server_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEATHER_TOKEN", SECRET)
    result = declared(tmp_path, server_url, "leak", headers={"Authorization": "Bearer ${WEATHER_TOKEN}"}).call({}, {})
    assert result.error is not None and result.error.message == "Error executing tool leak: token Bearer [secret] is not allowed here"


def test_no_log_of_a_call_holds_the_secret_it_sends(
    tmp_path: Path, server_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("WEATHER_TOKEN", SECRET)
    tool = declared(tmp_path, server_url, "add", headers={"Authorization": "Bearer ${WEATHER_TOKEN}"})
    with caplog.at_level(logging.DEBUG):
        assert tool.call({"a": 1, "b": 2}, {}).output == {"result": 3}
        failed = declared(tmp_path, server_url.replace("/mcp", "/nowhere"), "add", headers={"Authorization": "Bearer ${WEATHER_TOKEN}"})
        assert failed.call({"a": 1, "b": 2}, {}).error is not None
    # toolsmith's logs, the SDK's and the HTTP client's, down to DEBUG
    assert [r.name for r in caplog.records if r.name.startswith(("toolsmith", "mcp.client", "httpx2", "httpcore2"))]
    assert not [r for r in caplog.records if SECRET in r.getMessage()]


def test_an_unreachable_server_is_an_error_naming_its_host_without_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEATHER_TOKEN", SECRET)
    port = free_port()
    tool = declared(tmp_path, f"http://127.0.0.1:{port}/mcp", "add", headers={"Authorization": "Bearer ${WEATHER_TOKEN}"})
    result = tool.call({"a": 1, "b": 2}, {})
    assert result.error is not None and result.error.type == "mcp"
    assert result.error.message.startswith(f"127.0.0.1:{port} unreachable: ")
    assert SECRET not in result.error.message and "Authorization" not in result.error.message


def test_a_server_slower_than_the_timeout_is_an_error_within_the_timeout(tmp_path: Path, server_url: str) -> None:
    tool = declared(tmp_path, server_url, "slow", timeoutMillis=500)
    started = time.monotonic()
    result = tool.call({}, {})
    assert time.monotonic() - started < 2  # by its 500 ms timeout, not at the server's answer (2 s)
    assert result.error is not None and result.error.type == "mcp"
    assert result.error.message.endswith("unreachable: no answer within 500 ms")


def test_a_wrong_path_is_an_error_naming_the_status(tmp_path: Path, server_url: str) -> None:
    result = declared(tmp_path, server_url.replace("/mcp", "/nowhere"), "add").call({"a": 1, "b": 2}, {})
    assert result.error is not None and "answered HTTP 404" in result.error.message


def test_calls_from_several_threads_at_once_each_get_their_answer(tmp_path: Path, server_url: str) -> None:
    # The API calls tools from its worker threads: each call runs its own event loop.
    tool = declared(tmp_path, server_url, "add")
    results: dict[int, Any] = {}

    def call(n: int) -> None:
        results[n] = tool.call({"a": n, "b": 1000}, {}).output

    threads = [threading.Thread(target=call, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == {n: {"result": n + 1000} for n in range(8)}
