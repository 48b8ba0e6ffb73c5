"""People in the console, in Chromium (docs/users.md): an admin adds a person with a password and
invites another; the invited person sets their password by the link; a person signs in by email
and password (a wrong one said in words), changes their own name and password on "Your account";
the admin changes a person's role and deletes them through the confirmation. Every page and dialog
is axe-checked; the main pages are shot in both themes at both widths."""

from __future__ import annotations

from itertools import count

from tests.browser.conftest import assert_accessible, shots, sign_in

PASSWORD = "correct horse battery staple"
_numbers = count(1)


def _email(name: str) -> str:
    return f"{name}-{next(_numbers)}@example.com"


def _add(page, name: str, email: str, role: str, *, password: str | None = None) -> None:
    page.goto("/console/users")
    page.get_by_label("Display name").fill(name)
    page.get_by_label("Email").fill(email)
    page.get_by_label("Role").select_option(label=role)
    if password is not None:
        page.get_by_label("Set a password now").check()
        page.get_by_label("Password (when you set it now)").fill(password)
    page.get_by_role("button", name="Add the person").click()


def _password_sign_in(page, email: str, password: str) -> None:
    page.goto("/console/sign-in")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Log in").click()


def test_people_are_added_invited_sign_in_and_manage_their_account(page, browser, console_server) -> None:
    sign_in(page, then="/console/users")
    assert page.get_by_role("link", name="People").get_attribute("aria-current") == "page"
    assert_accessible(page, "the people list")

    ada = _email("ada")
    _add(page, "Ada Lovelace", ada, "Admin (changes everything)", password=PASSWORD)
    page.wait_for_url("**/console/users/*")
    page.get_by_text("Added Ada Lovelace").wait_for()
    assert page.get_by_role("heading", name="Ada Lovelace").is_visible()
    assert_accessible(page, "a person's page")
    shots(page, "user-detail")

    bob = _email("bob")
    _add(page, "Bob Byte", bob, "Auditor (reads everything)")
    page.get_by_text("Copy the link now").wait_for()
    link = page.get_by_label("The invitation link of Bob Byte").input_value()
    assert "/console/invitation?code=tsi_" in link
    assert_accessible(page, "the people list with an invitation link")
    shots(page, "users-list")

    # Bob, in a browser of his own, chooses his password by the link and is signed in.
    other = browser.new_context(base_url=console_server.url)
    try:
        bobs = other.new_page()
        bobs.goto(link)
        bobs.get_by_role("heading", name="Welcome, Bob Byte").wait_for()
        assert_accessible(bobs, "the invitation page")
        shots(bobs, "user-invitation")
        bobs.get_by_label("Password", exact=True).fill("bobs own long password")
        bobs.get_by_label("Password again").fill("bobs own long password")
        bobs.get_by_role("button", name="Set the password and sign in").click()
        bobs.wait_for_url("**/console/modules")
        # The link works once.
        bobs.goto(link)
        bobs.get_by_role("heading", name="This invitation no longer works").wait_for()
    finally:
        other.close()

    # Ada signs in by password: a wrong one is said in words, then the right one.
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/console/sign-in")
    assert_accessible(page, "the sign-in page")
    shots(page, "sign-in-password")
    _password_sign_in(page, ada, "not the password at all")
    page.get_by_text("That email and password do not match").wait_for()
    assert page.get_by_label("Email").get_attribute("aria-invalid") == "true"
    assert_accessible(page, "the sign-in page with a refusal")
    _password_sign_in(page, ada, PASSWORD)
    page.wait_for_url("**/console/modules")

    # Her account: a new display name, then a new password.
    page.get_by_role("link", name="Ada Lovelace").click()
    page.wait_for_url("**/console/account")
    assert_accessible(page, "your account")
    shots(page, "user-account")
    page.get_by_label("Display name").fill("Ada King")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved your name and language").wait_for()
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill("an even longer password")
    page.get_by_label("New password again").fill("an even longer password")
    page.get_by_role("button", name="Change the password").click()
    page.get_by_text("Changed your password").wait_for()
    assert page.get_by_role("link", name="Ada King").is_visible()

    # As Ada, she makes Bob a caller, then deletes him through the confirmation.
    page.goto("/console/users")
    page.get_by_role("link", name="Bob Byte").first.click()
    page.get_by_label("Role").select_option(label="Caller (uses tools through AI clients)")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Saved Bob Byte").wait_for()
    assert page.get_by_label("Role").input_value() == "caller"
    page.get_by_role("button", name="Delete Bob Byte").first.click()
    dialog = page.get_by_role("dialog", name="Delete Bob Byte?")
    dialog.wait_for()
    assert_accessible(page, "the delete dialog")
    dialog.get_by_role("button", name="Delete Bob Byte").click()
    page.wait_for_url("**/console/users")
    page.get_by_text("Deleted Bob Byte").wait_for()
    assert page.get_by_role("link", name="Bob Byte").count() == 0

    # And the new password is the one that works.
    page.get_by_role("button", name="Sign out").click()
    _password_sign_in(page, ada, "an even longer password")
    page.wait_for_url("**/console/modules")
