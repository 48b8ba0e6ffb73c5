"""Changesets (B6) and examples (B4) in Chromium: docs/kinds/code-modules.md `dates` renames `year` to `yearOf` and
`report` switches to `dates.yearOf`; `dates` alone is refused in the review naming `report`; both
ticked in the list publish as one changeset with a message, and the history shows it. The Test
window shows each example passing or failing, and an example edited in the tool section counts
before it is saved. axe-core on every dialog state."""

from __future__ import annotations

import re
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shot, sign_in

BASE = "/api/v1/admin/code-modules"
DATES_V1 = "exports.year = function (d) { return d.slice(0, 4); };"
DATES_V2 = "exports.yearOf = function (d) { return d.slice(0, 4); };"
DAY = {"inputParameters": [{"name": "day", "description": "The day", "required": True}]}


def _ok(answer, status: int = 200):  # noqa: ANN001, ANN202
    assert answer.status_code == status, f"{answer.request.method} {answer.request.url}: {answer.status_code} {answer.text}"
    return answer


def _seed_004(console_server) -> tuple[str, str, str]:  # noqa: ANN001
    """`dates` and `report` (which calls `dates.year`) published; then both drafted: `dates` renames
    `year` to `yearOf` and `report` switches to `dates.yearOf`. Their ids share a prefix of their own."""
    prefix = f"cs{uuid4().hex[:6]}"
    dates, report = f"{prefix}_dates", f"{prefix}_report"
    calls = "exports.run = function (input) {{ return 'Report ' + {}.{}(input.day); }};"
    with console_server.client() as api:
        _ok(api.post(BASE, json={"id": dates, "description": "Date helpers", "draftContent": DATES_V1}), 201)
        _ok(api.post(f"{BASE}/{dates}/publish"))
        _ok(api.post(BASE, json={"id": report, "description": "The yearly report", "draftContent": calls.format(dates, "year"),
                                 "draftImports": [dates], "tool": DAY}), 201)
        _ok(api.post(f"{BASE}/{report}/publish"))
        _ok(api.put(f"{BASE}/{dates}", json={"draftContent": DATES_V2}))
        _ok(api.put(f"{BASE}/{report}", json={"draftContent": calls.format(dates, "yearOf")}))
    return prefix, dates, report


def _open_review(page):  # noqa: ANN001, ANN202
    """Presses Publish selected by keyboard; the review dialog."""
    opener = page.get_by_role("button", name="Publish selected")
    opener.focus()
    opener.press("Enter")
    dialog = page.get_by_role("dialog", name="Publish the selected drafts")
    expect(dialog).to_be_visible()
    return opener, dialog


