"""The tool catalog, plans, agents, usage profiles and tokens, as an admin and a caller use them."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.helpers import expect, unique_id

MODULES = "/api/v1/admin/code-modules"
TOOLS = "/api/v1/admin/tools"
PLANS = "/api/v1/admin/plans"
AGENTS = "/api/v1/admin/agents"
PROFILES = "/api/v1/admin/usage-profiles"
SERVERS = "/api/v1/admin/mcp-servers"
TOKENS = "/api/v1/admin/tokens"


def tool(client: TestClient, source: str, *, params: list[dict[str, Any]] | None = None, publish: bool = True, **section: Any) -> str:
    name = unique_id("tool")
    body = {
        "id": name,
        "description": f"the tool {name}",
        "draftContent": source,
        "tool": {"inputParameters": params or [], **section},
    }
    expect(client.post(MODULES, json=body), 201)
    if publish:
        expect(client.post(f"{MODULES}/{name}/publish"), 200)
    return name


def as_token(client: TestClient, token: str) -> TestClient:
    """The same app, with another bearer token."""
    other = TestClient(client.app)
    other.portal = client.portal  # on the lifespan's loop (tests.helpers.running says why)
    other.headers["Authorization"] = f"Bearer {token}"
    return other


def caller(client: TestClient, tools: list[str] = (), tags: list[str] = ()) -> TestClient:  # type: ignore[assignment]
    profile = unique_id("profile")
    answer = client.post(PROFILES, json={"id": profile, "allowedTools": list(tools), "allowedTags": list(tags)})
    assert answer.status_code == 201, answer.text
    issued = client.post(TOKENS, json={"name": "a caller", "role": "caller", "usageProfile": profile})
    assert issued.status_code == 201, issued.text
    return as_token(client, issued.json()["token"])


def call(client: TestClient, name: str, arguments: Any = None) -> Any:
    return client.post(f"/api/v1/tools/{name}/call", json=arguments)


def test_catalog_lists_published_code_tools_with_tag_and_schema(client: TestClient) -> None:
    published = tool(client, "exports.run = function (i) { return i.n; };", params=[{"name": "n", "type": "integer", "required": True}], tags=["math"])
    unpublished = tool(client, "exports.run = function () { return 1; };", publish=False)
    library = unique_id("lib")
    expect(client.post(MODULES, json={"id": library, "description": "a library", "draftContent": "exports.x = 1;"}), 201)
    expect(client.post(f"{MODULES}/{library}/publish"), 200)

    catalog = {t["name"]: t for t in client.get(TOOLS).json()}
    assert published in catalog and unpublished not in catalog and library not in catalog
    entry = catalog[published]
    assert entry["callType"] == "CODE"
    assert entry["tags"] == ["math", "code"]
    assert entry["inputSchema"]["required"] == ["n"]
    assert entry["inputSchema"]["properties"]["n"]["type"] == "integer"
    assert entry["shadowedBy"] is None
    assert [t["name"] for t in client.get(TOOLS, params={"callType": "CODE", "tag": "math"}).json()] == [published]
    assert client.get(TOOLS, params={"callType": "NOPE"}).status_code == 400


def test_a_plan_runs_its_nodes_in_order_each_output_the_next_input(client: TestClient) -> None:
    double = tool(client, "exports.run = function (i) { log('doubling ' + i.n); return {n: i.n * 2}; };",
                  params=[{"name": "n", "type": "integer", "required": True}])
    plus_one = tool(client, "exports.run = function (i) { return {n: i.n + 1}; };", params=[{"name": "n", "type": "integer", "required": True}])
    plan = unique_id("plan")
    nodes = [{"type": "DIRECT_TOOL", "toolName": double}, {"toolName": plus_one}, {"toolName": double}]
    created = client.post(PLANS, json={"id": plan, "description": "double, add one, double", "nodes": nodes, "exposeAsTool": True})
    assert created.status_code == 201, created.text
    assert created.json()["createdBy"] == "admin"

    # run it as a record, and call it as a tool: (3 * 2 + 1) * 2
    run = client.post(f"{PLANS}/{plan}/run", json={"input": {"n": 3}}).json()
    assert run["output"] == {"n": 14} and run["error"] is None
    assert run["logs"] == [f"[node 1 ({double})] doubling 3", f"[node 3 ({double})] doubling 7"]
    # each node in order: what it answered (the next node's input), its own logs
    assert [(n["node"], n["toolName"], n["output"], n["error"]) for n in run["nodes"]] == [
        (1, double, {"n": 6}, None), (2, plus_one, {"n": 7}, None), (3, double, {"n": 14}, None)]
    assert run["nodes"][0]["logs"] == ["doubling 3"] and run["nodes"][1]["logs"] == []
    assert call(client, plan, {"n": 3}).json()["output"] == {"n": 14}

    # the plan is a PLAN tool in the catalog, and takes what its first node takes
    entry = next(t for t in client.get(TOOLS).json() if t["name"] == plan)
    assert entry["callType"] == "PLAN" and "plan" in entry["tags"]
    assert entry["inputSchema"]["required"] == ["n"]

    # a missing argument is refused before anything runs, naming it
    refused = call(client, plan, {})
    assert refused.status_code == 400 and "n" in refused.json()["detail"]


def test_a_failing_node_ends_the_run_and_is_named(client: TestClient) -> None:
    ok = tool(client, "exports.run = function (i) { return 'text'; };")
    boom = tool(client, "exports.run = function (i) { throw new Error('boom'); };")
    plan = unique_id("plan")
    expect(client.post(PLANS, json={"id": plan, "description": "fails", "nodes": [{"toolName": ok}, {"toolName": boom}, {"toolName": ok}]}), 201)
    result = client.post(f"{PLANS}/{plan}/run", json={"input": {}}).json()
    assert result["error"]["type"] == "runtime"
    assert result["error"]["message"].startswith(f"node 2 ({boom}): ") and "boom" in result["error"]["message"]
    # the run got as far as node 2: node 1's output, node 2's error, node 3 never ran
    assert [n["node"] for n in result["nodes"]] == [1, 2]
    assert result["nodes"][0]["output"] == "text" and result["nodes"][1]["error"]["type"] == "runtime"
    # not exposed: not a tool
    assert call(client, plan, {}).status_code == 404


def test_plans_and_agents_block_deleting_the_modules_they_name(client: TestClient) -> None:
    used = tool(client, "exports.run = function () { return 1; };", tags=["ops"])
    plan, agent = unique_id("plan"), unique_id("agent")
    assert client.post(PLANS, json={"id": plan, "description": "p", "nodes": [{"toolName": used}]}).status_code == 201
    assert client.post(AGENTS, json={"id": agent, "description": "a", "allowedTools": [used]}).status_code == 201

    # R12: the 409 names both, and so does the usage route
    refused = client.delete(f"{MODULES}/{used}")
    assert refused.status_code == 409
    assert refused.json()["usedBy"] == {"modules": [], "plans": [plan], "agents": [agent]}
    assert client.get(f"{MODULES}/{used}/usage").json() == {"modules": [], "plans": [plan], "agents": [agent]}
    # the list's usedBy filter takes a plan's or an agent's id
    assert [m["id"] for m in client.get(MODULES, params={"usedBy": plan}).json()["collection"]] == [used]
    assert [m["id"] for m in client.get(MODULES, params={"usedBy": agent}).json()["collection"]] == [used]

    # once neither names it, it can go
    assert client.delete(f"{PLANS}/{plan}").status_code == 204
    assert client.put(f"{AGENTS}/{agent}", json={"description": "a", "allowedTags": ["ops"]}).status_code == 200
    assert client.get(f"{AGENTS}/{agent}").json()["tools"] == [used]  # allowed by tag
    assert client.delete(f"{MODULES}/{used}").status_code == 204
    assert client.get(f"{AGENTS}/{agent}").json()["tools"] == []


def test_names_are_shared_by_every_kind_of_tool(client: TestClient) -> None:
    module = tool(client, "exports.run = function () { return 1; };")
    plan = unique_id("plan")
    expect(client.post(PLANS, json={"id": plan, "description": "p", "nodes": [{"toolName": module}], "exposeAsTool": True}), 201)

    # R2: a module cannot take an exposed plan's name, nor a plan a module's
    taken = client.post(MODULES, json={"id": plan, "description": "d", "draftContent": ""})
    assert taken.status_code == 409 and "plan" in taken.json()["detail"]
    assert client.get(f"{MODULES}/availability", params={"id": plan}).json() is False
    clash = client.post(PLANS, json={"id": module, "description": "p", "nodes": [{"toolName": plan}], "exposeAsTool": True})
    assert clash.status_code == 409 and "module" in clash.json()["detail"]
    # a plan that is not a tool has its own name space
    assert client.post(PLANS, json={"id": module, "description": "p", "nodes": [{"toolName": plan}]}).status_code == 201
    # an exposed plan used by another plan cannot be deleted (R12)
    assert client.delete(f"{PLANS}/{plan}").status_code == 409


def test_bad_plans_agents_and_servers_are_refused_naming_the_field(client: TestClient) -> None:
    module = tool(client, "exports.run = function () { return 1; };")
    cases = [
        (PLANS, {"id": unique_id("p"), "description": "p", "nodes": [{"toolName": "nothingHere"}]}, "nodes[0].toolName"),
        (PLANS, {"id": unique_id("p"), "description": "p", "nodes": []}, "nodes"),
        (PLANS, {"id": "1bad", "description": "p", "nodes": [{"toolName": module}]}, "id"),
        (PLANS, {"id": unique_id("p"), "description": "", "nodes": [{"toolName": module}]}, "description"),
        (PLANS, {"id": unique_id("p"), "description": "p", "nodes": [{"toolName": module, "type": "LLM"}]}, "nodes[0].type"),
        (PLANS, {"id": unique_id("p"), "description": "p", "nodes": [{"toolName": module}], "extra": 1}, "extra"),
        (AGENTS, {"id": unique_id("a"), "description": "a", "allowedTools": [module, "ghost"]}, "allowedTools[1]"),
        (SERVERS, {"id": "has space", "tools": []}, "id"),
        (SERVERS, {"id": unique_id("s"), "tools": ["ghost"]}, "tools[0]"),
        (PROFILES, {"id": unique_id("u"), "allowedTags": [""]}, "allowedTags[0]"),
        (TOKENS, {"name": "t", "role": "root"}, "role"),
        (TOKENS, {"name": "t", "role": "admin", "usageProfile": "x"}, "usageProfile"),
    ]
    for path, body, field in cases:
        answer = client.post(path, json=body)
        assert answer.status_code == 400, (path, body, answer.text)
        assert answer.headers["content-type"] == "application/problem+json"
        assert field in [e["field"] for e in answer.json()["errors"]], (body, answer.json())


def test_plans_cannot_call_each_other_in_a_cycle(client: TestClient) -> None:
    module = tool(client, "exports.run = function (i) { return i; };")
    first, second = unique_id("plan"), unique_id("plan")
    expect(client.post(PLANS, json={"id": first, "description": "p", "nodes": [{"toolName": module}], "exposeAsTool": True}), 201)
    expect(client.post(PLANS, json={"id": second, "description": "p", "nodes": [{"toolName": first}], "exposeAsTool": True}), 201)
    cycle = client.put(f"{PLANS}/{first}", json={"description": "p", "nodes": [{"toolName": second}], "exposeAsTool": True})
    assert cycle.status_code == 400 and "cycle" in cycle.json()["detail"]
    assert client.put(f"{PLANS}/{first}", json={"description": "p", "nodes": [{"toolName": first}]}).status_code == 400


def test_a_usage_profile_by_tag_allows_exactly_the_tagged_tools(client: TestClient) -> None:
    tagged = tool(client, "exports.run = function () { return 'tagged'; };", tags=["finance"], exposeInChat=True)
    named = tool(client, "exports.run = function () { return 'named'; };")
    other = tool(client, "exports.run = function () { return 'other'; };", tags=["hr"])

    by_tag = caller(client, tags=["finance"])
    assert call(by_tag, tagged).json()["output"] == "tagged"
    assert call(by_tag, named).status_code == 404
    assert call(by_tag, other).status_code == 404

    by_name = caller(client, tools=[named])
    assert call(by_name, named).json()["output"] == "named"
    assert call(by_name, tagged).status_code == 404

    # R14: a profile with no permissions, or a caller token without a profile, gets no tool at all
    nothing = caller(client)
    assert call(nothing, tagged).status_code == 404
    bare = expect(client.post(TOKENS, json={"name": "bare", "role": "caller"}), 201).json()
    assert call(as_token(client, bare["token"]), tagged).status_code == 404

    # a caller cannot administer
    assert by_tag.get(MODULES).status_code == 403
    assert by_tag.post(PROFILES, json={"id": unique_id("u")}).status_code == 403


def test_tokens_are_shown_once_stored_hashed_and_revocable(client: TestClient, services: Any = None) -> None:
    issued = client.post(TOKENS, json={"name": "ci robot", "role": "auditor"})
    assert issued.status_code == 201
    secret = issued.json()["token"]
    listed = client.get(TOKENS).json()
    assert [t["name"] for t in listed] == ["ci robot"] and "token" not in listed[0] and secret not in str(listed)

    auditor = as_token(client, secret)
    assert auditor.get(MODULES).status_code == 200
    assert auditor.get(TOOLS).status_code == 200
    assert auditor.post(PLANS, json={"id": unique_id("p"), "description": "p", "nodes": []}).status_code == 403

    assert client.delete(f"{TOKENS}/{issued.json()['id']}").status_code == 204
    assert auditor.get(MODULES).status_code == 401
    assert client.delete(f"{TOKENS}/{issued.json()['id']}").status_code == 404


def test_disabling_a_tool_takes_effect_at_once_without_a_publish(client: TestClient) -> None:
    name = tool(client, "exports.run = function () { return 'on'; };", exposeInChat=True)
    section = expect(client.get(f"{MODULES}/{name}"), 200).json()["published"]["tool"]

    switched = client.put(f"{MODULES}/{name}", json={"tool": {**section, "enabled": False}})
    assert switched.status_code == 200
    module = switched.json()
    assert module["state"] == "PUBLISHED" and module["draft"] is None  # no draft to publish
    assert module["published"]["tool"]["enabled"] is False and module["published"]["version"] == 1
    refused = call(client, name)
    assert refused.status_code == 404 and "disabled" in refused.json()["detail"]
    assert next(t for t in client.get(TOOLS).json() if t["name"] == name)["enabled"] is False

    expect(client.put(f"{MODULES}/{name}", json={"tool": {**section, "enabled": True}}), 200)
    assert call(client, name).json()["output"] == "on"


def test_a_tool_attached_to_two_servers_detached_from_one_stays_on_the_other(client: TestClient) -> None:
    name = tool(client, "exports.run = function () { return 1; };", exposeInChat=True)
    first, second = unique_id("srv"), unique_id("srv")
    assert client.post(SERVERS, json={"id": first, "description": "one", "tools": [name]}).status_code == 201
    assert client.post(SERVERS, json={"id": second}).status_code == 201
    attached = client.put(f"{SERVERS}/{second}/tools/{name}")
    assert attached.status_code == 200 and attached.json()["tools"] == [name]
    assert attached.json()["url"] == f"/mcp/{second}"
    assert client.put(f"{SERVERS}/{second}/tools/{name}").json()["tools"] == [name]  # idempotent

    assert client.delete(f"{SERVERS}/{first}/tools/{name}").json()["tools"] == []
    assert client.get(f"{SERVERS}/{second}").json()["tools"] == [name]
    assert client.get(f"{MODULES}/{name}").status_code == 200  # the tool itself is untouched
    assert client.delete(f"{SERVERS}/{first}/tools/{name}").status_code == 404
    assert client.put(f"{SERVERS}/{first}/tools/ghost").status_code == 404
    assert client.put(f"{SERVERS}/nowhere/tools/{name}").status_code == 404
