"""Admission is each kind's own (issue 13): only JavaScript calls wait on the JavaScript pool. With
every sandbox session taken, a native tool and a plan of native tools still answer, over REST and
MCP, while a code tool, and a plan that calls one, are refused at once with 429 as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from domain.ports import ExecutionResult, Sandbox
from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.helpers import ADMIN_TOKEN, expect
from tests.kinds.mcp import McpSession

MODULES = "/api/v1/admin/code-modules"
PLANS = "/api/v1/admin/plans"


class FullSandbox(Sandbox):
    """A sandbox whose sessions are all taken once `full` is set; its checks pass."""

    max_active_sessions = 2

    def __init__(self) -> None:
        self.full = False
        self.runs = 0

    def run(self, execution: Any) -> ExecutionResult:
        self.runs += 1
        return ExecutionResult(output="ran")

    def check(self, execution: Any) -> ExecutionResult:
        return ExecutionResult()

    def busy(self) -> bool:
        return self.full


@pytest.fixture
def sandbox() -> FullSandbox:
    return FullSandbox()


@pytest.fixture
def busy_client(settings: Settings, sandbox: FullSandbox, tmp_path: Path) -> Iterator[TestClient]:
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps({"native": [
        {"name": "add", "description": "Adds two integers", "entrypoint": "tests.native_tools:add", "exposeInChat": True},
    ]}))
    app = create_app(bootstrap(settings.model_copy(update={"tools_file": tools_file}), sandbox=sandbox))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        tool = {"exposeInChat": True}
        expect(client.post(MODULES, json={"id": "js", "description": "Code", "draftContent": "exports.run = () => 1;", "tool": tool}), 201)
        expect(client.post(f"{MODULES}/js/publish"), 200)
        for plan_id, node in (("natives", "add"), ("mixed", "js")):
            plan = {"id": plan_id, "description": "p", "nodes": [{"toolName": node}], "exposeAsTool": True, "exposeInChat": True}
            expect(client.post(PLANS, json=plan), 201)
        yield client


def test_with_the_pool_full_only_calls_of_javascript_are_refused(busy_client: TestClient, sandbox: FullSandbox) -> None:
    client = busy_client
    sandbox.full = True
    # native tools never touch the pool: they answer
    assert expect(client.post("/api/v1/tools/add/call", json={"a": 1}), 200).json()["output"] == 3
    assert expect(client.post("/api/v1/tools/natives/call", json={"a": 40}), 200).json()["output"] == 42
    # a code tool, and a plan that calls one, are refused at once, as before, and nothing ran
    for name in ("js", "mixed"):
        refused = client.post(f"/api/v1/tools/{name}/call", json={})
        assert refused.status_code == 429 and refused.json()["code"] == "sandbox-busy"
        assert refused.headers["retry-after"] == "1"
    assert sandbox.runs == 0
    # the same over MCP
    mcp = McpSession(client)
    for name in ("add", "natives"):
        answered = mcp.call(name, {"a": 1})
        assert not answered.get("isError") and answered["content"][0]["text"] == "3"
    for name in ("js", "mixed"):
        refused = mcp.call(name, {})
        assert refused["isError"] is True and refused["content"][0]["text"].startswith("sandbox-busy")
    assert sandbox.runs == 0
    # once a session is free, code runs again
    sandbox.full = False
    assert expect(client.post("/api/v1/tools/js/call", json={}), 200).json()["output"] == "ran"
    assert expect(client.post("/api/v1/tools/mixed/call", json={}), 200).json()["output"] == "ran"
