"""Single sign-on in the browser: "Sign in with Keycloak" on the sign-in page, Keycloak's own login
form (a real Keycloak: testing/keycloak.py), and back in the console as that person with the role
the role map gives; a second sign-in is the same person; a refused sign-in is a page that says why.

The console's pages are watched as everywhere (no other host, no console error, no CSP violation,
axe-core clean); Keycloak's pages are its own, so only the console's origin and Keycloak's may be
reached, and only the console's pages are held to the console's rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from testing.launcher import Server, free_port
from tests.browser.conftest import CSP_LISTENER, assert_accessible, shots

ADMIN_TOKEN = "tsa_browser-sso-admin-token-0123456789abcdefghij"


@pytest.fixture(scope="module")
def sso_console(tmp_path_factory: pytest.TempPathFactory, keycloak) -> Iterator[Server]:
    """A server of the organization `acme` whose console signs in through the realm's console client."""
    port = free_port()
    env = {**keycloak.sso_env(), "TOOLSMITH_PUBLIC_URL": f"http://127.0.0.1:{port}", "TOOLSMITH_TENANT": "acme",
           "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN}
    server = Server(data_dir=tmp_path_factory.mktemp("sso-console") / "data", port=port, env=env, inherit_settings=False).start()
    server.token = ADMIN_TOKEN
    yield server
    server.stop()


class Watch:
    """The console's promises on the console's pages; Keycloak's origin may be reached, no other."""

    def __init__(self, console: str, keycloak: str) -> None:
        self.console, self.keycloak = console, keycloak
        self.problems: list[str] = []
        self.page: object = None

    def request(self, request: object) -> None:
        parts = urlsplit(request.url)  # type: ignore[attr-defined]
        if parts.scheme in ("data", "blob", "about"):
            return
        if f"{parts.scheme}://{parts.netloc}" not in (self.console, self.keycloak):
            self.problems.append(f"request to another host: {request.url}")  # type: ignore[attr-defined]

    def console_message(self, message: object) -> None:
        on_console = self.page is not None and self.page.url.startswith(self.console)  # type: ignore[attr-defined]
        # A refused sign-in is a page with the status it deserves (400, 403): Chromium says so in the console.
        refusal = "/console/sso/callback" in self.page.url and "Failed to load resource" in message.text  # type: ignore[attr-defined]
        if message.type == "error" and on_console and not refusal:  # type: ignore[attr-defined]
            self.problems.append(f"console error: {message.text}")  # type: ignore[attr-defined]


@pytest.fixture
def sso_page(browser, sso_console: Server, keycloak) -> Iterator[object]:
    watch = Watch(sso_console.url, keycloak.url)
    context = browser.new_context(base_url=sso_console.url, viewport={"width": 1280, "height": 800})
    context.add_init_script(CSP_LISTENER)
    context.set_default_timeout(20_000)
    page = context.new_page()
    watch.page = page
    page.on("request", watch.request)
    page.on("console", watch.console_message)
    page.on("pageerror", lambda error: watch.problems.append(f"uncaught exception: {error}"))
    yield page
    context.close()
    assert not watch.problems, "the console did what it must never do:\n" + "\n".join(watch.problems)


def keycloak_sign_in(page: object, username: str, password: str) -> None:
    """From the console's sign-in page through Keycloak's login form, as a person would."""
    page.goto("/console/sign-in?next=/console/modules")  # type: ignore[attr-defined]
    page.get_by_role("link", name="Sign in with Keycloak").click()  # type: ignore[attr-defined]
    page.wait_for_url(re.compile(r".*/realms/toolsmith/protocol/openid-connect/auth.*"))  # type: ignore[attr-defined]
    page.get_by_label("Username or email").fill(username)  # type: ignore[attr-defined]
    page.get_by_label("Password", exact=True).fill(password)  # type: ignore[attr-defined]
    page.get_by_role("button", name="Sign In").click()  # type: ignore[attr-defined]


def people(server: Server) -> list[dict]:
    with server.client() as api:
        return api.get("/api/v1/admin/users").raise_for_status().json()


def test_a_person_signs_in_with_keycloak_and_lands_in_the_console_with_the_mapped_role(sso_page, sso_console: Server) -> None:
    page = sso_page
    page.goto("/console/sign-in")
    button = page.get_by_role("link", name="Sign in with Keycloak")
    assert button.is_visible()
    assert_accessible(page, "the sign-in page with single sign-on")
    shots(page, "sso-sign-in")

    keycloak_sign_in(page, "ada", "ada-password-1")
    page.wait_for_url("**/console/modules")
    assert page.get_by_role("heading", name="Code modules").is_visible()
    assert page.get_by_text("Ada Lovelace").first.is_visible()
    assert_accessible(page, "the module list after single sign-on")
    cookie = next(c for c in page.context.cookies() if c["name"] == "toolsmith_session")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    # The pending sign-in's cookie was used once and is gone.
    assert not [c for c in page.context.cookies() if c["name"] == "toolsmith_sso"]
    ada = [p for p in people(sso_console) if p["email"] == "ada@example.com"]
    assert [(p["role"], p["singleSignOn"]) for p in ada] == [("admin", True)]

    # Signed out of the console, and in again: Keycloak still knows her (its own session), so she is
    # back without its form, and the same person, not a second one.
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/console/sign-in")
    page.get_by_role("link", name="Sign in with Keycloak").click()
    page.wait_for_url("**/console/modules")
    assert [p["id"] for p in people(sso_console) if p["email"] == "ada@example.com"] == [ada[0]["id"]]


def test_an_auditor_at_keycloak_is_an_auditor_in_the_console(sso_page, sso_console: Server) -> None:
    keycloak_sign_in(sso_page, "grace", "grace-password-1")
    sso_page.wait_for_url("**/console/modules")
    grace = [p for p in people(sso_console) if p["email"] == "grace@example.com"]
    assert [p["role"] for p in grace] == ["auditor"]


def test_a_person_of_an_organization_not_here_gets_a_page_saying_so(sso_page, sso_console: Server) -> None:
    keycloak_sign_in(sso_page, "linus", "linus-password-1")
    sso_page.wait_for_url("**/console/sso/callback*")
    assert sso_page.get_by_role("heading", name="Sign-in not completed").is_visible()
    assert sso_page.get_by_text("Your organization (globex) is not on this service").is_visible()
    assert_accessible(sso_page, "a refused single sign-on")
    shots(sso_page, "sso-refused")
    sso_page.get_by_role("link", name="Back to the sign-in page").click()
    sso_page.wait_for_url("**/console/sign-in")


def test_an_answer_this_browser_did_not_ask_for_is_refused_with_a_page(sso_page) -> None:
    answer = sso_page.goto("/console/sso/callback?code=forged&state=forged&iss=http%3A%2F%2Fidp.example")
    assert answer.status == 400
    assert sso_page.get_by_text("started in another browser").is_visible()
    assert_accessible(sso_page, "a sign-in answer without its pending sign-in")


def test_the_sign_in_page_offers_no_provider_when_none_is_set_up(sso_page, console_server) -> None:
    # The session's ordinary server has no TOOLSMITH_SSO_ISSUER.
    html = httpx.get(f"{console_server.url}/console/sign-in", trust_env=False).text
    assert "Sign in with" not in html