def test_seed_004_dates_and_report_publish_as_one_changeset_from_the_list(page, console_server) -> None:  # noqa: ANN001
    prefix, dates, report = _seed_004(console_server)
    sign_in(page, then=f"/console/modules?search={prefix}")
    pick_dates = page.get_by_role("checkbox", name=f"Select the draft of {dates}")
    pick_report = page.get_by_role("checkbox", name=f"Select the draft of {report}")
    assert_accessible(page, "the module list with drafts to select")

    # dates alone: the review names report, which it would break, and offers no Publish
    pick_dates.focus()
    page.keyboard.press("Space")
    expect(page.get_by_role("status").filter(has_text="selected")).to_have_text(f"1 draft selected: {dates}")
    opener, dialog = _open_review(page)
    expect(dialog.get_by_text("Publishing is refused")).to_be_visible()
    expect(dialog.get_by_role("alert").get_by_role("link", name=report)).to_have_attribute("href", f"/console/modules/{report}")
    expect(dialog.get_by_role("button", name=re.compile("as one changeset$"))).to_have_count(0)
    assert_accessible(page, "the changeset review, refused", within="#changeset-dialog")
    shot(page, "changeset-review-refused")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()

    # both: every check passes, dependencies first, a diff for each
    pick_report.check()
    expect(page.get_by_role("status").filter(has_text="selected")).to_have_text(f"2 drafts selected: {dates}, {report}")
    _, dialog = _open_review(page)
    publish = dialog.get_by_role("button", name="Publish 2 modules as one changeset")
    expect(publish).to_be_visible()
    checks = dialog.get_by_role("region", name="Checks").get_by_role("listitem")
    expect(checks).to_have_count(2)
    expect(checks.nth(0)).to_contain_text(f"{dates} (draft in this changeset): ✓ works")
    expect(checks.nth(1)).to_contain_text(f"{report} (draft in this changeset): ✓ works")
    expect(dialog.get_by_role("region", name=re.compile(f"^{dates}: published version 1"))
           .get_by_label(re.compile("^Unified diff of the code"))).to_contain_text("+" + DATES_V2)
    expect(dialog.get_by_role("region", name=re.compile(f"^{report}: published version 1"))
           .get_by_role("group", name=re.compile("^The code side by side"))).to_contain_text("yearOf")
    assert_accessible(page, "the changeset review, passing", within="#changeset-dialog")
    shot(page, "changeset-review")

    # publish with a message: the changeset and both new versions; the list reads itself again
    dialog.get_by_label("Message (optional)").fill("dates.year is now dates.yearOf, and report follows")
    publish.click()
    outcome = dialog.get_by_role("status").filter(has_text="Published changeset")
    expect(outcome).to_be_focused()
    changeset = re.search(r"cs_\w+", outcome.inner_text()).group(0)
    expect(dialog.get_by_text(f"{dates} is at version 2")).to_be_visible()
    expect(dialog.get_by_text(f"{report} is at version 2")).to_be_visible()
    assert_accessible(page, "the changeset published", within="#changeset-dialog")
    shot(page, "changeset-published")
    page.keyboard.press("Escape")
    expect(page.get_by_role("checkbox", name=re.compile("^Select the draft of"))).to_have_count(0)
    expect(page.get_by_role("row", name=re.compile(f"^{report} ")).get_by_role("cell", name="Published")).to_be_visible()
    with console_server.client() as api:
        for name in (dates, report):
            assert api.get(f"{BASE}/{name}").json()["published"]["version"] == 2
            assert api.get(f"{BASE}/{name}/versions").json()[-1]["changeset"] == changeset

    # the history of report: the Published entry names the changeset and the message
    page.goto(f"/console/modules/{report}/history")
    timeline = page.get_by_role("region", name="Timeline")
    expect(timeline.get_by_text("Published version 2")).to_be_visible()
    expect(timeline.get_by_text("Message: dates.year is now dates.yearOf, and report follows")).to_be_visible()
    assert_accessible(page, "the history with a changeset")
    shot(page, "history-changeset")
    timeline.get_by_role("link", name=changeset).click()
    page.wait_for_url(re.compile(rf"/console/modules/changeset-history\?id={changeset}$"))
    expect(page.get_by_role("heading", name=f"Changeset {changeset}", level=1)).to_be_visible()
    row = page.get_by_role("row", name=re.compile(f"^{changeset} "))
    expect(row.get_by_role("link", name=f"{dates} version 2")).to_be_visible()
    expect(row.get_by_role("link", name=f"{report} version 2")).to_be_visible()
    expect(row).to_contain_text("dates.year is now dates.yearOf")
    assert_accessible(page, "the changeset page")
    shot(page, "changesets")


def test_the_test_window_shows_each_example_passing_or_failing_and_an_edited_example_counts(page, console_server) -> None:  # noqa: ANN001
    name = f"twice{uuid4().hex[:6]}"
    tool = {"inputParameters": [{"name": "n", "type": "integer", "description": "A number", "required": True}],
            "examples": [{"name": "double", "input": {"n": 2}, "output": 4}, {"name": "wrong", "input": {"n": 3}, "output": 7}]}
    with console_server.client() as api:
        _ok(api.post(BASE, json={"id": name, "description": "Doubles a number", "draftContent": "exports.run = (i) => i.n * 2;",
                                 "tool": tool}), 201)

    sign_in(page, then=f"/console/modules/{name}")
    dialog = page.get_by_role("region", name=f"Test {name}")
    dialog.get_by_role("radio", name="JSON").check()
    dialog.get_by_label("Input (JSON)").fill('{"n": 21}')
    dialog.get_by_role("button", name="Run").click()
    expect(dialog.get_by_text("42", exact=True)).to_be_visible()  # the run's output first
    examples = dialog.get_by_role("region", name="Examples")
    expect(dialog.get_by_text("✗ 1 of 2 examples fails")).to_be_visible()
    wrong = examples.get_by_role("row", name=re.compile("^wrong "))
    expect(wrong.get_by_role("cell").nth(0)).to_have_text("✗ failed")
    expect(wrong.get_by_role("cell").nth(1)).to_have_text("7")
    expect(wrong.get_by_role("cell").nth(2)).to_have_text("6")
    expect(examples.get_by_role("row", name=re.compile("^double ")).get_by_role("cell").nth(0)).to_have_text("✓ passed")
    assert_accessible(page, "the Test panel with a failing example", within="#test-panel")
    examples.scroll_into_view_if_needed()
    shot(page, "module-test-examples")

    # the example corrected in the tool section, not saved: Test runs it as it stands
    field = page.get_by_role("textbox", name="Examples")
    field.fill(field.input_value().replace('"output": 7', '"output": 6'))
    dialog.get_by_role("button", name="Run").click()
    expect(dialog.get_by_text("✓ All 2 examples pass.")).to_be_visible()
    expect(dialog.get_by_role("region", name="Examples").get_by_text("✗ failed")).to_have_count(0)
