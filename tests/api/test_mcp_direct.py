"""MCP `tools/call` of an open handshake-era session, answered in the request's own task as plain
JSON (api/mcp_direct.py, issue 15): the same answers as the SDK's session loop gives, for the same
callers only, without the session loop's hop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect

# An allowed Host (TOOLSMITH_MCP_ALLOWED_HOSTS): the test client's own, "testserver", is not.
URL = "http://127.0.0.1:8000"
VERSION = "2025-11-25"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


@pytest.fixture
def client(settings: Settings, shared_sandbox: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    """The admin's client; `client.through_manager` counts the requests the SDK's manager served."""
    served: list[str] = []
    handle = StreamableHTTPSessionManager.handle_request

    async def counted(self: Any, scope: Any, receive: Any, send: Any) -> None:
        served.append(scope["method"])
        await handle(self, scope, receive, send)

    monkeypatch.setattr(StreamableHTTPSessionManager, "handle_request", counted)
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        test_client.through_manager = served  # type: ignore[attr-defined]
        yield test_client


def publish(client: TestClient, name: str, source: str) -> None:
    tool = {"inputParameters": [{"name": "text", "type": "string", "required": False, "description": "a text"}], "exposeInChat": True}
    expect(client.post("/api/v1/admin/code-modules", json={"id": name, "description": f"The tool {name}.", "draftContent": source, "tool": tool}), 201)
    expect(client.post(f"/api/v1/admin/code-modules/{name}/publish"), 200)


def open_session(client: TestClient, path: str = "/mcp") -> str:
    opened = client.post(path, json=INITIALIZE, headers=ACCEPT)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    done = client.post(path, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers(session))
    assert done.status_code == 202
    return session


def headers(session: str, token: str = ADMIN_TOKEN) -> dict[str, str]:
    return {**ACCEPT, "Mcp-Session-Id": session, "Mcp-Protocol-Version": VERSION, "Authorization": f"Bearer {token}"}


def call(client: TestClient, session: str, name: str, arguments: Any = None, *, path: str = "/mcp", token: str = ADMIN_TOKEN,
         request_id: Any = 7) -> Any:
    params: dict[str, Any] = {"name": name} if name is not None else {}
    if arguments is not None:
        params["arguments"] = arguments
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return client.post(path, json=body, headers=headers(session, token))


def test_a_sessions_tool_call_is_answered_as_plain_json_without_the_session_loop(client: TestClient) -> None:
    publish(client, "shout", "exports.run = function (input) { log('shouting ' + input.text); return {loud: input.text.toUpperCase()}; };")
    session = open_session(client)
    served = len(client.through_manager)  # type: ignore[attr-defined]

    answered = call(client, session, "shout", {"text": "hi"}, request_id="a-1")

    assert answered.status_code == 200
    assert answered.headers["content-type"] == "application/json"
    assert answered.headers["mcp-session-id"] == session
    reply = answered.json()
    assert reply["jsonrpc"] == "2.0" and reply["id"] == "a-1"
    result = reply["result"]
    assert result["content"] == [{"type": "text", "text": '{"loud":"HI"}'}]
    assert result["structuredContent"] == {"loud": "HI"}
    assert result.get("isError", False) is False
    # the code's logs ride in `_meta`, as on the session loop
    assert result["_meta"]["toolsmith/logs"] == ["shouting hi"]
    # answered in the request's task: the SDK's manager never saw the call
    assert len(client.through_manager) == served  # type: ignore[attr-defined]


def test_failures_are_tool_errors_and_bad_requests_json_rpc_errors(client: TestClient) -> None:
    publish(client, "fails", "exports.run = function () { throw new TypeError('no way'); };")
    session = open_session(client)

    failed = call(client, session, "fails", {}).json()["result"]
    assert failed["isError"] is True and failed["content"][0]["text"] == "runtime: TypeError: no way"
    unknown = call(client, session, "nothing-here", {}).json()["result"]
    assert unknown["isError"] is True and unknown["content"][0]["text"].startswith("tool-not-found: this MCP server offers no tool 'nothing-here'")
    # no tool name: the spec's validation, as the SDK answers it
    invalid = call(client, session, None)
    assert invalid.status_code == 200 and invalid.json()["error"]["code"] == -32602


def test_a_session_answers_only_its_owner_on_its_server_while_it_lasts(client: TestClient) -> None:
    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": "other-server", "tools": ["echo"]}), 201)
    made = expect(client.post("/api/v1/admin/tokens", json={"name": "someone", "role": "admin"}), 201).json()
    session = open_session(client)
    assert call(client, session, "echo", {"text": "mine"}).json()["result"]["content"][0]["text"] == "mine"

    # another token, or the same token on another server's path: the session does not exist for them
    assert call(client, session, "echo", {"text": "x"}, token=made["token"]).status_code == 404
    assert call(client, session, "echo", {"text": "x"}, path="/mcp/other-server").status_code == 404
    # a session id nobody opened
    assert call(client, "f" * 32, "echo", {"text": "x"}).status_code == 404
    # ended by its client (DELETE): gone for its owner too
    assert client.delete("/mcp", headers=headers(session)).status_code == 200
    assert call(client, session, "echo", {"text": "x"}).status_code == 404


def test_other_requests_of_a_session_still_go_to_the_sdk(client: TestClient) -> None:
    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    session = open_session(client)
    served = len(client.through_manager)  # type: ignore[attr-defined]

    listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}, headers=headers(session))

    assert listed.status_code == 200 and listed.headers["content-type"] == "application/json"
    assert [tool["name"] for tool in listed.json()["result"]["tools"]] == ["echo"]
    assert len(client.through_manager) == served + 1  # type: ignore[attr-defined]


def test_a_2026_call_with_arguments_is_answered_without_listing_the_callers_tools(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server import _streamable_http_modern as modern

    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    served: list[str] = []
    serve_one = modern.serve_one

    async def counted(app: Any, dctx: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        served.append(method)
        return await serve_one(app, dctx, method, *args, **kwargs)

    monkeypatch.setattr(modern, "serve_one", counted)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "modern"}, "_meta": meta}}
    sent = {**ACCEPT, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}

    answered = client.post("/mcp", json=body, headers=sent)

    assert answered.status_code == 200 and answered.headers["content-type"] == "application/json", answered.text
    assert answered.json()["result"]["content"] == [{"type": "text", "text": "modern"}]
    # the Mcp-Param-* check took the schema from the caller's offer, not from a tools/list of it
    assert served == ["tools/call"]
