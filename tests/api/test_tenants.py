"""Organizations (docs/tenants.md, issue 19): the operator's tenants, suspension and the request rate."""

from __future__ import annotations

import stat
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure import audit
from domain.callers import token_digest
from infrastructure.ratelimit import RateLimiter
from infrastructure.settings import Settings
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", "Host": "127.0.0.1:8000"}
TENANTS = "/api/v1/operator/tenants"
MODULES = "/api/v1/admin/code-modules"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def create_tenant(client: TestClient, tenant_id: str, **body: Any) -> str:
    answer = client.post(TENANTS, headers=OPERATOR, json={"id": tenant_id, "name": body.pop("name", tenant_id.title()), **body})
    assert answer.status_code == 201, answer.text
    return answer.json()["adminToken"]


def module(client: TestClient, token: str, module_id: str, code: str = "export default () => 1") -> None:
    answer = client.post(MODULES, headers=bearer(token), json={"id": module_id, "description": "d", "draftContent": code})
    assert answer.status_code == 201, answer.text


def mcp_session(client: TestClient, token: str) -> dict[str, str]:
    opened = client.post("/mcp", headers={**MCP, **bearer(token)}, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    assert opened.status_code == 200, opened.text
    headers = {**MCP, **bearer(token), "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-11-25"}
    sent = client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert sent.status_code == 202, sent.text
    return headers


def tools_list(client: TestClient, headers: dict[str, str]) -> Any:
    return client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})


# -- the operator's routes -----------------------------------------------------------------------


def test_the_operator_creates_a_tenant_whose_admin_token_is_answered_once(client: TestClient) -> None:
    answer = client.post(TENANTS, headers=OPERATOR, json={"id": "acme", "name": "Acme Corp", "quotas": {"modules": 10}})
    assert answer.status_code == 201, answer.text
    created = answer.json()
    assert created["tenant"]["id"] == "acme" and created["tenant"]["name"] == "Acme Corp"
    assert created["tenant"]["quotas"] == {"modules": 10, "tools": None, "documents": None, "storedBytes": None}
    assert created["tenant"]["createdBy"] == "operator" and not created["tenant"]["suspended"]
    token = created["adminToken"]
    assert token.startswith("tsk_")
    # The token works in its tenant, as an admin; nothing of it was shown again.
    assert client.get(MODULES, headers=bearer(token)).json()["collection"] == []
    listed = client.get(TENANTS, headers=OPERATOR).json()
    assert [t["id"] for t in listed] == ["acme", "default"]
    assert token not in str(listed) and token not in client.get(f"{TENANTS}/acme", headers=OPERATOR).text
    tokens = client.get("/api/v1/admin/tokens", headers=bearer(token)).json()
    assert [(t["id"], t["role"]) for t in tokens] == [(created["adminTokenId"], "admin")]
    # Each tenant sees its own tokens only.
    assert created["adminTokenId"] not in str(client.get("/api/v1/admin/tokens").json())


def test_a_tenant_page_says_what_it_holds_against_its_quotas(client: TestClient) -> None:
    token = create_tenant(client, "acme", quotas={"modules": 5})
    module(client, token, "dates")
    module(client, token, "report")
    got = client.get(f"{TENANTS}/acme", headers=OPERATOR).json()
    assert got["usage"] == {"modules": 2, "tools": 0, "documents": 0, "storedBytes": 0}
    assert got["quotas"]["modules"] == 5
    assert client.get(f"{TENANTS}/default", headers=OPERATOR).json()["usage"]["modules"] == 0


