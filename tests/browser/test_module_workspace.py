"""The module page as a workspace (issue 31, points 1, 3, 8 and 12 for code modules), as a person
uses it with the keyboard and the mouse: Publish saves unsaved edits and opens the review in one
step, and is off (with the reason) while nothing is pending; each module is made through the New
page, never over REST."""

from __future__ import annotations

from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in


def _name(prefix: str = "w") -> str:
    return f"{prefix}{uuid4().hex[:8]}"


def create_through_the_new_page(page, name: str, description: str, source: str) -> None:  # noqa: ANN001
    """Signs in on the New page and creates the module by keyboard, as a person does."""
    sign_in(page, then="/console/modules/new")
    page.get_by_label("Name").fill(name)
    page.get_by_text("✓ free").wait_for()
    page.get_by_label("What it does").fill(description)
    page.get_by_role("textbox", name="Source").focus()
    page.keyboard.type(source)
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(f"**/console/modules/{name}")


def type_at_the_end(page, text: str) -> None:  # noqa: ANN001
    page.get_by_role("textbox", name="Source").focus()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)


def test_publish_saves_unsaved_edits_then_opens_the_review_and_is_off_while_nothing_is_pending(page, console_server) -> None:  # noqa: ANN001
    name = _name()
    create_through_the_new_page(page, name, "Says hello", "exports.run = () => 'hello';")
    publish = page.get_by_role("button", name="Publish", exact=True)
    expect(publish).to_be_enabled()  # never published: the draft is pending

    # the first publish, by keyboard: the review (its checks and the diff), then Publish version 1
    publish.focus()
    page.keyboard.press("Enter")
    review = page.get_by_role("dialog", name=f"Publish {name}")
    expect(review.get_by_role("button", name="Publish version 1")).to_be_visible()
    expect(publish).not_to_have_attribute("aria-busy", "true")
    assert_accessible(page, "the publish review")
    review.get_by_role("button", name="Publish version 1").click()
    page.wait_for_load_state()

    # nothing pending now: Publish is off and says why
    publish = page.get_by_role("button", name="Publish", exact=True)
    expect(publish).to_be_disabled()
    expect(page.get_by_text("Nothing to publish: the published version is current.")).to_be_visible()
    expect(publish).to_have_accessible_description("Nothing to publish: the published version is current.")
    assert_accessible(page, "the module page with nothing to publish")
    shots(page, "module-publish-nothing-pending")

    # an edit, not saved: Publish turns on at once and says it saves first
    type_at_the_end(page, " // and goodbye")
    expect(publish).to_be_enabled()
    expect(page.get_by_text("Publish saves your changes first.")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Unsaved changes")).to_be_visible()

    # one click: the draft is saved, then the review opens on it (no refusal, no Reload link)
    page.get_by_role("button", name="Publish", exact=True).click()
    review = page.get_by_role("dialog", name=f"Publish {name}")
    expect(review.get_by_role("button", name="Publish version 2")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Draft saved")).to_be_attached()
    expect(review.get_by_text("and goodbye").first).to_be_attached()  # the diff shows the saved edit
    expect(review.get_by_role("link", name="Reload the module")).to_have_count(0)
    assert_accessible(page, "the publish review after the save")
    shots(page, "module-publish-review-after-save")
    review.get_by_role("button", name="Publish version 2").click()
    page.wait_for_load_state()
    expect(page.get_by_role("button", name="Publish", exact=True)).to_be_disabled()
    with console_server.client() as api:
        module = api.get(f"/api/v1/admin/code-modules/{name}").json()
    assert module["published"]["version"] == 2 and module["published"]["content"].endswith("// and goodbye")


def test_publish_with_an_edit_that_save_refuses_shows_the_error_and_opens_no_review(page, console_server, watch) -> None:  # noqa: ANN001
    import re

    watch.allowed_console += [re.compile(r"status of 4\d\d"), re.compile(r"Error Code 4\d\d from /console/modules/")]
    name = _name()
    create_through_the_new_page(page, name, "Says hello", "exports.run = () => 'hello';")
    page.get_by_label("What it does").fill("")  # What it does is required
    type_at_the_end(page, " // more")
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_role("status").filter(has_text="Not saved")).to_contain_text("Nothing was published.")
    expect(page.get_by_role("dialog", name=f"Publish {name}")).to_be_hidden()
    expect(page.get_by_role("button", name="Publish", exact=True)).not_to_have_attribute("aria-busy", "true")
    assert_accessible(page, "the module page with a refused save")
