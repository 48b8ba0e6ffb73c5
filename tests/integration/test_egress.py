"""The egress module (`infrastructure/egress`) on its own, against real servers on 127.0.0.1: what
the `http.fetch` and MCP suites do not already show.

For external MCP tools: the connection goes to the addresses the declared name resolved to once
(a second, different DNS answer never reaches a socket), no request leaves the declared origin, no
proxy variable is honoured, and the body is capped. For `http.fetch`: one lookup per host for the
request and its redirects, so a rebinding answer between two hops is never used.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.responses import PlainTextResponse, RedirectResponse

from infrastructure.declared_tools import load_declared_tools
from infrastructure.egress.policy import EgressError
from infrastructure.egress.transport import declared_origin_client
from sandbox.net import AllowList, Fetcher
from tests.adversarial.conftest import Listener
from tests.helpers import free_port
from tests.integration.test_declared_mcp_tool import weather_server
from tests.integration.test_fetch import Server, serving, tls_server  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def elsewhere() -> Iterator[Listener]:
    listener = Listener()
    yield listener
    listener.socket.close()


@pytest.fixture(scope="module")
def mcp_port(elsewhere: Listener) -> Iterator[int]:
    """The weather MCP server, plus `/away` (a 307 to another port) and `/big` (a 2 MB body). It
    is reached under made-up names too: its Host check (the SDK's DNS-rebinding guard) is told the
    address it listens on."""
    inner = weather_server()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = [(k, v) for k, v in scope["headers"] if k != b"host"] + [(b"host", f"127.0.0.1:{port}".encode())]
            scope = {**scope, "headers": headers}
        if scope["type"] == "http" and scope["path"] == "/away":
            return await RedirectResponse(f"http://127.0.0.1:{elsewhere.port}/mcp", status_code=307)(scope, receive, send)
        if scope["type"] == "http" and scope["path"] == "/big":
            return await PlainTextResponse("x" * 2_000_000)(scope, receive, send)
        return await inner(scope, receive, send)

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the MCP test server did not start within 10 s"
        time.sleep(0.05)
    yield port
    server.should_exit = True
    thread.join(timeout=10)


class Resolver:
    """A DNS stub: each lookup of a name gets the next of its answers (the last one repeats)."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        given = self.answers[host]
        return given[min(len(self.calls) - 1, len(given) - 1)]


async def add_through(http: httpx2.AsyncClient, url: str) -> Any:
    async with http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy", cache=None) as client:
            return (await client.call_tool("add", {"a": 40, "b": 2})).structured_content


# -- external MCP tools --------------------------------------------------------------------------------


def test_an_mcp_call_connects_to_the_address_resolved_once_and_never_to_a_second_answer(mcp_port: int) -> None:
    # The first answer is the server; a later lookup would get an address nothing answers on.
    dns = Resolver({"weather.test": [["127.0.0.1"], ["10.255.255.1"]]})
    http = declared_origin_client(f"http://weather.test:{mcp_port}/mcp", seconds=10, resolve=dns)
    assert anyio.run(add_through, http, f"http://weather.test:{mcp_port}/mcp") == {"result": 42}
    # initialize, notifications/initialized, tools/call and the session's DELETE: one lookup
    assert dns.calls == ["weather.test"]


def test_a_name_that_does_not_resolve_is_a_connect_error_naming_it(mcp_port: int) -> None:
    http = declared_origin_client(f"http://nowhere.test:{mcp_port}/mcp", seconds=5, resolve=Resolver({}))

    async def get() -> None:
        async with http:
            await http.get(f"http://nowhere.test:{mcp_port}/mcp")

    with pytest.raises(httpx2.ConnectError, match="could not resolve nowhere.test"):
        anyio.run(get)


@pytest.mark.parametrize("target", ["http://127.0.0.1:{other}/mcp", "https://127.0.0.1:{port}/mcp", "http://localhost:{port}/mcp"])
def test_a_request_off_the_declared_origin_is_refused_before_any_connection(mcp_port: int, elsewhere: Listener, target: str) -> None:
    http = declared_origin_client(f"http://127.0.0.1:{mcp_port}/mcp", seconds=5)
    seen_before = len(elsewhere.connections)

    async def get() -> None:
        async with http:
            await http.get(target.format(other=elsewhere.port, port=mcp_port))

    with pytest.raises(EgressError, match=f"is not the declared origin http://127.0.0.1:{mcp_port}"):
        anyio.run(get)
    assert len(elsewhere.connections) == seen_before


def test_a_redirect_off_the_declared_origin_is_refused_even_when_the_client_follows_redirects(mcp_port: int, elsewhere: Listener) -> None:
    http = declared_origin_client(f"http://127.0.0.1:{mcp_port}/mcp", seconds=5)
    seen_before = len(elsewhere.connections)

    async def get() -> None:
        async with http:
            await http.get(f"http://127.0.0.1:{mcp_port}/away", follow_redirects=True)

    with pytest.raises(EgressError, match=f"127.0.0.1:{elsewhere.port} is not the declared origin"):
        anyio.run(get)
    assert len(elsewhere.connections) == seen_before


def test_an_mcp_response_body_is_capped(mcp_port: int) -> None:
    http = declared_origin_client(f"http://127.0.0.1:{mcp_port}/mcp", seconds=5, max_response_bytes=1_000_000)

    async def get() -> None:
        async with http:
            await http.get(f"http://127.0.0.1:{mcp_port}/big")

    with pytest.raises(EgressError, match="response body larger than 1000000 bytes"):
        anyio.run(get)


def test_https_to_a_pinned_address_still_verifies_the_certificate_against_the_name(tls_server: tuple[Server, Path, list[str]]) -> None:
    server, cert, sni = tls_server
    trusted = ssl.create_default_context(cafile=str(cert))
    dns = Resolver({"secure.test": [["127.0.0.1"]], "other.test": [["127.0.0.1"]]})

    async def get(host: str) -> httpx2.Response:
        async with declared_origin_client(f"https://{host}:{server.port}/", seconds=5, resolve=dns, ssl_context=trusted) as http:
            return await http.get(f"https://{host}:{server.port}/hello")

    response = anyio.run(get, "secure.test")
    assert (response.status_code, response.text, sni) == (200, "hello ✓", ["secure.test"])
    # the same address under a name the certificate does not carry
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        anyio.run(get, "other.test")


def declared_tool(tmp_path: Path, url: str) -> Any:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"mcp": [{"name": "remote_add", "description": "add over MCP", "url": url,
                                         "remoteName": "add", "inputSchema": {"type": "object"}}]}))
    [tool] = load_declared_tools(path)
    return tool


