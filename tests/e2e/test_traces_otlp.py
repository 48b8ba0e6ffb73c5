"""Traces received by a real OTLP/HTTP endpoint (docs/observability.md): a `toolsmith serve` told by
the standard `OTEL_*` settings to export to a receiver in this test, which decodes the
`ExportTraceServiceRequest` protobufs it is sent. One trace, begun by the client's `traceparent` in
MCP `_meta`, is followed through the tool calls, the sandbox visit of a code module and an API URL
tool's outbound request to a local server; no argument, secret or query string is in what was
sent. Without the settings, the receiver gets nothing."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import Server, printed_tokens
from tests.helpers import unique_id
from tests.otlp import Receiver, receiving
from tests.upstream import Upstream, running

pytestmark = pytest.mark.e2e

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
SECRET_ARGUMENT = "argument-never-in-a-span"
SECRET_QUERY = "query-never-in-a-span"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiving()


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


def start(tmp_path: Path, env: dict[str, str]) -> Server:
    server = Server(data_dir=tmp_path / "data", env=env).start(timeout=120)  # a loaded machine starts slower
    server.token = printed_tokens(server.output)[0]
    return server


def mcp_call(server: Server, name: str, arguments: dict[str, Any], traceparent: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": {**MODERN_META, "traceparent": traceparent}}}
    headers = {**ACCEPT, "Authorization": f"Bearer {server.token}", "Mcp-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Mcp-Name": name}
    return httpx.post(server.url + "/mcp", json=body, headers=headers, timeout=30, trust_env=False)


def make_tools(server: Server, upstream: Upstream) -> tuple[str, str]:
    admin = {"Authorization": f"Bearer {server.token}"}
    code = unique_id("echo")
    tool = {"inputParameters": [{"name": "text", "type": "string", "required": True, "description": "a text"}], "exposeInChat": True}
    with httpx.Client(base_url=server.url, headers=admin, timeout=30, trust_env=False) as client:
        made = client.post("/api/v1/admin/code-modules", json={
            "id": code, "description": "echoes", "draftContent": "exports.run = function (i) { log('echoing'); return {echo: i.text}; };", "tool": tool})
        assert made.status_code == 201, made.text
        assert client.post(f"/api/v1/admin/code-modules/{code}/publish").status_code == 200
        api = unique_id("weather")
        made = client.post("/api/v1/admin/api-tools", json={
            "id": api, "description": "weather", "urlTemplate": upstream.url + "/v1/weather/{city}{?units}",
            "parameters": [{"name": "city", "type": "string", "required": True, "location": "path", "description": "the city"},
                           {"name": "units", "type": "string", "location": "query", "default": "metric"}]})
        assert made.status_code == 201, made.text
    return code, api


def test_one_trace_from_mcp_meta_through_the_sandbox_and_an_outbound_request(tmp_path: Path, receiver: Receiver,
                                                                              upstream: Upstream) -> None:
    server = start(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_SERVICE_NAME": "toolsmith-e2e",
                              "OTEL_BSP_SCHEDULE_DELAY": "100", "TOOLSMITH_EGRESS_ALLOW": upstream.allow})
    try:
        code, api = make_tools(server, upstream)
        traceparent = f"00-{TRACE}-{PARENT}-01"
        answered = mcp_call(server, code, {"text": SECRET_ARGUMENT}, traceparent)
        assert answered.status_code == 200 and SECRET_ARGUMENT in answered.text, answered.text
        answered = mcp_call(server, api, {"city": "Bern", "units": SECRET_QUERY}, traceparent)
        assert answered.status_code == 200 and "Bern" in answered.text, answered.text
        assert upstream.last("/v1/weather/").path == f"/v1/weather/Bern?units={SECRET_QUERY}"

        def complete(found: list[dict[str, Any]]) -> bool:
            ours = [s for s in found if s["trace"] == TRACE]
            return sum(s["name"].startswith("tool.call") for s in ours) == 2 and any(s["name"] == "sandbox.visit" for s in ours) \
                and any(s["kind"] == 3 for s in ours)  # SPAN_KIND_CLIENT

        found = receiver.wait_for(complete)
        assert set(receiver.paths) == {"/v1/traces"}
        ours = [s for s in found if s["trace"] == TRACE]
        by_id = {s["id"]: s for s in ours}
        assert {s["service"] for s in ours} == {"toolsmith-e2e"}
        methods = [s for s in ours if s["name"].startswith("tools/call ")]
        assert {s["name"] for s in methods} == {f"tools/call {code}", f"tools/call {api}"}
        assert all(s["parent"] == PARENT for s in methods)  # continued from the client's _meta
        tools = {s["attributes"]["toolsmith.tool"]: s for s in ours if s["name"].startswith("tool.call")}
        assert by_id[tools[code]["parent"]]["name"] == f"tools/call {code}"
        assert tools[code]["attributes"]["toolsmith.kind"] == "CODE" and tools[code]["attributes"]["toolsmith.outcome"] == "ok"
        assert tools[api]["attributes"]["toolsmith.kind"] == "API_URL" and tools[api]["attributes"]["toolsmith.via"] == "mcp"
        [visit] = [s for s in ours if s["name"] == "sandbox.visit"]
        assert visit["parent"] == tools[code]["id"]
        assert visit["attributes"]["toolsmith.sandbox.run_ms"] > 0 and visit["attributes"]["toolsmith.sandbox.queue_wait_ms"] >= 0
        [outbound] = [s for s in ours if s["kind"] == 3]
        assert outbound["parent"] == tools[api]["id"]
        assert outbound["attributes"]["server.address"] == "127.0.0.1" and outbound["attributes"]["http.response.status_code"] == 200
        # the secrets scan: nothing of the arguments, the query string or a token in anything sent
        sent = b"".join(receiver.bodies)
        for secret in (SECRET_ARGUMENT, SECRET_QUERY, "Bern", server.token, "/v1/weather"):
            assert secret.encode() not in sent, secret
        # the call records name the trace
        records = httpx.get(server.url + "/api/v1/admin/calls", params={"tool": code}, timeout=30, trust_env=False,
                            headers={"Authorization": f"Bearer {server.token}"}).json()
        assert records[0]["traceId"] == TRACE
        # the log lines of the calls carry it: the module's own line and both MCP requests' access lines
        server.stop()
        lines = [json.loads(line) for line in server.output.splitlines() if line.startswith("{")]
        assert [line["traceId"] for line in lines if line["message"] == "module log"] == [TRACE]
        access = [line for line in lines if line["logger"] == "uvicorn.access"]
        assert [line["traceId"] for line in access if line["path"] == "/mcp"] == [TRACE, TRACE]
        assert all(len(line["traceId"]) == 32 for line in access)
    finally:
        if server.process and server.process.poll() is None:
            server.stop()


def test_without_the_settings_nothing_is_sent(tmp_path: Path, receiver: Receiver, upstream: Upstream) -> None:
    # OTEL_TRACES_EXPORTER=none wins over an endpoint; a server without any setting sends nothing either
    server = start(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_TRACES_EXPORTER": "none",
                              "OTEL_BSP_SCHEDULE_DELAY": "100", "TOOLSMITH_EGRESS_ALLOW": upstream.allow})
    try:
        code, _ = make_tools(server, upstream)
        answered = mcp_call(server, code, {"text": "a"}, f"00-{TRACE}-{PARENT}-01")
        assert answered.status_code == 200, answered.text
        time.sleep(1.0)
    finally:
        server.stop()
    assert receiver.bodies == []
    assert '"traceId"' not in server.output
