"""The console's catalog, plans, agents, usage profiles, MCP servers, tokens, audit and Playground
pages over HTTP (no browser): status for an admin and an auditor, no write control for an auditor,
forms that change records through the same services as the REST API, and escaping."""

from __future__ import annotations

import json
import re
from urllib.parse import unquote
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect, page_csrf, unique_id

ORIGIN = "http://testserver"
MODULES = "/api/v1/admin/code-modules"
PAGES = ("/console/tools", "/console/playground", "/console/plans", "/console/agents", "/console/profiles",
         "/console/servers", "/console/audit")


def console(client: TestClient, token: str) -> TestClient:
    """A browser-like client of the same app, signed in to the console with `token`."""
    visitor = TestClient(client.app)
    answer = visitor.post("/console/sign-in", data={"token": token, "next": "/console/tools"},
                          headers={"Origin": ORIGIN}, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    return visitor


def post(visitor: TestClient, url: str, data: dict[str, Any] | list[tuple[str, str]], *, page: str = "/console/tools",
         **kwargs: Any) -> Any:
    token = page_csrf(visitor.get(page).text)
    fields: dict[str, Any] = {}
    for key, value in (data.items() if isinstance(data, dict) else data):
        fields.setdefault(key, []).append(value)
    return visitor.post(url, data={**fields, "csrf_token": token}, headers={"Origin": ORIGIN, **kwargs.pop("headers", {})},
                        follow_redirects=False, **kwargs)


def module_tool(client: TestClient, *, description: str = "adds one", params: list[dict[str, Any]] | None = None,
                source: str = "exports.run = function (i) { log('adding'); return i.n + 1; };", **section: Any) -> str:
    name = unique_id("tool")
    body = {"id": name, "description": description, "draftContent": source,
            "tool": {"inputParameters": params if params is not None else [{"name": "n", "type": "integer", "required": True}],
                     "exposeInChat": True, **section}}
    expect(client.post(MODULES, json=body), 201).json()
    expect(client.post(f"{MODULES}/{name}/publish"), 200).json()
    return name


@pytest.fixture
def admin(client: TestClient) -> TestClient:
    return console(client, ADMIN_TOKEN)


@pytest.fixture
def auditor(client: TestClient) -> TestClient:
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "an auditor", "role": "auditor"}), 201).json()
    return console(client, issued["token"])


@pytest.fixture
def records(client: TestClient) -> dict[str, str]:
    """A tool and one plan, agent, usage profile and MCP server naming it, made over REST."""
    tool = module_tool(client)
    ids = {"tool": tool, "plans": unique_id("plan"), "agents": unique_id("agent"), "profiles": unique_id("profile"),
           "servers": unique_id("server")}
    expect(client.post("/api/v1/admin/plans", json={"id": ids["plans"], "description": "a plan", "nodes": [{"toolName": tool}]}), 201).json()
    expect(client.post("/api/v1/admin/agents", json={"id": ids["agents"], "description": "an agent", "allowedTools": [tool]}), 201).json()
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": ids["profiles"], "allowedTools": [tool]}), 201).json()
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": ids["servers"], "tools": [tool]}), 201).json()
    return ids


def test_every_page_answers_an_admin_and_an_auditor(admin: TestClient, auditor: TestClient, records: dict[str, str]) -> None:
    details = [f"/console/{kind}/{records[kind]}" for kind in ("plans", "agents", "profiles", "servers")]
    for url in (*PAGES, *details, f"/console/playground?tool={records['tool']}"):
        for visitor in (admin, auditor):
            answer = visitor.get(url)
            assert answer.status_code == 200, (url, answer.text[:500])
            assert "<h1>" in answer.text
    assert admin.get("/console/tokens").status_code == 200
    refused = auditor.get("/console/tokens")
    assert refused.status_code == 403
    assert "Only admins see and manage tokens" in refused.text
    assert admin.get("/console/plans/no-such-plan").status_code == 404


