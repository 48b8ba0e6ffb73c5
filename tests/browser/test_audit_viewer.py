"""The audit viewer in Chromium, as an admin uses it: the events of what they just did, in words, in a
table above the export; filtered by the form (the table swaps, the URL follows and reloads the same
view), paged, and a row's change opened (a field's before and after, a line diff of code). axe-core on
the page and on an opened change, both themes at 1440 and 390 px."""

from __future__ import annotations

import re
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shots, sign_in


def new_profile(page, name: str, description: str) -> None:  # noqa: ANN001
    page.goto("/console/profiles/new")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Description").fill(description)
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/profiles/{name}*")


def test_the_audit_shows_what_was_done_filters_pages_and_opens_a_change(page) -> None:  # noqa: ANN001
    run = uuid4().hex[:6]
    profile = f"support_{run}"
    sign_in(page, then="/console/profiles")
    new_profile(page, profile, "for the support team")
    page.goto(f"/console/profiles/{profile}/edit")
    page.get_by_label("Description").fill("for the support and sales teams")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/profiles/{profile}*")
    module = f"format_currency_{run}"
    page.goto("/console/modules/new")
    page.get_by_label("Name").fill(module)
    page.get_by_label("What it does").fill("Formats an amount as US dollars")
    page.get_by_role("textbox", name="Source").fill("exports.run = function (i) {\n  return '$' + i.amount;\n};")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(f"**/console/modules/{module}")
    for n in range(10):
        new_profile(page, f"batch_{run}_{n}", f"profile {n}")

    # to the audit by the sidebar
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Audit").click()
    page.wait_for_url("**/console/audit")
    table = page.get_by_role("table", name="Events, newest first")
    table.get_by_role("row").filter(has_text=f"created code module {module}").wait_for()
    newest = table.get_by_role("row").nth(1)
    assert f"created usage profile batch_{run}_9" in newest.inner_text() and "admin" in newest.inner_text()
    assert table.get_by_role("link", name=module).get_attribute("href") == f"/console/modules/{module}"
    # above the export
    export = page.get_by_role("link", name="Download the audit export")
    assert table.bounding_box()["y"] < export.bounding_box()["y"]
    assert_accessible(page, "the audit viewer")
    shots(page, "audit-viewer")

    # filter by the object's name: the table swaps and the URL says so
    page.get_by_label("Object name").fill(profile)
    page.wait_for_url(f"**/console/audit?name={profile}*")
    rows = page.get_by_role("table", name="Events, newest first, filtered").get_by_role("row")
    rows.filter(has_text=f"saved usage profile {profile}").first.wait_for()
    assert rows.count() == 1 + 2  # the header and two events (a closed change row is hidden)
    assert f"saved usage profile {profile}" in rows.nth(1).inner_text()
    assert f"created usage profile {profile}" in rows.nth(2).inner_text()  # its first save
    # open the edit's change: the description before and after
    rows.nth(1).get_by_role("button", name="Show change").click()
    change = page.locator(".audit-change").first
    change.get_by_text("for the support and sales teams").wait_for()
    assert change.locator("del").inner_text() == "for the support team"
    assert change.locator("ins").inner_text() == "for the support and sales teams"
    toggle = rows.nth(1).get_by_role("button", name="Hide change")
    assert toggle.get_attribute("aria-expanded") == "true"
    assert_accessible(page, "an opened change")
    shots(page, "audit-change")
    toggle.click()
    assert change.is_hidden()

    # a shared link shows the same view
    page.reload()
    assert page.get_by_label("Object name").input_value() == profile
    assert page.get_by_role("table", name="Events, newest first, filtered").get_by_role("row").count() == 3

    # the module's first version: its code as added lines
    page.get_by_label("Object name").fill(module)
    page.get_by_label("Kind of object").select_option(label="Code modules")
    page.wait_for_url("**kind=module*")
    page.get_by_role("button", name=f"Show change of created code module {module}").click()
    page.get_by_text("The first version: every field is new.").wait_for()
    lines = page.get_by_role("table", name="Lines of Source removed and added")
    assert "return '$' + i.amount;" in lines.inner_text()
    assert lines.get_by_text("added", exact=True).count() == 3
    shots(page, "audit-code-diff")

    # paged: ten a page, then the older ones, then back to the newest
    page.get_by_label("Object name").fill(f"batch_{run}")
    page.get_by_label("Kind of object").select_option(label="Every kind")
    page.get_by_label("Per page").select_option("10")
    page.wait_for_url("**size=10*")
    filtered = page.get_by_role("table", name="Events, newest first, filtered")
    filtered.get_by_role("row").filter(has_text=f"batch_{run}_0").wait_for()
    assert filtered.locator("tr.audit-row").count() == 10
    # ten profiles: exactly ten events, and the read goes on to the log's start to be sure of it
    older = page.get_by_role("link", name="Older events")
    if older.count():
        older.click()
        page.wait_for_url("**before=*")
        page.get_by_text("No event matches these filters").wait_for()
        page.get_by_role("link", name="Newest events").click()
        page.wait_for_url(lambda url: "before=" not in url)
    page.get_by_label("Object name").fill(f"{profile}")
    page.get_by_label("Per page").select_option("10")


def test_the_filters_say_when_nothing_matches_and_why_a_filter_cannot_be_read(page, watch) -> None:  # noqa: ANN001
    # the refused filter is a 400, which the browser and htmx report on the console
    watch.allowed_console += [re.compile(r"status of 400"), re.compile(r"Error Code 400 from /console/audit")]
    sign_in(page, then="/console/audit")
    page.get_by_label("Who").fill("nobody-did-this")
    page.get_by_text("No event matches these filters.").wait_for()
    page.get_by_label("From", exact=True).fill("2999-01-01")
    page.wait_for_url("**since=2999-01-01*")
    assert page.get_by_text("No event matches these filters.").is_visible()
    page.get_by_label("From", exact=True).fill("2999-02-01")
    page.get_by_label("To", exact=True).fill("2999-01-01")
    page.get_by_role("alert").filter(has_text="To: the last day comes on or after the first (From).").wait_for()
    assert_accessible(page, "the audit viewer with a refused filter")
