"""Rate limits that hold (issue 28, finding 7): a tenant's rate over all its tokens, and failed
authentications counted per client address (REST, MCP and the console's sign-in alike).

The limiters' clock is the test's: a loaded machine must not refill a bucket."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure.ratelimit import RateLimiter
from infrastructure.settings import Settings
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN

OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", "Host": "127.0.0.1:8000"}
MODULES = "/api/v1/admin/code-modules"
GUESSER = ("203.0.113.7", 40_000)
NEIGHBOUR = ("198.51.100.2", 40_000)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _app(tmp_path: Any, shared_sandbox: Any, **limits: Any) -> tuple[Any, Any]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN, **limits)
    services = bootstrap(settings, sandbox=shared_sandbox)
    return create_app(services), services


# -- a tenant's rate ---------------------------------------------------------------------------------


@pytest.fixture
def tenant_limited(tmp_path: Any, shared_sandbox: Any) -> Iterator[tuple[TestClient, Clock, Any]]:
    app, services = _app(tmp_path, shared_sandbox, rate_per_second=100, rate_burst=100,
                         tenant_rate_per_second=1, tenant_rate_burst=6)
    clock = Clock()
    services.admission.limiter = RateLimiter(100, 100, clock=clock)
    services.admission.tenant_limiter = RateLimiter(1, 6, clock=clock)
    with TestClient(app) as test_client:
        yield test_client, clock, services


def test_four_tokens_of_one_tenant_share_its_rate(tenant_limited: tuple[TestClient, Clock, Any]) -> None:
    client, clock, services = tenant_limited
    created = client.post("/api/v1/operator/tenants", headers=OPERATOR, json={"id": "acme", "name": "Acme"})
    assert created.status_code == 201, created.text
    first = created.json()["adminToken"]
    tokens = [first] + [client.post("/api/v1/admin/tokens", headers=bearer(first), json={"name": f"t{i}", "role": "admin"}).json()["token"]
                        for i in range(3)]
    assert len(set(tokens)) == 4
    clock.now += 60  # the tokens' issuing spent some of the tenant's burst: full again
    # Round robin over the four tokens: each far below its own rate, the tenant's 6 at once and no more.
    answers = [client.get(MODULES, headers=bearer(tokens[i % 4])) for i in range(12)]
    assert [a.status_code for a in answers] == [200] * 6 + [429] * 6
    refused = answers[6]
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "rate-limited" and "TOOLSMITH_TENANT_RATE_PER_SECOND" in refused.json()["detail"]
    assert refused.headers["Retry-After"] == "1"
    # MCP counts against the tenant's bucket too.
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert client.post("/mcp", headers={**MCP, **bearer(tokens[3])}, json=ping).status_code == 429
    # Another tenant (the deployment's own) and the operator are not held back by acme's bucket.
    assert client.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 200
    assert client.get("/api/v1/operator/tenants", headers=OPERATOR).status_code == 200
    clock.now += 2.0  # two requests back, whichever tokens send them
    assert [client.get(MODULES, headers=bearer(t)).status_code for t in tokens[1:4]] == [200, 200, 429]


# -- failed authentications per client address -------------------------------------------------------


@pytest.fixture
def throttled(tmp_path: Any, shared_sandbox: Any) -> Iterator[tuple[Any, Clock]]:
    app, services = _app(tmp_path, shared_sandbox, auth_failures_per_minute=5)
    clock = Clock()
    services.admission.failures = RateLimiter(5 / 60, 5, clock=clock)
    with TestClient(app):  # the lifespan, once; the clients below are other addresses
        yield app, clock


def test_an_address_past_its_failed_authentications_is_refused_even_with_a_good_token(throttled: tuple[Any, Clock]) -> None:
    app, clock = throttled
    guesser, neighbour = TestClient(app, client=GUESSER), TestClient(app, client=NEIGHBOUR)
    # Correct tokens never count.
    assert all(guesser.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 200 for _ in range(20))
    wrong = [guesser.get(MODULES, headers=bearer(f"tsk_wrong-{i}")) for i in range(7)]
    assert [a.status_code for a in wrong] == [401] * 5 + [429] * 2
    refused = wrong[-1]
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "too-many-failed-authentications"
    assert "TOOLSMITH_AUTH_FAILURES_PER_MINUTE" in refused.json()["detail"]
    assert refused.headers["Retry-After"] == "12"  # one failure back at 5 a minute
    assert "tsk_wrong" not in refused.text
    # Until then, the address's correct token is refused too, by REST, MCP and the console's sign-in.
    assert guesser.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 429
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert guesser.post("/mcp", headers={**MCP, **bearer(ADMIN_TOKEN)}, json=ping).status_code == 429
    signed = guesser.post("/console/sign-in", data={"token": ADMIN_TOKEN}, headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert signed.status_code == 429 and "Too many tokens that are not valid" in signed.text
    # Another address is unaffected, its wrong tokens are its own.
    assert neighbour.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 200
    assert neighbour.get(MODULES, headers=bearer("tsk_wrong")).status_code == 401
    # Once the window passes, the address's correct token works again; one more guess, and it waits again.
    clock.now += 12
    assert guesser.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 200
    assert guesser.get(MODULES, headers=bearer("tsk_wrong-again")).status_code == 401
    assert guesser.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 429


def test_mcp_and_console_sign_in_failures_count_for_the_address(throttled: tuple[Any, Clock]) -> None:
    app, _ = throttled
    guesser = TestClient(app, client=GUESSER)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    statuses = [guesser.post("/mcp", headers={**MCP, **bearer(f"tsk_wrong-{i}")}, json=ping).status_code for i in range(3)]
    for i in range(2):
        form = guesser.post("/console/sign-in", data={"token": f"tsk_wrong-{i}"}, headers={"Origin": "http://testserver"})
        statuses.append(form.status_code)
    assert statuses == [401, 401, 401, 200, 200]  # the sign-in form answers a wrong token with the form again
    assert guesser.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 429


def test_no_limit_is_set_off_by_zero(tmp_path: Any, shared_sandbox: Any) -> None:
    app, services = _app(tmp_path, shared_sandbox, auth_failures_per_minute=0, tenant_rate_per_second=0)
    assert not services.admission.failures.enabled and not services.admission.tenant_limiter.enabled
    with TestClient(app, client=GUESSER) as guesser:
        assert all(guesser.get(MODULES, headers=bearer(f"tsk_wrong-{i}")).status_code == 401 for i in range(40))
        assert guesser.get(MODULES, headers=bearer(ADMIN_TOKEN)).status_code == 200


def test_the_default_limits_are_on() -> None:
    settings = Settings(data_dir="/nonexistent")
    assert settings.tenant_rate_per_second > 0 and settings.auth_failures_per_minute > 0


def test_a_trusted_proxy_that_is_not_an_address_is_named(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="TOOLSMITH_TRUSTED_PROXIES.*'proxy.example'"):
        Settings(data_dir=tmp_path, trusted_proxies="10.0.0.0/8, proxy.example")
    assert Settings(data_dir=tmp_path, trusted_proxies=" 10.0.0.1 , ::1/128 ").trusted_proxies == "10.0.0.1,::1/128"
