"""API URL tools' auth and secrets (issue 16, docs/kinds/index.md, docs/kinds/api-url-tools.md), against a local API that records
what it saw: every auth mode, OAuth 2 client-credential tokens fetched once for many calls and again
after expiry or a 401, rotation on the next call, 409 on deleting a secret in use, and a secret's
value in no log line, event, export, error or test result."""

from __future__ import annotations

import base64
import io
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.audit import export
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"
SECRETS = "/api/v1/admin/secrets"
KEY = "sk-live-5f1e0c9a7b3d-never-shown"
ROTATED = "sk-live-rotated-77aa21-never-shown"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def services_and_api(tmp_path: Path, upstream: Upstream, shared_sandbox: Any) -> Iterator[tuple[Any, TestClient]]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    services = wire(settings, shared_sandbox)
    with TestClient(create_app(services), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield services, client


@pytest.fixture
def api(services_and_api: tuple[Any, TestClient]) -> TestClient:
    return services_and_api[1]


def secret(api: TestClient, secret_id: str, value: str) -> None:
    made = api.post(SECRETS, json={"id": secret_id, "value": value, "description": f"the {secret_id}"})
    assert made.status_code == 201, made.text


def tool(api: TestClient, name: str, upstream: Upstream, path: str = "/echo", **extra: Any) -> None:
    made = api.post(TOOLS, json={"id": name, "description": name, "urlTemplate": upstream.url + path, **extra})
    assert made.status_code == 201, made.text


def call(api: TestClient, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = api.post(f"/api/v1/tools/{name}/call", json=arguments or {})
    assert answer.status_code == 200, answer.text
    return answer.json()


# -- every auth mode ---------------------------------------------------------------------------------


def test_api_key_in_a_header_and_in_the_query(api: TestClient, upstream: Upstream) -> None:
    secret(api, "weatherKey", KEY)
    tool(api, "inheader", upstream, auth={"type": "apiKey", "in": "header", "name": "X-Api-Key", "secret": "weatherKey"})
    tool(api, "inquery", upstream, auth={"type": "apiKey", "in": "query", "name": "appid", "secret": "weatherKey"})
    call(api, "inheader")
    assert upstream.last().headers["x-api-key"] == KEY
    call(api, "inquery")
    assert upstream.last().query["appid"] == [KEY]


def test_bearer_and_basic(api: TestClient, upstream: Upstream) -> None:
    secret(api, "token", KEY)
    tool(api, "bearer", upstream, auth={"type": "bearer", "secret": "token"})
    tool(api, "basic", upstream, auth={"type": "basic", "username": "svc", "secret": "token"})
    call(api, "bearer")
    assert upstream.last().headers["authorization"] == f"Bearer {KEY}"
    call(api, "basic")
    assert base64.b64decode(upstream.last().headers["authorization"].removeprefix("Basic ")).decode() == f"svc:{KEY}"


def test_a_secret_header_value(api: TestClient, upstream: Upstream) -> None:
    secret(api, "tenantKey", KEY)
    tool(api, "withheader", upstream, headers={"X-Tenant-Key": {"secret": "tenantKey"}, "X-Plain": "p"})
    call(api, "withheader")
    assert upstream.last().headers["x-tenant-key"] == KEY and upstream.last().headers["x-plain"] == "p"


def oauth(upstream: Upstream, client_auth: str = "clientSecretBasic") -> dict[str, Any]:
    return {"type": "oauth2ClientCredentials", "tokenUrl": upstream.url + "/token", "clientId": "client-1",
            "clientSecret": "oauthSecret", "scope": "read", "audience": "https://api.example", "clientAuth": client_auth}


def token_requests(upstream: Upstream) -> list[Any]:
    return [s for s in upstream.seen if s.path == "/token"]


def test_oauth_tokens_are_fetched_once_for_many_calls(api: TestClient, upstream: Upstream) -> None:
    secret(api, "oauthSecret", KEY)
    tool(api, "guarded", upstream, path="/protected", auth=oauth(upstream))
    for _ in range(5):
        assert call(api, "guarded")["output"] == {"ok": True, "token": "issued"}
    fetched = token_requests(upstream)
    assert len(fetched) == 1
    form = parse_qs(fetched[0].body.decode())
    assert form == {"grant_type": ["client_credentials"], "scope": ["read"], "audience": ["https://api.example"]}
    assert base64.b64decode(fetched[0].headers["authorization"].removeprefix("Basic ")).decode() == f"client-1:{KEY}"
    assert [s.headers["authorization"] for s in upstream.seen if s.path == "/protected"] == ["Bearer token-1"] * 5


def test_oauth_client_secret_post(api: TestClient, upstream: Upstream) -> None:
    secret(api, "oauthSecret", KEY)
    tool(api, "guarded", upstream, path="/protected", auth=oauth(upstream, "clientSecretPost"))
    call(api, "guarded")
    form = parse_qs(token_requests(upstream)[0].body.decode())
    assert form["client_id"] == ["client-1"] and form["client_secret"] == [KEY]
    assert "authorization" not in token_requests(upstream)[0].headers


def test_an_expired_token_is_fetched_again(api: TestClient, upstream: Upstream) -> None:
    # a 1-second token is refreshed early, after half its lifetime (the leeway is 60 s, or half a
    # shorter lifetime)
    upstream.token_lifetime = 1
    secret(api, "oauthSecret", KEY)
    tool(api, "guarded", upstream, path="/protected", auth=oauth(upstream))
    call(api, "guarded")
    time.sleep(0.6)
    call(api, "guarded")
    assert len(token_requests(upstream)) == 2
    upstream.token_lifetime = 3600
    time.sleep(0.6)
    call(api, "guarded")
    call(api, "guarded")
    assert len(token_requests(upstream)) == 3


def test_a_401_drops_the_token_and_retries_once_with_a_new_one(api: TestClient, upstream: Upstream) -> None:
    secret(api, "oauthSecret", KEY)
    tool(api, "guarded", upstream, path="/protected", auth=oauth(upstream))
    call(api, "guarded")
    upstream.revoked.add("token-1")  # the API no longer takes it, though it has not expired
    assert call(api, "guarded")["output"]["ok"] is True
    assert len(token_requests(upstream)) == 2
    assert [s.headers["authorization"] for s in upstream.seen if s.path == "/protected"] == [
        "Bearer token-1", "Bearer token-1", "Bearer token-2"]
    # a token the API keeps refusing: one retry, then the 401 is the answer
    upstream.revoked.update({"token-2", "token-3"})
    failed = call(api, "guarded")
    assert failed["error"]["type"] == "http" and "401" in failed["error"]["message"]
    assert len(token_requests(upstream)) == 3


# -- secrets: rotation, delete while used, never shown -------------------------------------------------


def test_rotation_takes_effect_on_the_next_call(api: TestClient, upstream: Upstream) -> None:
    secret(api, "token", KEY)
    tool(api, "bearer", upstream, auth={"type": "bearer", "secret": "token"})
    call(api, "bearer")
    rotated = api.put(f"{SECRETS}/token", json={"value": ROTATED})
    assert rotated.status_code == 200, rotated.text
    call(api, "bearer")
    assert [s.headers["authorization"] for s in upstream.seen] == [f"Bearer {KEY}", f"Bearer {ROTATED}"]


def test_a_secret_used_by_a_tool_cannot_be_deleted(api: TestClient, upstream: Upstream) -> None:
    secret(api, "token", KEY)
    tool(api, "bearer", upstream, auth={"type": "bearer", "secret": "token"})
    refused = api.delete(f"{SECRETS}/token")
    assert refused.status_code == 409 and "bearer" in refused.json()["detail"]
    listed = {s["id"]: s for s in api.get(SECRETS).json()}
    assert listed["token"]["usedBy"] == ["bearer"]
    assert api.delete(f"{TOOLS}/bearer").status_code == 204
    assert api.delete(f"{SECRETS}/token").status_code == 204


def test_a_secret_value_appears_nowhere(services_and_api: tuple[Any, TestClient], upstream: Upstream,
                                        caplog: pytest.LogCaptureFixture) -> None:
    services, api = services_and_api
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    secret(api, "token", KEY)
    secret(api, "oauthSecret", ROTATED)
    tool(api, "bearer", upstream, auth={"type": "bearer", "secret": "token"})
    tool(api, "echoer", upstream, headers={"X-Key": {"secret": "token"}})
    tool(api, "guarded", upstream, path="/protected", auth=oauth(upstream))
    tool(api, "failing", upstream, path="/status/500", auth={"type": "apiKey", "in": "query", "name": "key", "secret": "token"})
    # calls, including one whose API echoes the request's headers back and one that fails
    seen.append(str(call(api, "bearer")))
    seen.append(str(call(api, "echoer")))
    seen.append(str(call(api, "guarded")))
    seen.append(str(call(api, "failing")))
    # the Playground's redacted request and result
    for name in ("bearer", "echoer", "guarded", "failing"):
        tested = api.post(f"{TOOLS}/{name}/test", json={"arguments": {}})
        assert tested.status_code == 200
        seen.append(tested.text)
    assert "[secret token]" in api.post(f"{TOOLS}/failing/test", json={}).json()["request"]["url"]
    # every REST answer about them
    for path in (SECRETS, f"{SECRETS}/token", TOOLS, f"{TOOLS}/bearer", f"{TOOLS}/bearer/history", f"{SECRETS}/token/history"):
        seen.append(api.get(path).text)
    # the event store, raw
    recorder = services.store.recorder
    for notification in recorder.select_notifications(1, 100_000):
        seen.append(notification.state.decode("utf-8", errors="replace") if isinstance(notification.state, bytes) else str(notification.state))
    # the audit export
    out = io.BytesIO()
    export(services.store, out, kinds=services.toolbox.kinds)
    seen.append(out.getvalue().decode("utf-8", errors="replace"))
    # every log line
    seen.extend(record.getMessage() + str(record.__dict__) for record in caplog.records)

    assert upstream.last("/echo").headers["x-key"] == KEY  # the value did go where it belongs
    for value in (KEY, ROTATED):
        leaks = [text[:200] for text in seen if value in text]
        assert leaks == [], f"the secret value leaked into: {leaks}"
    # what the echoing API sent back has the value replaced
    assert "[secret]" in seen[1]


def test_concurrent_calls_share_one_token_fetch(services_and_api: tuple[Any, TestClient], upstream: Upstream) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from application.context import REST
    from application.principals import Principal
    from application.queries import call_context
    from domain.catalog import EVERYTHING

    services, api = services_and_api
    admin = call_context(Principal(name="admin", role="admin", tenant="default"), REST)
    secret(api, "oauthSecret", KEY)
    tool(api, "guarded", upstream, path="/protected", auth=oauth(upstream))

    def one(_: int) -> Any:
        return services.toolbox.call("default", "guarded", {}, permissions=EVERYTHING, context=admin).output

    with ThreadPoolExecutor(max_workers=8) as pool:
        outputs = list(pool.map(one, range(16)))
    assert outputs == [{"ok": True, "token": "issued"}] * 16
    assert len(token_requests(upstream)) == 1
