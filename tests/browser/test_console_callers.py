"""The tool catalog, MCP servers (seen by a real MCP client), tokens, plans, agents, usage profiles
and the audit download, in a browser."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shot, sign_in
from tests.e2e.conftest import mcp_client

MODULES = "/api/v1/admin/code-modules"


def published_tool(console_server: Any, *, tags: tuple[str, ...] = (), description: str = "adds one") -> str:
    name = f"m{uuid4().hex[:8]}"
    with console_server.client() as rest:
        made = rest.post(MODULES, json={
            "id": name, "description": description,
            "draftContent": "exports.run = function (i) { log('adding one to ' + i.n); return {n: i.n + 1}; };",
            "tool": {"inputParameters": [{"name": "n", "type": "integer", "required": True}], "exposeInChat": True, "tags": list(tags)},
        })
        assert made.status_code == 201, made.text
        assert rest.post(f"{MODULES}/{name}/publish").status_code == 200
    return name


def listed_by_mcp(console_server: Any, server_id: str) -> list[str]:
    """The tool names a real MCP SDK client lists on the server (its own event loop, outside Playwright's)."""

    async def names() -> list[str]:
        async with mcp_client(console_server, path=f"/mcp/{server_id}") as client:
            return [tool.name for tool in (await client.list_tools()).tools]

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, names()).result(timeout=60)


def test_the_catalog_lists_filters_and_links_each_tool(page, console_server) -> None:
    name = published_tool(console_server, tags=("catalogued",), description="adds one <b>not bold</b>")
    sign_in(page, then="/console/tools")
    assert page.get_by_role("heading", name="Tools", exact=True, level=1).is_visible()
    assert_accessible(page, "the tool catalog")
    shot(page, "tools")
    page.get_by_label("Tag").select_option("catalogued")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/console/tools?*tag=catalogued*")
    row = page.get_by_role("row", name=re.compile(name))
    assert row.get_by_text("adds one <b>not bold</b>").is_visible()  # shown as text, not markup
    assert row.get_by_role("cell", name="code module", exact=True).is_visible()
    row.get_by_text("1 parameter").click()
    assert '"n"' in row.locator("pre").inner_text()
    assert_accessible(page, "the tool catalog, filtered, a schema open")
    row.get_by_role("link", name="Try in Playground").click()
    page.wait_for_url(f"**/console/playground?tool={name}")
    page.go_back()
    # the module's own page (another part of the console) is where its name leads
    link = page.get_by_role("row", name=re.compile(name)).get_by_role("link", name=name, exact=True)
    assert link.get_attribute("href") == f"/console/modules/{name}"


def test_the_catalog_pages_a_hundred_tools_at_a_time(page, console_server) -> None:
    """Issue 15: the catalog screen pages as the REST catalog does; the next page's link keeps the
    filter. The tools' names sort after every other test's, so no other list of this server moves."""
    run = uuid4().hex[:6]
    names = [f"zpage{run}n{i:03d}" for i in range(101)]
    with console_server.client() as rest:
        for name in names:
            made = rest.post(MODULES, json={"id": name, "description": "paged", "draftContent": "exports.run = function () { return 1; };",
                                            "tool": {"tags": [f"paged{run}"]}})
            assert made.status_code == 201, made.text
            assert rest.post(f"{MODULES}/{name}/publish").status_code == 200
    sign_in(page, then=f"/console/tools?tag=paged{run}")
    body = page.locator("tbody")
    assert body.get_by_role("row").count() == 100
    assert page.locator("#results").get_by_role("status").inner_text().startswith("100 tools on this page of ")
    assert body.get_by_role("link", name=names[99], exact=True).is_visible()
    page.get_by_role("link", name="Next page of tools").click()
    page.wait_for_url(f"**/console/tools?*tag=paged{run}*cursor=*")
    assert [row.get_by_role("link").first.inner_text() for row in body.get_by_role("row").all()] == [names[100]]
    assert page.get_by_role("link", name="Next page of tools").count() == 0
    assert_accessible(page, "the tool catalog, second page")


