"""An MCP server's tool search in the console over HTTP (issue 36, item 6; docs/mcp.md, "Tool
search"): the Edit page's switch and its pins (the attached tools, each a checkbox), what saving
them records, what the server's page then says, a pin that is no longer attached refused by name,
and a read-only visitor shown the state without the way to change it. The browser's run of the
same is tests/browser/test_mcp_tool_search.py."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.console.test_console_others import ORIGIN, admin, auditor, module_tool, post  # noqa: F401 (fixtures)
from tests.helpers import expect, unique_id


def test_the_edit_page_switches_tool_search_on_and_pins_an_attached_tool(client: TestClient, admin: TestClient) -> None:
    pinned, other = module_tool(client), module_tool(client)
    server = unique_id("server")
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": server, "tools": [pinned, other]}), 201)
    page = admin.get(f"/console/servers/{server}").text
    assert 'id="tool-search-state"' in page and "off" in page.split('id="tool-search-state"')[1][:80]
    form = admin.get(f"/console/servers/{server}/edit").text
    assert 'name="toolSearchEnabled"' in form and "checked" not in form.split('name="toolSearchEnabled"')[1].split(">")[0]
    # one pin choice per attached tool, none checked yet
    for name in (pinned, other):
        assert f'name="pinned" value="{name}">' in form
    saved = post(admin, f"/console/servers/{server}", [("description", ""), ("toolSearchEnabled", "on"), ("pinned", pinned),
                                                         ("attached", pinned), ("attached", other)],
                 page=f"/console/servers/{server}/edit")
    assert saved.status_code == 303 and saved.headers["location"] == f"/console/servers/{server}"
    record = expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()
    assert record["toolSearch"] == {"enabled": True, "pinned": [pinned]} and record["tools"] == [pinned, other]
    shown = admin.get(f"/console/servers/{server}").text
    assert f"tools/list offers find_tool and call_tool, and the pinned tools {pinned}." in shown
    again = admin.get(f"/console/servers/{server}/edit").text
    assert 'name="toolSearchEnabled" checked' in again
    assert f'name="pinned" value="{pinned}" checked>' in again and f'name="pinned" value="{other}">' in again
    # switched off again: the whole list, the pins kept for next time
    post(admin, f"/console/servers/{server}", [("description", ""), ("pinned", pinned)], page=f"/console/servers/{server}/edit")
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()["toolSearch"] == {"enabled": False, "pinned": [pinned]}
    assert "tools/list offers every attached tool a caller may use." in admin.get(f"/console/servers/{server}").text


def test_a_pin_not_attached_is_refused_by_name_and_the_form_kept(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client)
    server = unique_id("server")
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": server, "tools": [tool]}), 201)
    expect(client.delete(f"/api/v1/admin/mcp-servers/{server}/tools/{tool}"), 200)
    refused = post(admin, f"/console/servers/{server}", [("description", ""), ("toolSearchEnabled", "on"), ("pinned", tool),
                                                           ("attached", tool)], page=f"/console/servers/{server}/edit")
    assert refused.status_code in (200, 400, 422)
    assert f"&#39;{tool}&#39; is not attached to this server" in refused.text or f"'{tool}' is not attached to this server" in refused.text
    assert "toolSearch.pinned[0]" in refused.text
    # the switch as it was sent
    assert 'name="toolSearchEnabled" checked' in refused.text
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json().get("toolSearch", {}).get("enabled") is not True


def test_a_read_only_visitor_sees_the_state_not_the_switch(client: TestClient, auditor: TestClient) -> None:
    server = unique_id("server")
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": server, "toolSearch": {"enabled": True}}), 201)
    page = auditor.get(f"/console/servers/{server}").text
    assert "tools/list offers find_tool and call_tool; no tool is pinned." in page
    assert "Switch it and pin tools on the Edit page." not in page