def test_a_declared_mcp_tool_ignores_proxy_variables(tmp_path: Path, mcp_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = Listener()
    try:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        result = declared_tool(tmp_path, f"http://127.0.0.1:{mcp_port}/mcp").call({"a": 1, "b": 2}, {})
        assert (result.output, result.error) == ({"result": 3}, None)
        assert proxy.connections == []
    finally:
        proxy.socket.close()


def test_a_declared_url_in_a_numeric_disguise_is_refused_by_egress(tmp_path: Path, mcp_port: int) -> None:
    result = declared_tool(tmp_path, f"http://127.1:{mcp_port}/mcp").call({"a": 1, "b": 2}, {})
    assert result.output is None and result.error is not None
    assert result.error.message == f"127.1:{mcp_port} refused by egress: declared URL cannot be used: IPv4 address in non-standard form: 127.1"


# -- http.fetch: one lookup per host for a request and its redirects -------------------------------------


@pytest.fixture
def server() -> Iterator[Server]:
    yield from serving(Server())


def test_a_redirect_to_the_same_host_reuses_the_addresses_resolved_for_the_first_request(server: Server) -> None:
    # HTTP/1.0: each answer closes its connection, so the redirect opens a second one. A second
    # lookup would get the metadata address and be refused.
    dns = Resolver({"pinned.test": [["127.0.0.1"], ["169.254.169.254"]]})
    f = Fetcher(AllowList.parse(f"pinned.test:{server.port}"), resolve=dns)
    answer = json.loads(f.fetch(json.dumps({"url": f"http://pinned.test:{server.port}/redirect?to=/hello"}), 5))
    assert (answer.get("status"), answer.get("text")) == (200, "hello ✓"), answer
    assert server.seen == ["/redirect?to=/hello", "/hello"]
    assert dns.calls == ["pinned.test"]


def test_each_fetch_resolves_again(server: Server) -> None:
    # Pinned for one request and its redirects, not for the life of the worker: the second fetch
    # sees the second answer, and refuses it.
    dns = Resolver({"pinned.test": [["127.0.0.1"], ["169.254.169.254"]]})
    f = Fetcher(AllowList.parse(f"pinned.test:{server.port}"), resolve=dns)
    url = json.dumps({"url": f"http://pinned.test:{server.port}/hello"})
    assert json.loads(f.fetch(url, 5))["text"] == "hello ✓"
    assert json.loads(f.fetch(url, 5)) == {"error": "metadata address refused: pinned.test resolves to 169.254.169.254"}
