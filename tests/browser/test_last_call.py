"""The catalog's "Last call" in a browser (issue 31 point 5, docs/calls.md): a tool nobody called says
"never"; once it runs in the Playground, the catalog shows when and how its last call went, in words."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in
from tests.browser.test_playground import published_tool


def test_a_call_in_the_playground_is_the_catalogs_last_call(page, console_server) -> None:
    name = published_tool(console_server, source="exports.run = function (i) { if (i.n < 0) throw new Error('negative'); return i.n * 2; };",
                          params=[{"name": "n", "type": "integer", "required": True, "description": "a number"}])
    sign_in(page, then=f"/console/tools?search={name}")
    row = page.get_by_role("row").filter(has=page.get_by_role("rowheader").filter(has_text=name))
    expect(page.get_by_role("columnheader", name="Last call")).to_be_visible()
    expect(row.get_by_role("cell").filter(has_text="never")).to_be_visible()

    row.get_by_role("link", name=re.compile("Try in Playground")).click()
    page.wait_for_url(f"**/console/playground?tool={name}")
    page.get_by_role("spinbutton", name=re.compile(r"^n \(required\)")).fill("21")
    page.get_by_role("button", name="Run").click()
    page.locator("#run-result-body").get_by_text("42").first.wait_for()

    page.goto(f"/console/tools?search={name}")
    cell = row.locator('td[data-label="Last call"]')
    expect(cell).to_contain_text("just now")
    expect(cell).to_contain_text("ok")
    expect(cell.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"))
    assert_accessible(page, "the catalog with a last call")

    # a failing call is the last call now, said in words
    page.goto(f"/console/playground?tool={name}")
    page.get_by_role("spinbutton", name=re.compile(r"^n \(required\)")).fill("-1")
    page.get_by_role("button", name="Run").click()
    page.locator("#run-result-body").get_by_text("negative").first.wait_for()
    page.goto(f"/console/tools?search={name}")
    expect(cell).to_contain_text("failed: the code threw an error")
    shots(page, "tools-last-call")
