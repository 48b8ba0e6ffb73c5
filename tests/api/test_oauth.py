"""OAuth 2.1 for MCP (docs/oauth.md), in process: the resource server's answers (401 with its
metadata, the metadata itself), the built-in authorization server's flow (register, consent in the
console, code, token, MCP), and each refusal with its RFC error: a wrong PKCE verifier, a code used
twice, a redirect URI not registered, a token for another audience, an expired one, a refresh token
used twice (its family revoked), a revoked token's person, a client metadata document on a
forbidden address (refused before any connection), a consent posted from another site, a person of
one tenant asking for another tenant's server."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, expect, on_its_loop, page_csrf, running
from tests.tenants import create_tenant

BASE = "http://127.0.0.1:8000"
REDIRECT = "http://127.0.0.1:43210/callback"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture
def app(settings: Settings, shared_sandbox: object) -> Iterator[FastAPI]:
    with running(create_app(wire(settings.model_copy(update={"oauth_access_token_seconds": 60}), shared_sandbox)), BASE) as application:
        yield application


def anonymous(app: FastAPI) -> TestClient:
    """A client of its own (cookies, no token) whose requests run on the app's loop (`running`)."""
    return on_its_loop(app, base_url=BASE, follow_redirects=False)


def person(app: FastAPI, token: str = ADMIN_TOKEN) -> TestClient:
    """A browser signed in to the console with `token` (a token session: the person is its holder)."""
    browser = anonymous(app)
    expect(browser.post("/console/sign-in", data={"token": token, "next": "/console/oauth/grants"}), 303)
    return browser


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def register(app: FastAPI, redirect: str = REDIRECT, **extra: Any) -> str:
    body = {"client_name": "Test client", "redirect_uris": [redirect], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], **extra}
    answer = expect(anonymous(app).post("/oauth/register", json=body), 201).json()
    assert "client_secret" not in answer  # a public client has none
    return answer["client_id"]


def consent(browser: TestClient, client_id: str, challenge: str, *, resource: str = BASE + "/mcp", redirect: str = REDIRECT,
            scope: str = "mcp:tools", decision: str = "allow", state: str = "s-1") -> dict[str, str]:
    """The authorization request, the consent page, the person's answer: the redirect's parameters."""
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect, "code_challenge": challenge,
             "code_challenge_method": "S256", "state": state, "scope": scope, "resource": resource}
    step = browser.get("/oauth/authorize", params=query)
    assert step.status_code == 303 and step.headers["location"].startswith("/console/oauth/consent?")
    page = browser.get(step.headers["location"])
    if page.status_code == 303:  # answered at once (an error told to the client)
        return _params(page.headers["location"], redirect)
    assert page.status_code == 200, page.text
    form = {**query, "csrf_token": page_csrf(page.text), "decision": decision}
    answered = browser.post("/console/oauth/consent", data=form)
    assert answered.status_code == 303, answered.text
    return _params(answered.headers["location"], redirect)


def _params(location: str, redirect: str) -> dict[str, str]:
    assert location.startswith(redirect.split("?")[0].rsplit(":", 1)[0]), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def exchange(app: FastAPI, client_id: str, code: str, verifier: str, redirect: str = REDIRECT, **extra: str) -> Any:
    return anonymous(app).post("/oauth/token", data={"grant_type": "authorization_code", "code": code, "client_id": client_id,
                                                     "redirect_uri": redirect, "code_verifier": verifier, **extra})


def tokens_for(app: FastAPI, browser: TestClient | None = None, *, resource: str = BASE + "/mcp", scope: str = "mcp:tools",
               client_id: str | None = None) -> tuple[str, dict[str, Any]]:
    client_id = client_id or register(app)
    verifier, challenge = pkce()
    answer = consent(browser or person(app), client_id, challenge, resource=resource, scope=scope)
    assert "code" in answer, answer
    return client_id, expect(exchange(app, client_id, answer["code"], verifier, resource=resource), 200).json()