def test_an_mcp_server_made_in_the_console_offers_what_is_attached(page, console_server) -> None:
    tool = published_tool(console_server)
    server = f"s{uuid4().hex[:8]}"
    sign_in(page, then="/console/servers")
    assert_accessible(page, "the MCP servers")
    page.get_by_role("link", name="Create an MCP server").click()
    assert_accessible(page, "the new MCP server form")
    page.get_by_label("Name", exact=True).fill(server)
    page.get_by_label("Description").fill("for the browser test")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/servers/{server}")
    url = page.get_by_label("Server URL")
    assert url.input_value() == f"{console_server.url}/mcp/{server}"
    assert url.get_attribute("readonly") is not None
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy the server URL").click()
    page.get_by_text("Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == f"{console_server.url}/mcp/{server}"

    page.get_by_role("checkbox", name=re.compile(rf"^{tool} ")).check()
    page.get_by_role("button", name="Attach the checked tools").click()
    page.get_by_role("status").get_by_text(f"Attached {tool}.").wait_for()
    assert_accessible(page, "an MCP server with a tool attached")
    shot(page, "server")
    assert tool in listed_by_mcp(console_server, server)

    page.get_by_role("button", name=f"Detach {tool}").click()
    page.get_by_role("status").get_by_text(f"Detached {tool}.").wait_for()
    assert page.get_by_text("No tool is attached").is_visible()
    assert tool not in listed_by_mcp(console_server, server)

    page.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name=f"Delete the MCP server {server}?")
    assert dialog.is_visible()
    assert_accessible(page, "the delete dialog")
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    page.get_by_role("button", name="Delete").click()
    dialog.get_by_role("button", name=f"Delete {server}").click()
    page.wait_for_url("**/console/servers")
    page.locator("#toasts").get_by_text(f"Deleted the MCP server {server}.").wait_for()  # the toast


def test_a_caller_token_is_shown_once_cannot_sign_in_and_is_revoked(page, browser, console_server) -> None:
    profile = f"p{uuid4().hex[:8]}"
    with console_server.client() as rest:
        assert rest.post("/api/v1/admin/usage-profiles", json={"id": profile}).status_code == 201
    label = f"caller {uuid4().hex[:6]}"
    sign_in(page, then="/console/tokens")
    assert_accessible(page, "the tokens")
    page.get_by_label("Name").fill(label)
    page.get_by_label("Role").select_option("caller")
    page.get_by_label("Usage profile (callers)").select_option(profile)
    page.get_by_role("button", name="Issue").click()
    secret_field = page.get_by_label(f"The token of {label}")
    secret_field.wait_for()
    secret = secret_field.input_value()
    assert secret.startswith("tsk_")
    assert secret_field.get_attribute("readonly") is not None
    assert page.get_by_text("it will not be shown again").is_visible()
    assert page.get_by_role("button", name="Copy the token").is_visible()
    assert page.evaluate("document.activeElement.id") == "issued-secret"
    assert_accessible(page, "a token just issued")
    shot(page, "token-issued")
    row = page.get_by_role("row", name=re.compile(re.escape(label)))
    assert row.get_by_role("cell", name=profile).is_visible()

    # a reload (a GET: the issue was an htmx post) does not show the secret again
    page.reload()
    assert secret not in page.content()
    assert page.get_by_role("row", name=re.compile(re.escape(label))).is_visible()

    # the caller token cannot sign in to the console
    other = browser.new_context(base_url=console_server.url)
    try:
        visitor = other.new_page()
        visitor.goto("/console/sign-in")
        visitor.get_by_label("Token").fill(secret)
        visitor.get_by_role("button", name="Sign in").click()
        visitor.get_by_text("This token cannot sign in to the console: it is a caller token").wait_for()
    finally:
        other.close()

    # revoke, after a confirmation
    page.get_by_role("button", name=f"Revoke {label}").click()
    dialog = page.get_by_role("dialog", name=f"Revoke the token {label}?")
    assert dialog.is_visible()
    assert_accessible(page, "the revoke dialog")
    dialog.get_by_role("button", name="Cancel").click()
    assert not dialog.is_visible()
    page.get_by_role("button", name=f"Revoke {label}").click()
    dialog.get_by_role("button", name=f"Revoke {label}").click()
    page.get_by_text(f"Revoked the token {label}").wait_for()
    assert page.get_by_role("row", name=re.compile(re.escape(label))).count() == 0
    with console_server.client(secret) as revoked:
        assert revoked.post("/api/v1/tools/anything/call", json={}).status_code == 401


def test_issuing_a_token_without_a_name_says_so_at_the_field(page, console_server) -> None:
    sign_in(page, then="/console/tokens")
    page.get_by_role("button", name="Issue").click()
    page.get_by_text("Some fields need a change").wait_for()
    assert page.get_by_label("Name").get_attribute("aria-invalid") == "true"
    assert_accessible(page, "the token form with an error")


