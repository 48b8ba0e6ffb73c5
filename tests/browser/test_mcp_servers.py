"""MCP servers and tokens in a browser, as an admin does it (issue 31, points 7, 8 and 12): several
tools attached at once (a File Search tool as one choice, its capabilities following), the attached
list with kind, state and links, detach with a toast whose Undo attaches again, the clients'
configurations to copy, the check of what a token is offered (compared with a real MCP client's
tools/list), one tool on two servers (seed 003), and the tokens page's default role and layout."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shots, sign_in
from tests.browser.test_console_callers import listed_by_mcp, published_tool


def search_tool(console_server: Any) -> str:
    name = f"docs{uuid4().hex[:6]}"
    with console_server.client() as rest:
        made = rest.post("/api/v1/admin/search-tools", json={"id": name, "description": "care guides"})
        assert made.status_code == 201, made.text
    return name


def create_server(page: Any, name: str, description: str = "for the tests") -> None:
    page.goto("/console/servers")
    page.get_by_role("link", name="Create an MCP server").click()
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Description").fill(description)
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/servers/{name}")


def attach(page: Any, *names: str) -> None:
    """Checks each tool in the attach list (found by typing its name) and attaches them with one click."""
    find = page.get_by_label("Find a tool to attach")
    for name in names:
        find.fill(name)
        page.get_by_role("checkbox", name=re.compile(rf"^{re.escape(name)} ")).check()
    find.fill("")
    page.get_by_role("button", name="Attach the checked tools").click()


def attached_table(page: Any) -> Any:
    return page.get_by_role("table", name=re.compile("The tools attached to"))


def test_tokens_default_to_the_least_power_and_fit_their_cards(page, console_server) -> None:
    sign_in(page, then="/console/tokens")
    role = page.get_by_label("Role")
    assert role.input_value() == "caller"
    assert role.locator("option").all_inner_texts() == ["Caller (calls tools)", "Auditor (reads)", "Admin (everything)"]
    label = f"reader {uuid4().hex[:6]}"
    page.get_by_label("Name").fill(label)
    page.get_by_role("button", name="Issue").click()
    page.get_by_label(f"The token of {label}").wait_for()
    row = page.get_by_role("row", name=re.compile(re.escape(label)))
    assert row.get_by_role("cell", name="Caller (calls tools)").is_visible()
    assert re.search(r"(just now|seconds? ago) by ", row.inner_text())
    assert_accessible(page, "a token just issued")
    page.emulate_media(color_scheme="dark")
    assert_accessible(page, "a token just issued, in the dark theme")
    page.emulate_media(color_scheme="light")
    # the secret's card holds no blank band: its last line ends near its bottom edge
    gap = page.evaluate("""() => { const card = document.querySelector('.card.secret');
        const last = card.querySelector('.copy-row');
        const style = getComputedStyle(card);
        return card.getBoundingClientRect().bottom - last.getBoundingClientRect().bottom
          - parseFloat(style.paddingBottom) - parseFloat(style.borderBottomWidth); }""")
    assert gap < 12, f"the issued token's card has a blank band of {gap} px under its field"
    shots(page, "tokens")


def test_several_tools_are_attached_at_once_and_a_detach_is_undone(page, console_server) -> None:
    first, second = published_tool(console_server), published_tool(console_server)
    docs = search_tool(console_server)
    server = f"s{uuid4().hex[:8]}"
    sign_in(page, then="/console/servers")
    create_server(page, server)
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    assert crumbs.get_by_role("link", name="MCP servers").get_attribute("href") == "/console/servers"
    assert crumbs.get_by_text(server).get_attribute("aria-current") == "page"
    # the checklist: typing narrows it; a File Search tool is one choice, its capabilities under it
    find = page.get_by_label("Find a tool to attach")
    find.fill(docs)
    choice = page.get_by_role("checkbox", name=re.compile(rf"^{docs} File Search tool"))
    assert choice.is_visible()
    assert page.get_by_role("checkbox", name=re.compile(rf"^{first} ")).is_hidden()
    assert page.get_by_text(re.compile(rf"Attaches its capabilities: {docs}_")).is_visible()
    choice.check()
    find.fill(first)
    page.get_by_role("checkbox", name=re.compile(rf"^{first} code module")).check()
    assert "2 checked" in page.get_by_role("status").filter(has_text="shown").inner_text()
    find.fill(second)
    page.get_by_role("checkbox", name=re.compile(rf"^{second} ")).check()
    find.fill("")
    assert_accessible(page, "the attach checklist, three checked")

    # one click attaches all three, answered in place (no new page) with a toast
    page.evaluate("() => { window.stillThisPage = true; }")
    started = page.evaluate("() => performance.now()")
    page.get_by_role("button", name="Attach the checked tools").click()
    toast = page.get_by_role("status").get_by_text(re.compile(r"^Attached 3 tools: "))
    toast.wait_for()
    took = page.evaluate("() => performance.now()") - started
    request = page.evaluate("() => performance.getEntriesByType('resource').filter(e => e.initiatorType === 'xmlhttprequest'"
                            " && e.name.endsWith('/tools')).map(e => e.duration).pop()")
    print(f"attaching three tools: the request took {request:.0f} ms, the click to the toast {took:.0f} ms")
    assert took < 1000, f"attaching took {took:.0f} ms"
    assert page.evaluate("() => window.stillThisPage === true"), "the attach loaded a new page"
    table = attached_table(page)
    for name in (first, second, docs):
        assert table.get_by_role("row", name=re.compile(rf"^{re.escape(name)}\b")).is_visible()
    row = table.get_by_role("row", name=re.compile(rf"^{first}\b"))
    assert row.get_by_role("link", name=first).get_attribute("href") == f"/console/modules/{first}"
    assert row.get_by_text("code module").is_visible() and row.get_by_text("enabled").is_visible()
    docs_row = table.get_by_role("row", name=re.compile(rf"^{docs}\b"))
    assert docs_row.get_by_text("File Search tool").is_visible()
    assert docs_row.get_by_role("link", name=docs).get_attribute("href") == f"/console/search-tools/{docs}"
    assert page.get_by_role("checkbox", name=re.compile(rf"^{first} ")).count() == 0  # attached: no longer a choice
    assert first in listed_by_mcp(console_server, server) and second in listed_by_mcp(console_server, server)
    assert_accessible(page, "an MCP server with three tools attached")
    page.emulate_media(color_scheme="dark")
    assert_accessible(page, "an MCP server with three tools attached, in the dark theme")
    page.emulate_media(color_scheme="light")
    shots(page, "mcp-server")

    # detach answers in place; the toast's Undo attaches the tool again
    page.get_by_role("button", name=f"Detach {second}").click()
    page.get_by_role("status").get_by_text(f"Detached {second}.").wait_for()
    assert attached_table(page).get_by_role("row", name=re.compile(rf"^{second}\b")).count() == 0
    assert page.evaluate("() => window.stillThisPage === true")
    assert second not in listed_by_mcp(console_server, server)
    page.locator("#toasts .toast", has_text=f"Detached {second}.").hover()  # kept while the pointer is on it (6 s otherwise)
    assert_accessible(page, "the detach toast")
    page.locator("#toasts .toast", has_text=f"Detached {second}.").get_by_role("button", name="Undo").click()
    page.get_by_role("status").get_by_text(f"Attached {second}.").wait_for()
    assert attached_table(page).get_by_role("row", name=re.compile(rf"^{second}\b")).is_visible()
    assert second in listed_by_mcp(console_server, server)


def test_a_client_configuration_is_chosen_by_tab_and_copied(page, console_server) -> None:
    server = f"s{uuid4().hex[:8]}"
    sign_in(page, then="/console/servers")
    create_server(page, server)
    url = f"{console_server.url}/mcp/{server}"
    clients = page.get_by_role("tablist", name="MCP clients")
    claude = clients.get_by_role("tab", name="Claude Desktop")
    assert claude.get_attribute("aria-selected") == "true"
    panel = page.get_by_role("tabpanel", name="Claude Desktop")
    text = panel.get_by_label("The Claude Desktop configuration").inner_text()
    assert "claude_desktop_config.json" in panel.inner_text()
    assert '"mcp-remote"' in text and f'"{url}"' in text and "Authorization: Bearer ${TOKEN}" in text and '"<YOUR_TOKEN>"' in text
    assert page.get_by_role("link", name="issue one on the Tokens page").get_attribute("href") == "/console/tokens"
    # the keyboard moves between the tabs (arrow keys), as the tabs pattern has it
    claude.focus()
    page.keyboard.press("ArrowRight")
    vscode = clients.get_by_role("tab", name="VS Code")
    assert vscode.get_attribute("aria-selected") == "true" and page.evaluate("document.activeElement.id") == "tab-vscode"
    assert page.get_by_role("tabpanel", name="Claude Desktop").count() == 0
    vs_text = page.get_by_role("tabpanel", name="VS Code").get_by_label("The VS Code configuration").inner_text()
    assert '"servers"' in vs_text and '"type": "http"' in vs_text and f'"url": "{url}"' in vs_text
    assert '"Authorization": "Bearer <YOUR_TOKEN>"' in vs_text
    clients.get_by_role("tab", name="Cursor").click()
    cursor = page.get_by_role("tabpanel", name="Cursor")
    assert "~/.cursor/mcp.json" in cursor.inner_text() and '"mcpServers"' in cursor.inner_text()
    page.keyboard.press("End")  # focus is on the Cursor tab after the click
    inspector = page.get_by_role("tabpanel", name="MCP Inspector")
    assert "npx @modelcontextprotocol/inspector --cli " + url in inspector.inner_text()
    assert "--transport http" in inspector.inner_text()
    assert_accessible(page, "the clients' configurations")
    page.emulate_media(color_scheme="dark")
    assert_accessible(page, "the clients' configurations, in the dark theme")
    page.emulate_media(color_scheme="light")
    # Copy puts the text on the clipboard and says so
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    inspector.get_by_role("button", name="Copy the MCP Inspector configuration").click()
    inspector.get_by_text("Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()").startswith("npx @modelcontextprotocol/inspector --cli " + url)
    assert "tsk_" not in page.content()
    # a long line scrolls inside its box, never wrapped into another line of the file
    assert page.evaluate("getComputedStyle(document.getElementById('config-claude')).whiteSpace") == "pre"
    shots(page, "mcp-server-clients")


def test_the_check_lists_the_tools_as_a_token_sees_them(page, console_server) -> None:
    allowed, other = published_tool(console_server), published_tool(console_server)
    profile = f"p{uuid4().hex[:8]}"
    server = f"s{uuid4().hex[:8]}"
    sign_in(page, then="/console/profiles")
    # a usage profile allowing one tool, and a caller token with it, made through the pages
    page.get_by_role("link", name=re.compile("Create a usage profile")).click()
    page.get_by_label("Name", exact=True).fill(profile)
    page.get_by_label("Description").fill("allows one tool")
    page.get_by_role("checkbox", name=allowed, exact=True).check()
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/profiles/{profile}")
    page.goto("/console/tokens")
    label = f"checker {uuid4().hex[:6]}"
    page.get_by_label("Name").fill(label)
    page.get_by_label("Usage profile (callers)").select_option(profile)
    page.get_by_role("button", name="Issue").click()
    secret = page.get_by_label(f"The token of {label}").input_value()
    create_server(page, server)
    attach(page, allowed, other)
    page.get_by_role("status").get_by_text("Attached 2 tools").wait_for()

    page.get_by_label("Check as").select_option(label=f"{label} (caller with the usage profile {profile})")
    page.get_by_role("button", name="Check", exact=True).click()
    result = page.locator("#check-result")
    result.get_by_role("heading", name=re.compile("1 tool listed")).wait_for()
    listed = result.get_by_role("list", name=re.compile("1 tool listed")).get_by_role("listitem").all_inner_texts()
    assert [item.split()[0] for item in listed] == [allowed]
    missing = result.get_by_role("list", name="Attached, but not listed to this caller").inner_text()
    assert f"{other}: the usage profile {profile} does not allow it." in missing
    assert secret not in page.content()
    # what a real MCP client with that token lists is what the check said
    assert listed_by_mcp_as(console_server, server, secret) == [allowed]
    assert_accessible(page, "the check of a token")
    page.emulate_media(color_scheme="dark")
    assert_accessible(page, "the check of a token, in the dark theme")
    page.emulate_media(color_scheme="light")
    shots(page, "mcp-server-check")


def listed_by_mcp_as(console_server: Any, server_id: str, token: str) -> list[str]:
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from tests.e2e.conftest import mcp_client

    async def names() -> list[str]:
        async with mcp_client(console_server, token, path=f"/mcp/{server_id}") as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, names()).result(timeout=60)


def test_one_tool_on_two_servers_detached_from_one(page, console_server) -> None:
    """Seed 003: one tool offered on two MCP servers; detaching it from one leaves the other's."""
    tool = published_tool(console_server)
    first, second = f"s{uuid4().hex[:8]}", f"s{uuid4().hex[:8]}"
    sign_in(page, then="/console/servers")
    for server in (first, second):
        create_server(page, server)
        attach(page, tool)
        page.get_by_role("status").get_by_text(f"Attached {tool}.").wait_for()
    page.goto("/console/servers")
    for server in (first, second):
        assert tool in page.get_by_role("row", name=re.compile(rf"^{server}\b")).inner_text()
    assert_accessible(page, "the MCP servers")
    shots(page, "mcp-servers")
    page.get_by_role("link", name=first, exact=True).click()
    page.get_by_role("button", name=f"Detach {tool}").click()
    page.get_by_role("status").get_by_text(f"Detached {tool}.").wait_for()
    assert page.get_by_text("No tool is attached").is_visible()
    page.goto(f"/console/servers/{second}")
    assert attached_table(page).get_by_role("row", name=re.compile(rf"^{tool}\b")).is_visible()
    assert tool not in listed_by_mcp(console_server, first)
    assert tool in listed_by_mcp(console_server, second)


