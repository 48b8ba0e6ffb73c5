"""The console's single sign-on against a real Keycloak (testing/keycloak.py): a real `toolsmith
serve` configured with the realm's console client, driven over HTTP as a browser would (Keycloak's
own login form filled and posted), end to end: the person made just in time with the mapped role,
found again on the next sign-in, and each refusal a page saying what happened, never a 500."""

from __future__ import annotations

import html
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import httpx
import pytest

from testing.launcher import Server, free_port

ADMIN_TOKEN = "tsa_sso-e2e-admin-token-0123456789abcdefghijkl"


def _serve(tmp_path: Path, keycloak, client: str = "toolsmith-console") -> Server:
    port = free_port()
    env = {**keycloak.sso_env(client), "TOOLSMITH_PUBLIC_URL": f"http://127.0.0.1:{port}", "TOOLSMITH_TENANT": "acme",
           "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN}
    server = Server(data_dir=tmp_path / "data", port=port, env=env, inherit_settings=False).start()
    server.token = ADMIN_TOKEN
    return server


@pytest.fixture(scope="module")
def sso_server(tmp_path_factory: pytest.TempPathFactory, keycloak) -> Iterator[Server]:
    server = _serve(tmp_path_factory.mktemp("sso"), keycloak)
    yield server
    server.stop()


def browser() -> httpx.Client:
    """A cookie jar for both sites, following nothing by itself (each step is looked at). As
    browsers do, http://127.0.0.1 counts as a secure context: Keycloak's `Secure` cookies are sent
    back to it (http.cookiejar keeps them for https only, so they are kept as plain ones)."""
    client = httpx.Client(timeout=30, trust_env=False, follow_redirects=False)

    def loopback_is_secure(response: httpx.Response) -> None:
        for cookie in client.cookies.jar:
            if cookie.domain == "127.0.0.1":
                cookie.secure = False

    client.event_hooks["response"] = [loopback_is_secure]
    return client


def to_keycloak(http: httpx.Client, server: Server, next_path: str = "/console/modules") -> str:
    """Presses "Sign in with Keycloak": the authorization request's URL the console redirects to."""
    started = http.get(f"{server.url}/console/sso/start", params={"next": next_path})
    assert started.status_code == 303, started.text
    return started.headers["location"]


def log_in(http: httpx.Client, authorization_url: str, username: str, password: str) -> str:
    """Keycloak's login page filled and posted: the callback URL it redirects the browser to."""
    page = http.get(authorization_url)
    assert page.status_code == 200, page.text[:500]
    action = html.unescape(re.search(r'<form[^>]*id="kc-form-login"[^>]*action="([^"]+)"', page.text).group(1))
    answer = http.post(action, data={"username": username, "password": password, "credentialId": ""})
    assert answer.status_code == 302, answer.text[:500]
    return answer.headers["location"]


def with_param(url: str, name: str, value: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    query[name] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


def sign_in(http: httpx.Client, server: Server, username: str, password: str) -> httpx.Response:
    callback = log_in(http, to_keycloak(http, server), username, password)
    return http.get(callback)


def people(server: Server) -> list[dict]:
    with server.client() as api:
        answer = api.get("/api/v1/admin/users")
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_authorization_request_uses_pkce_s256_state_and_nonce(sso_server: Server, keycloak) -> None:
    with browser() as http:
        url = to_keycloak(http, sso_server)
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == f"{keycloak.issuer}/protocol/openid-connect/auth"
    assert query["response_type"] == ["code"]
    assert query["client_id"] == ["toolsmith-console"]
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["code_challenge"][0]) == 43
    assert len(query["state"][0]) >= 32 and len(query["nonce"][0]) >= 32
    assert "openid" in query["scope"][0].split()
    assert query["redirect_uri"] == [f"{sso_server.url}/console/sso/callback"]


def test_a_person_signs_in_is_made_with_the_mapped_role_and_found_again(sso_server: Server, keycloak) -> None:
    with browser() as http:
        landed = sign_in(http, sso_server, "ada", "ada-password-1")
        assert landed.status_code == 200, landed.text
        assert "Keycloak signed you in" in landed.text
        assert 'http-equiv="refresh" content="0; url=/console/modules"' in landed.text
        assert "toolsmith_session" in http.cookies
        home = http.get(f"{sso_server.url}/console/modules")
        assert home.status_code == 200
        assert "Ada Lovelace" in home.text
    ada = [p for p in people(sso_server) if p["email"] == "ada@example.com"]
    assert len(ada) == 1
    assert ada[0]["role"] == "admin" and ada[0]["singleSignOn"] is True and ada[0]["name"] == "Ada Lovelace"
    assert ada[0]["hasPassword"] is False

    with browser() as http:  # another browser, the next day: the same person
        assert sign_in(http, sso_server, "ada", "ada-password-1").status_code == 200
    again = [p for p in people(sso_server) if p["email"] == "ada@example.com"]
    assert [p["id"] for p in again] == [ada[0]["id"]]


def test_an_auditor_of_the_provider_is_an_auditor_here(sso_server: Server) -> None:
    with browser() as http:
        assert sign_in(http, sso_server, "grace", "grace-password-1").status_code == 200
    grace = [p for p in people(sso_server) if p["email"] == "grace@example.com"]
    assert [p["role"] for p in grace] == ["auditor"]


def test_the_role_follows_the_provider_at_each_sign_in(sso_server: Server, keycloak) -> None:
    person = keycloak.add_person(f"mover-{uuid.uuid4().hex[:12]}", "mover-password-1", tenant="acme", roles=("toolsmith-admin",),
                                 name="Mo Ver")
    with browser() as http:
        assert sign_in(http, sso_server, person.username, person.password).status_code == 200
    assert [p["role"] for p in people(sso_server) if p["email"] == person.email] == ["admin"]
    keycloak.set_roles(person.username, ("toolsmith-auditor",))
    with browser() as http:
        assert sign_in(http, sso_server, person.username, person.password).status_code == 200
    assert [p["role"] for p in people(sso_server) if p["email"] == person.email] == ["auditor"]
    keycloak.set_roles(person.username, ())
    with browser() as http:
        refused(sign_in(http, sso_server, person.username, person.password), 403, "has no role in this service")


def refused(answer: httpx.Response, status: int, words: str) -> None:
    assert answer.status_code == status, answer.text
    assert "Sign-in not completed" in answer.text
    assert words in html.unescape(answer.text)
    assert "toolsmith_session" not in answer.headers.get("set-cookie", "")


def test_an_answer_with_another_state_is_refused(sso_server: Server) -> None:
    with browser() as http:
        callback = log_in(http, to_keycloak(http, sso_server), "ada", "ada-password-1")
        refused(http.get(with_param(callback, "state", "x" * 43)), 400, "does not belong to the sign-in this browser started")


def test_an_answer_naming_another_issuer_is_refused(sso_server: Server) -> None:
    with browser() as http:
        callback = log_in(http, to_keycloak(http, sso_server), "ada", "ada-password-1")
        assert parse_qs(urlsplit(callback).query)["iss"]  # Keycloak sends it (RFC 9207)
        refused(http.get(with_param(callback, "iss", "https://idp.example/realms/other")), 400,
                "came from another sign-in provider than Keycloak")


def test_an_answer_without_its_browser_s_pending_sign_in_is_refused(sso_server: Server) -> None:
    with browser() as http:
        callback = log_in(http, to_keycloak(http, sso_server), "ada", "ada-password-1")
    with browser() as other:
        refused(other.get(callback), 400, "started in another browser")


def test_a_code_used_twice_signs_in_once(sso_server: Server) -> None:
    with browser() as http:
        callback = log_in(http, to_keycloak(http, sso_server), "ada", "ada-password-1")
        pending = http.cookies.get("toolsmith_sso")
        assert http.get(callback).status_code == 200
        http.cookies.set("toolsmith_sso", pending, domain="127.0.0.1", path="/console/sso")
        refused(http.get(callback), 400, "refused this sign-in's code")


def test_a_person_of_an_organization_not_on_the_service_is_refused(sso_server: Server) -> None:
    with browser() as http:
        refused(sign_in(http, sso_server, "linus", "linus-password-1"), 403, "Your organization (globex) is not on this service")
    assert not [p for p in people(sso_server) if p["email"] == "linus@example.com"]


def test_an_id_token_for_another_audience_is_refused(tmp_path: Path, keycloak) -> None:
    # The realm's toolsmith-misissued client: Keycloak signs ID tokens naming another relying party.
    server = _serve(tmp_path, keycloak, client="toolsmith-misissued")
    try:
        with browser() as http:
            refused(sign_in(http, server, "ada", "ada-password-1"), 400, "meant for another application")
        assert people(server) == []
        assert "another-relying-party" not in server.output and "toolsmith-misissued-test-secret" not in server.output
        assert "single sign-on refused: id_token claim: aud" in server.output
    finally:
        server.stop()


def test_the_sign_in_page_offers_the_provider_and_without_it_none(sso_server: Server, tmp_path: Path) -> None:
    page = httpx.get(f"{sso_server.url}/console/sign-in", trust_env=False)
    assert "Sign in with Keycloak" in page.text
    assert 'href="/console/sso/start?next=' in page.text
    plain = Server(data_dir=tmp_path / "data", inherit_settings=False).start()
    try:
        assert "Sign in with" not in httpx.get(f"{plain.url}/console/sign-in", trust_env=False).text
        off = httpx.get(f"{plain.url}/console/sso/start", trust_env=False)
        assert off.status_code == 404 and "Single sign-on is not set up" in off.text
    finally:
        plain.stop()


def test_no_secret_code_or_token_is_logged(sso_server: Server, keycloak) -> None:
    with browser() as http:
        callback = log_in(http, to_keycloak(http, sso_server), "grace", "grace-password-1")
        query = parse_qs(urlsplit(callback).query)
        assert http.get(callback).status_code == 200
        session = http.cookies.get("toolsmith_session")
    # The access log has the request, without its query; its line is written once the answer is
    # sent, so it may follow the answer by a moment on a loaded machine.
    deadline = time.monotonic() + 10
    while "/console/sso/callback" not in (output := sso_server.output):
        assert time.monotonic() < deadline, "the callback's request is not in the access log"
        time.sleep(0.05)
    for secret in (keycloak.console.secret, query["code"][0], query["state"][0], session, ADMIN_TOKEN):
        assert secret not in output
