"""Prompts in Chromium (docs/kinds/prompts.md "In the console"): reached from the navigation, a new
prompt made from its form, a placeholder naming no argument refused next to the messages, the
prompt published with a message, its draft tested with arguments (the rendered messages below) and
the state saying which version is offered; axe-core on the pages, both themes at 1440 and 390 px."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in

ARGUMENTS = [{"name": "who", "description": "whom to greet", "required": True}]


def messages(text: str) -> str:
    return json.dumps([{"role": "user", "content": {"type": "text", "text": text}}], indent=2)


def test_a_prompt_is_made_published_and_tested_in_the_console(page, console_server) -> None:  # noqa: ANN001
    sign_in(page, then="/console/prompts")
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Prompts").click()
    page.wait_for_url("**/console/prompts")
    page.get_by_role("link", name="New prompt").click()
    page.get_by_label("Name").fill("greet")
    page.get_by_label("Description").fill("Greets someone by name")
    page.get_by_label("Title").fill("Greeting")
    page.get_by_label("Arguments").fill(json.dumps(ARGUMENTS, indent=2))
    page.get_by_label("Messages").fill(messages("Say hello to {{whom}}."))
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#messages-error")).to_contain_text("names no argument")
    expect(page.get_by_label("Messages")).to_have_value(messages("Say hello to {{whom}}."))
    page.get_by_label("Messages").fill(messages("Say hello to {{who}}, warmly."))
    page.get_by_role("button", name="Create").click()
    page.wait_for_url("**/console/prompts/greet")
    expect(page.locator("#state")).to_contain_text("not offered until published")
    page.get_by_label("Message", exact=True).fill("first words")
    page.get_by_role("button", name="Publish the draft").click()
    expect(page.locator("#state")).to_contain_text("version 1 is offered")
    page.get_by_label("Arguments", exact=True).nth(0)  # the draft's field; the test's is below
    page.locator("#test-arguments").fill('{"who": "Ada"}')
    page.get_by_role("button", name="Test", exact=True).click()
    expect(page.locator("#test-result")).to_contain_text("Say hello to Ada, warmly.")
    assert_accessible(page, "a prompt's page")
    shots(page, "prompt-page")
    page.goto("/console/prompts")
    expect(page.get_by_role("table")).to_contain_text("greet")
    assert_accessible(page, "the prompts list")
    shots(page, "prompts-list")
    with console_server.client() as rest:
        assert rest.get("/api/v1/admin/prompts/greet").json()["published"]["message"] == "first words"