def test_a_plan_is_created_and_run_showing_each_node(page, console_server) -> None:
    tool = published_tool(console_server)
    plan = f"p{uuid4().hex[:8]}"
    sign_in(page, then="/console/plans")
    assert_accessible(page, "the plans")
    page.get_by_role("link", name="Create a plan").click()
    page.get_by_label("Name", exact=True).fill(plan)
    page.get_by_label("Description").fill("adds two")
    page.get_by_label("Nodes").fill("no_such_tool")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("no tool named 'no_such_tool'").first.wait_for()
    assert page.get_by_label("Nodes").get_attribute("aria-invalid") == "true"
    assert_accessible(page, "the plan form with an error")
    page.get_by_label("Nodes").fill(f"{tool}\n{tool}")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/plans/{plan}")
    nodes = page.get_by_role("region", name="Nodes, in order").get_by_role("listitem")
    assert nodes.count() == 2
    page.get_by_label("Input (JSON)").fill('{"n": 40}')
    page.get_by_role("button", name="Run the plan").click()
    result = page.get_by_role("region", name="Result")
    result.get_by_text("Succeeded").wait_for()
    runs = result.get_by_role("listitem")
    assert runs.count() == 2
    assert "adding one to 40" in runs.nth(0).inner_text()
    assert "adding one to 41" in runs.nth(1).inner_text()
    # each node's output: node 1's is node 2's input
    assert '"n": 41' in runs.nth(0).locator("pre").first.inner_text()
    assert "node 2's input" in runs.nth(0).inner_text()
    assert '"n": 42' in runs.nth(1).locator("pre").first.inner_text()
    assert_accessible(page, "a plan's run")
    shot(page, "plan-run")


def test_agents_and_profiles_are_created_and_show_what_they_reach(page, console_server) -> None:
    tag = f"t{uuid4().hex[:6]}"
    tagged = published_tool(console_server, tags=(tag,))
    named = published_tool(console_server)
    for heading, link, noun in (("Agents", "Create an agent", "agents"), ("Usage profiles", "Create a usage profile", "profiles")):
        record = f"r{uuid4().hex[:8]}"
        if noun == "agents":
            sign_in(page, then=f"/console/{noun}")
        else:
            page.goto(f"/console/{noun}")
        assert page.get_by_role("heading", name=heading).is_visible()
        assert_accessible(page, f"the {noun}")
        page.get_by_role("link", name=link).click()
        page.get_by_label("Name", exact=True).fill(record)
        page.get_by_label("Description").fill("for the browser test")
        page.get_by_role("checkbox", name=named, exact=True).check()
        page.get_by_label("Allowed tags").fill(tag)
        assert_accessible(page, f"the new {noun} form")
        page.get_by_role("button", name="Create").click()
        page.wait_for_url(f"**/console/{noun}/{record}")
        reach = page.get_by_role("region", name="What it reaches now")
        assert reach.get_by_role("link", name=tagged, exact=True).is_visible()
        assert reach.get_by_role("link", name=named, exact=True).is_visible()
        assert_accessible(page, f"a page of the {noun}")
        shot(page, noun)
        page.get_by_role("link", name="Edit").click()
        page.get_by_label("Allowed tags").fill("")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(f"**/console/{noun}/{record}")
        reach = page.get_by_role("region", name="What it reaches now")
        assert reach.get_by_role("link", name=tagged, exact=True).count() == 0
        assert reach.get_by_role("link", name=named, exact=True).is_visible()


def test_the_audit_export_downloads(page, console_server) -> None:
    sign_in(page, then="/console/audit")
    assert_accessible(page, "the audit page")
    shot(page, "audit")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download the audit export").click()
    saved = download.value
    assert saved.suggested_filename == "toolsmith-audit.ndjson"
    first = open(saved.path(), encoding="utf-8").readline()
    assert first.startswith("{")


def test_the_pages_fit_a_phone(page, console_server) -> None:
    tool = published_tool(console_server, tags=("phone",))
    server = f"s{uuid4().hex[:8]}"
    plan = f"p{uuid4().hex[:8]}"
    with console_server.client() as rest:
        assert rest.post("/api/v1/admin/mcp-servers", json={"id": server, "tools": [tool]}).status_code == 201
        assert rest.post("/api/v1/admin/plans", json={"id": plan, "description": "d", "nodes": [{"toolName": tool}]}).status_code == 201
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, then="/console/tools")
    for url in ("/console/tools", f"/console/playground?tool={tool}", f"/console/servers/{server}", f"/console/plans/{plan}",
                "/console/plans", "/console/agents/new", "/console/tokens", "/console/audit"):
        page.goto(url)
        # nothing wider than the screen: no sideways scrolling of the page
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, url
    page.goto(f"/console/playground?tool={tool}")
    shot(page, "playground-390")