def test_an_mcp_server_s_create_save_and_delete_are_each_said_by_a_toast_and_a_create_is_undone_by_its_own(page, console_server) -> None:  # noqa: ANN001
    from playwright.sync_api import expect

    name = f"toasted{uuid4().hex[:6]}"
    sign_in(page, then="/console/servers")
    toasts = page.locator("#toasts")
    create_server(page, name)
    made = toasts.locator(".toast", has_text=f"Created the MCP server {name}.")
    expect(made).to_be_visible()
    assert_accessible(page, "an MCP server just created, with its toast")
    shots(page, "server-created-toast")
    # its Undo deletes it again: the list, without it, and a toast that says so
    made.get_by_role("button", name="Undo").click()
    page.wait_for_url("**/console/servers")
    expect(toasts).to_contain_text(f"Deleted the MCP server {name}.")
    expect(page.get_by_role("link", name=name, exact=True)).to_have_count(0)
    with console_server.client() as rest:
        assert rest.get(f"/api/v1/admin/mcp-servers/{name}").status_code == 404

    # made again, edited by keyboard and saved: a toast; deleted: a toast on the list
    create_server(page, name)
    page.get_by_role("link", name="Edit", exact=True).click()
    page.get_by_label("Description").fill("the team's tools")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/servers/{name}")
    expect(toasts).to_contain_text(f"Saved the MCP server {name}: live at once.")
    expect(page.get_by_text("the team's tools")).to_be_visible()
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog", name=f"Delete the MCP server {name}?").get_by_role("button", name=f"Delete {name}").click()
    page.wait_for_url("**/console/servers")
    expect(toasts).to_contain_text(f"Deleted the MCP server {name}.")
    assert_accessible(page, "the MCP servers list after a delete, with its toast")