def mcp(app: FastAPI, token: str | None, path: str = "/mcp") -> Any:
    headers = {**MCP_HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
    return anonymous(app).post(path, json=INITIALIZE, headers=headers)


def claims(jwt: str) -> dict[str, Any]:
    part = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def error_of(answer: Any) -> str | None:
    return answer.json().get("error")


# -- the resource server ---------------------------------------------------------------------------

def test_a_401_on_each_mcp_url_names_its_protected_resource_metadata(app: FastAPI) -> None:
    for path in ("/mcp", "/mcp/some-server"):
        refused = mcp(app, None, path)
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith("Bearer ")
        assert f'resource_metadata="{BASE}/.well-known/oauth-protected-resource{path}"' in challenge
        assert "invalid_token" not in challenge  # no token was presented
        metadata = anonymous(app).get(f"/.well-known/oauth-protected-resource{path}").json()
        assert metadata["resource"] == BASE + path
        assert metadata["authorization_servers"] == [BASE]
        assert "mcp:tools" in metadata["scopes_supported"] and metadata["bearer_methods_supported"] == ["header"]
    wrong = mcp(app, "tsa_not-a-token")
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers["www-authenticate"]
    # The public URL is the setting's, never the Host header's.
    tricked = anonymous(app).get("/.well-known/oauth-protected-resource/mcp", headers={"Host": "evil.example"}).json()
    assert tricked["resource"] == BASE + "/mcp"


def test_the_authorization_server_metadata_says_what_it_does(app: FastAPI) -> None:
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        document = anonymous(app).get(path).json()
        assert document["issuer"] == BASE
        assert document["code_challenge_methods_supported"] == ["S256"]
        assert document["authorization_response_iss_parameter_supported"] is True
        assert document["client_id_metadata_document_supported"] is True
        assert document["registration_endpoint"] == BASE + "/oauth/register"
    keys = anonymous(app).get("/oauth/jwks").json()["keys"]
    assert keys and all("d" not in key and key["kty"] == "RSA" for key in keys)  # public parts only


def test_static_tokens_open_mcp_as_they_always_did(app: FastAPI) -> None:
    assert mcp(app, ADMIN_TOKEN).status_code == 200


# -- the flow ----------------------------------------------------------------------------------------

def test_a_person_allows_a_client_which_then_opens_mcp_with_its_access_token(app: FastAPI) -> None:
    client_id = register(app)
    verifier, challenge = pkce()
    answer = consent(person(app), client_id, challenge)
    assert answer["state"] == "s-1" and answer["iss"] == BASE  # RFC 9207
    issued = expect(exchange(app, client_id, answer["code"], verifier, resource=BASE + "/mcp"), 200).json()
    assert issued["token_type"].lower() == "bearer" and issued["refresh_token"] and 0 < issued["expires_in"] <= 60
    said = claims(issued["access_token"])
    assert said["iss"] == BASE and said["aud"] == BASE + "/mcp" and said["tenant"] == "default"
    assert said["client_id"] == client_id and said["scope"] == "mcp:tools" and said["sub"] and said["jti"]
    assert mcp(app, issued["access_token"]).status_code == 200
    # Another resource's door stays shut: the token is for /mcp only (RFC 8707).
    other = mcp(app, issued["access_token"], "/mcp/another")
    assert other.status_code == 401 and 'error="invalid_token"' in other.headers["www-authenticate"]


def test_deny_sends_access_denied_back(app: FastAPI) -> None:
    _, challenge = pkce()
    answer = consent(person(app), register(app), challenge, decision="deny")
    assert answer["error"] == "access_denied" and answer["iss"] == BASE and "code" not in answer


def test_the_consent_page_names_the_client_the_server_and_what_it_may_do(app: FastAPI) -> None:
    client_id = register(app, client_uri="https://client.example/about", client_name="Gull Counter")
    _, challenge = pkce()
    browser = person(app)
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge,
             "code_challenge_method": "S256", "state": "x", "scope": "mcp:tools", "resource": BASE + "/mcp"}
    page = browser.get("/console/oauth/consent", params=query)
    assert page.status_code == 200
    assert "Gull Counter" in page.text and "https://client.example/about" in page.text
    assert "See and call the tools you may use" in page.text
    assert ">Allow</button>" in page.text and ">Deny</button>" in page.text
    # The form may lead to the client's redirect origin, and nowhere else.
    assert "form-action 'self' http://127.0.0.1:43210;" in page.headers["content-security-policy"]


# -- refusals ---------------------------------------------------------------------------------------

def test_a_wrong_pkce_verifier_is_invalid_grant(app: FastAPI) -> None:
    client_id = register(app)
    _, challenge = pkce()
    answer = consent(person(app), client_id, challenge)
    refused = exchange(app, client_id, answer["code"], pkce()[0])
    assert refused.status_code == 400 and error_of(refused) == "invalid_grant"


def test_pkce_is_required_and_s256_only(app: FastAPI) -> None:
    client_id = register(app)
    browser = person(app)
    for extra in ({"code_challenge_method": "plain", "code_challenge": "a" * 43}, {}):
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "z",
                 "resource": BASE + "/mcp", **extra}
        answered = browser.get("/console/oauth/consent", params=query)
        assert answered.status_code == 303
        said = _params(answered.headers["location"], REDIRECT)
        assert said["error"] == "invalid_request" and said["iss"] == BASE and said["state"] == "z"


