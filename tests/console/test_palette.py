"""The Ctrl/⌘+K palette's answers over HTTP (no browser): pages, actions and the tenant's objects by
name (prefix, a word's start, inside, letters in order), closest first, one tenant's only, no write
action for an auditor; and fast over 1,000 objects (measured, not timed as a pass or fail)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from console.routes import palette
from infrastructure.settings import Settings
from tests.helpers import ADMIN_TOKEN, expect, sign_in_console, unique_id

OPERATOR_TOKEN = "tso_test-operator-token"
MODULES = "/api/v1/admin/code-modules"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # no rate limit: the measurement makes 1,700 objects as fast as it can
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN, rate_per_second=0,
                    tenant_rate_per_second=0)


def signed_in(app: FastAPI, token: str = ADMIN_TOKEN) -> TestClient:
    client = TestClient(app)
    sign_in_console(client, token, next="/console/tools")
    return client


def module(api: TestClient, name: str, *, publish: bool = True) -> None:
    expect(api.post(MODULES, json={"id": name, "description": "formats money", "draftContent": "exports.run = function (i) { return 1; };",
                                   "tool": {"inputParameters": [], "exposeInChat": True}}), 201)
    if publish:
        expect(api.post(f"{MODULES}/{name}/publish"), 200)


def found(client: TestClient, q: str) -> list[dict[str, str]]:
    answer = client.get("/console/palette", params={"q": q})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    return answer.json()["results"]


def test_the_score_orders_exact_prefix_word_inside_and_letters_in_order() -> None:
    assert palette.score("format_currency", "format_currency") == 0
    assert palette.score("format_currency", "form") == 1
    assert palette.score("format_currency", "curr") == 2
    assert palette.score("addOne", "one") == 2  # camelCase words
    assert palette.score("dates_report", "tes") == 3
    assert palette.score("format_currency", "fcur") == 4
    assert palette.score("format_currency", "zz") is None


def test_it_finds_modules_tools_servers_profiles_pages_and_actions(app: FastAPI, api: TestClient) -> None:
    money = unique_id("format_currency")
    module(api, money)
    draft = unique_id("format_library")
    module(api, draft, publish=False)
    server = unique_id("finance_server")
    expect(api.post("/api/v1/admin/mcp-servers", json={"id": server, "tools": [money]}), 201)
    profile = unique_id("finance_profile")
    expect(api.post("/api/v1/admin/usage-profiles", json={"id": profile, "allowedTools": [money]}), 201)
    admin = signed_in(app)
    hits = found(admin, "format")
    assert {"label": money, "kind": "Code module", "url": f"/console/modules/{money}"} in hits
    assert any(h["label"] == draft and h["url"] == f"/console/modules/{draft}" for h in hits)  # a draft no catalog lists
    assert len([h for h in hits if h["label"] == money]) == 1  # a code tool is its module's one page
    by_label = {h["label"]: h for h in found(admin, "finance")}
    assert by_label[server] == {"label": server, "kind": "MCP server", "url": f"/console/servers/{server}"}
    assert by_label[profile]["kind"] == "Usage profile" and by_label[profile]["url"] == f"/console/profiles/{profile}"
    # fuzzy-ish: the letters in order
    assert any(h["label"] == money for h in found(admin, "fmtcur"))
    # pages and actions
    assert found(admin, "audit")[0] == {"label": "Audit", "kind": "Page", "url": "/console/audit"}
    new_server = [h for h in found(admin, "new server") if h["kind"] == "Action"]
    assert new_server and new_server[0]["url"] == "/console/servers/new"
    assert any(h.get("action") == "theme" for h in found(admin, "dark"))
    # nothing typed: the pages and actions, no objects
    empty = found(admin, "")
    assert {h["kind"] for h in empty} <= {"Page", "Action"} and any(h["label"] == "New code module" for h in empty)


def test_an_auditor_is_offered_no_action_that_writes(app: FastAPI, api: TestClient) -> None:
    token = expect(api.post("/api/v1/admin/tokens", json={"name": "an auditor", "role": "auditor"}), 201).json()["token"]
    auditor = signed_in(app, token)
    labels = [h["label"] for h in found(auditor, "new")]
    assert not any(label.startswith("New ") for label in labels)


def test_another_tenants_objects_are_never_found(app: FastAPI, api: TestClient) -> None:
    operator = TestClient(app, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
    tenant = unique_id("org").replace("_", "-")
    other_token = expect(operator.post("/api/v1/operator/tenants", json={"id": tenant, "name": "Other"}), 201).json()["adminToken"]
    theirs = unique_id("their_secret_plan")
    module(TestClient(app, headers={"Authorization": f"Bearer {other_token}"}), theirs)
    assert not [h for h in found(signed_in(app), "their_secret") if h["label"] == theirs]
    assert [h for h in found(signed_in(app, other_token), "their_secret") if h["label"] == theirs]


def test_over_many_objects_the_closest_come_first_and_the_answer_is_capped(app: FastAPI, api: TestClient) -> None:
    """200 modules (half published as tools) and 40 servers: a query finds the one it names first,
    and the answer holds at most the palette's limit. (Its speed over 10,000 modules is measured in
    bench.console, not here.)"""
    services = app.state.services
    for n in range(200):
        name = f"bench_module_{n:04d}"
        expect(api.post(MODULES, json={"id": name, "description": "d", "draftContent": "exports.run = function () { return 1; };",
                                       "tool": {"inputParameters": [], "exposeInChat": True}}), 201)
        if n % 2 == 0:
            expect(api.post(f"{MODULES}/{name}/publish"), 200)
    for n in range(40):
        expect(api.post("/api/v1/admin/mcp-servers", json={"id": f"bench_server_{n:03d}", "tools": []}), 201)
    navigation = app.state.console_pages.env.globals["navigation"]
    everything = palette.search(services, "default", "bench", writer=True, navigation=navigation)
    assert len(everything) == palette.LIMIT
    assert palette.search(services, "default", "bench_module_0150", writer=True, navigation=navigation)[0].label == "bench_module_0150"
    assert palette.search(services, "default", "bench_server_017", writer=True, navigation=navigation)[0].label == "bench_server_017"
    assert palette.search(services, "default", "zzz", writer=True, navigation=navigation) == []
