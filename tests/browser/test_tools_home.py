"""The Tools home in a browser (issue 31, point 5): "New tool" offers the three kinds with when to pick
each and leads to each kind's New page; the catalog shows each tool's kind in words, enabled,
callable in chat and the MCP servers it is on (links), filtered by kind and by a search as the admin
types. The tools and the server are made over REST: what they are is not the point here."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in

MODULES = "/api/v1/admin/code-modules"


def module_on_a_server(console_server: Any) -> tuple[str, str, str]:
    """A published code module callable in chat on a new MCP server, and one that is on none."""
    run = uuid4().hex[:6]
    names = (f"home{run}a", f"home{run}b")
    server = f"s{run}"
    with console_server.client() as rest:
        for name, chat in zip(names, (True, False)):
            made = rest.post(MODULES, json={"id": name, "description": "formats a sum", "draftContent": "exports.run = function (i) { return i.n; };",
                                            "tool": {"inputParameters": [{"name": "n", "type": "integer"}], "exposeInChat": chat}})
            assert made.status_code == 201, made.text
            assert rest.post(f"{MODULES}/{name}/publish").status_code == 200
        assert rest.post("/api/v1/admin/mcp-servers", json={"id": server, "tools": [names[0]]}).status_code == 201
    return names[0], names[1], server


def test_new_tool_offers_the_three_kinds_and_leads_to_each(page, console_server) -> None:
    sign_in(page, then="/console/tools")
    expect(page.get_by_role("heading", name="Tools", exact=True)).to_be_visible()
    for title, url in (("Code module", "/console/modules/new"), ("API URL tool", "/console/api-tools/new"),
                       ("File Search tool", "/console/search-tools/new")):
        page.get_by_role("link", name="New tool").click()
        page.wait_for_url("**/console/tools/new")
        choice = page.get_by_role("listitem").filter(has=page.get_by_role("heading", name=title, exact=True))
        expect(choice).to_contain_text("Pick this when:")
        if title == "Code module":
            expect(choice).to_contain_text("formatters, calculators, validators")
            assert_accessible(page, "the New tool chooser")
            shots(page, "tools-new")
        elif title == "API URL tool":
            expect(choice).to_contain_text("call an HTTP API on your behalf")
        else:
            expect(choice).to_contain_text("search documents you upload")
        choice.get_by_role("link", name=f"New {title}", exact=False).last.click()
        page.wait_for_url(f"**{url}")
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page.goto("/console/tools")


def test_the_catalog_shows_kind_state_chat_and_servers_and_filters_as_you_type(page, console_server) -> None:
    on_server, alone, server = module_on_a_server(console_server)
    sign_in(page, then="/console/tools")
    search = page.get_by_role("searchbox", name="Search")
    search.fill(on_server[:-1])  # both tools: the filter answers as the admin types
    table = page.get_by_role("table", name="Tools, by name")
    expect(table.get_by_role("row")).to_have_count(3)
    row = table.get_by_role("row", name=re.compile(on_server))
    headers = [h.text_content().strip() for h in table.get_by_role("columnheader").all()]
    assert headers[:5] == ["Name", "Kind", "Enabled", "Callable in chat", "MCP servers"]
    cells = row.get_by_role("cell")
    expect(cells.nth(0)).to_have_text("code module")
    expect(cells.nth(1)).to_have_text("yes")
    expect(cells.nth(2)).to_have_text("yes")
    expect(cells.nth(3).get_by_role("link", name=server)).to_have_attribute("href", f"/console/servers/{server}")
    other = table.get_by_role("row", name=re.compile(alone)).get_by_role("cell")
    expect(other.nth(2)).to_have_text("no")
    expect(other.nth(3)).to_have_text("none")
    assert "CODE" not in table.inner_text()
    page.wait_for_url(re.compile(r"search="))
    assert_accessible(page, "the tool catalog, searched")
    shots(page, "tools")

    # the kind filter: no API URL tool has these names
    page.get_by_label("Kind").select_option(label="API URL tool")
    expect(page.get_by_text("No tool matches.")).to_be_visible()
    page.get_by_label("Kind").select_option(label="code module")
    expect(table.get_by_role("row")).to_have_count(3)
    search.fill(alone)
    expect(table.get_by_role("row")).to_have_count(2)
    expect(table.get_by_role("link", name=alone, exact=True)).to_have_attribute("href", f"/console/modules/{alone}")
    assert_accessible(page, "the tool catalog, filtered by kind and search")
    # the server's link leads to the server
    search.fill(on_server)
    table.get_by_role("link", name=server).click()
    page.wait_for_url(f"**/console/servers/{server}")