def test_an_auditor_sees_no_write_control(auditor: TestClient, records: dict[str, str]) -> None:
    details = [f"/console/{kind}/{records[kind]}" for kind in ("plans", "agents", "profiles", "servers")]
    for url in (*PAGES, *details, f"/console/playground?tool={records['tool']}"):
        page = auditor.get(url).text
        # the only form that posts is signing out
        assert page.count('method="post"') == 1, url
        assert "/new" not in page and "Delete" not in page and "Detach" not in page and ">Run<" not in page, url
    assert "can read but not run tools" in auditor.get(f"/console/playground?tool={records['tool']}").text
    # and the writes are refused anyway
    for kind in ("plans", "agents", "profiles", "servers"):
        assert auditor.get(f"/console/{kind}/new").status_code == 403
        assert post(auditor, f"/console/{kind}/{records[kind]}/delete", {}).status_code == 403


def test_an_auditor_gets_403_on_token_writes(client: TestClient, auditor: TestClient) -> None:
    answer = post(auditor, "/console/tokens", {"name": "sneaky", "role": "admin"})
    assert answer.status_code == 403
    assert all(t["name"] != "sneaky" for t in expect(client.get("/api/v1/admin/tokens"), 200).json())
    target = expect(client.post("/api/v1/admin/tokens", json={"name": "kept", "role": "caller"}), 201).json()
    assert post(auditor, f"/console/tokens/{target['id']}/revoke", {}).status_code == 403
    assert any(t["id"] == target["id"] for t in expect(client.get("/api/v1/admin/tokens"), 200).json())


def test_a_tool_description_holding_script_is_escaped(client: TestClient, admin: TestClient) -> None:
    name = module_tool(client, description='<script>alert("x")</script> & more')
    for url in (f"/console/tools?search={name}", f"/console/playground?tool={name}"):
        page = admin.get(url).text
        assert "&lt;script&gt;alert(" in page, url
        assert '<script>alert("x")' not in page, url


def test_the_catalog_filters_by_call_type_tag_and_search(client: TestClient, admin: TestClient) -> None:
    tagged = module_tool(client, tags=["money"])
    other = module_tool(client)
    page = admin.get("/console/tools", params={"tag": "money"}).text
    assert tagged in page and other not in page
    page = admin.get("/console/tools", params={"search": other}).text
    assert other in page and tagged not in page
    assert f'href="/console/modules/{other}"' in page
    assert f"/console/playground?tool={other}" in page
    assert other not in admin.get("/console/tools", params={"callType": "PLAN"}).text


def test_the_catalog_shows_which_tool_a_shared_name_reaches(settings: Settings, shared_sandbox: object, tmp_path: Path) -> None:
    # a module takes the name `add`; then the tools file declares a native tool `add` (R15: it wins)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as first:
        body = {"id": "add", "description": "the module's add", "draftContent": "exports.run = function () { return 1; };", "tool": {}}
        expect(first.post(MODULES, json=body), 201)
        expect(first.post(f"{MODULES}/add/publish"), 200)
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps({"native": [
        {"name": "add", "description": "Adds two integers", "entrypoint": "tests.native_tools:add", "tags": ["math"]},
    ]}))
    with TestClient(create_app(wire(settings.model_copy(update={"tools_file": tools_file}), shared_sandbox))) as client:
        page = console(client, ADMIN_TOKEN).get("/console/tools", params={"search": "add"}).text
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    native = next(r for r in rows if "Adds two integers" in r)
    module = next(r for r in rows if "the module&#39;s add" in r)
    assert "Wins over the code module of the same name" in native and "Try in Playground" in native
    assert "Hidden</strong> by the native tool of the same name" in module and "Try in Playground" not in module
    assert 'href="/console/modules/add"' in module


