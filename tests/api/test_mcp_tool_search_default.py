"""Tool search on the default server `/mcp` (docs/mcp.md, "Tool search"): the settings
TOOLSMITH_MCP_TOOL_SEARCH and TOOLSMITH_MCP_TOOL_SEARCH_PINNED, in both eras on the wire; a pinned
name the caller may not use is not listed, and a name no tool has is ignored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.api.test_mcp_transport import ACCEPT, URL, open_session, publish, request
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, expect

MODERN = "2026-07-28"


@pytest.fixture
def client(tmp_path: Path, shared_sandbox: object) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        mcp_tool_search="on", mcp_tool_search_pinned="echo, nowhere")
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def modern(request_id: int, method: str, params: dict) -> tuple[dict, dict]:
    """A self-contained 2026-07-28 request and its headers."""
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {**ACCEPT, "Mcp-Protocol-Version": MODERN, "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    return request(request_id, method, {**params, "_meta": meta}), headers


def test_the_default_server_lists_find_tool_call_tool_and_the_pinned_tool(client: TestClient) -> None:
    publish(client, "echo", "exports.run = function (input) { return input; };")
    publish(client, "convert_currency", "exports.run = function (i) { return i.amount * 2; };",
            [{"name": "amount", "type": "decimal", "required": True, "description": "how much money to exchange"}])
    session = open_session(client, "2025-11-25")

    listed = client.post("/mcp", json=request(1, "tools/list"), headers=session).json()["result"]["tools"]
    assert [t["name"] for t in listed] == ["find_tool", "call_tool", "echo"]

    found = client.post("/mcp", json=request(2, "tools/call", {"name": "find_tool", "arguments": {"query": "money amount"}}),
                        headers=session).json()["result"]
    assert not found["isError"] and found["structuredContent"]["tools"][0]["name"] == "convert_currency"
    called = client.post("/mcp", json=request(3, "tools/call", {"name": "call_tool", "arguments": {"name": "convert_currency",
                                                                                                   "arguments": {"amount": 4}}}),
                         headers=session).json()["result"]
    assert called["content"] == [{"type": "text", "text": "8"}]

    body, headers = modern(4, "tools/list", {})
    answered = client.post("/mcp", json=body, headers=headers)
    assert answered.status_code == 200, answered.text
    assert [t["name"] for t in answered.json()["result"]["tools"]] == ["find_tool", "call_tool", "echo"]
    body, headers = modern(5, "tools/call", {"name": "find_tool", "arguments": {"query": "money amount", "limit": 1}})
    answered = client.post("/mcp", json=body, headers=headers)
    assert answered.status_code == 200, answered.text
    assert [t["name"] for t in answered.json()["result"]["structuredContent"]["tools"]] == ["convert_currency"]


def test_a_caller_is_listed_only_the_pinned_tools_it_may_use(client: TestClient) -> None:
    publish(client, "echo", "exports.run = function (input) { return input; };")
    publish(client, "convert_currency", "exports.run = function (i) { return i.amount * 2; };")
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": "money", "allowedTools": ["convert_currency"]}), 201)
    secret = expect(client.post("/api/v1/admin/tokens", json={"name": "m", "role": "caller", "usageProfile": "money"}), 201).json()["token"]
    client.headers["Authorization"] = f"Bearer {secret}"
    session = open_session(client, "2025-11-25")
    listed = client.post("/mcp", json=request(1, "tools/list"), headers=session).json()["result"]["tools"]
    assert [t["name"] for t in listed] == ["find_tool", "call_tool"]
    found = client.post("/mcp", json=request(2, "tools/call", {"name": "find_tool", "arguments": {"query": "echo", "limit": 20}}),
                        headers=session).json()["result"]
    assert [t["name"] for t in found["structuredContent"]["tools"]] == ["convert_currency"]
    refused = client.post("/mcp", json=request(3, "tools/call", {"name": "call_tool", "arguments": {"name": "echo"}}),
                          headers=session).json()["result"]
    assert refused["isError"] and refused["content"][0]["text"].startswith("tool-not-found")