def test_a_code_used_twice_is_refused_and_revokes_what_it_gave(app: FastAPI) -> None:
    client_id = register(app)
    verifier, challenge = pkce()
    answer = consent(person(app), client_id, challenge)
    first = expect(exchange(app, client_id, answer["code"], verifier), 200).json()
    again = exchange(app, client_id, answer["code"], verifier)
    assert again.status_code == 400 and error_of(again) == "invalid_grant"
    # RFC 9700 §4.2.4: the tokens issued from that code end too.
    assert mcp(app, first["access_token"]).status_code == 401
    refreshed = anonymous(app).post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                          "refresh_token": first["refresh_token"]})
    assert error_of(refreshed) == "invalid_grant"


def test_a_redirect_uri_not_registered_is_never_redirected_to(app: FastAPI) -> None:
    client_id = register(app)
    _, challenge = pkce()
    browser = person(app)
    for redirect in ("http://evil.example/cb", "http://127.0.0.1:43210/other-path", "https://127.0.0.1:43210/callback"):
        query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect, "code_challenge": challenge,
                 "code_challenge_method": "S256", "state": "x", "resource": BASE + "/mcp"}
        page = browser.get("/console/oauth/consent", params=query)
        assert page.status_code == 400 and "location" not in page.headers
        assert "cannot be answered" in page.text and "not supported by client" in page.text


def test_a_loopback_redirect_may_take_another_port(app: FastAPI) -> None:
    client_id = register(app, redirect="http://127.0.0.1/callback")
    verifier, challenge = pkce()
    answer = consent(person(app), client_id, challenge, redirect="http://127.0.0.1:51234/callback")
    assert expect(exchange(app, client_id, answer["code"], verifier, redirect="http://127.0.0.1:51234/callback"), 200)


def test_the_resource_is_required_and_must_be_a_server_of_the_persons_tenant(app: FastAPI) -> None:
    operator = anonymous(app)
    beta = create_tenant(operator, OPERATOR_TOKEN, "beta")
    expect(operator.post("/api/v1/admin/mcp-servers", json={"id": "beta-only", "description": "b", "tools": []},
                         headers=beta.headers()), 201)
    client_id = register(app)
    _, challenge = pkce()
    browser = person(app)  # a person of the default tenant
    for resource, said in ((BASE + "/mcp/beta-only", "no MCP server beta-only"), ("https://elsewhere.example/mcp", "not one of"),
                           ("", "names no resource")):
        answer = consent(browser, client_id, challenge, resource=resource)
        assert answer["error"] == "invalid_target" and said in answer["error_description"] and "code" not in answer
    # beta's own admin gets a token for beta's server, and it opens that server only.
    _, issued = tokens_for(app, person(app, beta.tokens["admin"]), resource=BASE + "/mcp/beta-only")
    assert claims(issued["access_token"])["tenant"] == "beta"
    assert mcp(app, issued["access_token"], "/mcp/beta-only").status_code == 200
    assert mcp(app, issued["access_token"], "/mcp").status_code == 401


def test_a_token_asked_for_another_resource_at_the_token_endpoint_is_invalid_target(app: FastAPI) -> None:
    client_id = register(app)
    verifier, challenge = pkce()
    answer = consent(person(app), client_id, challenge)
    refused = exchange(app, client_id, answer["code"], verifier, resource=BASE + "/mcp/other")
    assert refused.status_code == 400 and error_of(refused) == "invalid_target"


def test_an_expired_access_token_is_invalid_token(settings: Settings, shared_sandbox: object) -> None:
    application = create_app(wire(settings.model_copy(update={"oauth_access_token_seconds": 1}), shared_sandbox))
    with running(application, BASE):
        _, issued = tokens_for(application)
        assert mcp(application, issued["access_token"]).status_code == 200
        time.sleep(2.1)
        expired = mcp(application, issued["access_token"])
        assert expired.status_code == 401 and "expired" in expired.headers["www-authenticate"]


def test_a_refresh_token_rotates_and_a_used_one_revokes_the_family(app: FastAPI) -> None:
    client_id, issued = tokens_for(app)

    def refresh(token: str) -> Any:
        return anonymous(app).post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                         "refresh_token": token})

    second = expect(refresh(issued["refresh_token"]), 200).json()
    assert second["refresh_token"] != issued["refresh_token"]
    assert mcp(app, second["access_token"]).status_code == 200
    reused = refresh(issued["refresh_token"])
    assert reused.status_code == 400 and error_of(reused) == "invalid_grant"
    # The whole family is gone: the newer refresh token and the access tokens of the grant.
    assert error_of(refresh(second["refresh_token"])) == "invalid_grant"
    assert mcp(app, second["access_token"]).status_code == 401