@pytest.mark.parametrize(("body", "field"), [
    ({"id": "Acme", "name": "Acme"}, "id"),
    ({"id": "-acme", "name": "Acme"}, "id"),
    ({"id": "a" * 64, "name": "Acme"}, "id"),
    ({"id": "acme", "name": "  "}, "name"),
    ({"id": "acme", "name": "x" * 201}, "name"),
    ({"id": "acme", "name": "Acme", "quotas": {"modules": -1}}, "quotas.modules"),
    ({"id": "acme", "name": "Acme", "quotas": {"modules": True}}, "quotas.modules"),
    ({"id": "acme", "name": "Acme", "quotas": {"modules": 1.5}}, "quotas.modules"),
    ({"id": "acme", "name": "Acme", "quotas": {"rooms": 1}}, "quotas.rooms"),
])
def test_a_bad_tenant_is_refused_naming_the_field(client: TestClient, body: dict[str, Any], field: str) -> None:
    answer = client.post(TENANTS, headers=OPERATOR, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert field in [e["field"] for e in answer.json()["errors"]]
    assert [t["id"] for t in client.get(TENANTS, headers=OPERATOR).json()] == ["default"]


def test_a_tenant_id_is_taken_once_and_the_deployments_own_is_taken_from_the_start(client: TestClient) -> None:
    create_tenant(client, "acme")
    for tenant_id in ("acme", "default"):
        answer = client.post(TENANTS, headers=OPERATOR, json={"id": tenant_id, "name": "again"})
        assert answer.status_code == 409 and answer.json()["code"] == "id-taken", answer.text


def test_put_changes_only_what_it_names(client: TestClient) -> None:
    create_tenant(client, "acme", quotas={"modules": 3, "tools": 2})
    changed = client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"quotas": {"tools": None, "documents": 7}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["quotas"] == {"modules": 3, "tools": None, "documents": 7, "storedBytes": None}
    renamed = client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"name": "Acme Two"}).json()
    assert renamed["name"] == "Acme Two" and renamed["quotas"]["documents"] == 7 and not renamed["suspended"]
    assert client.put(f"{TENANTS}/nope", headers=OPERATOR, json={"name": "x"}).status_code == 404
    bad = client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"suspended": "yes"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "suspended"
    # The deployment's own tenant takes quotas too; its first change records it.
    own = client.put(f"{TENANTS}/default", headers=OPERATOR, json={"quotas": {"modules": 100}})
    assert own.status_code == 200 and own.json()["quotas"]["modules"] == 100


def test_only_the_operator_manages_tenants_and_the_operator_manages_nothing_else(client: TestClient) -> None:
    token = create_tenant(client, "acme")
    auditor = client.post("/api/v1/admin/tokens", json={"name": "aud", "role": "auditor"}).json()["token"]
    for who in (ADMIN_TOKEN, token, auditor, "not-a-token"):
        status = client.get(TENANTS, headers=bearer(who)).status_code
        assert status == (401 if who == "not-a-token" else 403)
        assert client.post(TENANTS, headers=bearer(who), json={"id": "evil", "name": "x"}).status_code in (401, 403)
    for path in (MODULES, "/api/v1/admin/tools", "/api/v1/admin/tokens", "/api/v1/admin/audit/export"):
        assert client.get(path, headers=OPERATOR).status_code == 403, path
    assert client.post("/mcp", headers={**MCP, **OPERATOR}, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 403
    assert [t["id"] for t in client.get(TENANTS, headers=OPERATOR).json()] == ["acme", "default"]


def test_a_tenant_is_deleted_only_when_empty_and_its_tokens_end_with_it(client: TestClient) -> None:
    token = create_tenant(client, "acme")
    module(client, token, "dates")
    refused = client.delete(f"{TENANTS}/acme", headers=OPERATOR)
    assert refused.status_code == 409 and refused.json()["code"] == "tenant-not-empty"
    assert refused.json()["holds"] == ["1 module"]
    assert client.delete(f"{MODULES}/dates", headers=bearer(token)).status_code == 204
    assert client.delete(f"{TENANTS}/acme", headers=OPERATOR).status_code == 204
    assert client.get(MODULES, headers=bearer(token)).status_code == 401
    assert client.get(f"{TENANTS}/acme", headers=OPERATOR).status_code == 404
    assert client.delete(f"{TENANTS}/acme", headers=OPERATOR).status_code == 404
    own = client.delete(f"{TENANTS}/default", headers=OPERATOR)
    assert own.status_code == 409 and "never deleted" in own.json()["detail"]
    # The same id may be created again, empty, with a new token.
    again = create_tenant(client, "acme")
    assert client.get(MODULES, headers=bearer(again)).json()["collection"] == []


def test_tenants_are_events_on_the_chain_and_no_tenants_export_carries_them(client: TestClient) -> None:
    services = client.app.state.services
    create_tenant(client, "acme")
    client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"suspended": True})
    client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"suspended": False})
    report = audit.verify(services.store)
    assert report.intact, report.first_broken()
    exported = client.get("/api/v1/admin/audit/export").text
    assert "acme" not in exported and "TenantRegistry" not in exported


# -- suspension ------------------------------------------------------------------------------------


