"""The tool section's Annotations (issue 33, point 5; R17), as a person uses them: the derived value
is shown beside each hint, a claim the code contradicts is refused at save with the field and the
reason, honest choices and a title are saved with the draft, published, and listed by MCP."""

from __future__ import annotations

import re
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shot, sign_in

BASE = "/api/v1/admin/code-modules"
FETCHING = "exports.run = function (i) { return http.fetch('https://example.com/').status; };"


def test_the_editor_shows_derived_hints_refuses_a_false_one_and_saves_honest_ones(page, console_server, watch) -> None:  # noqa: ANN001
    watch.allowed_console += [re.compile(r"status of 400"), re.compile(r"Error Code 400 from /console/modules/")]
    name = f"hints{uuid4().hex[:8]}"
    api = console_server.client()
    created = api.post(BASE, json={"id": name, "description": "Reads a status", "draftContent": FETCHING, "tool": {"exposeInChat": True}})
    assert created.status_code == 201, created.text
    sign_in(page, then=f"/console/modules/{name}")

    section = page.get_by_role("group", name="Annotations")
    expect(section).to_be_visible()
    expect(section).to_contain_text("it calls http.fetch, so it is open-world")
    open_world = page.get_by_label("Open world")
    expect(open_world.locator("option:checked")).to_have_text("derived (yes)")
    section.scroll_into_view_if_needed()
    shot(page, "module-annotations-derived")

    # Claiming a fetching module is closed-world is refused, naming the field and why.
    open_world.select_option("false")
    page.keyboard.press("Control+S")
    expect(page.get_by_text("tool.annotations.openWorldHint").first).to_be_visible()
    expect(page.get_by_text("its code calls http.fetch, which reaches the network").first).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Not saved")).to_be_visible()
    shot(page, "module-annotations-refused")
    assert api.get(f"{BASE}/{name}").json()["draft"]["tool"].get("annotations") is None

    # Honest: a title, read-only and idempotent (it only GETs), open world left derived.
    open_world.select_option("")
    page.get_by_label("Title", exact=True).fill("Status of example.com")
    page.get_by_label("Read-only").select_option("true")
    page.get_by_label("Idempotent").select_option("true")
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    tool = api.get(f"{BASE}/{name}").json()["draft"]["tool"]
    assert tool["annotations"] == {"title": "Status of example.com", "readOnlyHint": True, "idempotentHint": True}
    expect(page.get_by_label("Read-only").locator("option:checked")).to_contain_text("yes")
    assert_accessible(page, "the tool section with its annotations", within="#annotations")
    section.scroll_into_view_if_needed()
    shot(page, "module-annotations-saved")

    # The preview of what an MCP client will see has them, the derived open world included.
    expect(page.locator("body")).to_contain_text('"title": "Status of example.com"')
    expect(page.locator("body")).to_contain_text('"openWorldHint": true')

    published = api.post(f"{BASE}/{name}/publish")
    assert published.status_code == 200, published.text
    assert published.json()["published"]["tool"]["annotations"]["title"] == "Status of example.com"


def test_an_api_url_tool_s_annotations_are_edited_and_a_false_one_refused(page, console_server, watch) -> None:  # noqa: ANN001
    watch.allowed_console += [re.compile(r"status of 400"), re.compile(r"Error Code 400 from /console/api-tools")]
    name = f"drop{uuid4().hex[:6]}"
    api = console_server.client()
    created = api.post("/api/v1/admin/api-tools", json={"id": name, "description": "Deletes an item", "method": "DELETE",
                                                         "urlTemplate": "https://api.example.com/items/{id}",
                                                         "parameters": [{"name": "id", "required": True, "location": "path"}],
                                                         "annotations": {"title": "Delete an item"}})
    assert created.status_code == 201, created.text
    sign_in(page, then=f"/console/api-tools/{name}")
    section = page.get_by_role("group", name="Annotations")
    expect(page.get_by_label("Title", exact=True)).to_have_value("Delete an item")  # what REST set is shown, and kept
    page.get_by_label("Read-only").select_option("true")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("Annotations, Read-only: cannot be true: its method is DELETE, which deletes").first).to_be_visible()
    section.scroll_into_view_if_needed()
    shot(page, "api-tool-annotations-refused")
    page.get_by_label("Read-only").select_option("")
    page.get_by_label("Open world").select_option("false")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#toasts")).to_contain_text(f"Saved {name}")
    assert api.get(f"/api/v1/admin/api-tools/{name}").json()["annotations"] == {"title": "Delete an item", "openWorldHint": False}
    assert_accessible(page, "an API URL tool's annotations", within="#annotations")
    section.scroll_into_view_if_needed()
    shot(page, "api-tool-annotations-saved")
