"""The organizations (docs/tenants.md) in a browser: the operator signs in to its own pages, creates an
organization (its first admin token shown once), sets a quota, suspends it (its admin, signed in
in another browser, sees the suspended page), resumes it, and deletes it once it holds nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from uuid import uuid4

import pytest

from tests.browser.conftest import OPERATOR_TOKEN, Watch, assert_accessible, shot, sign_in

TENANTS = "/console/operator/tenants"
MODULE = {"id": "weather", "description": "the weather", "draftContent": "exports.run = () => 1;"}


@pytest.fixture
def other_watch(console_server) -> Watch:  # noqa: ANN001
    return Watch(origin=console_server.url)


@pytest.fixture
def other_page(browser, console_server, other_watch: Watch) -> Iterator[object]:  # noqa: ANN001
    """A page in a second browser (its own cookies), watched as `page` is."""
    watch = other_watch
    context = browser.new_context(base_url=console_server.url, viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    opened = context.new_page()
    opened.on("request", watch.request)
    opened.on("console", watch.console)
    opened.on("pageerror", watch.page_error)
    yield opened
    context.close()
    assert not watch.problems, "the second page did what the console must never do:\n" + "\n".join(watch.problems)


def test_the_operator_creates_suspends_resumes_and_deletes_an_organization(page, watch, other_page, other_watch, console_server) -> None:
    tenant = f"org-{uuid4().hex[:8]}"
    # the refused delete answers 409, the suspended organization's pages 403: the browser logs each
    watch.allowed_console.append(re.compile(r"status of 409"))
    other_watch.allowed_console.append(re.compile(r"status of 403"))
    # the operator's sign-in leads to the organizations, and its navigation offers nothing else
    sign_in(page, OPERATOR_TOKEN, then=TENANTS)
    assert page.get_by_role("heading", name="Organizations", exact=True).is_visible()
    nav = page.get_by_role("navigation", name="Console")
    assert nav.get_by_role("link", name="Organizations").get_attribute("aria-current") == "page"
    assert nav.get_by_role("link", name="Code modules").count() == 0

    # a quota that is no number: the form says so at its field
    page.get_by_label("Id", exact=True).fill(tenant)
    page.get_by_label("Name", exact=True).fill("Acme Browser")
    page.get_by_label("Modules").fill("many")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("Some fields need a change").wait_for()
    assert page.get_by_label("Modules").get_attribute("aria-invalid") == "true"
    assert page.get_by_label("Id", exact=True).input_value() == tenant
    assert_accessible(page, "the create form with an error")

    # created: the first admin token, once, focused, with a copy button
    page.get_by_label("Modules").fill("")
    page.get_by_role("button", name="Create").click()
    token_field = page.get_by_label(f"First admin token of {tenant}")
    token_field.wait_for()
    token = token_field.input_value()
    assert token.startswith("tsk_") and token_field.get_attribute("readonly") is not None
    assert page.get_by_text("it will not be shown again").is_visible()
    assert page.evaluate("document.activeElement.id") == "created-token"
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy the token").click()
    page.get_by_text("Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == token
    row = page.get_by_role("row", name=re.compile(re.escape(tenant)))
    assert row.get_by_role("cell", name="active").is_visible() and row.get_by_role("cell", name="no limits").is_visible()
    assert_accessible(page, "an organization just created")
    shot(page, "operator-created")
    # a reload does not show the token again
    page.reload()
    assert token not in page.content()
    assert_accessible(page, "the organizations")
    shot(page, "operator-tenants")

    # the organization's admin signs in with it, in another browser, and sees its own (empty) tenant
    sign_in(other_page, token)
    assert other_page.get_by_role("heading", name="Code modules").is_visible()
    with console_server.client(token) as tenant_api:
        assert tenant_api.post("/api/v1/admin/code-modules", json=MODULE).status_code == 201

    # its page: usage against quotas; a quota set by keyboard
    page.get_by_role("link", name=tenant, exact=True).click()
    page.get_by_role("heading", name="Organization Acme Browser").wait_for()
    modules = page.get_by_label("Modules")
    modules.fill("1")
    modules.press("Enter")
    page.get_by_text(f"Saved the quotas of {tenant}.").wait_for()
    usage = page.get_by_role("row", name=re.compile("^Modules"))
    assert usage.get_by_role("cell").nth(0).inner_text() == "1" and "reached" in usage.inner_text()
    with console_server.client(token) as tenant_api:
        second = tenant_api.post("/api/v1/admin/code-modules", json={**MODULE, "id": "second"})
        assert second.status_code == 409 and second.json()["code"] == "quota-exceeded"
    assert_accessible(page, "an organization's page")
    shot(page, "operator-tenant")

    # suspended, after a confirmation: the admin's next page says so, and signing in is refused
    page.get_by_role("button", name=f"Suspend {tenant}").click()
    dialog = page.get_by_role("dialog", name=f"Suspend the organization {tenant}?")
    assert dialog.is_visible()
    assert_accessible(page, "the suspend dialog")
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    page.get_by_role("button", name=f"Suspend {tenant}").click()
    dialog.get_by_role("button", name=f"Suspend {tenant}").click()
    page.get_by_text(f"Suspended {tenant}").wait_for()
    assert page.get_by_text("suspended", exact=True).first.is_visible()
    other_page.reload()
    other_page.get_by_role("heading", name="Organization suspended").wait_for()
    assert other_page.get_by_text("Your organization is suspended").is_visible()
    assert other_page.get_by_role("navigation", name="Console").count() == 0
    assert_accessible(other_page, "the suspended page")
    shot(other_page, "tenant-suspended")

    # resumed: the same session works again
    page.get_by_role("button", name=f"Resume {tenant}").click()
    page.get_by_role("dialog", name=f"Resume the organization {tenant}?").get_by_role("button", name=f"Resume {tenant}").click()
    page.get_by_text(f"Resumed {tenant}").wait_for()
    other_page.reload()
    other_page.get_by_role("heading", name="Code modules").wait_for()
    assert other_page.get_by_role("link", name="weather").first.is_visible()

    # deletion is refused while it holds the module, and says what it holds
    page.get_by_role("button", name=f"Delete {tenant}").click()
    page.get_by_role("dialog", name=f"Delete the organization {tenant}?").get_by_role("button", name=f"Delete {tenant}").click()
    refusal = page.get_by_text(f"Not deleted: tenant '{tenant}' still holds 1 module")
    refusal.wait_for()
    assert page.evaluate("document.activeElement.id") == "delete-problem"
    assert_accessible(page, "the refused delete")

    # once the module is gone, the organization is deleted and its admin's session ends
    with console_server.client(token) as tenant_api:
        assert tenant_api.delete("/api/v1/admin/code-modules/weather").status_code == 204
    page.get_by_role("button", name=f"Delete {tenant}").click()
    page.get_by_role("dialog", name=f"Delete the organization {tenant}?").get_by_role("button", name=f"Delete {tenant}").click()
    page.wait_for_url(f"**{TENANTS}?deleted=*")
    assert page.get_by_text(f"Deleted the organization {tenant}").is_visible()
    assert page.get_by_role("row", name=re.compile(re.escape(tenant))).count() == 0
    other_page.reload()
    other_page.wait_for_url("**/console/sign-in*")


def test_the_operator_is_refused_inside_a_tenant_and_an_admin_at_the_operators_pages(page, watch, other_page, other_watch) -> None:
    watch.allowed_console.append(re.compile(r"status of 403"))
    other_watch.allowed_console.append(re.compile(r"status of 403"))
    sign_in(page, OPERATOR_TOKEN, then=TENANTS)
    page.goto("/console/modules")
    assert page.get_by_role("heading", name="Not for the operator").is_visible()
    page.get_by_role("link", name="Back to the organizations").click()
    page.wait_for_url(f"**{TENANTS}")

    sign_in(other_page)
    other_page.goto(TENANTS)
    assert other_page.get_by_role("heading", name="Refused").is_visible()
    assert other_page.get_by_text("Only the service's operator token opens the organizations' pages").is_visible()
    assert other_page.get_by_role("navigation", name="Console").get_by_role("link", name="Organizations").count() == 0
