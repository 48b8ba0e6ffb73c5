"""A prompt's and a resource's history and changesets in Chromium (issue 33, 1 and 2), as a code
module's: two versions compared field by field, the item as of an instant, a version restored into
the draft after the dialog that says what is lost; two drafts chosen in the list and published
together as one changeset, shown on the changesets page; the JSON view's refusal at the JSON.
axe-core on each page, both themes at 1440 and 390 px."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in


def test_a_prompt_s_versions_are_compared_seen_as_of_an_instant_and_restored(page, console_server) -> None:  # noqa: ANN001
    name = f"greet{uuid4().hex[:6]}"
    api = console_server.client()
    text = lambda t: [{"role": "user", "content": {"type": "text", "text": t}}]  # noqa: E731
    assert api.post("/api/v1/admin/prompts", json={"id": name, "description": "Greets", "messages": text("Hello")}).status_code == 201
    assert api.post(f"/api/v1/admin/prompts/{name}/publish", json={"message": "the first"}).status_code == 200
    # the instant's form has whole seconds: one that is after the first version and before the change
    page.wait_for_timeout(1100)
    now = datetime.now(timezone.utc).replace(microsecond=0, tzinfo=None)
    # as Chromium writes a datetime-local's value: without the seconds when they are :00 (Playwright's
    # fill reads the value back, and calls "…T21:54:00" malformed)
    between = now.isoformat(timespec="minutes" if now.second == 0 else "seconds")
    page.wait_for_timeout(1100)
    assert api.put(f"/api/v1/admin/prompts/{name}", json={"messages": text("Good morning")}).status_code == 200
    assert api.post(f"/api/v1/admin/prompts/{name}/publish", json={"message": "the second"}).status_code == 200
    assert api.put(f"/api/v1/admin/prompts/{name}", json={"description": "Greets warmly"}).status_code == 200

    sign_in(page, then=f"/console/prompts/{name}")
    page.get_by_role("link", name="History").click()
    page.wait_for_url(f"**/console/prompts/{name}/history")
    page.get_by_label("Compare version").select_option("1")
    page.get_by_label("with", exact=True).select_option("2")
    page.get_by_role("button", name="Compare").click()
    diff = page.get_by_role("region", name="Changes, field by field")
    expect(diff.get_by_role("row", name="Message 1 (user) changed")).to_contain_text("Good morning")
    page.get_by_label("Date and time (UTC)").fill(between)
    page.get_by_role("button", name="Show").click()
    past = page.locator("#as-of-result")
    expect(past).to_contain_text("Published version 1")
    expect(past).to_contain_text("Hello")
    assert_accessible(page, "a prompt's history")
    shots(page, "prompt-history")
    # the draft is replaced only after the dialog says so
    page.get_by_role("button", name="Restore version 1 into the draft").click()
    dialog = page.get_by_role("dialog", name="Replace the draft with version 1?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Replace the draft with version 1").click()
    page.wait_for_url(f"**/console/prompts/{name}")
    expect(page.get_by_role("group", name="Message 1").get_by_label("Text")).to_have_value("Hello")
    assert api.get(f"/api/v1/admin/prompts/{name}").json()["draft"]["description"] == "Greets"
    # the JSON view: a field the prompt does not have is refused at the JSON, what was typed kept
    page.get_by_text("JSON: the draft's whole definition").click()
    page.get_by_label("Definition").fill(json.dumps({"description": "x", "colour": "red"}))
    page.get_by_role("button", name="Save the JSON as the draft").click()
    expect(page.locator("#json-error")).to_contain_text("json.colour: not a field of a prompt")
    expect(page.get_by_label("Definition")).to_have_value(json.dumps({"description": "x", "colour": "red"}))
    assert_accessible(page, "a prompt's JSON view, refused")


def test_two_resources_are_published_together_from_the_list(page, console_server) -> None:  # noqa: ANN001
    tag = uuid4().hex[:6]
    api = console_server.client()
    names = [f"memo{tag}a", f"memo{tag}b"]
    for name in names:
        made = api.post("/api/v1/admin/resources", json={"id": name, "description": "A memo", "uri": f"memo://{name}",
                                                         "mimeType": "text/plain", "text": "Hello"})
        assert made.status_code == 201, made.text
    sign_in(page, then="/console/resources")
    for name in names:
        page.get_by_label(f"Publish the draft of {name} together with the others chosen").check()
    page.get_by_label("Message", exact=True).fill("two memos")
    assert_accessible(page, "the resources list, drafts chosen")
    shots(page, "resources-list-chosen")
    page.get_by_role("button", name="Publish together").click()
    page.wait_for_url("**/console/resources/changeset-history?id=cs_*")
    row = page.get_by_role("table").get_by_role("row").nth(1)
    expect(row).to_contain_text("two memos")
    for name in names:
        expect(row.get_by_role("link", name=f"{name} version 1")).to_be_visible()
    assert_accessible(page, "a resources changeset")
    shots(page, "resources-changeset")
    row.get_by_role("link", name=f"{names[0]} version 1").click()
    page.wait_for_url(f"**/console/resources/{names[0]}/history*")
    expect(page.locator("#version-1")).to_contain_text("two memos")
    for name in names:
        assert api.get(f"/api/v1/admin/resources/{name}").json()["published"]["version"] == 1
