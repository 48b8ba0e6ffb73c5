"""Tool search on an MCP server's pages, as an admin does it (issue 36, item 6; docs/mcp.md, "Tool
search"): the Edit page switches it on and pins an attached tool, the server's page says so, and a
real MCP client then lists find_tool, call_tool and the pinned tool; a pin that is not attached
any more is refused by name."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shots, sign_in
from tests.browser.test_console_callers import listed_by_mcp, published_tool
from tests.browser.test_mcp_servers import attach, create_server


def test_tool_search_is_switched_on_and_a_tool_pinned(page: Any, console_server: Any) -> None:
    from playwright.sync_api import expect

    pinned, other = published_tool(console_server), published_tool(console_server)
    server = f"s{uuid4().hex[:8]}"
    sign_in(page, then="/console/servers")
    create_server(page, server)
    attach(page, pinned, other)
    page.get_by_role("status").get_by_text("Attached 2 tools").wait_for()
    card = page.get_by_role("region", name="Tool search")
    assert "off" in card.inner_text()
    assert sorted(listed_by_mcp(console_server, server)) == sorted([pinned, other])

    page.get_by_role("link", name="Edit", exact=True).click()
    page.wait_for_url(f"**/console/servers/{server}/edit")
    page.get_by_label("Offer tool search instead of the whole list").check()
    pins = page.get_by_role("list", name="Always listed (pinned)")
    assert sorted(pins.get_by_role("checkbox").evaluate_all("boxes => boxes.map(b => b.value)")) == sorted([pinned, other])
    pins.get_by_role("checkbox", name=pinned, exact=True).check()
    assert_accessible(page, "an MCP server's edit page with tool search")
    shots(page, "mcp-server-tool-search-edit")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/servers/{server}")
    expect(page.locator("#toasts").locator(".toast", has_text=f"Saved the MCP server {server}: live at once.")).to_be_visible()
    state = page.locator("#tool-search-state")
    assert re.search(rf"on\s+tools/list offers find_tool and call_tool, and the pinned tools {pinned}\.", state.inner_text())
    assert_accessible(page, "an MCP server with tool search on")
    shots(page, "mcp-server-tool-search")
    # a real client lists what the page says
    assert sorted(listed_by_mcp(console_server, server)) == sorted(["find_tool", "call_tool", pinned])

    # a pin must be attached: detached meanwhile, the form's pin is refused by name
    page.get_by_role("link", name="Edit", exact=True).click()
    with console_server.client() as rest:
        assert rest.delete(f"/api/v1/admin/mcp-servers/{server}/tools/{pinned}").status_code == 200
    page.get_by_role("button", name="Save").click()
    problem = page.get_by_role("alert")
    problem.wait_for()
    assert f"toolSearch.pinned[0]: '{pinned}' is not attached to this server" in problem.inner_text()
