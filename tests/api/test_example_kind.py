"""A kind of tool added by the tests alone (issue 13): the "constant" kind of `tests/kinds/constant.py`
is listed in the catalog, called over REST and MCP, attached to an MCP server, named by a plan,
held to R2 both ways, and exported with its tenant's events, with no line of the product naming it:
the app is built with the registry's kinds plus this one."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest
from fastapi.testclient import TestClient

from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure.audit import export_chunks
from infrastructure.settings import Settings
from sandbox.embedded import EmbeddedSandbox
from tests.helpers import ADMIN_TOKEN, expect
from tests.kinds.constant import CONSTANT, ConstantKind, WITH_CONSTANTS
from tests.kinds.mcp import McpSession

CONSTANTS = "/api/v1/admin/constants"
MODULES = "/api/v1/admin/code-modules"
PLANS = "/api/v1/admin/plans"
SERVERS = "/api/v1/admin/mcp-servers"
TOOLS = "/api/v1/admin/tools"
TOPIC = "tests.kinds.constant:Constant."


@pytest.fixture
def with_constants(settings: Settings, shared_sandbox: EmbeddedSandbox) -> Iterator[TestClient]:
    app = create_app(bootstrap(settings, sandbox=shared_sandbox, kinds=WITH_CONSTANTS))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def constant(client: TestClient, name: str, value: object, *, expose: bool = True) -> None:
    expect(client.post(CONSTANTS, json={"id": name, "description": f"The constant {name}", "value": value, "exposeInChat": expose}), 201)


def test_a_constant_is_listed_and_called_over_rest_and_mcp(with_constants: TestClient) -> None:
    client = with_constants
    constant(client, "answer", {"n": 42})
    assert client.get(CONSTANTS).json() == [{"id": "answer", "description": "The constant answer", "value": {"n": 42}, "exposeInChat": True}]
    # the catalog lists it with its kind's call type, tag and schema
    listed = [t for t in client.get(TOOLS).json() if t["name"] == "answer"]
    assert [(t["callType"], t["tags"], t["inputSchema"], t["shadowedBy"]) for t in listed] == [
        (CONSTANT, ["constant"], {"type": "object", "properties": {}}, None)]
    assert [t["name"] for t in client.get(TOOLS, params={"callType": CONSTANT}).json()] == ["answer"]
    # REST: the DIRECT_TOOL path
    called = expect(client.post("/api/v1/tools/answer/call", json={}), 200).json()
    assert called["output"] == {"n": 42} and called["error"] is None
    # MCP: offered on the default server, and called there
    mcp = McpSession(client)
    assert "answer" in mcp.tool_names()
    result = mcp.call("answer", {})
    assert not result.get("isError") and result["structuredContent"] == {"n": 42}


def test_a_constant_attached_to_an_mcp_server_is_offered_there_alone(with_constants: TestClient) -> None:
    client = with_constants
    constant(client, "pi", 3.14159)
    constant(client, "e", 2.71828)
    expect(client.post(SERVERS, json={"id": "numbers", "tools": []}), 201)
    attached = expect(client.put(f"{SERVERS}/numbers/tools/pi"), 200).json()
    assert attached["tools"] == ["pi"]
    mcp = McpSession(client, "/mcp/numbers")
    assert mcp.tool_names() == ["pi"]
    assert mcp.call("pi", {})["content"][0]["text"] == "3.14159"
    assert mcp.call("e", {})["isError"] is True  # not attached to this server


def test_a_plan_names_a_constant_and_runs_it(with_constants: TestClient) -> None:
    client = with_constants
    constant(client, "greeting", "hello")
    source = "exports.run = function (input) { return input.toUpperCase(); };"
    expect(client.post(MODULES, json={"id": "shout", "description": "Shouts", "draftContent": source, "tool": {}}), 201)
    expect(client.post(f"{MODULES}/shout/publish"), 200)
    plan = {"id": "greet_loudly", "description": "A constant, then a code tool", "exposeAsTool": True,
            "nodes": [{"toolName": "greeting"}, {"toolName": "shout"}]}
    expect(client.post(PLANS, json=plan), 201)
    assert expect(client.post(f"{PLANS}/greet_loudly/run", json={"input": {}}), 200).json()["output"] == "HELLO"
    assert client.post("/api/v1/tools/greet_loudly/call", json={}).json()["output"] == "HELLO"
    # the plan takes what its first node takes: the constant's schema
    entry = next(t for t in client.get(TOOLS).json() if t["name"] == "greet_loudly")
    assert entry["inputSchema"] == {"type": "object", "properties": {}}
    # a plan cannot name a constant that does not exist
    missing = client.post(PLANS, json={**plan, "id": "other", "nodes": [{"toolName": "nowhere"}]})
    assert missing.status_code == 400 and "nowhere" in missing.text


def test_r2_holds_between_constants_modules_and_plans(with_constants: TestClient) -> None:
    client = with_constants
    # a constant's name is taken for modules, availability and plans exposed as tools
    constant(client, "taken", 1)
    refused = client.post(MODULES, json={"id": "taken", "description": "d", "draftContent": ""})
    assert refused.status_code == 409 and refused.json()["detail"] == "the id 'taken' is already used by a constant (R2)"
    assert client.get(f"{MODULES}/availability", params={"id": "taken"}).json() is False
    plan = {"id": "taken", "description": "p", "nodes": [{"toolName": "taken"}], "exposeAsTool": True}
    refused = client.post(PLANS, json=plan)
    assert refused.status_code == 409 and "constant" in refused.json()["detail"]
    # and the other way round: a module's or an exposed plan's name is taken for constants
    expect(client.post(MODULES, json={"id": "mod", "description": "d", "draftContent": ""}), 201)
    expect(client.post(PLANS, json={**plan, "id": "exposed"}), 201)
    refused = client.post(CONSTANTS, json={"id": "mod", "description": "d", "value": 1})
    assert refused.status_code == 409 and refused.json()["detail"] == "the id 'mod' is already used by a module (R2)"
    refused = client.post(CONSTANTS, json={"id": "exposed", "description": "d", "value": 1})
    assert refused.status_code == 409 and refused.json()["detail"] == "the id 'exposed' is already used by a plan (R2)"
    assert client.post(CONSTANTS, json={"id": "taken", "description": "d", "value": 2}).status_code == 409
    # a deleted constant frees its name
    expect(client.delete(f"{PLANS}/taken"), 404)
    expect(client.delete(f"{PLANS}/exposed"), 204)
    expect(client.delete(f"{CONSTANTS}/taken"), 204)
    assert client.get(f"{MODULES}/availability", params={"id": "taken"}).json() is True
    expect(client.post(MODULES, json={"id": "taken", "description": "d", "draftContent": ""}), 201)


def test_a_tenant_export_holds_its_constants_and_no_other_tenants(with_constants: TestClient) -> None:
    client = with_constants
    constant(client, "mine", "ours")
    expect(client.delete(f"{CONSTANTS}/mine"), 204)
    constant(client, "mine", "ours again")
    services = client.app.state.services
    services.toolbox.kind(ConstantKind).create("elsewhere", "theirs", "Another tenant's", "secret", False, by="x")

    exported = client.get("/api/v1/admin/audit/export")
    assert exported.status_code == 200
    lines = [orjson.loads(line) for line in exported.content.splitlines()[1:-1]]
    mine = [(line["topic"].removeprefix(TOPIC), line["state"]["value"] if "value" in line["state"] else None)
            for line in lines if line["topic"].startswith(TOPIC)]
    assert mine == [("Created", "ours"), ("Deleted", None), ("Recreated", "ours again")]
    # the other tenant's export holds its constant, and none of this tenant's
    theirs = [orjson.loads(line) for chunk in export_chunks(services.store, tenant="elsewhere", kinds=services.toolbox.kinds)
              for line in chunk.splitlines()]
    states = [line["state"] for line in theirs if line.get("topic", "").startswith(TOPIC)]
    assert [(s["tenant"], s["name"]) for s in states] == [("elsewhere", "theirs")]


def test_the_default_kinds_know_no_constants(client: TestClient) -> None:
    assert client.post(CONSTANTS, json={"id": "x", "description": "d", "value": 1}).status_code == 404
    refused = client.get(TOOLS, params={"callType": CONSTANT})
    assert refused.status_code == 400 and "callType" in refused.text