def test_a_revoked_persons_token_is_refused(app: FastAPI) -> None:
    """The person here is the holder of an admin token; revoking that token ends what they allowed."""
    admin = anonymous(app)
    made = expect(admin.post("/api/v1/admin/tokens", json={"name": "ada", "role": "admin"},
                             headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}), 201).json()
    client_id, issued = tokens_for(app, person(app, made["token"]))
    assert mcp(app, issued["access_token"]).status_code == 200
    expect(admin.delete(f"/api/v1/admin/tokens/{made['id']}", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}), 204)
    refused = mcp(app, issued["access_token"])
    assert refused.status_code == 401 and "may no longer sign in" in refused.headers["www-authenticate"]
    refreshed = anonymous(app).post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                          "refresh_token": issued["refresh_token"]})
    assert error_of(refreshed) == "invalid_grant"


def test_a_token_without_the_mcp_scope_is_403_insufficient_scope(app: FastAPI) -> None:
    _, issued = tokens_for(app, scope="profile")
    refused = mcp(app, issued["access_token"])
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert 'scope="mcp:tools"' in refused.headers["www-authenticate"]


def test_revocation_ends_the_grant(app: FastAPI) -> None:
    client_id, issued = tokens_for(app)
    expect(anonymous(app).post("/oauth/revoke", data={"token": issued["refresh_token"], "client_id": client_id}), 200)
    assert mcp(app, issued["access_token"]).status_code == 401


def test_a_consent_posted_from_another_site_is_refused(app: FastAPI) -> None:
    client_id = register(app)
    _, challenge = pkce()
    browser = person(app)
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "code_challenge": challenge,
             "code_challenge_method": "S256", "state": "x", "resource": BASE + "/mcp"}
    page = browser.get("/console/oauth/consent", params=query)
    csrf = page_csrf(page.text)
    for headers, form in (({"Origin": "https://evil.example"}, {"csrf_token": csrf}),  # another site, even with the token
                          ({}, {})):  # this site, without the session's CSRF token
        refused = browser.post("/console/oauth/consent", data={**query, **form, "decision": "allow"}, headers=headers)
        assert refused.status_code == 403 and "location" not in refused.headers


def test_a_client_metadata_document_on_a_forbidden_address_is_refused_before_any_connection(app: FastAPI) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        _, challenge = pkce()
        query = {"response_type": "code", "client_id": f"https://127.0.0.1:{port}/client.json", "redirect_uri": REDIRECT,
                 "code_challenge": challenge, "code_challenge_method": "S256", "state": "x", "resource": BASE + "/mcp"}
        for client_id in (query["client_id"], "https://169.254.169.254/latest/client.json"):
            page = person(app).get("/console/oauth/consent", params={**query, "client_id": client_id})
            assert page.status_code == 400 and "could not be fetched" in page.text
        # The token endpoint, which anyone may call, fetches no document of a client nobody allowed.
        unknown = anonymous(app).post("/oauth/token", data={"grant_type": "authorization_code", "code": "x",
                                                            "client_id": query["client_id"], "code_verifier": "v" * 43})
        assert unknown.status_code in (400, 401) and error_of(unknown) == "invalid_client"
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
    finally:
        listener.close()


def test_the_grants_page_lists_and_revokes(app: FastAPI) -> None:
    browser = person(app)
    client_id, issued = tokens_for(app, browser)
    page = browser.get("/console/oauth/grants")
    assert page.status_code == 200 and "Test client" in page.text
    grant_id = claims(issued["access_token"])["gid"]
    revoked = browser.post(f"/console/oauth/grants/{grant_id}/revoke", data={"csrf_token": page_csrf(page.text)})
    assert revoked.status_code == 303
    assert mcp(app, issued["access_token"]).status_code == 401
    assert "Test client" not in browser.get("/console/oauth/grants").text


