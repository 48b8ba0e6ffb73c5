"""A module's lifecycle in the console: publish through the review (docs/kinds/code-modules.md dates/report story
refused, naming report), the Published version card, the … menu (discard draft, duplicate, delete
refused with the used-by list), the history (timeline, diff, as of, restore into the draft), by
keyboard where a person would, with axe-core on every dialog state."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shot, sign_in

BASE = "/api/v1/admin/code-modules"
DATES_V1 = "exports.year = function (d) { return d.slice(0, 4); };"
DATES_WITHOUT_YEAR = "exports.month = function (d) { return d.slice(5, 7); };"


def _name(prefix: str) -> str:
    return f"{prefix}{uuid4().hex[:8]}"


def _ok(answer, status: int = 200):  # noqa: ANN001, ANN202
    assert answer.status_code == status, f"{answer.request.method} {answer.request.url}: {answer.status_code} {answer.text}"
    return answer


def _create(api, module_id: str, content: str, *, publish: bool = True, **extra) -> None:  # noqa: ANN001, ANN003
    _ok(api.post(BASE, json={"id": module_id, "description": extra.pop("description", f"{module_id} does things"),
                             "draftContent": content, **extra}), 201)
    if publish:
        _ok(api.post(f"{BASE}/{module_id}/publish"))


def _dates_and_report(console_server) -> tuple[str, str]:  # noqa: ANN001
    """Seed 004: `report` (a tool with parameter day) imports `dates` and calls `dates.year`."""
    dates, report = _name("dates"), _name("report")
    with console_server.client() as api:
        _create(api, dates, DATES_V1)
        _create(api, report, f"exports.run = function (input) {{ return 'Report ' + {dates}.year(input.day); }};",
                draftImports=[dates], tool={"inputParameters": [{"name": "day", "description": "The day", "required": True}]})
        # then the dates draft drops `year`
        _ok(api.put(f"{BASE}/{dates}", json={"draftContent": DATES_WITHOUT_YEAR}))
    return dates, report


def _press(page, role: str, name: str, key: str = "Enter"):  # noqa: ANN001, ANN202
    """Focuses a control and presses a key on it, as a keyboard user does."""
    control = page.get_by_role(role, name=name, exact=True)
    control.focus()
    control.press(key)
    return control


def _open_menu(page) -> None:  # noqa: ANN001
    """Opens the … menu (a disclosure) by keyboard."""
    page.get_by_text("…", exact=True).focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("button", name="Discard draft")).to_be_visible()
    assert_accessible(page, "the … menu, open", within="#lifecycle-menu")


def test_seed_004_publishing_a_dates_draft_that_drops_year_is_refused_naming_report_and_delete_is_refused(page, console_server) -> None:  # noqa: ANN001
    dates, report = _dates_and_report(console_server)
    sign_in(page, then=f"/console/modules/{report}")
    # the Published card: who published, the imports linked
    card = page.get_by_role("region", name="Published version", exact=True)
    expect(card.get_by_role("link", name=dates)).to_have_attribute("href", f"/console/modules/{dates}")
    assert_accessible(page, "the Published card of report", within="#lifecycle-card")

    page.goto(f"/console/modules/{dates}")
    # Publish, by keyboard: the review runs the dry run of every dependent
    opener = _press(page, "button", "Publish")
    dialog = page.get_by_role("dialog", name=f"Publish {dates}")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_text("Publishing is refused")).to_be_visible()
    expect(dialog.get_by_role("alert").get_by_role("link", name=report)).to_have_attribute("href", f"/console/modules/{report}")
    expect(dialog.get_by_text("would fail")).to_be_visible()
    expect(dialog.get_by_role("button", name=re.compile("^Publish version"))).to_have_count(0)
    # the diff shows what the draft drops
    expect(dialog.get_by_label(re.compile("^Unified diff of the code"))).to_contain_text("-" + DATES_V1)
    assert_accessible(page, "the publish review, refused", within="#publish-dialog")
    shot(page, "publish-review-refused")
    # Escape closes it and the focus goes back to Publish
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(opener).to_be_focused()

    # Delete, from the … menu by keyboard: refused, the dialog links report
    _open_menu(page)
    delete = _press(page, "button", "Delete code module")
    dialog = page.get_by_role("dialog", name=f"Delete {dates}")
    expect(dialog.get_by_text("cannot be deleted while something uses it")).to_be_visible()
    expect(dialog.get_by_role("link", name=report)).to_have_attribute("href", f"/console/modules/{report}")
    expect(dialog.get_by_role("button", name=f"Delete {dates}")).to_have_count(0)
    assert_accessible(page, "the delete dialog, refused", within="#delete-dialog")
    shot(page, "delete-refused")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    # the menu closed when its item opened the dialog: the focus is back on the menu's button
    expect(delete).to_be_hidden()
    expect(page.locator("#lifecycle-menu summary")).to_be_focused()
    with console_server.client() as api:
        assert api.get(f"{BASE}/{dates}").json()["published"]["version"] == 1


def test_publish_through_the_review_then_the_history_compares_travels_in_time_and_restores_version_1(page, console_server) -> None:  # noqa: ANN001
    name = _name("hist")
    first, second = "exports.a = function () { return 'first'; };", "exports.a = function () { return 'second'; };"
    with console_server.client() as api:
        _create(api, name, first, description="The first description")
        published_at = datetime.fromisoformat(api.get(f"{BASE}/{name}").json()["published"]["publishedAt"])
        time.sleep(1.2)  # an instant between version 1 and the edit, to the second
        _ok(api.put(f"{BASE}/{name}", json={"draftContent": second, "description": "The second description"}))
        published_by = api.get(f"{BASE}/{name}").json()["published"]["publishedBy"]

    sign_in(page, then=f"/console/modules/{name}")
    _press(page, "button", "Publish")
    dialog = page.get_by_role("dialog", name=f"Publish {name}")
    publish = dialog.get_by_role("button", name="Publish version 2")
    expect(publish).to_be_visible()
    expect(dialog.get_by_text("✓ works")).to_be_visible()
    expect(dialog.get_by_label(re.compile("^Unified diff of the code"))).to_contain_text("+" + second)
    expect(dialog.get_by_role("group", name=re.compile("^The code side by side"))).to_contain_text("second")
    assert_accessible(page, "the publish review, passing", within="#publish-dialog")
    shot(page, "publish-review")
    with page.expect_navigation():
        publish.click()

    # the module page again: the Published card shows version 2, who, the code behind a toggle
    card = page.get_by_role("region", name="Published version", exact=True)
    expect(card).to_contain_text(re.compile(r"Version\s*2\b"))
    expect(card.get_by_text(published_by, exact=True)).to_be_visible()
    code = card.get_by_label("Published code of version 2")
    expect(code).to_be_hidden()
    card.get_by_text("Show the published code").click()
    expect(code).to_contain_text(second)
    assert_accessible(page, "the Published card, open", within="#lifecycle-card")
    shot(page, "published-card")

    # the history: every event, newest first
    card.get_by_role("link", name="History and versions").click()
    page.wait_for_url(f"**/console/modules/{name}/history")
    timeline = page.get_by_role("region", name="Timeline")
    expect(timeline.get_by_text("Published version 1")).to_be_visible()
    expect(timeline.get_by_text("Published version 2")).to_be_visible()
    expect(timeline.get_by_text("Draft changed")).to_be_visible()
    assert_accessible(page, "the history page")
    shot(page, "history")
    # usable at 390 px wide: nothing runs off the side
    page.set_viewport_size({"width": 390, "height": 800})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shot(page, "history-390px")
    page.set_viewport_size({"width": 1280, "height": 800})

    # version 1 against version 2; the URL reproduces the comparison
    page.get_by_label("Compare version").select_option("1")
    page.get_by_label("with", exact=True).select_option("2")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"a=1&b=2"))
    diff = page.get_by_label("Unified diff of the code, version 1 to version 2")
    expect(diff).to_contain_text("-" + first)
    expect(diff).to_contain_text("+" + second)
    expect(page.get_by_role("group", name=re.compile("^The code side by side"))).to_contain_text("first")
    assert_accessible(page, "the history page with a diff")
    shot(page, "history-diff")

    # the module as of an instant after version 1: the old description
    instant = (published_at.astimezone(timezone.utc) + timedelta(seconds=1)).replace(microsecond=0, tzinfo=None)
    # as Chromium writes a datetime-local's value: without the seconds when they are :00 (Playwright
    # checks the value it filled reads back the same)
    page.get_by_label("Date and time (UTC)").fill(instant.isoformat(timespec="minutes" if instant.second == 0 else "seconds"))
    page.get_by_role("button", name="Show").click()
    past = page.get_by_role("region", name=re.compile(f"^{name} as of"))
    expect(past).to_contain_text("The first description")
    expect(past).not_to_contain_text("The second description")
    assert_accessible(page, "the history page as of an instant")
    shot(page, "history-as-of")

    # restore version 1 into the draft: the module page shows it, DRAFT
    page.get_by_role("button", name="Restore version 1 into the draft").click()
    page.wait_for_url(f"**/console/modules/{name}")
    expect(page.get_by_text("Draft", exact=True).first).to_be_visible()
    expect(page.get_by_text("return 'first'").filter(visible=True).first).to_be_visible()
    with console_server.client() as api:
        module = api.get(f"{BASE}/{name}").json()
    assert module["state"] == "DRAFT" and module["draft"]["content"] == first


def test_the_menu_discards_a_draft_explains_a_refused_discard_duplicates_and_deletes(page, console_server) -> None:  # noqa: ANN001
    never, edited = _name("never"), _name("edited")
    with console_server.client() as api:
        _create(api, never, "exports.a = 1;", publish=False)
        _create(api, edited, "exports.a = 1;")
        _ok(api.put(f"{BASE}/{edited}", json={"draftContent": "exports.a = 2;"}))

    # a module never published: discard is refused, and the dialog says why (R11)
    sign_in(page, then=f"/console/modules/{never}")
    expect(page.get_by_role("region", name="Published version", exact=True)).to_contain_text("Not published yet")
    _open_menu(page)
    opener = _press(page, "button", "Discard draft")
    dialog = page.get_by_role("dialog", name=f"Discard the draft of {never}")
    expect(dialog.get_by_role("alert")).to_contain_text("was never published")
    expect(dialog.get_by_role("button", name="Discard the draft")).to_have_count(0)
    assert_accessible(page, "the discard dialog, refused", within="#discard-dialog")
    shot(page, "discard-refused")
    page.keyboard.press("Escape")
    expect(page.locator("#lifecycle-menu summary")).to_be_focused()

    # a published module with a draft: discard returns it to the published version
    page.goto(f"/console/modules/{edited}")
    expect(page.get_by_text("Draft", exact=True).first).to_be_visible()
    _open_menu(page)
    _press(page, "button", "Discard draft")
    dialog = page.get_by_role("dialog", name=f"Discard the draft of {edited}")
    confirm = dialog.get_by_role("button", name="Discard the draft")
    expect(confirm).to_be_visible()
    assert_accessible(page, "the discard dialog", within="#discard-dialog")
    with page.expect_navigation():
        confirm.click()
    expect(page.get_by_text("Published", exact=True).first).to_be_visible()
    with console_server.client() as api:
        assert api.get(f"{BASE}/{edited}").json()["state"] == "PUBLISHED"

    # duplicate: the name is checked as you type
    _open_menu(page)
    _press(page, "button", "Duplicate")
    dialog = page.get_by_role("dialog", name=f"Duplicate {edited}")
    field = dialog.get_by_label("New name")
    expect(field).to_be_focused()
    field.press_sequentially("1bad")
    expect(dialog.get_by_role("status")).to_contain_text("Must not start with a digit")
    field.fill(edited)
    expect(dialog.get_by_role("status")).to_contain_text("Already used by")
    copy = _name("copy")
    field.fill("")
    field.press_sequentially(copy)
    expect(dialog.get_by_role("status")).to_contain_text(f"“{copy}” is free")
    assert_accessible(page, "the duplicate dialog", within="#duplicate-dialog")
    shot(page, "duplicate")
    field.press("Enter")
    page.wait_for_url(f"**/console/modules/{copy}")
    expect(page.get_by_role("heading", name=copy, level=1)).to_be_visible()
    expect(page.get_by_text("Unpublished", exact=True).first).to_be_visible()

    # delete the copy, which nothing uses
    _open_menu(page)
    _press(page, "button", "Delete code module")
    dialog = page.get_by_role("dialog", name=f"Delete {copy}")
    confirm = dialog.get_by_role("button", name=f"Delete {copy}")
    expect(confirm).to_be_visible()
    assert_accessible(page, "the delete dialog", within="#delete-dialog")
    confirm.click()
    page.wait_for_url(f"**/console/modules/{copy}/deleted")
    expect(page.get_by_role("status").filter(has_text="was deleted")).to_contain_text(f"{copy} was deleted")
    assert_accessible(page, "the deleted page")
    with console_server.client() as api:
        assert api.get(f"{BASE}/{copy}").status_code == 404
