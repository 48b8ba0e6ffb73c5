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
    page.wait_for_url(f"**/console/servers/{name}?created=1")


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
    # the secret's card holds no blank band: its last line ends near its bottom edge
    gap = page.evaluate("""() => { const card = document.querySelector('.card.secret');
        const last = card.querySelector('.copy-row');
        const style = getComputedStyle(card);
        return card.getBoundingClientRect().bottom - last.getBoundingClientRect().bottom
          - parseFloat(style.paddingBottom) - parseFloat(style.borderBottomWidth); }""")
    assert gap < 12, f"the issued token's card has a blank band of {gap} px under its field"
    shots(page, "tokens")
