"""Admins' resources in Chromium (docs/kinds/resources.md): reached from the navigation, a new
resource made from its form (a URI template chosen as its address, a text as its content), a
placeholder naming no variable refused next to the text, the resource published, its draft read at
a URI the template matches (the text below, the variable filled in); axe-core on the pages, both
themes at 1440 and 390 px."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in


def test_a_resource_is_made_published_and_read_in_the_console(page, console_server) -> None:  # noqa: ANN001
    sign_in(page, then="/console/resources")
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Resources").click()
    page.wait_for_url("**/console/resources")
    page.get_by_role("link", name="New resource").click()
    page.get_by_label("Name").fill("customer")
    page.get_by_label("Description").fill("A customer's card")
    page.get_by_label("A URI template").check()
    page.get_by_label("URI or URI template").fill("crm://customers/{id}")
    page.get_by_label("Media type").fill("application/json")
    page.get_by_label("Text", exact=True).fill('{"customer": "{{who}}"}')
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#text-error")).to_contain_text("names no variable")
    expect(page.get_by_label("Text", exact=True)).to_have_value('{"customer": "{{who}}"}')
    expect(page.get_by_label("A URI template")).to_be_checked()
    shots(page, "resource-refused")
    page.get_by_label("Text", exact=True).fill('{"customer": "{{id}}"}')
    page.get_by_role("button", name="Create").click()
    page.wait_for_url("**/console/resources/customer")
    expect(page.locator("#state")).to_contain_text("not offered until published")
    page.get_by_role("button", name="Publish the draft").click()
    expect(page.locator("#state")).to_contain_text("version 1 is offered")
    page.locator("#test-form").get_by_label("URI").fill("crm://customers/c42")
    page.get_by_role("button", name="Test", exact=True).click()
    expect(page.locator("#test-result")).to_contain_text('{"customer": "c42"}')
    expect(page.locator("#test-result")).to_contain_text("crm://customers/c42")
    assert_accessible(page, "a resource's page")
    shots(page, "resource-page")
    page.goto("/console/resources")
    expect(page.get_by_role("table")).to_contain_text("customer")
    assert_accessible(page, "the resources list")
    shots(page, "resources-list")
    with console_server.client() as rest:
        assert rest.get("/api/v1/admin/resources/customer").json()["published"]["uriTemplate"] == "crm://customers/{id}"