def test_plans_are_created_run_edited_and_deleted_from_forms(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client)
    plan = unique_id("plan")
    bad = post(admin, "/console/plans", {"id": plan, "description": "adds one", "nodes": "no_such_tool"})
    assert bad.status_code == 200
    assert 'aria-invalid="true" aria-describedby="nodes-error' in bad.text
    assert "no tool named" in bad.text
    made = post(admin, "/console/plans", {"id": plan, "description": "adds one", "nodes": tool, "tags": "a, b"})
    assert made.status_code == 303 and made.headers["location"] == f"/console/plans/{plan}"
    assert f"Created the plan {plan}." in unquote(made.cookies["toolsmith_toast"])  # a toast on its page
    assert expect(client.get(f"/api/v1/admin/plans/{plan}"), 200).json()["tags"] == ["a", "b"]
    ran = post(admin, f"/console/plans/{plan}/run", {"input": '{"n": 41}'})
    assert ran.status_code == 200
    assert "Succeeded" in ran.text and "42" in ran.text and "adding" in ran.text
    not_json = post(admin, f"/console/plans/{plan}/run", {"input": "{oops"})
    assert not_json.status_code == 200 and "The input is not JSON" in not_json.text
    failed = post(admin, f"/console/plans/{plan}/run", {"input": '{"n": "x"}'})
    assert "Failed" in failed.text
    saved = post(admin, f"/console/plans/{plan}", {"description": "adds two", "nodes": f"{tool}\n{tool}"})
    assert saved.status_code == 303
    assert len(expect(client.get(f"/api/v1/admin/plans/{plan}"), 200).json()["nodes"]) == 2
    # each node's output is shown, the first one as the second's input
    chained = module_tool(client, source="exports.run = function (i) { return {n: i.n + 1}; };")
    assert post(admin, f"/console/plans/{plan}", {"description": "adds two", "nodes": f"{chained}\n{chained}"}).status_code == 303
    twice = post(admin, f"/console/plans/{plan}/run", {"input": '{"n": 1}'}).text
    assert "Node 1: " in twice and "Output (node 2's input):" in twice and "Node 2: " in twice
    assert twice.index("&#34;n&#34;: 2") < twice.index("&#34;n&#34;: 3")
    assert post(admin, f"/console/plans/{plan}/delete", {}).status_code == 303
    assert client.get(f"/api/v1/admin/plans/{plan}").status_code == 404


def test_agents_and_profiles_show_what_they_reach(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client, tags=["reachable"])
    for kind, rest in (("agents", "agents"), ("profiles", "usage-profiles")):
        record = unique_id(kind[:-1])
        made = post(admin, f"/console/{kind}", {"id": record, "description": "by tag", "allowedTags": "reachable"})
        assert made.status_code == 303, made.text
        page = admin.get(f"/console/{kind}/{record}").text
        assert "What it reaches now" in page and tool in page
        assert expect(client.get(f"/api/v1/admin/{rest}/{record}"), 200).json()["allowedTags"] == ["reachable"]
        saved = post(admin, f"/console/{kind}/{record}", [("description", "by name"), ("allowedTools", tool)])
        assert saved.status_code == 303
        assert expect(client.get(f"/api/v1/admin/{rest}/{record}"), 200).json()["allowedTools"] == [tool]


def test_an_mcp_server_attaches_and_detaches_tools(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client)
    server = unique_id("server")
    assert post(admin, "/console/servers", {"id": server, "description": "for tests"}).status_code == 303
    page = admin.get(f"/console/servers/{server}").text
    assert f'value="{ORIGIN}/mcp/{server}" readonly' in page and 'data-copy="server-url"' in page
    assert post(admin, f"/console/servers/{server}/tools", {"tool": tool}).status_code == 303
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()["tools"] == [tool]
    assert "Not attached: no tool with id" in post(admin, f"/console/servers/{server}/tools", {"tool": "no_such_tool"}).text
    assert post(admin, f"/console/servers/{server}/tools/{tool}/detach", {}).status_code == 303
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()["tools"] == []


