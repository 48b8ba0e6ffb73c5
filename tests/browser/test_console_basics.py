"""Signing in and out, the module list, and the console's promises on every page: no other host,
no console error, no CSP violation, no axe-core violation."""

from __future__ import annotations

import httpx

from tests.browser.conftest import ADMIN_TOKEN, assert_accessible, shot, sign_in


def test_sign_in_with_a_wrong_token_says_so_then_a_right_one_opens_the_modules(page, console_server) -> None:
    page.goto("/")
    # / leads to the console, which asks for a token first
    page.wait_for_url("**/console/sign-in*")
    assert_accessible(page, "the sign-in page")
    shot(page, "sign-in")
    page.get_by_label("Token").fill("tsa_not-a-token")
    page.get_by_role("button", name="Sign in").click()
    error = page.get_by_text("That token is not valid")
    error.wait_for()
    assert page.get_by_label("Token").get_attribute("aria-invalid") == "true"
    assert_accessible(page, "the sign-in page with an error")

    page.get_by_label("Token").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/modules")
    assert page.get_by_role("heading", name="Code modules").is_visible()
    assert_accessible(page, "the module list")
    shot(page, "modules-empty")

    # the session cookie is HttpOnly and SameSite=Strict
    cookie = next(c for c in page.context.cookies() if c["name"] == "toolsmith_session")
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"

    # signing out ends the session: the list asks for a token again
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/console/sign-in")
    page.goto("/console/modules")
    page.wait_for_url("**/console/sign-in*")


def test_a_cross_site_form_post_is_refused(page, console_server) -> None:
    sign_in(page)
    cookie = next(c for c in page.context.cookies() if c["name"] == "toolsmith_session")
    # another site's form posting to the console, with the victim's cookie
    answer = httpx.post(
        console_server.url + "/console/sign-out",
        data={"csrf_token": "guess"},
        headers={"Origin": "https://evil.example", "Cookie": f"toolsmith_session={cookie['value']}"},
    )
    assert answer.status_code == 403
    assert "another site" in answer.text
    # and the session still works
    page.goto("/console/modules")
    assert page.get_by_role("heading", name="Code modules").is_visible()


def test_the_api_docs_load_offline_under_the_csp(page, console_server) -> None:
    page.goto("/docs")
    # The first /openapi.json builds the whole schema (about 1 s on a quiet machine, past 15 s beside
    # the main suite in CI), and Swagger UI renders nothing until it has arrived.
    page.get_by_text("Toolsmith").first.wait_for(timeout=90_000)
    page.get_by_text("/api/v1/admin/code-modules").first.wait_for()
    shot(page, "api-docs")
