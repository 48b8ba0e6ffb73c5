"""The Playground in a browser: a form generated from a tool's inputSchema, raw JSON, an error result,
recent inputs kept by the browser across a reload (docs/kinds/code-modules.md format_currency runs here in
test_module_editor.py, from the console that made it)."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shot, sign_in

MODULES = "/api/v1/admin/code-modules"


def published_tool(console_server: Any, *, source: str, params: list[dict[str, Any]], style: str = "module",
                   description: str = "a tool for the Playground") -> str:
    name = f"m{uuid4().hex[:8]}"
    with console_server.client() as rest:
        made = rest.post(MODULES, json={"id": name, "description": description, "draftContent": source,
                                        "tool": {"style": style, "inputParameters": params, "exposeInChat": True}})
        assert made.status_code == 201, made.text
        published = rest.post(f"{MODULES}/{name}/publish")
        assert published.status_code == 200, published.text
    return name


def result_body(page: Any) -> Any:
    return page.locator("#run-result-body")


def test_a_module_tool_runs_from_the_generated_form_and_raw_json(page, console_server) -> None:
    name = published_tool(
        console_server,
        source="exports.run = function (i) { log('n is ' + i.n); if (i.fail) throw new Error('asked to fail'); return {next: i.n + 1, tags: i.tags}; };",
        params=[
            {"name": "n", "type": "integer", "required": True, "description": "the number to add one to"},
            {"name": "fail", "type": "boolean"},
            {"name": "tags", "type": "array"},
        ],
    )
    sign_in(page, then=f"/console/playground?tool={name}")
    assert page.get_by_role("heading", name=name).is_visible()
    assert page.get_by_label("Tool").input_value() == name
    assert_accessible(page, "the Playground with a generated form")

    # a field per property, typed: a number input, a checkbox, a JSON textarea; required marked
    number = page.get_by_role("spinbutton", name=re.compile(r"^n \(required\)"))
    assert number.get_attribute("aria-required") == "true"
    fail = page.get_by_role("checkbox", name=re.compile(r"^fail"))
    tags = page.get_by_role("textbox", name=re.compile(r"^tags"))
    number.fill("41")
    tags.fill('["a", "b"]')
    page.get_by_role("button", name="Run").click()
    body = result_body(page)
    body.get_by_text('"next":42').wait_for()
    assert "isError: false" in body.inner_text()
    assert "n is 41" in body.inner_text()
    assert re.search(r"time: [0-9.]+ ms", body.inner_text())
    assert_accessible(page, "the Playground with a result")
    shot(page, "playground-result")

    # an error result says isError
    fail.check()
    page.get_by_role("button", name="Run").click()
    body.get_by_text("isError: true").wait_for()
    assert "asked to fail" in body.inner_text()

    # raw JSON: the toggle shows the arguments as JSON, filled from the form
    page.get_by_role("radio", name="Raw JSON").check()
    raw = page.get_by_label("Arguments (JSON object)")
    assert raw.is_visible() and not number.is_visible()
    assert '"n": 41' in raw.input_value()
    raw.fill('{"n": 1}')
    page.get_by_role("button", name="Run").click()
    body.get_by_text('"next":2').wait_for()
    assert "isError: false" in body.inner_text()
    assert_accessible(page, "the Playground in raw JSON mode")

    # not JSON: the field says so, nothing runs
    raw = page.get_by_label("Arguments (JSON object)")
    raw.fill("{oops")
    page.get_by_role("button", name="Run").click()
    page.get_by_text("The arguments are not JSON").wait_for()
    assert page.get_by_label("Arguments (JSON object)").get_attribute("aria-invalid") == "true"
    assert_accessible(page, "the Playground with a field error")

    # the recent inputs (kept by this browser only) come back after a reload and refill the form
    page.reload()
    recent = page.get_by_role("complementary", name="Recent inputs")
    buttons = recent.get_by_role("button")
    buttons.first.wait_for()
    assert buttons.count() == 3
    assert buttons.nth(0).inner_text() == '{"n":1}'
    assert '"n":41' in buttons.nth(2).inner_text()
    page.get_by_role("radio", name="Form").check()
    buttons.nth(2).click()
    assert page.get_by_role("spinbutton", name=re.compile(r"^n \(required\)")).input_value() == "41"
    assert page.get_by_role("textbox", name=re.compile(r"^tags")).input_value() == '["a","b"]'
    page.get_by_text("Filled the form with recent input 3").wait_for()
    assert_accessible(page, "the Playground with recent inputs")
    shot(page, "playground-recent")


def test_the_playground_lists_tools_and_opens_one(page, console_server) -> None:
    name = published_tool(console_server, source="exports.run = function () { return 'hi'; };", params=[])
    sign_in(page, then="/console/playground")
    assert_accessible(page, "the Playground with no tool chosen")
    page.get_by_label("Tool").select_option(name)
    page.get_by_role("button", name="Open").click()
    page.wait_for_url(f"**/console/playground?tool={name}")
    # no declared parameter: raw JSON is the way in
    assert page.get_by_label("Arguments (JSON object)").is_visible()
    page.get_by_role("button", name="Run").click()
    result_body(page).get_by_text("hi", exact=True).wait_for()
