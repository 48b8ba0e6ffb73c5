"""An external authorization server instead of the built-in one (docs/oauth.md, issue 32 point 5):
a real Keycloak (testing/keycloak.py) whose access tokens the MCP endpoint accepts, its JWKS found
by discovery, the audience checked, the claims mapped to a tenant and a role; the Protected Resource
Metadata names Keycloak, and the built-in server's endpoints are not there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import OPERATOR_TOKEN, expect, on_its_loop, running

BASE = "http://127.0.0.1:8000"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


@pytest.fixture
def app(settings: Settings, shared_sandbox: object, keycloak: Any) -> Iterator[FastAPI]:
    configured = settings.model_copy(update={
        "oauth_issuer": keycloak.issuer, "oauth_required_scope": "",
        "oauth_role_map": "toolsmith-admin=admin,toolsmith-auditor=auditor,toolsmith-caller=caller"})
    application = create_app(wire(configured, shared_sandbox))
    with running(application, BASE):
        http = on_its_loop(application, base_url=BASE)
        for tenant in ("acme", "globex"):
            expect(http.post("/api/v1/operator/tenants", json={"id": tenant, "name": tenant.title()},
                             headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}), 201)
        yield application


def mcp(app: FastAPI, token: str, path: str = "/mcp") -> Any:
    return on_its_loop(app, base_url=BASE).post(path, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})


def test_the_metadata_names_the_external_issuer_and_the_built_in_server_is_not_there(app: FastAPI, keycloak: Any) -> None:
    http = on_its_loop(app, base_url=BASE)
    metadata = http.get("/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["authorization_servers"] == [keycloak.issuer] and metadata["resource"] == BASE + "/mcp"
    refused = http.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert refused.status_code == 401 and "resource_metadata=" in refused.headers["www-authenticate"]
    for path in ("/.well-known/oauth-authorization-server", "/oauth/jwks"):
        assert http.get(path).status_code == 404
    assert http.post("/oauth/token", data={"grant_type": "authorization_code"}).status_code == 404


def test_a_keycloak_token_for_this_resource_opens_mcp_as_its_person(app: FastAPI, keycloak: Any) -> None:
    token = keycloak.access_token("ada", "ada-password-1", audience=BASE + "/mcp")
    assert mcp(app, token).status_code == 200
    # Its audience is /mcp: another MCP URL's door stays shut.
    other = mcp(app, token, "/mcp/elsewhere")
    assert other.status_code == 401 and 'error="invalid_token"' in other.headers["www-authenticate"]


def test_a_keycloak_token_for_another_audience_is_invalid_token(app: FastAPI, keycloak: Any) -> None:
    for token in (keycloak.access_token("ada", "ada-password-1"),  # Keycloak's own audience only
                  keycloak.access_token("ada", "ada-password-1", audience="https://another.example/mcp")):
        refused = mcp(app, token)
        assert refused.status_code == 401
        assert "another resource" in refused.headers["www-authenticate"]


def test_the_claims_map_to_the_tenant_and_the_role(app: FastAPI, keycloak: Any) -> None:
    # grace is an auditor of acme: MCP is for admins and callers.
    auditor = mcp(app, keycloak.access_token("grace", "grace-password-1", audience=BASE + "/mcp"))
    assert auditor.status_code == 403
    # linus is a caller of globex: admitted into globex (its tenant exists here), never acme.
    assert mcp(app, keycloak.access_token("linus", "linus-password-1", audience=BASE + "/mcp")).status_code == 200


def test_a_forged_token_is_refused(app: FastAPI, keycloak: Any) -> None:
    token = keycloak.access_token("ada", "ada-password-1", audience=BASE + "/mcp")
    head, body, signature = token.split(".")
    forged = ".".join((head, body, signature[::-1]))
    refused = mcp(app, forged)
    assert refused.status_code == 401 and "signature" in refused.headers["www-authenticate"]
