"""The tool section's Input schema and Output schema fields (issue 33, points 3 and 4), as a person
uses them: a schema that is not one is refused at save with the field and the reason shown, a good
one is saved with the draft, and the Test run checks a result against the output schema."""

from __future__ import annotations

import json
import re
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shot, sign_in

BASE = "/api/v1/admin/code-modules"


def test_the_editor_edits_both_schemas_with_a_clear_error_on_a_bad_one(page, console_server, watch) -> None:  # noqa: ANN001
    # a refused save is an error response by design: the browser and htmx log it
    watch.allowed_console += [re.compile(r"status of 400"), re.compile(r"Error Code 400 from /console/modules/")]
    name = f"schemas{uuid4().hex[:8]}"
    api = console_server.client()
    created = api.post(BASE, json={"id": name, "description": "Totals", "draftContent": "exports.run = (i) => ({total: i.n * 2});",
                                   "tool": {"exposeInChat": True}})
    assert created.status_code == 201, created.text
    sign_in(page, then=f"/console/modules/{name}")

    output_schema = page.get_by_role("textbox", name="Output schema")
    expect(output_schema).to_be_visible()
    output_schema.fill(json.dumps({"type": "object", "properties": {"total": {"type": "numbr"}}}))
    page.keyboard.press("Control+S")
    alert = page.get_by_text("outputSchema").filter(has_text="not a valid JSON Schema 2020-12").first
    expect(alert).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Not saved")).to_be_visible()
    shot(page, "module-output-schema-refused")
    assert api.get(f"{BASE}/{name}").json()["draft"]["tool"].get("outputSchema") is None

    # a good pair: the arguments as a JSON Schema, the result's shape
    input_schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}
    good_output = {"type": "object", "properties": {"total": {"type": "integer", "maximum": 10}}, "required": ["total"]}
    page.get_by_role("textbox", name="Input schema").fill(json.dumps(input_schema))
    output_schema.fill(json.dumps(good_output))
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    tool = api.get(f"{BASE}/{name}").json()["draft"]["tool"]
    assert tool["inputSchema"] == input_schema and tool["outputSchema"] == good_output
    assert json.loads(page.get_by_role("textbox", name="Output schema").input_value()) == good_output
    assert_accessible(page, "the tool section with its schemas")
    shot(page, "module-schemas-saved")

    # Test checks the result against the output schema: 2 * 7 = 14 is over its maximum
    test_input = page.locator("#test-input")
    if not test_input.is_visible():
        page.locator("#test-mode-json").check()
    test_input.fill(json.dumps({"n": 7}))
    page.keyboard.press("Control+Enter")
    result = page.locator("#test-result")
    expect(result).to_contain_text("does not match the tool's outputSchema at $.total")
    shot(page, "module-schemas-test-mismatch")
