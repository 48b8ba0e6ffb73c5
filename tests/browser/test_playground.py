"""The Playground in a browser: a form generated from a tool's inputSchema, raw JSON, an error result,
recent inputs kept by the browser across a reload (docs/kinds/code-modules.md format_currency runs here in
test_module_editor.py, from the console that made it)."""

from __future__ import annotations

import re
from typing import Any
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shot, shots, sign_in

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
    assert page.get_by_label("Tool", exact=True).input_value() == name
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
    assert "Succeeded" in body.inner_text() and "isError" not in body.inner_text()
    assert "n is 41" in body.inner_text()
    assert re.search(r"run as you · [0-9.]+ ms", body.inner_text())
    # the arguments sent, as the tool got them
    assert '"n": 41' in body.locator("pre.arguments").inner_text()
    assert_accessible(page, "the Playground with a result")
    shots(page, "playground-result")

    # an error result says so in words
    fail.check()
    page.get_by_role("button", name="Run").click()
    body.get_by_text("Failed: the tool answered with an error").wait_for()
    assert "asked to fail" in body.inner_text()

    # raw JSON: the toggle shows the arguments as JSON, filled from the form
    page.get_by_role("radio", name="Raw JSON").check()
    raw = page.get_by_label("Arguments (JSON object)")
    assert raw.is_visible() and not number.is_visible()
    assert '"n": 41' in raw.input_value()
    raw.fill('{"n": 1}')
    page.get_by_role("button", name="Run").click()
    body.get_by_text('"next":2').wait_for()
    assert "Succeeded" in body.inner_text()
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
    page.get_by_label("Tool", exact=True).select_option(name)
    page.get_by_role("button", name="Open").click()
    page.wait_for_url(f"**/console/playground?tool={name}")
    # no declared parameter: raw JSON is the way in
    assert page.get_by_label("Arguments (JSON object)").is_visible()
    page.get_by_role("button", name="Run").click()
    result_body(page).get_by_text("hi", exact=True).wait_for()


def test_run_as_a_usage_profile_checks_seed_004_as_a_caller_sees_it(page, console_server) -> None:
    """Seed 004's last check, in the console: run the tool as a usage profile that does not allow it
    (refused, in words, with the chat's own text), allow it on the profile's page, run again."""
    name = published_tool(console_server, source="exports.run = function (i) { return 'Total: ' + i.amount.toFixed(2); };",
                          params=[{"name": "amount", "type": "decimal", "required": True}])
    other = published_tool(console_server, source="exports.run = function () { return 1; };", params=[])
    profile = f"chat{uuid4().hex[:6]}"
    with console_server.client() as rest:
        made = rest.post("/api/v1/admin/usage-profiles", json={"id": profile, "description": "the chat's", "allowedTools": [other], "allowedTags": []})
        assert made.status_code == 201, made.text
    sign_in(page, then=f"/console/playground?tool={name}")
    page.get_by_label("Run as").select_option(label=f"Usage profile {profile}")
    page.get_by_role("spinbutton", name=re.compile(r"^amount")).fill("12.5")
    page.get_by_role("button", name="Run").click()
    body = result_body(page)
    body.get_by_text("Refused").wait_for()
    assert f"The usage profile {profile} does not allow this tool" in body.inner_text()
    assert f"offers no tool '{name}' to this caller" in body.locator("pre.output").inner_text()
    assert f"run as a caller with the usage profile {profile}" in body.inner_text()
    assert_accessible(page, "the Playground, refused as a usage profile")
    shots(page, "playground-run-as-refused")

    # allow it on the profile, through the profile's pages
    body.get_by_role("link", name=f"Open the usage profile {profile}").click()
    page.wait_for_url(f"**/console/profiles/{profile}")
    page.get_by_role("link", name="Edit").click()
    page.get_by_role("checkbox", name=name, exact=True).check()
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/profiles/{profile}")

    # and run again as the profile: the same call now succeeds
    page.goto(f"/console/playground?tool={name}")
    page.get_by_label("Run as").select_option(label=f"Usage profile {profile}")
    page.get_by_role("spinbutton", name=re.compile(r"^amount")).fill("12.5")
    page.get_by_role("button", name="Run").click()
    body.get_by_text("Succeeded").wait_for()
    assert "Total: 12.50" in body.locator("pre.output").inner_text()
    assert f"run as a caller with the usage profile {profile}" in body.inner_text()
    assert_accessible(page, "the Playground, run as a usage profile that allows the tool")
    shots(page, "playground-run-as")


def test_an_api_url_tool_runs_in_the_playground_showing_the_upstream_request(page, console_server, upstream_api) -> None:
    name = f"weather{uuid4().hex[:6]}"
    with console_server.client() as rest:
        made = rest.post("/api/v1/admin/api-tools", json={
            "id": name, "description": "weather", "urlTemplate": upstream_api.url + "/v1/weather/{city}{?units}",
            "parameters": [{"name": "city", "type": "string", "location": "path", "required": True},
                           {"name": "units", "type": "string", "location": "query", "default": "metric"}]})
        assert made.status_code == 201, made.text
    sign_in(page, then="/console/playground")
    page.get_by_label("Tool", exact=True).select_option(label=f"{name} (API URL tool)")
    page.get_by_role("button", name="Open").click()
    page.wait_for_url(f"**/console/playground?tool={name}")
    # the form, then the same arguments as JSON
    page.get_by_role("textbox", name=re.compile(r"^city")).fill("Bern")
    page.get_by_role("radio", name="Raw JSON").check()
    raw = page.get_by_label("Arguments (JSON object)")
    assert '"city": "Bern"' in raw.input_value()
    page.get_by_role("button", name="Run").click()
    body = result_body(page)
    body.get_by_text("Succeeded").wait_for()
    assert f"GET {upstream_api.url}/v1/weather/Bern?units=metric" in body.inner_text()
    assert "Raw response" in body.inner_text() and '"temp"' in body.locator("pre.raw-response").inner_text()
    assert "200" in body.get_by_role("definition").first.inner_text()
    assert_accessible(page, "the Playground with an API URL tool's result")
    shots(page, "playground-api-tool")
