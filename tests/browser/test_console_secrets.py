"""Secrets in the console (docs/kinds/index.md, docs/console.md), in a browser: created with the value typed into a
password field, never shown back (not even in the form answered after an error), rotated from a
dialog, deleted from another; by keyboard and mouse as a person would."""

from __future__ import annotations

import re
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shot, sign_in

VALUE = "browser-secret-value-5e2d"
NEW_VALUE = "browser-rotated-value-8a1f"


def test_a_secret_is_created_rotated_and_deleted_without_its_value_shown(page, console_server) -> None:
    secret = f"key-{uuid4().hex[:8]}"
    sign_in(page, then="/console/secrets")
    assert page.get_by_role("heading", name="Secrets", exact=True).is_visible()
    assert page.get_by_role("link", name="Secrets").get_attribute("aria-current") == "page"

    # a bad id: the form comes back with its error and the id, the value field empty
    page.get_by_label("Name", exact=True).fill("not valid!")
    page.get_by_label("Value", exact=True).fill(VALUE)
    page.get_by_label("Description", exact=True).fill("the weather service")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("Some fields need a change").wait_for()
    assert page.get_by_label("Name", exact=True).get_attribute("aria-invalid") == "true"
    assert page.get_by_label("Value", exact=True).input_value() == "" and page.get_by_label("Value", exact=True).get_attribute("type") == "password"
    assert page.get_by_label("Description", exact=True).input_value() == "the weather service"
    assert VALUE not in page.content()

    # created: listed with its fingerprint, never its value
    page.get_by_label("Name", exact=True).fill(secret)
    page.get_by_label("Value", exact=True).fill(VALUE)
    page.get_by_role("button", name="Create").click()
    page.get_by_text(f"Created the secret {secret}.").wait_for()
    row = page.get_by_role("row", name=re.compile(re.escape(secret)))
    fingerprint = row.locator("code").inner_text()
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint)
    assert row.get_by_role("cell", name="the weather service").is_visible()
    assert row.get_by_role("cell", name="no tool").is_visible()
    assert VALUE not in page.content()
    assert_accessible(page, "the secrets page")
    shot(page, "secrets")

    # rotated from its dialog, by keyboard: a new fingerprint
    row.get_by_role("button", name=f"Rotate {secret}").click()
    page.get_by_label(f"New value of {secret}").fill(NEW_VALUE)
    page.get_by_label(f"New value of {secret}").press("Enter")
    page.get_by_text(f"Saved the secret {secret}").wait_for()
    rotated = page.get_by_role("row", name=re.compile(re.escape(secret))).locator("code").inner_text()
    assert rotated != fingerprint
    assert NEW_VALUE not in page.content() and VALUE not in page.content()
    with console_server.client() as rest:
        assert rest.get(f"/api/v1/admin/secrets/{secret}").json()["fingerprint"] == rotated

    # deleted from its dialog
    page.get_by_role("row", name=re.compile(re.escape(secret))).get_by_role("button", name=f"Delete {secret}").click()
    page.get_by_role("dialog").get_by_role("button", name=f"Delete {secret}").click()
    page.get_by_text(f"Deleted the secret {secret}.").wait_for()
    assert page.get_by_role("row", name=re.compile(re.escape(secret))).count() == 0
