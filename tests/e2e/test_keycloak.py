"""The tests' Keycloak itself (scripts/keycloak.sh, testing/keycloak.py): the realm the console's
single sign-on and the external authorization server rely on is there, as an OpenID provider
describes itself, and gives a person of the realm signed tokens carrying the claims Toolsmith maps."""

from __future__ import annotations

import httpx
from joserfc import jwt
from joserfc.jwk import KeySet


def _claims(token: str, keys: KeySet) -> dict:
    return jwt.decode(token, keys).claims


def test_discovery_names_the_realm_as_issuer_with_pkce_and_rfc_9207(keycloak) -> None:
    answer = httpx.get(f"{keycloak.issuer}/.well-known/openid-configuration", timeout=30, trust_env=False)
    assert answer.status_code == 200
    metadata = answer.json()
    assert metadata["issuer"] == keycloak.issuer
    assert "S256" in metadata["code_challenge_methods_supported"]
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["authorization_endpoint"].startswith(keycloak.issuer + "/")
    assert httpx.get(metadata["jwks_uri"], timeout=30, trust_env=False).json()["keys"]


def test_a_person_of_the_realm_gets_signed_tokens_with_tenant_and_roles(keycloak) -> None:
    ada = keycloak.people["ada"]
    answer = keycloak.tokens(ada.username, ada.password)
    metadata = httpx.get(f"{keycloak.issuer}/.well-known/openid-configuration", timeout=30, trust_env=False).json()
    keys = KeySet.import_key_set(httpx.get(metadata["jwks_uri"], timeout=30, trust_env=False).json())
    id_token = _claims(answer["id_token"], keys)
    assert id_token["iss"] == keycloak.issuer
    assert id_token["aud"] in ("toolsmith-console", ["toolsmith-console"])
    assert id_token["email"] == "ada@example.com"
    assert id_token["tenant"] == "acme"
    assert "toolsmith-admin" in id_token["roles"]
    access = _claims(answer["access_token"], keys)
    assert access["tenant"] == "acme" and "toolsmith-admin" in access["roles"]


def test_a_wrong_password_gets_no_token(keycloak) -> None:
    answer = httpx.post(keycloak.token_endpoint, data={
        "grant_type": "password", "client_id": keycloak.console.client_id, "client_secret": keycloak.console.secret,
        "username": "ada", "password": "not-her-password", "scope": "openid"}, timeout=30, trust_env=False)
    assert answer.status_code == 400  # RFC 6749, 5.2
    assert answer.json()["error"] == "invalid_grant"


def test_an_access_token_for_a_resource_names_it_in_its_audience(keycloak) -> None:
    resource = "http://127.0.0.1:8000/mcp"
    token = keycloak.access_token("grace", "grace-password-1", audience=resource)
    metadata = httpx.get(f"{keycloak.issuer}/.well-known/openid-configuration", timeout=30, trust_env=False).json()
    keys = KeySet.import_key_set(httpx.get(metadata["jwks_uri"], timeout=30, trust_env=False).json())
    claims = _claims(token, keys)
    audience = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
    assert resource in audience
    assert claims["tenant"] == "acme" and "toolsmith-auditor" in claims["roles"]
