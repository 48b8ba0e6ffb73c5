"""The Calls page and a tool's activity in Chromium (docs/calls.md, docs/console.md "Calls"): calls made
over REST are in the log, reached from the sidebar; the filters swap the table and the URL follows;
a call's "version 1" opens that version in the module's history; the module's page shows its last 24
hours and 7 days as charts drawn on the server. axe-core on both, both themes at 1440 and 390 px."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in
from tests.browser.test_playground import published_tool


def test_the_calls_page_filters_and_links_to_the_version_and_the_tool_shows_its_activity(page, console_server) -> None:  # noqa: ANN001
    name = published_tool(console_server, source="exports.run = function (i) { if (i.n < 0) throw new Error('negative'); return i.n * 2; };",
                          params=[{"name": "n", "type": "integer", "required": True, "description": "a number"}],
                          description="doubles a number")
    other = published_tool(console_server, source="exports.run = function (i) { return i.n; };",
                           params=[{"name": "n", "type": "integer", "required": True, "description": "a number"}])
    with console_server.client() as rest:
        for n in (1, 2, 3, 4, -1, -2):
            assert rest.post(f"/api/v1/tools/{name}/call", json={"n": n}).status_code == 200
        assert rest.post(f"/api/v1/tools/{name}/call", json={"n": "x"}).status_code == 400
        assert rest.post(f"/api/v1/tools/{other}/call", json={"n": 5}).status_code == 200

    sign_in(page, then="/console/tools")
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Calls").click()
    page.wait_for_url("**/console/calls")
    table = page.get_by_role("table", name="Tool calls, newest first")
    expect(table.get_by_role("row").filter(has_text=other).first).to_be_visible()
    newest = table.locator("tr.call-row").first
    expect(newest).to_contain_text(other)
    expect(newest).to_contain_text("REST")
    assert_accessible(page, "the Calls page")

    # the tool's name filters: the table swaps and the URL says so
    page.get_by_label("Tool", exact=True).fill(name)
    page.wait_for_url(f"**/console/calls?tool={name}*")
    filtered = page.get_by_role("table", name="Tool calls, newest first, filtered")
    expect(filtered.locator("tr.call-row")).to_have_count(7)
    expect(filtered.locator("tr.call-row").first).to_contain_text("refused: the arguments do not fit its parameters")
    page.get_by_label("Outcome").select_option("runtime")
    page.wait_for_url(re.compile(r".*outcome=runtime.*"))
    expect(filtered.locator("tr.call-row")).to_have_count(2)
    expect(filtered.locator("tr.call-row").first).to_contain_text("failed: the code threw an error")
    # a call's record opens below it: the hashes, never the values
    filtered.locator("tr.call-detail-row").first.get_by_text("Record").click()
    expect(filtered.locator("tr.call-detail-row").first.get_by_text("Arguments")).to_be_visible()
    shots(page, "calls-page")

    # a reload shows the same view
    page.reload()
    expect(page.get_by_label("Outcome")).to_have_value("runtime")
    expect(page.locator("tr.call-row")).to_have_count(2)

    # the version it ran: that row of the module's history
    page.locator("tr.call-row").first.get_by_role("link", name="version 1").click()
    page.wait_for_url(f"**/console/modules/{name}/history#version-1")
    expect(page.locator("#version-1")).to_be_visible()
    expect(page.locator("#version-1")).to_contain_text("doubles a number")

    # the module's page: its last 24 hours and 7 days, drawn on the server
    page.goto(f"/console/modules/{name}")
    activity = page.get_by_role("region", name="Activity")
    day = activity.get_by_role("region", name="Last 24 hours")
    expect(day.locator(".activity-totals")).to_contain_text("Calls")
    expect(day.locator(".activity-totals div").first.locator("dd")).to_have_text("7")
    expect(day.locator(".activity-totals div").nth(1).locator("dd")).to_contain_text("3")
    expect(day.get_by_role("img", name=re.compile(r"^Calls per hour: 7 in all, 3 failed or refused"))).to_be_visible()
    expect(day.get_by_role("img", name=re.compile(r"^Duration per hour"))).to_be_visible()
    week = activity.get_by_role("region", name="Last 7 days")
    expect(week.get_by_role("img", name=re.compile(r"^Calls per day: 7 in all"))).to_be_visible()
    expect(week.locator(".top-callers li").first).to_contain_text("7")
    bars = day.locator("svg.bars rect.bar")
    expect(bars).to_have_count(24)
    assert float(bars.last.get_attribute("height") or 0) > 0 or float(bars.nth(22).get_attribute("height") or 0) > 0
    activity.scroll_into_view_if_needed()
    assert_accessible(page, "a module's page with its activity")
    shots(page, "tool-activity")
    activity.get_by_role("link", name=re.compile("All its calls")).click()
    page.wait_for_url(f"**/console/calls?tool={name}")


def test_an_admin_switches_value_capture_on_from_the_card_and_the_calls_page_shows_what_was_kept(page, console_server, watch) -> None:  # noqa: ANN001
    watch.allowed_console += [re.compile(r"status of 400"), re.compile(r"Error Code 400 from /console/calls/capture")]  # the refused cap, on purpose
    name = published_tool(console_server, source="exports.run = function (i) { return {twice: i.n * 2}; };",
                          params=[{"name": "n", "type": "integer", "required": True, "description": "a number"}])
    sign_in(page, then=f"/console/modules/{name}")
    card = page.get_by_role("region", name="Activity")
    expect(card.get_by_text("Off: the log keeps the SHA-256")).to_be_visible()
    card.get_by_label("Bytes kept of each value").fill("0")
    card.get_by_role("button", name="Capture values").click()
    expect(page.get_by_role("region", name="Activity").get_by_role("alert")).to_contain_text("a whole number from 1 to 65,536")
    page.get_by_role("region", name="Activity").get_by_label("Bytes kept of each value").fill("512")
    page.get_by_role("region", name="Activity").get_by_role("button", name="Capture values").click()
    expect(page.get_by_role("region", name="Activity").get_by_role("button", name="Stop capturing values")).to_be_visible()
    expect(page.get_by_role("region", name="Activity")).to_contain_text("cut to 512 bytes")
    with console_server.client() as rest:
        assert rest.post(f"/api/v1/tools/{name}/call", json={"n": 21}).status_code == 200

    page.goto(f"/console/calls?tool={name}")
    row = page.locator("tr.call-detail-row").first
    row.get_by_text("Record").click()
    expect(row.locator("pre.captured").first).to_have_text('{"n":21}')
    expect(row.locator("pre.captured").nth(1)).to_have_text('{"twice":42}')
    assert_accessible(page, "a call with its values kept")

    page.goto(f"/console/modules/{name}")
    page.get_by_role("region", name="Activity").get_by_role("button", name="Stop capturing values").click()
    expect(page.get_by_role("region", name="Activity").get_by_role("button", name="Capture values")).to_be_visible()