def test_a_person_signed_in_by_password_allows_a_client_and_a_disabled_persons_token_is_refused(app: FastAPI) -> None:
    """The person is a user of the organization (docs/users.md): their grant, their tokens; once
    they are disabled, the access token and the refresh token both stop."""
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    http = anonymous(app)
    made = expect(http.post("/api/v1/admin/users", json={"email": "ada@example.com", "name": "Ada", "role": "caller",
                                                         "password": "correct horse battery"}, headers=admin), 201).json()
    browser = anonymous(app)
    expect(browser.post("/console/sign-in/password", data={"organization": "default", "email": "ada@example.com",
                                                          "password": "correct horse battery", "next": "/console/oauth/grants"}), 303)
    client_id, issued = tokens_for(app, browser)
    said = claims(issued["access_token"])
    assert said["sub"] == made["id"] and said["role"] == "caller" and said["name"] == "Ada"
    assert mcp(app, issued["access_token"]).status_code == 200
    page = browser.get("/console/oauth/grants")
    assert page.status_code == 200 and "Test client" in page.text
    expect(http.post(f"/api/v1/admin/users/{made['id']}/disable", headers=admin), 200)
    refused = mcp(app, issued["access_token"])
    assert refused.status_code == 401 and "may no longer sign in" in refused.headers["www-authenticate"]
    refreshed = http.post("/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                "refresh_token": issued["refresh_token"]})
    assert error_of(refreshed) == "invalid_grant"


def test_no_token_code_or_verifier_is_ever_logged(app: FastAPI, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    caplog.set_level(logging.DEBUG)
    client_id = register(app)
    verifier, challenge = pkce()
    answer = consent(person(app), client_id, challenge)
    issued = expect(exchange(app, client_id, answer["code"], verifier), 200).json()
    assert mcp(app, issued["access_token"]).status_code == 200
    logged = caplog.text
    for secret in (issued["access_token"], issued["refresh_token"], answer["code"], verifier, ADMIN_TOKEN):
        assert secret not in logged


def test_on_a_postgresql_event_store_every_replica_shares_keys_grants_and_revocations(
        tmp_path: Any, shared_sandbox: object, postgres_store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from api.oauth import resource
    from api.oauth.store_postgres import PostgresOAuthStore

    for key, value in postgres_store.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(resource, "REVOKED_POLL_SECONDS", 0.2)  # the revocations made elsewhere, read often

    def replica(name: str) -> FastAPI:
        return create_app(wire(Settings(data_dir=tmp_path / name, admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                                        persistence_module=postgres_store["PERSISTENCE_MODULE"]), shared_sandbox))

    one, two = replica("one"), replica("two")

    def admitted_by(app: FastAPI, token: str) -> int:
        """What `app`'s MCP gate answers the token: its admission, as each MCP request asks it."""
        from api.admission import Refusal

        try:
            app.state.services.admission.admit(token, None, "/mcp")
        except Refusal as refusal:
            return refusal.status
        return 200

    with running(one, BASE), running(two, BASE):
        assert isinstance(one.state.oauth.store, PostgresOAuthStore)
        assert anonymous(one).get("/oauth/jwks").json() == anonymous(two).get("/oauth/jwks").json()
        client_id, issued = tokens_for(one)  # registered, allowed and exchanged on one
        assert mcp(one, issued["access_token"]).status_code == 200
        assert admitted_by(two, issued["access_token"]) == 200  # and admitted by the other
        refreshed = expect(anonymous(two).post("/oauth/token", data={
            "grant_type": "refresh_token", "client_id": client_id, "refresh_token": issued["refresh_token"]}), 200).json()
        assert admitted_by(two, refreshed["access_token"]) == 200
        reused = anonymous(one).post("/oauth/token", data={
            "grant_type": "refresh_token", "client_id": client_id, "refresh_token": issued["refresh_token"]})
        assert error_of(reused) == "invalid_grant"  # used on two: its family ends on one too
        time.sleep(0.6)
        assert admitted_by(two, refreshed["access_token"]) == 401  # and two sees it
    assert not (tmp_path / "one" / "oauth.sqlite").exists()


def test_behind_a_proxy_every_url_is_the_public_ones(settings: Settings, shared_sandbox: object) -> None:
    """TOOLSMITH_PUBLIC_URL names https while the service itself is reached over plain http (a proxy
    in front): metadata, issuer, audience and the authorization server's checks all use the public URL."""
    public = "https://tools.example.com"
    application = create_app(wire(settings.model_copy(update={"public_url": public}), shared_sandbox))
    with running(application, BASE):
        assert anonymous(application).get("/.well-known/oauth-authorization-server").json()["issuer"] == public
        refused = mcp(application, None)
        assert f'resource_metadata="{public}/.well-known/oauth-protected-resource/mcp"' in refused.headers["www-authenticate"]
        client_id = register(application)
        verifier, challenge = pkce()
        answer = consent(person(application), client_id, challenge, resource=public + "/mcp")
        assert answer["iss"] == public
        issued = expect(exchange(application, client_id, answer["code"], verifier), 200).json()
        assert claims(issued["access_token"])["aud"] == public + "/mcp"
        assert mcp(application, issued["access_token"]).status_code == 200