def test_suspension_blocks_every_token_of_the_tenant_and_ends_its_mcp_sessions(client: TestClient) -> None:
    token = create_tenant(client, "acme")
    module(client, token, "dates")
    issued = {role: client.post("/api/v1/admin/tokens", headers=bearer(token), json={"name": role, "role": role}).json()["token"]
              for role in ("auditor", "caller")}
    session = mcp_session(client, token)
    assert tools_list(client, session).status_code == 200
    other = mcp_session(client, ADMIN_TOKEN)

    assert client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"suspended": True}).json()["suspended"] is True
    for who in (token, *issued.values()):
        refused = client.get("/api/v1/admin/tools", headers=bearer(who))
        assert refused.status_code == 403 and refused.json()["code"] == "tenant-suspended", refused.text
    assert client.get(MODULES, headers=bearer(token)).json()["code"] == "tenant-suspended"
    refused = tools_list(client, session)
    assert refused.status_code == 403 and refused.json()["code"] == "tenant-suspended"
    # Another tenant goes on as before.
    assert client.get(MODULES).status_code == 200
    assert tools_list(client, other).status_code == 200

    # The open session ends (the sweep runs every half second), so resuming does not revive it.
    deadline = time.monotonic() + 10
    endpoint = client.app.state.mcp_endpoint if hasattr(client.app.state, "mcp_endpoint") else None
    while time.monotonic() < deadline:
        client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"suspended": False})
        if tools_list(client, session).status_code == 404:
            break
        client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"suspended": True})
        time.sleep(0.6)
    else:
        pytest.fail(f"the suspended tenant's MCP session did not end ({endpoint})")
    assert tools_list(client, other).status_code == 200

    # Resumed: every token works again, and a new session opens.
    client.put(f"{TENANTS}/acme", headers=OPERATOR, json={"suspended": False})
    for who in (token, issued["auditor"]):
        assert client.get("/api/v1/admin/tools", headers=bearer(who)).status_code == 200
    assert [m["id"] for m in client.get(MODULES, headers=bearer(token)).json()["collection"]] == ["dates"]
    assert tools_list(client, mcp_session(client, issued["caller"])).status_code == 200


# -- the request rate --------------------------------------------------------------------------------


class Clock:
    """The rate limiter's time, moved by the test: a loaded machine must not refill a bucket."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def limited(tmp_path: Any, shared_sandbox: Any) -> Iterator[tuple[TestClient, Clock]]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        rate_per_second=0.5, rate_burst=3)
    services = bootstrap(settings, sandbox=shared_sandbox)
    clock = Clock()
    services.admission.limiter = RateLimiter(settings.rate_per_second, settings.rate_burst, clock=clock)
    with TestClient(create_app(services)) as test_client:
        yield test_client, clock


def test_a_token_past_its_rate_gets_429_with_retry_after_and_recovers(limited: tuple[TestClient, Clock]) -> None:
    client, clock = limited
    answers = [client.get(MODULES, headers=bearer(ADMIN_TOKEN)) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert refused.json()["code"] == "rate-limited" and "TOOLSMITH_RATE_PER_SECOND" in refused.json()["detail"]
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["Retry-After"] == "2"  # one request back at 0.5 a second
    # Another token has its own bucket.
    assert client.get(TENANTS, headers=OPERATOR).status_code == 200
    # MCP and the console count against the same bucket.
    assert client.post("/mcp", headers={**MCP, **bearer(ADMIN_TOKEN)}, json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 429
    clock.now += 1.0
    assert client.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 429  # half a request back: not yet
    clock.now += 1.0
    assert client.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 200
    assert client.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 429
    clock.now += 60  # a full bucket again, and never more than the burst
    assert [client.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code for _ in range(4)] == [200, 200, 200, 429]


# -- the operator's token ----------------------------------------------------------------------------


def test_an_unset_operator_token_is_generated_once_kept_as_a_hash(tmp_path: Any, shared_sandbox: Any) -> None:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN)
    first = bootstrap(settings, sandbox=shared_sandbox)
    token = first.new_operator_token
    first.close()
    assert token and token.startswith("tso_")
    kept = tmp_path / "data" / "operator-token.sha256"
    assert kept.read_text().strip() == token_digest(token) and token not in kept.read_text()
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    second = bootstrap(settings, sandbox=shared_sandbox)
    assert second.new_operator_token is None
    with TestClient(create_app(second)) as client:
        assert client.get(TENANTS, headers=bearer(token)).status_code == 200
