"""MCP `tools/call` of an open handshake-era session, answered in the request's own task as plain
JSON (api/mcp_direct.py, issue 15): the same answers as the SDK's session loop gives, for the same
callers only, without the session loop's hop."""

from __future__ import annotations

import json

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from api.mcp_direct import FastCalls
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


async def declined(*_: Any) -> bool:
    return False


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

    # The SDK's own path, as a call takes it whenever FastCalls declines (a tracer set, say).
    monkeypatch.setattr(FastCalls, "answer", declined)
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


MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


def modern_call(client: TestClient, name: Any, arguments: Any = None, *, path: str = "/mcp", extra: dict[str, str] | None = None,
                token: str = ADMIN_TOKEN) -> Any:
    params: dict[str, Any] = {"name": name, "_meta": MODERN_META}
    if arguments is not None:
        params["arguments"] = arguments
    sent = {**ACCEPT, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": str(name),
            "Authorization": f"Bearer {token}", **(extra or {})}
    return client.post(path, json={"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}, headers=sent)


def without_duration(answer: Any) -> Any:
    reply = answer.json()
    reply.get("result", {}).get("_meta", {}).pop("toolsmith/durationMillis", None)
    return reply


def test_a_plain_2026_call_is_answered_without_the_sdk_as_the_sdk_answers_it(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server import _streamable_http_modern as modern

    publish(client, "shout", "exports.run = function (input) { log('shouting'); return {loud: input.text.toUpperCase()}; };")
    served: list[str] = []
    serve_one = modern.serve_one

    async def counted(app: Any, dctx: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        served.append(method)
        return await serve_one(app, dctx, method, *args, **kwargs)

    monkeypatch.setattr(modern, "serve_one", counted)
    fast = modern_call(client, "shout", {"text": "hi"})
    assert served == [] and len(client.through_manager) == 0  # type: ignore[attr-defined]
    with monkeypatch.context() as sdk:
        sdk.setattr(FastCalls, "answer", declined)
        slow = modern_call(client, "shout", {"text": "hi"})
    assert served == ["tools/call"]

    assert fast.status_code == slow.status_code == 200
    assert fast.headers["content-type"] == slow.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in fast.headers
    assert without_duration(fast) == without_duration(slow)
    assert fast.json()["result"]["structuredContent"] == {"loud": "HI"}
    # failures, refusals and invalid params: as the SDK answers them
    for name, arguments in (("nothing-here", {}), ("shout", {"text": "x", "extra": 1}), (None, None)):
        fast = modern_call(client, name, arguments)
        with monkeypatch.context() as sdk:
            sdk.setattr(FastCalls, "answer", declined)
            slow = modern_call(client, name, arguments)
        assert (fast.status_code, without_duration(fast)) == (slow.status_code, without_duration(slow)), name


def test_a_tool_changed_or_a_server_gone_is_seen_by_the_very_next_call_of_either_era(client: TestClient) -> None:
    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": "side", "tools": ["echo"]}), 201)
    session = open_session(client)
    side = open_session(client, "/mcp/side")
    assert call(client, session, "echo", {"text": "a"}).json()["result"]["content"][0]["text"] == "a"
    assert modern_call(client, "echo", {"text": "b"}, path="/mcp/side").json()["result"]["content"][0]["text"] == "b"

    # the enable switch is live (no publication needed)
    expect(client.put("/api/v1/admin/code-modules/echo", json={"tool": {"enabled": False, "exposeInChat": True}}), 200)
    for answered in (call(client, session, "echo", {"text": "a"}), modern_call(client, "echo", {"text": "b"})):
        result = answered.json()["result"]
        assert result["isError"] is True and result["content"][0]["text"].startswith("tool-not-found"), result

    expect(client.delete("/api/v1/admin/mcp-servers/side"), 204)
    for answered in (call(client, side, "echo", {"text": "a"}, path="/mcp/side"), modern_call(client, "echo", {"text": "b"}, path="/mcp/side")):
        assert answered.status_code == 404 and answered.headers["content-type"] == "application/problem+json", answered.text


def test_a_revoked_token_is_refused_at_once_on_the_fast_path(client: TestClient) -> None:
    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    made = expect(client.post("/api/v1/admin/tokens", json={"name": "brief", "role": "admin"}), 201).json()
    session = open_session_as(client, made["token"])
    assert call(client, session, "echo", {"text": "a"}, token=made["token"]).status_code == 200
    assert modern_call(client, "echo", {"text": "b"}, token=made["token"]).status_code == 200

    expect(client.delete(f"/api/v1/admin/tokens/{made['id']}"), 204)
    assert call(client, session, "echo", {"text": "a"}, token=made["token"]).status_code == 401
    assert modern_call(client, "echo", {"text": "b"}, token=made["token"]).status_code == 401


def open_session_as(client: TestClient, token: str) -> str:
    opened = client.post("/mcp", json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {token}"})
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    done = client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers(session, token))
    assert done.status_code == 202
    return session


def test_a_param_header_the_sdk_refuses_is_refused_before_the_tool_runs(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server import _streamable_http_modern as modern
    from mcp.shared.inbound import HEADER_MISMATCH, InboundLadderRejection

    from api import mcp_direct
    from application.toolbox import Toolbox

    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    ran: list[str] = []
    toolbox_call, toolbox_acall = Toolbox.call, Toolbox.acall

    def counted(self: Any, tenant: str, name: str, *args: Any, **kwargs: Any) -> Any:
        ran.append(name)
        return toolbox_call(self, tenant, name, *args, **kwargs)

    async def acounted(self: Any, tenant: str, name: str, *args: Any, **kwargs: Any) -> Any:
        ran.append(name)
        return await toolbox_acall(self, tenant, name, *args, **kwargs)

    def refuse(schema: Any, arguments: Any, sent: Any) -> Any:
        value = sent.get("mcp-param-text")
        return None if value is None else InboundLadderRejection(code=HEADER_MISMATCH, message="Mcp-Param-Text does not match")

    monkeypatch.setattr(Toolbox, "call", counted)
    monkeypatch.setattr(Toolbox, "acall", acounted)
    monkeypatch.setattr(mcp_direct, "validate_mcp_param_headers", refuse)
    monkeypatch.setattr(modern, "validate_mcp_param_headers", refuse)
    # (A tool's schema as if it declared an `x-mcp-header`: only then is there anything to check.)
    monkeypatch.setattr(mcp_direct, "declares_headers", lambda entry: True)

    for _ in range(2):  # the offer taken afresh, then kept
        refused = modern_call(client, "echo", {"text": "a"}, extra={"Mcp-Param-Text": "b"})
        assert refused.status_code == 400 and refused.json()["error"]["code"] == HEADER_MISMATCH, refused.text
    assert ran == []
    assert modern_call(client, "echo", {"text": "a"}).status_code == 200 and ran == ["echo"]
    assert modern_call(client, "echo", {"text": "a"}).status_code == 200 and ran == ["echo", "echo"]


def test_a_param_header_of_a_tool_that_declares_none_is_answered_as_the_sdk_answers_it(client: TestClient,
                                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from api import mcp_direct

    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    fast = modern_call(client, "echo", {"text": "a"}, extra={"Mcp-Param-Text": "b"})
    monkeypatch.setattr(mcp_direct.FastCalls, "answer", not_answered)
    through_sdk = modern_call(client, "echo", {"text": "a"}, extra={"Mcp-Param-Text": "b"})
    assert fast.status_code == through_sdk.status_code == 200, (fast.text, through_sdk.text)
    assert without_duration(fast) == without_duration(through_sdk)
    assert fast.json()["result"]["content"] == [{"type": "text", "text": "a"}]


@pytest.mark.parametrize("lines", [
    [("Mcp-Name", "other")],  # the name header disagrees with the body's
    [("Mcp-Method", "tools/list")],  # the method header disagrees
    [("Mcp-Protocol-Version", "2025-06-18")],  # the version header disagrees with the envelope's
    [("Mcp-Method", "tools/call"), ("Mcp-Method", "tools/call")],  # a routing header twice
    [("Mcp-Name", "echo"), ("Mcp-Name", "echo")],
    [("Accept", "text/html")],  # no JSON accepted
    [("Accept", "application/json"), ("Accept", "text/html")],  # the first Accept counts
    [("Content-Type", "text/plain")],  # the transport's Content-Type check (its verdict kept per value)
    [("Content-Type", "application/json"), ("Content-Type", "text/plain")],  # the first Content-Type counts
], ids=["name", "method", "version", "method-twice", "name-twice", "no-json", "accept-twice", "not-json", "content-type-twice"])
def test_a_2026_call_whose_headers_the_sdk_checks_is_answered_as_the_sdk_answers_it(
        client: TestClient, monkeypatch: pytest.MonkeyPatch, lines: list[tuple[str, str]]) -> None:
    from api import mcp_direct

    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "a"}, "_meta": MODERN_META}}
    sent = {"Accept": ACCEPT["Accept"], "Content-Type": "application/json", "Mcp-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call", "Mcp-Name": "echo", "Authorization": f"Bearer {ADMIN_TOKEN}"}
    replaced = {name.lower() for name, _ in lines}
    headers = [(name, value) for name, value in sent.items() if name.lower() not in replaced] + lines

    def post() -> Any:
        return client.post("/mcp", content=json.dumps(body), headers=headers)

    for _ in range(2):  # the verdict made, then kept
        fast = post()
    monkeypatch.setattr(mcp_direct.FastCalls, "answer", not_answered)
    through_sdk = post()
    assert fast.status_code == through_sdk.status_code, (fast.text, through_sdk.text)
    if lines in ([("Accept", "application/json"), ("Accept", "text/html")],
                 [("Content-Type", "application/json"), ("Content-Type", "text/plain")]):
        assert fast.status_code == 200 and without_duration(fast) == without_duration(through_sdk)
    else:  # refused, in the SDK's words
        assert fast.status_code != 200 or "error" in fast.json(), fast.text
        assert fast.text == through_sdk.text


async def not_answered(*args: Any, **kwargs: Any) -> bool:
    return False


def test_with_a_tracer_configured_every_call_goes_through_the_sdks_span(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.server._otel import OpenTelemetryMiddleware

    from api import mcp_direct

    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    session = open_session(client)
    spans: list[str] = []
    middleware = OpenTelemetryMiddleware.__call__

    async def counted(self: Any, ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call":
            spans.append(ctx.method)
        return await middleware(self, ctx, call_next)

    monkeypatch.setattr(OpenTelemetryMiddleware, "__call__", counted)
    assert call(client, session, "echo", {"text": "a"}).status_code == 200
    assert modern_call(client, "echo", {"text": "b"}).status_code == 200
    assert spans == []
    # a tracer provider set (any but the API's default proxy, which records nothing: how it is
    # read, tests/unit/test_mcp_sdk.py; a provider set here would stay with the tracers that found it)
    monkeypatch.setattr(mcp_direct, "tracer_provider_set", lambda: True)
    assert call(client, session, "echo", {"text": "a"}).json()["result"]["content"][0]["text"] == "a"
    assert modern_call(client, "echo", {"text": "b"}).json()["result"]["content"][0]["text"] == "b"
    assert spans == ["tools/call", "tools/call"]


def test_a_callers_offer_is_kept_while_the_store_stands_still_and_taken_again_once_it_moves(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from api import mcp_direct

    publish(client, "echo", "exports.run = function (input) { return input.text; };")
    publish(client, "other", "exports.run = function (input) { return 'other'; };")
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": "narrow", "description": "n", "allowedTools": ["echo"]}), 201)
    caller = expect(client.post("/api/v1/admin/tokens", json={"name": "a caller", "role": "caller", "usageProfile": "narrow"}), 201).json()["token"]
    taken: list[str] = []
    take_offer = mcp_direct.take_offer

    def counted(services: Any, principal: Any, server_id: Any) -> Any:
        taken.append(principal.role)
        return take_offer(services, principal, server_id)

    monkeypatch.setattr(mcp_direct, "take_offer", counted)
    session = open_session_as(client, caller)

    def text(answered: Any) -> str:
        return answered.json()["result"]["content"][0]["text"]

    for _ in range(3):
        assert text(call(client, session, "echo", {"text": "a"}, token=caller)) == "a"
        assert text(modern_call(client, "echo", {"text": "b"}, token=caller)) == "b"
        assert text(modern_call(client, "other", {}, token=caller)).startswith("tool-not-found")
    assert taken.count("caller") == 1  # one offer, kept for every call after

    # the profile changes: the very next call of either era is answered from the new offer
    expect(client.put("/api/v1/admin/usage-profiles/narrow", json={"description": "n", "allowedTools": ["other"]}), 200)
    assert text(call(client, session, "echo", {"text": "a"}, token=caller)).startswith("tool-not-found")
    assert text(modern_call(client, "echo", {"text": "b"}, token=caller)).startswith("tool-not-found")
    assert text(modern_call(client, "other", {}, token=caller)) == "other"
    assert taken.count("caller") == 2
