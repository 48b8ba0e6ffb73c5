"""MCP over a `TestClient`: the handshake, then one JSON-RPC request at a time on that session."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from fastapi.testclient import TestClient

# The MCP gate allows the loopback names with a port (TOOLSMITH_MCP_ALLOWED_HOSTS), not `testserver`.
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", "Host": "127.0.0.1:8000"}
_ids = count(1)


class McpSession:
    def __init__(self, client: TestClient, path: str = "/mcp") -> None:
        self.client = client
        self.path = path
        opened = self._post({"method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        self.headers = {**HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
        sent = client.post(path, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers)
        assert sent.status_code == 202, sent.text

    def _post(self, message: dict[str, Any], headers: dict[str, str] = HEADERS) -> Any:
        answer = self.client.post(self.path, json={"jsonrpc": "2.0", "id": next(_ids), **message}, headers=headers)
        assert answer.status_code == 200, answer.text
        return answer

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self._post({"method": method, "params": params}, self.headers)
        if answer.headers["content-type"].startswith("application/json"):
            return answer.json()["result"]
        data = [line[len("data:"):] for line in answer.text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])["result"]

    def tool_names(self) -> list[str]:
        return [tool["name"] for tool in self.request("tools/list", {})["tools"]]

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments})
