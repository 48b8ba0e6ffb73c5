"""Metrics (docs/observability.md): `/metrics` answers the operator's token and TOOLSMITH_METRICS_TOKEN only;
each tool call, from every way in, is one increment with its outcome, refusals included; labels are
route templates and bounded tool names, never a path, an argument, a query string or a secret; a
tenant's tools past TOOLSMITH_METRICS_MAX_TOOLS fold into `other`; TOOLSMITH_METRICS_ADDRESS serves
them without a token."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from entrypoints.web import create_app
from infrastructure.metrics import Metrics
from infrastructure.settings import Settings
from tests.api.test_call_log import ACCEPT, HANDSHAKE, MODERN_META, PLANS, URL, mcp_session, publish
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, expect, unique_id

METRICS_TOKEN = "scraper-token-for-metrics-0123"
SECRET = "sk-never-in-a-label-4242"
OPERATOR = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}


@pytest.fixture
def client(tmp_path: Any, shared_sandbox: object) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        metrics_token=METRICS_TOKEN)
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def scrape(client: TestClient) -> str:
    answer = client.get("/metrics", headers=OPERATOR)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return answer.text


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(dict(s.labels), s.value) for family in text_string_to_metric_families(text) for s in family.samples if s.name == name]


def tool_calls(client: TestClient, **labels: str) -> dict[tuple[str, str, str], float]:
    """toolsmith_tool_calls_total by (tool, via, outcome), among the samples with `labels`."""
    found: dict[tuple[str, str, str], float] = {}
    for sample, value in samples(scrape(client), "toolsmith_tool_calls_total"):
        if all(sample.get(k) == v for k, v in labels.items()):
            found[(sample["tool"], sample["via"], sample["outcome"])] = value
    return found


def test_metrics_answer_the_operator_and_the_metrics_token_only(client: TestClient) -> None:
    nobody = client.get("/metrics", headers={"Authorization": ""})
    assert nobody.status_code == 401 and nobody.headers["content-type"] == "application/problem+json"
    wrong = client.get("/metrics", headers={"Authorization": "Bearer not-a-token"})
    assert wrong.status_code == 401 and wrong.headers["content-type"] == "application/problem+json"
    # a tenant's admin token is a token, and still not the operator's
    tenant = client.get("/metrics")
    assert tenant.status_code == 403 and tenant.headers["content-type"] == "application/problem+json"
    assert "operator" in tenant.json()["detail"]
    assert "toolsmith_" not in tenant.text
    assert client.get("/metrics", headers=OPERATOR).status_code == 200
    scraper = client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert scraper.status_code == 200 and "toolsmith_http_requests_total" in scraper.text
    # the metrics token reaches nothing else
    assert client.get("/api/v1/admin/calls", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).status_code == 401
    assert client.get("/api/v1/operator/tenants", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).status_code == 401
    # not a route of the tenants' API
    assert "/metrics" not in expect(client.get("/openapi.json"), 200).json()["paths"]


def test_each_way_in_counts_each_call_once_with_its_outcome(client: TestClient) -> None:
    name = publish(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "a"}), 200)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": 5}), 400)  # validation
    ghost = unique_id("ghost")
    expect(client.post(f"/api/v1/tools/{ghost}/call", json={}), 404)
    counted = tool_calls(client, tenant="default")
    assert counted[(name, "rest", "ok")] == 1
    assert counted[(name, "rest", "invalid-input")] == 1
    assert counted[("(unknown)", "rest", "tool-not-found")] == 1
    assert not any(ghost in key for key in counted)

    # MCP, both eras: one each
    session = mcp_session(client)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": {"text": "a"}}}
    assert client.post("/mcp", json=body, headers={**ACCEPT, "Mcp-Session-Id": session,
                                                  "Mcp-Protocol-Version": HANDSHAKE}).status_code == 200
    modern = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": name, "arguments": {"text": "b"}, "_meta": MODERN_META}}
    assert client.post("/mcp", json=modern, headers={**ACCEPT, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                                                    "Mcp-Name": name}).status_code == 200
    assert tool_calls(client, tool=name)[(name, "mcp", "ok")] == 2

    # a plan: one for the plan (rest), one for its node (plan)
    plan = unique_id("plan")
    expect(client.post(PLANS, json={"id": plan, "description": "one step", "nodes": [{"toolName": name}], "exposeAsTool": True}), 201)
    expect(client.post(f"/api/v1/tools/{plan}/call", json={"text": "hi"}), 200)
    counted = tool_calls(client)
    assert counted[(plan, "rest", "ok")] == 1 and counted[(name, "plan", "ok")] == 1
    assert [s for s, _ in samples(scrape(client), "toolsmith_tool_calls_total") if s["tool"] == plan][0]["kind"] == "PLAN"

    # the Playground and a module's Test
    from tests.console.test_console_others import console, post

    ran = post(console(client, ADMIN_TOKEN), "/console/playground/run", {"tool": name, "mode": "json", "raw": '{"text": "p"}'})
    assert ran.status_code == 200, ran.text
    draft = {"id": name, "draftContent": "exports.run = function (i) { return 1; };", "draftImports": [],
             "tool": {"inputParameters": [{"name": "text", "type": "string", "required": True}], "exposeInChat": True},
             "input": {"text": "t"}}
    expect(client.post("/api/v1/admin/code-modules/test", json=draft), 200)
    counted = tool_calls(client, tool=name)
    assert counted[(name, "playground", "ok")] == 1 and counted[(name, "test", "ok")] == 1
    # every call of the tool, each counted once: rest 2, mcp 2, plan 1, playground 1, test 1
    assert sum(counted.values()) == 7
    # the duration histogram has no outcome label, and as many observations
    durations = [(s, v) for s, v in samples(scrape(client), "toolsmith_tool_call_duration_seconds_count") if s["tool"] == name]
    assert all("outcome" not in s for s, _ in durations) and sum(v for _, v in durations) == 7


def test_a_call_past_the_rate_is_counted_rate_limited(tmp_path: Any, shared_sandbox: object) -> None:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        rate_per_second=0.001, rate_burst=2)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        ghost = unique_id("ghost")
        assert [client.post(f"/api/v1/tools/{ghost}/call", json={}).status_code for _ in range(3)] == [404, 404, 429]
        text = scrape(client)
        counted = {(s["outcome"]): v for s, v in samples(text, "toolsmith_tool_calls_total")}
        assert counted == {"tool-not-found": 2, "rate-limited": 1}
        assert dict(((s["limit"],), v) for s, v in samples(text, "toolsmith_rate_limited_total"))[("token",)] == 1


def test_labels_hold_templates_never_a_path_argument_query_or_secret(client: TestClient) -> None:
    name = publish(client)
    expect(client.post(f"/api/v1/tools/{name}/call?key={SECRET}", json={"text": SECRET}), 200)
    client.post(f"/api/v1/tools/{SECRET}/call", json={"text": SECRET})
    client.get(f"/api/v1/admin/code-modules/{SECRET}")
    client.get(f"/no/such/path/{SECRET}?token={SECRET}")
    client.request("PROPFIND", f"/x/{SECRET}")
    text = scrape(client)
    assert SECRET not in text and ADMIN_TOKEN not in text and OPERATOR_TOKEN not in text
    routes = {(s["route"], s["method"], s["status"]) for s, _ in samples(text, "toolsmith_http_requests_total")}
    assert ("/api/v1/tools/{name}/call", "POST", "200") in routes
    assert ("/api/v1/admin/code-modules/{id}", "GET", "404") in routes
    assert ("(unmatched)", "GET", "404") in routes
    assert any(method == "other" for _, method, _ in routes)
    assert all(not route.startswith("/no/") for route, _, _ in routes)
    durations = {s["route"] for s, _ in samples(text, "toolsmith_http_request_duration_seconds_count")}
    assert "/api/v1/tools/{name}/call" in durations


def test_the_gauges_are_read_at_scrape_time(client: TestClient) -> None:
    name = publish(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "a"}), 200)
    text = scrape(client)
    one = {family.name: family for family in text_string_to_metric_families(text)}
    assert one["toolsmith_sandbox_workers"].samples[0].value >= 1
    assert one["toolsmith_publish_checks"].samples[0].value >= 1
    assert one["toolsmith_publish_checks_refused"].samples[0].value == 0
    for family in ("toolsmith_sandbox_workers_recycled", "toolsmith_sandbox_refusals", "toolsmith_read_model_lag_events",
                   "toolsmith_read_model_lag_seconds", "toolsmith_call_log_dropped", "toolsmith_call_log_written",
                   "toolsmith_extraction_queue", "toolsmith_engine_errors", "toolsmith_rate_limited"):
        assert family in one, family
    # a failing check is counted as refused
    failing = unique_id("broken")
    tool = {"inputParameters": [], "exposeInChat": True}
    expect(client.post("/api/v1/admin/code-modules", json={"id": failing, "description": "d", "tool": tool,
                                                          "draftContent": "exports.run = function () { return 1; }; throw new Error('x');"}), 201)
    assert client.post(f"/api/v1/admin/code-modules/{failing}/publish").status_code >= 400
    after = {family.name: family for family in text_string_to_metric_families(scrape(client))}
    assert after["toolsmith_publish_checks_refused"].samples[0].value == 1


def test_a_tenants_tools_past_the_bound_fold_into_other(tmp_path: Any, shared_sandbox: object) -> None:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN, metrics_max_tools=2)
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        names = [publish(client) for _ in range(4)]
        for name in names:
            expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "a"}), 200)
        counted = tool_calls(client)
        assert counted[(names[0], "rest", "ok")] == 1 and counted[(names[1], "rest", "ok")] == 1
        assert counted[("other", "rest", "ok")] == 2
        assert not any(key[0] in names[2:] for key in counted)


def test_fifty_thousand_tools_keep_the_registry_bounded() -> None:
    metrics = Metrics(max_tools=200)
    for i in range(50_000):
        metrics.tool_called("t1", f"tool{i}", "CODE", "rest", "ok", 0.001, True)
        metrics.tool_called("t1", f"ghost{i}", None, "mcp", "tool-not-found", 0.0, False)
    series = [s for family in text_string_to_metric_families(metrics.exposition().decode())
              if family.name == "toolsmith_tool_calls" for s in family.samples]
    assert len(series) == 202  # 200 tools, "other", "(unknown)"
    by_tool = {s.labels["tool"]: s.value for s in series}
    assert by_tool["other"] == 49_800 and by_tool["(unknown)"] == 50_000 and by_tool["tool0"] == 1
    assert len(metrics._call_children) <= 202  # noqa: SLF001 - the cache is bounded too


def test_the_metrics_address_serves_them_without_a_token(tmp_path: Any, shared_sandbox: object) -> None:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        metrics_address="127.0.0.1:0")
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        client.get("/healthz")
        services = client.app.state.services  # type: ignore[attr-defined]
        host, port = services.metrics.address
        answer = httpx.get(f"http://{host}:{port}/metrics", timeout=5)
        assert answer.status_code == 200 and 'route="/healthz"' in answer.text
        # the service's own port still asks for a token
        assert client.get("/metrics").status_code == 403
    with pytest.raises(httpx.TransportError):  # closed with the service
        httpx.get(f"http://{host}:{port}/metrics", timeout=2)


def test_a_bad_metrics_address_refuses_the_start() -> None:
    with pytest.raises(ValueError, match="metrics_address"):
        Settings(metrics_address="no-port")


def test_on_postgresql_calls_are_counted_and_its_errors_too(tmp_path: Any, shared_sandbox: object, postgres_store: dict[str, str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from eventsourcing.persistence import PersistenceError

    for key, value in postgres_store.items():
        monkeypatch.setenv(key, value)
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        persistence_module=postgres_store["PERSISTENCE_MODULE"])
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        name = publish(client)
        expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "pg"}), 200)
        assert tool_calls(client)[(name, "rest", "ok")] == 1

        def errors() -> float:
            return dict((s["engine"], v) for s, v in samples(scrape(client), "toolsmith_engine_errors_total"))["postgresql"]

        before = errors()
        with pytest.raises(PersistenceError):  # a read the server refuses (a negative LIMIT)
            client.app.state.services.store.recorder.select_notifications(1, -1)  # type: ignore[attr-defined]
        assert errors() == before + 1


def test_a_metrics_address_already_taken_leaves_the_metrics_on_the_service_port(tmp_path: Any, shared_sandbox: object,
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                            metrics_address=f"127.0.0.1:{port}")
        with caplog.at_level("WARNING", logger="toolsmith.services"):
            with TestClient(create_app(wire(settings, shared_sandbox))) as client:
                assert client.app.state.services.metrics.address is None  # type: ignore[attr-defined]
                assert "toolsmith_http_requests_total" in scrape(client)
        assert any("metrics address taken" in r.getMessage() for r in caplog.records)
    finally:
        taken.close()
