"""Native and external MCP tools from the tools file, beside code modules and plans (R2, R15)."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN

MODULES = "/api/v1/admin/code-modules"
PLANS = "/api/v1/admin/plans"


def _client(settings: Settings, sandbox: object) -> TestClient:
    client = TestClient(create_app(wire(settings, sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    client.__enter__()
    return client


def test_native_tools_hold_their_names_and_win_r15_over_plans_and_modules(settings: Settings, shared_sandbox: object, tmp_path: Path) -> None:
    # first a module and an exposed plan take the names `add` and `greet`
    first = _client(settings, shared_sandbox)
    source = "exports.run = function (i) { return 'from the module'; };"
    assert first.post(MODULES, json={"id": "add", "description": "d", "draftContent": source, "tool": {}}).status_code == 201
    assert first.post(f"{MODULES}/add/publish").status_code == 200
    plan = {"id": "greet", "description": "a plan", "nodes": [{"toolName": "add"}], "exposeAsTool": True}
    assert first.post(PLANS, json=plan).status_code == 201
    first.__exit__(None, None, None)

    # then the tools file declares native tools of the same names, and the service restarts
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps({"native": [
        {"name": "add", "description": "Adds two integers", "entrypoint": "tests.native_tools:add", "tags": ["math"]},
        {"name": "greet", "description": "Greets", "entrypoint": "tests.native_tools:greet"},
        {"name": "divide", "description": "Divides", "entrypoint": "tests.native_tools:divide"},
    ]}))
    client = _client(settings.model_copy(update={"tools_file": tools_file}), shared_sandbox)
    try:
        catalog = [(t["name"], t["callType"], t["shadowedBy"]) for t in client.get("/api/v1/admin/tools").json()]
        # R15: native before plan before code module; the losers stay listed, marked
        assert catalog == [
            ("add", "LOCAL", None), ("add", "CODE", "LOCAL"),
            ("divide", "LOCAL", None),
            ("greet", "LOCAL", None), ("greet", "PLAN", "LOCAL"),
        ]
        native = next(t for t in client.get("/api/v1/admin/tools").json() if t["callType"] == "LOCAL" and t["name"] == "add")
        assert native["inputSchema"]["required"] == ["a"] and native["tags"] == ["math"]

        # a call reaches the native tool; its arguments are checked against its schema first
        assert client.post("/api/v1/tools/add/call", json={"a": 40}).json()["output"] == 42
        refused = client.post("/api/v1/tools/add/call", json={"b": 1})
        assert refused.status_code == 400 and "a" in refused.json()["detail"]
        failed = client.post("/api/v1/tools/divide/call", json={"a": 1, "b": 0}).json()
        assert failed["error"]["type"] == "runtime" and "ZeroDivisionError" in failed["error"]["message"]

        # R2: a native tool's name is taken for new modules and exposed plans
        taken = client.post(MODULES, json={"id": "divide", "description": "d", "draftContent": ""})
        assert taken.status_code == 409 and "native tool" in taken.json()["detail"]
        assert client.get(f"{MODULES}/availability", params={"id": "divide"}).json() is False
        plan = {"id": "divide", "description": "p", "nodes": [{"toolName": "add"}], "exposeAsTool": True}
        assert client.post(PLANS, json=plan).status_code == 409
        # a plan may call native tools
        plan = {"id": "twice", "description": "p", "nodes": [{"toolName": "divide"}]}
        assert client.post(PLANS, json=plan).status_code == 201
        assert client.post(f"{PLANS}/twice/run", json={"input": {"a": 9, "b": 3}}).json()["output"] == 3.0
    finally:
        client.__exit__(None, None, None)


def test_an_external_mcp_tool_holds_its_name_and_wins_r15(settings: Settings, shared_sandbox: object, tmp_path: Path) -> None:
    tools_file = tmp_path / "tools.json"
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools_file.write_text(json.dumps({"mcp": [
        {"name": "weather", "description": "Weather elsewhere", "url": "http://127.0.0.1:9/mcp", "inputSchema": schema, "tags": ["ext"]},
    ]}))
    client = _client(settings.model_copy(update={"tools_file": tools_file}), shared_sandbox)
    try:
        entry = next(t for t in client.get("/api/v1/admin/tools").json() if t["name"] == "weather")
        assert (entry["callType"], entry["inputSchema"], entry["tags"]) == ("MCP", schema, ["ext"])
        # R2: neither a module nor an exposed plan may take its name
        taken = client.post(MODULES, json={"id": "weather", "description": "d", "draftContent": ""})
        assert taken.status_code == 409 and "MCP tool" in taken.json()["detail"]
        assert client.get(f"{MODULES}/availability", params={"id": "weather"}).json() is False
        plan = {"id": "weather", "description": "p", "nodes": [{"toolName": "weather"}], "exposeAsTool": True}
        assert client.post(PLANS, json=plan).status_code == 409
        # its arguments are checked before any request leaves; an unreachable server is an `mcp` error
        assert client.post("/api/v1/tools/weather/call", json={}).status_code == 400
        failed = client.post("/api/v1/tools/weather/call", json={"city": "Oslo"}).json()
        assert failed["error"]["type"] == "mcp"
    finally:
        client.__exit__(None, None, None)
