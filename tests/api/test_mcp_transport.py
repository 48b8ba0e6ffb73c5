"""MCP's streamable HTTP as the real clients use it (issue 28, finding 8): a GET asking to resume a
stream gets a clean refusal, JSON-RPC batches are served under 2025-03-26 and refused in one line
under later versions, and a tool's input schema says (and the call enforces) that no undeclared
argument is taken."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect

URL = "http://127.0.0.1:8000"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
CODE_MODULES = "/api/v1/admin/code-modules"
BATCHLESS = ("2025-06-18", "2025-11-25")


@pytest.fixture
def client(settings: Settings, shared_sandbox: object) -> Iterator[TestClient]:
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def publish(client: TestClient, name: str, source: str, parameters: list[dict[str, Any]] = ()) -> None:
    tool = {"inputParameters": list(parameters), "exposeInChat": True}
    expect(client.post(CODE_MODULES, json={"id": name, "description": f"The tool {name}.", "draftContent": source, "tool": tool}), 201)
    expect(client.post(f"{CODE_MODULES}/{name}/publish"), 200)


def open_session(client: TestClient, version: str, path: str = "/mcp") -> dict[str, str]:
    """The headers of a new session's later requests (a 2025-03-26 client sends no version header)."""
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}
    opened = client.post(path, json=initialize, headers=ACCEPT)
    assert opened.status_code == 200 and opened.json()["result"]["protocolVersion"] == version, opened.text
    session = {**ACCEPT, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
    if version != "2025-03-26":
        session["Mcp-Protocol-Version"] = version
    assert client.post(path, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session).status_code == 202
    return session


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


@pytest.mark.parametrize("path", ["/mcp", "/mcp/helpers"])
def test_a_get_asking_to_resume_a_stream_is_refused_cleanly(client: TestClient, path: str) -> None:
    publish(client, "echo", "exports.run = function (input) { return input; };")
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": "helpers", "tools": ["echo"]}), 201)
    session = open_session(client, "2025-11-25", path)

    resumed = client.get(path, headers={**session, "Accept": "text/event-stream", "Last-Event-ID": "0"})

    assert resumed.status_code == 400, resumed.text
    assert resumed.headers["content-type"].startswith("application/problem+json")
    problem = resumed.json()
    assert problem["code"] == "resumption-not-offered" and "Last-Event-ID" in problem["detail"]
    # the session is unharmed, and still answers
    listed = client.post(path, json=request(1, "tools/list"), headers=session)
    assert [t["name"] for t in listed.json()["result"]["tools"]] == ["echo"]


def test_a_batch_is_served_in_order_under_2025_03_26(client: TestClient) -> None:
    publish(client, "double", "exports.run = function (input) { return input.n * 2; };",
            [{"name": "n", "type": "integer", "required": True, "description": "a number"}])
    session = open_session(client, "2025-03-26")
    batch = [
        request("a", "tools/call", {"name": "double", "arguments": {"n": 21}}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nothing"}},
        request("b", "ping"),
        request(3, "tools/list"),
        {"jsonrpc": "2.0", "id": 4},
        request(5, "tools/call", {"name": "double", "arguments": {"n": 1}}),
    ]

    answered = client.post("/mcp", json=batch, headers=session)

    assert answered.status_code == 200, answered.text
    assert answered.headers["content-type"] == "application/json"
    answers = answered.json()
    assert [a["id"] for a in answers] == ["a", "b", 3, 4, 5]
    assert answers[0]["result"]["content"] == [{"type": "text", "text": "42"}]
    assert answers[1]["result"] == {}
    assert [t["name"] for t in answers[2]["result"]["tools"]] == ["double"]
    assert answers[3]["error"]["code"] == -32600 and answers[3]["error"]["message"].startswith("message 5 of the batch is not a valid JSON-RPC message")
    assert answers[4]["result"]["content"] == [{"type": "text", "text": "2"}]


def test_a_batch_of_notifications_only_is_accepted_with_202(client: TestClient) -> None:
    session = open_session(client, "2025-03-26")
    notification = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}

    accepted = client.post("/mcp", json=[notification, notification], headers=session)

    assert accepted.status_code == 202 and accepted.content == b""


def test_a_batch_needs_its_session_as_a_single_message_does(client: TestClient) -> None:
    open_session(client, "2025-03-26")
    refused = client.post("/mcp", json=[request(1, "ping")], headers={**ACCEPT, "Mcp-Session-Id": "not-a-session"})
    assert refused.status_code == 404


@pytest.mark.parametrize("version", BATCHLESS)
def test_a_batch_is_refused_in_one_line_where_the_version_has_none(client: TestClient, version: str) -> None:
    session = open_session(client, version)

    refused = client.post("/mcp", json=[request(1, "ping"), request(2, "tools/list")], headers=session)

    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert error["code"] == -32600
    assert error["message"] == f"JSON-RPC batches are not part of MCP {version}; send each message in a POST of its own"
    assert "\n" not in error["message"]


def test_the_batchs_version_is_the_sessions_even_without_a_version_header(client: TestClient) -> None:
    session = open_session(client, "2025-11-25")
    del session["Mcp-Protocol-Version"]
    refused = client.post("/mcp", json=[request(1, "ping")], headers=session)
    assert refused.status_code == 400 and "MCP 2025-11-25" in refused.json()["error"]["message"]


def test_a_tool_without_parameters_takes_no_arguments(client: TestClient) -> None:
    publish(client, "hello", "exports.run = function (input) { return 'hello'; };")
    session = open_session(client, "2025-11-25")

    tools = client.post("/mcp", json=request(1, "tools/list"), headers=session).json()["result"]["tools"]
    assert tools[0]["inputSchema"] == {"type": "object", "properties": {}, "additionalProperties": False}

    called = client.post("/mcp", json=request(2, "tools/call", {"name": "hello", "arguments": {}}), headers=session).json()["result"]
    assert called["content"] == [{"type": "text", "text": "hello"}] and not called.get("isError")
    extra = client.post("/mcp", json=request(3, "tools/call", {"name": "hello", "arguments": {"surprise": 1}}), headers=session).json()["result"]
    assert extra["isError"] is True and "surprise" in extra["content"][0]["text"]

    assert client.post("/api/v1/tools/hello/call", json={}).json()["output"] == "hello"
    refused = client.post("/api/v1/tools/hello/call", json={"surprise": 1})
    assert refused.status_code == 400, refused.text
    assert [e["field"] for e in refused.json()["errors"]] == ["input.surprise"]


def test_the_mcp_paths_are_served_as_the_router_would_serve_them(tmp_path: Any, shared_sandbox: object) -> None:
    """`api.mcp.McpFirst` takes `/mcp` and `/mcp/{serverId}` before the router's search: what it
    does not take (`/mcp/`, a deeper path) is the router's as before, and the metrics name each
    request by its route's template, never by the server's id."""
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token="operator-token-for-mcp-paths-1",
                        metrics_token="scraper-token-for-mcp-paths-01")
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        publish(client, "echo", "exports.run = function (input) { return input; };")
        expect(client.post("/api/v1/admin/mcp-servers", json={"id": "helpers", "tools": ["echo"]}), 201)
        for path in ("/mcp", "/mcp/helpers"):
            session = open_session(client, "2025-11-25", path)
            listed = client.post(path, json=request(1, "tools/list"), headers=session)
            assert [t["name"] for t in listed.json()["result"]["tools"]] == ["echo"], path
        # a server the tenant does not have: the gate's 404, as through the router
        unknown = client.post("/mcp/nobody", json=request(1, "tools/list"), headers=ACCEPT)
        assert unknown.status_code == 404 and unknown.headers["content-type"].startswith("application/problem+json")
        # the router's: a trailing slash is redirected to /mcp, a deeper path has no route
        slashed = client.post("/mcp/", json=request(1, "tools/list"), headers=ACCEPT, follow_redirects=False)
        assert slashed.status_code == 307 and slashed.headers["location"].endswith("/mcp")
        assert client.post("/mcp/helpers/more", json=request(1, "tools/list"), headers=ACCEPT).status_code == 404
        scraped = client.get("/metrics", headers={"Authorization": "Bearer scraper-token-for-mcp-paths-01"})
        assert scraped.status_code == 200, scraped.text
        routes = {line.split('route="')[1].split('"')[0] for line in scraped.text.splitlines()
                  if line.startswith("toolsmith_http_requests_total{")}
        assert {"/mcp", "/mcp/{server_id}"} <= routes and not any("helpers" in route or "nobody" in route for route in routes)