def test_a_token_secret_is_shown_once(client: TestClient, admin: TestClient) -> None:
    profile = unique_id("profile")
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": profile}), 201).json()
    bad = post(admin, "/console/tokens", {"name": "x", "role": "admin", "usageProfile": profile}, page="/console/tokens")
    assert bad.status_code == 200 and "only caller tokens have a usage profile" in bad.text
    issued = post(admin, "/console/tokens", {"name": "a caller", "role": "caller", "usageProfile": profile}, page="/console/tokens")
    assert issued.status_code == 200
    assert issued.headers["cache-control"] == "no-store"
    secret = re.search(r'id="issued-secret" value="(tsk_[^"]+)"', issued.text).group(1)
    assert "it will not be shown again" in issued.text
    assert client.get("/api/v1/tools/x/call", headers={"Authorization": f"Bearer {secret}"}).status_code in (404, 405)
    again = admin.get("/console/tokens").text
    assert secret not in again and "a caller" in again
    token = next(t for t in expect(client.get("/api/v1/admin/tokens"), 200).json() if t["name"] == "a caller")
    revoked = post(admin, f"/console/tokens/{token['id']}/revoke", {}, page="/console/tokens")
    assert revoked.status_code == 303 and revoked.headers["location"] == "/console/tokens"
    assert "Revoked the token a caller" in unquote(revoked.cookies["toolsmith_toast"])  # a toast on the next page
    assert all(t["id"] != token["id"] for t in expect(client.get("/api/v1/admin/tokens"), 200).json())


def test_the_audit_export_downloads_for_an_auditor(auditor: TestClient, records: dict[str, str]) -> None:
    answer = auditor.get("/console/audit/export")
    assert answer.status_code == 200
    assert answer.headers["content-disposition"].startswith("attachment")
    assert records["plans"] in answer.text


def test_the_playground_runs_a_tool_as_mcp_does(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client, params=[{"name": "n", "type": "integer", "required": True},
                                       {"name": "flag", "type": "boolean"}, {"name": "items", "type": "array"}],
                       source="exports.run = function (i) { log('got ' + i.n); return {n: i.n + 1, flag: i.flag, items: i.items}; };")
    page = admin.get(f"/console/playground?tool={tool}").text
    assert 'type="number" step="1"' in page and 'type="checkbox"' in page and 'data-kind="json"' in page
    assert "(required)" in page
    ran = post(admin, "/console/playground/run", {"tool": tool, "mode": "form", "arg.n": "41", "arg.flag": "on", "arg.items": "[1, 2]"})
    assert ran.status_code == 200
    assert "Succeeded" in ran.text and "&#34;n&#34;:42" in ran.text.replace(" ", "") and "got 41" in ran.text
    raw = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": '{"n": 1}'})
    assert "Succeeded" in raw.text and "&#34;n&#34;:2" in raw.text.replace(" ", "")
    wrong = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": '{"n": "one"}'})
    assert "Failed: the tool answered with an error" in wrong.text and "invalid-input" in wrong.text
    field = post(admin, "/console/playground/run", {"tool": tool, "mode": "form", "arg.n": "4.5"})
    assert "result-summary" not in field.text and "n must be a whole number" in field.text
    assert 'aria-invalid="true"' in field.text


def test_the_playground_cuts_an_output_at_128_kb(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client, params=[], source="exports.run = function () { return 'x'.repeat(200000); };")
    ran = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": "{}"})
    assert "only its first 128 KB is shown" in ran.text
    shown = re.search(r'<pre class="output">(x*)</pre>', ran.text).group(1)
    assert len(shown) == 128 * 1024


def test_deleting_a_plan_another_plan_calls_is_refused_on_its_page(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client)
    inner, outer = unique_id("inner"), unique_id("outer")
    expect(client.post("/api/v1/admin/plans", json={"id": inner, "description": "d", "nodes": [{"toolName": tool}], "exposeAsTool": True}), 201)
    expect(client.post("/api/v1/admin/plans", json={"id": outer, "description": "d", "nodes": [{"toolName": inner}]}), 201)
    refused = post(admin, f"/console/plans/{inner}/delete", {})
    assert refused.status_code == 200
    assert "Not deleted" in refused.text and outer in refused.text
    expect(client.get(f"/api/v1/admin/plans/{inner}"), 200)
