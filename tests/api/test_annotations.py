"""R17 (issue 33, point 5): every kind's tools carry MCP's annotations, derived where the kind
knows (a code module's use of http.fetch, its own or an import's; an API URL tool's method; File
Search reads), overridable by the admin within what is true, versioned with the tool, and listed
by tools/list with their icons."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.api.test_mcp_transport import ACCEPT, URL, open_session, request
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect

CODE_MODULES = "/api/v1/admin/code-modules"
API_TOOLS = "/api/v1/admin/api-tools"
PURE = "exports.run = function (input) { return 1; };"
FETCHING = "exports.run = function (input) { return http.fetch('https://example.com/').status; };"
ICON = {"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}


@pytest.fixture
def client(settings: Settings, shared_sandbox: object) -> Iterator[TestClient]:
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def module(client: TestClient, name: str, source: str, *, imports: list[str] = (), tool: dict[str, Any] | None = None,
           publish: bool = True) -> Any:
    body = {"id": name, "description": f"The module {name}.", "draftContent": source, "draftImports": list(imports)}
    if tool is not None:
        body["tool"] = {"inputParameters": [], "exposeInChat": True, **tool}
    created = client.post(CODE_MODULES, json=body)
    if created.status_code == 201 and publish:
        expect(client.post(f"{CODE_MODULES}/{name}/publish"), 200)
    return created


def listed(client: TestClient) -> dict[str, dict[str, Any]]:
    session = open_session(client, "2025-11-25")
    answer = client.post("/mcp", json=request(1, "tools/list"), headers=session)
    assert answer.status_code == 200, answer.text
    return {tool["name"]: tool for tool in answer.json()["result"]["tools"]}


def refused_field(answer: Any) -> dict[str, str]:
    assert answer.status_code == 400, answer.text
    return {v["field"]: v["message"] for v in answer.json()["errors"]}


def test_a_module_s_hints_are_derived_from_its_code_and_its_imports(client: TestClient) -> None:
    module(client, "pure", PURE, tool={})
    module(client, "fetching", FETCHING, tool={})
    module(client, "net", "exports.get = function (u) { return http.fetch(u).text(); };")
    module(client, "viaimport", "exports.run = function () { return net.get('https://example.com/'); };", imports=["net"], tool={})
    tools = listed(client)
    assert tools["pure"]["annotations"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    assert tools["fetching"]["annotations"] == {"openWorldHint": True}
    assert tools["viaimport"]["annotations"] == {"openWorldHint": True}


def test_a_library_that_starts_fetching_makes_its_importers_open_world(client: TestClient) -> None:
    module(client, "lib", "exports.v = function () { return 1; };")
    module(client, "user", "exports.run = function () { return lib.v(); };", imports=["lib"], tool={})
    module(client, "claims", "exports.run = function () { return lib.v(); };", imports=["lib"],
           tool={"annotations": {"openWorldHint": False, "title": "Closed"}})
    assert listed(client)["user"]["annotations"]["openWorldHint"] is False
    expect(client.put(f"{CODE_MODULES}/lib", json={"draftContent": "exports.v = function () { return http.fetch('https://a.example/').status; };"}), 200)
    expect(client.post(f"{CODE_MODULES}/lib/publish"), 200)
    tools = listed(client)
    assert tools["user"]["annotations"] == {"openWorldHint": True}
    # A claim that was true when made and is not any more: the fact is listed, not the claim.
    assert tools["claims"]["annotations"] == {"title": "Closed", "openWorldHint": True}


def test_the_admin_s_hints_title_and_icons_are_listed_and_versioned(client: TestClient) -> None:
    given = {"title": "Fetch the status", "readOnlyHint": True, "idempotentHint": True}
    module(client, "status", FETCHING, tool={"annotations": given, "icons": [ICON]})
    tool = listed(client)["status"]
    assert tool["annotations"] == {"title": "Fetch the status", "readOnlyHint": True, "idempotentHint": True, "openWorldHint": True}
    assert tool["icons"] == [ICON]
    shown = client.get(f"{CODE_MODULES}/status").json()
    assert shown["published"]["tool"]["annotations"] == given and shown["published"]["tool"]["icons"] == [ICON]
    # A new version with other hints: version 1 keeps its own.
    expect(client.put(f"{CODE_MODULES}/status", json={"tool": {"inputParameters": [], "exposeInChat": True,
                                                               "annotations": {"title": "Status, v2"}}}), 200)
    expect(client.post(f"{CODE_MODULES}/status/publish"), 200)
    assert listed(client)["status"]["annotations"] == {"title": "Status, v2", "openWorldHint": True}
    assert "icons" not in listed(client)["status"]
    first = client.get(f"{CODE_MODULES}/status/versions/1").json()
    assert first["tool"]["annotations"] == given


def test_a_hint_the_code_contradicts_is_refused_naming_the_field_and_why(client: TestClient) -> None:
    refused = refused_field(module(client, "liar", FETCHING, tool={"annotations": {"openWorldHint": False}}))
    assert refused["tool.annotations.openWorldHint"] == "cannot be false: its code calls http.fetch, which reaches the network"
    module(client, "net", "exports.get = function (u) { return http.fetch(u).text(); };")
    refused = refused_field(module(client, "liar2", "exports.run = function () { return net.get('x'); };", imports=["net"],
                                   tool={"annotations": {"openWorldHint": False}}))
    assert refused["tool.annotations.openWorldHint"] == "cannot be false: the module net it imports calls http.fetch, which reaches the network"
    # The same on a PUT of an existing module's draft.
    module(client, "honest", PURE, tool={})
    changed = client.put(f"{CODE_MODULES}/honest", json={"draftContent": FETCHING, "tool": {"inputParameters": [], "annotations": {"openWorldHint": False}}})
    assert refused_field(changed)["tool.annotations.openWorldHint"].startswith("cannot be false: its code calls http.fetch")
    # More cautious than derived: always accepted.
    expect(client.put(f"{CODE_MODULES}/honest", json={"tool": {"inputParameters": [], "exposeInChat": True,
                                                               "annotations": {"readOnlyHint": False, "destructiveHint": True}}}), 200)
    # Shapes: unknown keys, non-booleans, a blank title, bad icons.
    bad = refused_field(module(client, "shapes", PURE, tool={"annotations": {"readOnly": True, "idempotentHint": "yes", "title": " "},
                                                          "icons": [{"src": "javascript:alert(1)", "sizes": ["big"], "mimeType": "text/html"}]}))
    assert set(bad) >= {"tool.annotations.readOnly", "tool.annotations.idempotentHint", "tool.annotations.title",
                        "tool.icons[0].src", "tool.icons[0].sizes", "tool.icons[0].mimeType"}


def api_tool(client: TestClient, name: str, method: str, **extra: Any) -> Any:
    return client.post(API_TOOLS, json={"id": name, "description": f"The tool {name}.", "method": method,
                                        "urlTemplate": "https://api.example.com/items", **extra})


def test_an_api_url_tool_s_hints_follow_its_method(client: TestClient) -> None:
    expect(api_tool(client, "getitems", "GET"), 201)
    expect(api_tool(client, "dropitems", "DELETE"), 201)
    expect(api_tool(client, "additem", "POST", annotations={"destructiveHint": False, "title": "Add an item"}), 201)
    expect(api_tool(client, "internal", "GET", annotations={"openWorldHint": False}), 201)
    tools = listed(client)
    catalog = {t["name"]: t for t in client.get("/api/v1/admin/tools").json()}
    assert catalog["dropitems"]["annotations"] == tools["dropitems"]["annotations"]
    assert tools["getitems"]["annotations"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": True}
    assert tools["dropitems"]["annotations"] == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": True}
    assert tools["additem"]["annotations"] == {"title": "Add an item", "readOnlyHint": False, "destructiveHint": False, "openWorldHint": True}
    assert tools["internal"]["annotations"]["openWorldHint"] is False
    refused = refused_field(api_tool(client, "sneaky", "DELETE", annotations={"readOnlyHint": True, "destructiveHint": False}))
    assert refused["annotations.readOnlyHint"] == "cannot be true: its method is DELETE, which deletes"
    assert refused["annotations.destructiveHint"] == "cannot be false: its method is DELETE, which deletes"
    refused = refused_field(api_tool(client, "sneaky", "POST", annotations={"readOnlyHint": True}))
    assert refused["annotations.readOnlyHint"] == "cannot be true: its method is POST, which changes the resource it is sent to"


def test_a_tools_file_tool_is_listed_with_what_its_server_says_and_bad_hints_stop_the_start(tmp_path: Any) -> None:
    import json

    from infrastructure.declared_tools import ToolsFileError, load_declared_tools

    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    said = {"title": "Weather", "readOnlyHint": True, "openWorldHint": True}
    path = tmp_path / "tools.json"
    path.write_text(json.dumps({"mcp": [{"name": "weather", "description": "Today's weather", "url": "https://weather.example/mcp",
                                         "inputSchema": schema, "annotations": said, "icons": [ICON]}]}))
    (tool,) = load_declared_tools(path)
    assert tool.entry.annotations == said and tool.entry.icons == (ICON,)
    path.write_text(json.dumps({"mcp": [{"name": "weather", "description": "Today's weather", "url": "https://weather.example/mcp",
                                         "inputSchema": schema, "annotations": {"readOnlyHint": "yes"}, "icons": [{"src": "ftp://x"}]}]}))
    with pytest.raises(ToolsFileError) as refused:
        load_declared_tools(path)
    assert "mcp[0].annotations.readOnlyHint: must be true or false" in str(refused.value)
    assert "mcp[0].icons[0].src" in str(refused.value)


def test_a_plan_s_hints_combine_its_nodes_tools(client: TestClient) -> None:
    module(client, "pure", PURE, tool={})
    module(client, "fetching", FETCHING, tool={})
    expect(api_tool(client, "dropitems", "DELETE"), 201)
    plans = "/api/v1/admin/plans"
    for name, nodes in (("calm", ["pure", "pure"]), ("reaching", ["pure", "fetching"]), ("dropping", ["pure", "dropitems"])):
        expect(client.post(plans, json={"id": name, "description": f"The plan {name}.", "exposeAsTool": True, "exposeInChat": True,
                                        "nodes": [{"toolName": n} for n in nodes]}), 201)
    tools = listed(client)
    assert tools["calm"]["annotations"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    # A step that may write (nothing is known of its destructiveness) makes the plan destructive.
    assert tools["reaching"]["annotations"] == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
    assert tools["dropping"]["annotations"] == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": True}
