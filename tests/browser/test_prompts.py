"""Prompts in Chromium (docs/kinds/prompts.md "In the console"): reached from the navigation, a new
prompt made from its form (an argument added as a row of fields, a message's text), a placeholder
naming no argument refused next to the message's text, the prompt published with a message, its
draft tested with arguments (the rendered messages below) and the state saying which version is
offered; an argument's completion values, a second message added and removed; axe-core on the
pages, both themes at 1440 and 390 px."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in


def test_a_prompt_is_made_published_and_tested_in_the_console(page, console_server) -> None:  # noqa: ANN001
    sign_in(page, then="/console/prompts")
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Prompts").click()
    page.wait_for_url("**/console/prompts")
    page.get_by_role("link", name="New prompt").click()
    page.get_by_label("Name", exact=True).fill("greet")
    page.get_by_label("Description", exact=True).fill("Greets someone by name")
    page.get_by_label("Title").fill("Greeting")
    page.get_by_role("group", name="Message 1").get_by_label("Text").fill("Say hello to {{whom}}.")
    page.get_by_role("button", name="Add an argument").click()
    argument = page.get_by_role("group", name="Argument 1")
    expect(argument.get_by_label("Name")).to_be_focused()  # the new row's first field
    expect(page.get_by_label("Name", exact=True).first).to_have_value("greet")  # what was typed, kept
    argument.get_by_label("Name").fill("who")
    argument.get_by_label("Description").fill("whom to greet")
    argument.get_by_label("Required").check()
    argument.get_by_label("Completion values").fill("Ada\nGrace")
    page.get_by_role("button", name="Create").click()
    message = page.get_by_role("group", name="Message 1")
    expect(message.locator(".error")).to_contain_text("names no argument")
    expect(message.get_by_label("Text")).to_have_value("Say hello to {{whom}}.")
    expect(message.get_by_label("Text")).to_have_attribute("aria-invalid", "true")
    shots(page, "prompt-refused")
    message.get_by_label("Text").fill("Say hello to {{who}}, warmly.")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url("**/console/prompts/greet")
    expect(page.locator("#state")).to_contain_text("not offered until published")
    expect(page.get_by_role("group", name="Argument 1: who").get_by_label("Completion values")).to_have_value("Ada\nGrace")
    page.get_by_label("Message", exact=True).fill("first words")
    page.get_by_role("button", name="Publish the draft").click()
    expect(page.locator("#state")).to_contain_text("version 1 is offered")
    test = page.locator("#test-form")
    test.get_by_label("who").fill("Ada")  # one field per argument
    test.get_by_role("button", name="Test", exact=True).click()
    expect(page.locator("#test-result")).to_contain_text("Say hello to Ada, warmly.")
    assert_accessible(page, "a prompt's page")
    shots(page, "prompt-page")
    # a second message added, then removed: nothing saved either time
    page.get_by_role("button", name="Add a message").click()
    expect(page.get_by_role("group", name="Message 2").get_by_label("Role")).to_be_focused()
    page.get_by_role("button", name="Remove message 2").click()
    expect(page.get_by_role("group", name="Message 2")).to_have_count(0)
    expect(page.locator("#state")).to_contain_text("version 1 is offered")
    page.goto("/console/prompts")
    expect(page.get_by_role("table")).to_contain_text("greet")
    assert_accessible(page, "the prompts list")
    shots(page, "prompts-list")
    with console_server.client() as rest:
        published = rest.get("/api/v1/admin/prompts/greet").json()["published"]
        assert published["message"] == "first words"
        assert published["arguments"] == [{"name": "who", "description": "whom to greet", "required": True,
                                           "completion": {"values": ["Ada", "Grace"]}}]
