"""The call log over every way in (docs/calls.md): each tool call, from REST, MCP in both eras, a plan's
nodes, the Playground and a module's Test, leaves exactly one record; refused calls leave theirs with
their outcome; a record keeps hashes, never values; a tenant reads only its own; the list filters and pages."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, expect, unique_id

CALLS = "/api/v1/admin/calls"
MODULES = "/api/v1/admin/code-modules"
PLANS = "/api/v1/admin/plans"
URL = "http://127.0.0.1:8000"  # an allowed MCP Host
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HANDSHAKE = "2025-11-25"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
SECRET_ARGUMENT = "do-not-keep-this-value"


@pytest.fixture
def client(settings: Settings, shared_sandbox: object) -> Iterator[TestClient]:
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def publish(client: TestClient, source: str = "exports.run = function (i) { return {echo: i.text}; };") -> str:
    name = unique_id("tool")
    tool = {"inputParameters": [{"name": "text", "type": "string", "required": True, "description": "a text"}], "exposeInChat": True}
    expect(client.post(MODULES, json={"id": name, "description": "echoes", "draftContent": source, "tool": tool}), 201)
    expect(client.post(f"{MODULES}/{name}/publish"), 200)
    return name


def calls(client: TestClient, **query: Any) -> list[dict[str, Any]]:
    return expect(client.get(CALLS, params=query), 200).json()


def only_call(client: TestClient, tool: str, **query: Any) -> dict[str, Any]:
    found = calls(client, tool=tool, **query)
    assert len(found) == 1, found
    return found[0]


def mcp_session(client: TestClient) -> str:
    opened = client.post("/mcp", headers=ACCEPT, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**ACCEPT, "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE})
    return session


def test_a_rest_call_leaves_one_record_with_hashes_never_values(client: TestClient) -> None:
    name = publish(client)
    answer = expect(client.post(f"/api/v1/tools/{name}/call", json={"text": SECRET_ARGUMENT}), 200).json()
    record = only_call(client, name)
    assert record["via"] == "rest" and record["outcome"] == "ok" and record["kind"] == "CODE"
    assert record["version"] == 1 and len(record["definitionSha256"]) == 64
    assert record["caller"]["principal"] == "admin"
    assert record["argumentsSha256"] == sha({"text": SECRET_ARGUMENT})
    assert record["resultSha256"] == sha(answer["output"])
    assert record["durationMillis"] > 0 and record["traceId"] is None
    assert record["chain"]["n"] >= 1 and len(record["chain"]["hash"]) == 64
    # Never the values: neither the list nor the record holds the argument or the result.
    assert SECRET_ARGUMENT not in client.get(CALLS).text
    assert SECRET_ARGUMENT not in expect(client.get(f"{CALLS}/{record['id']}"), 200).text
    assert expect(client.get(f"{CALLS}/{record['id']}"), 200).json() == record

    # a new version is another version in the record
    expect(client.put(f"{MODULES}/{name}", json={"description": "echoes twice", "draftContent":
                                                 "exports.run = function (i) { return i.text + i.text; };",
                                                 "tool": {"inputParameters": [{"name": "text", "type": "string", "required": True}],
                                                          "exposeInChat": True}}), 200)
    expect(client.post(f"{MODULES}/{name}/publish"), 200)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "b"}), 200)
    newest = calls(client, tool=name)
    assert [r["version"] for r in newest] == [2, 1]
    assert newest[0]["definitionSha256"] != newest[1]["definitionSha256"]


def test_refused_rest_calls_are_recorded_with_their_outcome(client: TestClient) -> None:
    name = publish(client)
    ghost = unique_id("ghost")
    expect(client.post(f"/api/v1/tools/{ghost}/call", json={}), 404)
    assert only_call(client, ghost)["outcome"] == "tool-not-found"
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": 5}), 400)
    expect(client.post(f"/api/v1/tools/{name}/call", json=[1, 2]), 400)
    refused = calls(client, tool=name)
    assert [r["outcome"] for r in refused] == ["invalid-input", "invalid-input"]
    assert refused[0]["resultSha256"] is None
    # a code failure is a call answered with its error type as the outcome
    failing = publish(client, "exports.run = function () { throw new Error('no'); };")
    expect(client.post(f"/api/v1/tools/{failing}/call", json={"text": "x"}), 200)
    assert only_call(client, failing)["outcome"] == "runtime"


def test_a_call_past_the_callers_rate_is_recorded_as_rate_limited(tmp_path: Any, shared_sandbox: object) -> None:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        rate_per_second=0.001, rate_burst=2)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        name = unique_id("ghost")
        assert client.post(f"/api/v1/tools/{name}/call", json={}).status_code == 404
        assert client.post(f"/api/v1/tools/{name}/call", json={}).status_code == 404
        assert client.post(f"/api/v1/tools/{name}/call", json={}).status_code == 429
        services = client.app.state.services  # type: ignore[attr-defined]
        services.toolbox.call_log.flush()
        found, _ = services.toolbox.call_log.page(settings.tenant, _every())
        assert [r["outcome"] for r in found] == ["rate-limited", "tool-not-found", "tool-not-found"]


def _every() -> Any:
    from application.call_log import CallFilter

    return CallFilter()


def test_mcp_calls_of_both_eras_leave_one_record_each(client: TestClient) -> None:
    name = publish(client)
    session = mcp_session(client)
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": {"text": "a"}}}
    answered = client.post("/mcp", json=body, headers={**ACCEPT, "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE})
    assert answered.status_code == 200 and "isError" in answered.text
    assert only_call(client, name)["via"] == "mcp"

    modern = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": name, "arguments": {"text": "b"}, "_meta": MODERN_META}}
    sent = {**ACCEPT, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
    assert client.post("/mcp", json=modern, headers=sent).status_code == 200
    both = calls(client, tool=name)
    assert [r["via"] for r in both] == ["mcp", "mcp"] and [r["outcome"] for r in both] == ["ok", "ok"]
    assert both[0]["argumentsSha256"] == sha({"text": "b"}) and both[1]["argumentsSha256"] == sha({"text": "a"})

    # a tool this server does not offer, and an argument of the wrong type: refused, recorded
    ghost = unique_id("ghost")
    client.post("/mcp", json={**modern, "params": {**modern["params"], "name": ghost}}, headers={**sent, "Mcp-Name": ghost})
    assert only_call(client, ghost)["outcome"] == "tool-not-found"
    wrong = client.post("/mcp", json={**body, "params": {"name": name, "arguments": {"text": 5}}},
                        headers={**ACCEPT, "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE})
    assert wrong.status_code == 200
    assert calls(client, tool=name)[0]["outcome"] == "invalid-input"
    assert len(calls(client, tool=name)) == 3


def test_a_plans_nodes_are_calls_of_their_own(client: TestClient) -> None:
    first = publish(client, "exports.run = function (i) { return {text: i.text + '!'}; };")
    second = publish(client)
    plan = unique_id("plan")
    expect(client.post(PLANS, json={"id": plan, "description": "two steps", "nodes": [{"toolName": first}, {"toolName": second}],
                                    "exposeAsTool": True}), 201)
    expect(client.post(f"/api/v1/tools/{plan}/call", json={"text": "hi"}), 200)
    top = only_call(client, plan)
    assert top["via"] == "rest" and top["kind"] == "PLAN" and top["outcome"] == "ok"
    nodes = [only_call(client, first), only_call(client, second)]
    assert [n["via"] for n in nodes] == ["plan", "plan"]
    assert [n["caller"]["plan"] for n in nodes] == [plan, plan]
    assert nodes[1]["argumentsSha256"] == sha({"text": "hi!"})
    assert {r["tool"] for r in calls(client, via="plan")} >= {first, second}


def test_the_playground_and_a_modules_test_leave_one_record_each(client: TestClient) -> None:
    from tests.console.test_console_others import console, post

    name = publish(client)
    admin = console(client, ADMIN_TOKEN)
    ran = post(admin, "/console/playground/run", {"tool": name, "mode": "json", "raw": '{"text": "p"}'})
    assert ran.status_code == 200, ran.text
    record = only_call(client, name)
    assert record["via"] == "playground" and record["outcome"] == "ok"

    draft = {"id": name, "draftContent": "exports.run = function (i) { return 1; };", "draftImports": [],
             "tool": {"inputParameters": [{"name": "text", "type": "string", "required": True}], "exposeInChat": True},
             "input": {"text": "t"}}
    expect(client.post(f"{MODULES}/test", json=draft), 200)
    tested = only_call(client, name, via="test")
    assert tested["outcome"] == "ok" and tested["kind"] == "CODE" and tested["version"] is None
    assert tested["argumentsSha256"] == sha({"text": "t"})
    assert len(calls(client, tool=name)) == 2


def test_a_tenant_reads_only_its_own_calls_and_auditors_may_read(client: TestClient) -> None:
    name = publish(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "a"}), 200)
    mine = only_call(client, name)
    made = expect(client.post("/api/v1/operator/tenants", json={"id": unique_id("beta").lower().replace("_", "-"), "name": "Beta"},
                              headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}), 201).json()
    theirs = {"Authorization": f"Bearer {made['adminToken']}"}
    assert client.get(f"{CALLS}/{mine['id']}", headers=theirs).status_code == 404
    assert expect(client.get(CALLS, headers=theirs), 200).json() == []
    assert client.get(f"{CALLS}/{'0' * 32}").status_code == 404

    auditor = expect(client.post("/api/v1/admin/tokens", json={"name": "reads calls", "role": "auditor"}), 201).json()["token"]
    assert client.get(f"{CALLS}/{mine['id']}", headers={"Authorization": f"Bearer {auditor}"}).status_code == 200
    caller = expect(client.post("/api/v1/admin/tokens", json={"name": "calls tools", "role": "caller"}), 201).json()["token"]
    assert client.get(CALLS, headers={"Authorization": f"Bearer {caller}"}).status_code == 403


def test_the_list_filters_and_pages(client: TestClient) -> None:
    name = publish(client)
    for text in ("a", "b", "c", "d", "e"):
        expect(client.post(f"/api/v1/tools/{name}/call", json={"text": text}), 200)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": 1}), 400)
    every = calls(client, tool=name)
    assert len(every) == 6 and every[0]["outcome"] == "invalid-input"
    assert len(calls(client, tool=name, outcome="ok")) == 5
    assert len(calls(client, tool=name, via="rest", caller="admin")) == 6
    assert calls(client, tool=name, via="mcp") == []
    assert calls(client, tool=name, caller="someone-else") == []
    # since / until: the instant of the third newest splits them
    third = every[2]["at"]
    assert [r["id"] for r in calls(client, tool=name, since=third)] == [r["id"] for r in every[:3]]
    assert [r["id"] for r in calls(client, tool=name, until=third)] == [r["id"] for r in every[3:]]

    # pages of two, newest first, following the Link header
    seen: list[str] = []
    url: str | None = f"{CALLS}?tool={name}&limit=2"
    while url:
        page = expect(client.get(url), 200)
        seen += [r["id"] for r in page.json()]
        link = page.headers.get("link")
        url = link[1:link.index(">")] if link else None
    assert seen == [r["id"] for r in every]


@pytest.mark.parametrize(("query", "field"), [
    ({"via": "carrier-pigeon"}, "via"),
    ({"since": "yesterday"}, "since"),
    ({"since": "2026-01-01T00:00:00"}, "since"),
    ({"cursor": "!!"}, "cursor"),
    ({"limit": "0"}, "limit"),
    ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "until"),
])
def test_a_bad_filter_is_a_problem_naming_it(client: TestClient, query: dict[str, str], field: str) -> None:
    answer = client.get(CALLS, params=query)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert field in answer.json()["detail"]


def test_on_a_postgresql_event_store_the_log_is_kept_beside_it(tmp_path: Any, shared_sandbox: object, postgres_store: dict[str, str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from infrastructure.call_log_postgres import PostgresCallRecords

    for key, value in postgres_store.items():
        monkeypatch.setenv(key, value)
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        persistence_module=postgres_store["PERSISTENCE_MODULE"])
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        assert isinstance(client.app.state.services.toolbox.call_log.store, PostgresCallRecords)  # type: ignore[attr-defined]
        name = publish(client)
        expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "pg"}), 200)
        record = only_call(client, name)
        assert record["via"] == "rest" and record["argumentsSha256"] == sha({"text": "pg"})
    assert not (tmp_path / "data" / "calls.sqlite").exists()


def test_the_tenants_audit_export_carries_its_call_records_only(client: TestClient) -> None:
    import orjson

    name = publish(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": SECRET_ARGUMENT}), 200)
    gamma = unique_id("gamma").lower().replace("_", "-")
    made = expect(client.post("/api/v1/operator/tenants", json={"id": gamma, "name": "Gamma"},
                              headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}), 201).json()
    theirs = {"Authorization": f"Bearer {made['adminToken']}"}
    expect(client.post(f"/api/v1/tools/{unique_id('ghost')}/call", json={}, headers=theirs), 404)

    mine = [orjson.loads(line) for line in expect(client.get("/api/v1/admin/audit/export"), 200).content.splitlines()]
    calls_exported = [line["call"] for line in mine if "call" in line]
    assert [c["tool"] for c in calls_exported] == [name] and mine[-1]["calls"] == 1
    assert calls_exported[0]["tenant"] == "default" and SECRET_ARGUMENT not in str(mine)
    other = [orjson.loads(line) for line in expect(client.get("/api/v1/admin/audit/export", headers=theirs), 200).content.splitlines()]
    assert [line["call"]["tenant"] for line in other if "call" in line] == [gamma]
    assert name not in str(other)


def test_a_playground_call_as_a_caller_not_offered_the_tool_is_recorded_refused(client: TestClient) -> None:
    from tests.console.test_console_others import console, post

    name = publish(client)
    profile = unique_id("nothing")
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": profile, "description": "allows nothing", "allowedTools": [],
                                                              "allowedTags": []}), 201)
    admin = console(client, ADMIN_TOKEN)
    ran = post(admin, "/console/playground/run", {"tool": name, "mode": "json", "raw": '{"text": "p"}', "runAs": f"profile:{profile}"})
    assert ran.status_code == 200, ran.text
    record = only_call(client, name)
    assert record["via"] == "playground" and record["outcome"] == "tool-not-found"


def test_a_persons_call_names_the_person(client: TestClient) -> None:
    from tests.api.test_users import _persons_token

    name = publish(client)
    person = expect(client.post("/api/v1/admin/users", json={"email": "ada@example.com", "name": "Ada Lovelace", "role": "admin",
                                                             "password": "correct horse battery staple"}), 201).json()
    token = _persons_token(client.app)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "x"}, headers={"Authorization": f"Bearer {token}"}), 200)
    record = only_call(client, name)
    assert record["caller"]["person"] == person["id"] and record["caller"]["tokenId"]
    assert only_call(client, name, caller=record["caller"]["tokenId"])["id"] == record["id"]


def test_a_call_through_an_oauth_client_names_the_client(client: TestClient) -> None:
    from tests.api import test_oauth as oauth

    name = publish(client)
    app = client.app
    client_id, issued = oauth.tokens_for(app)
    bearer = {**ACCEPT, "Authorization": f"Bearer {issued['access_token']}"}
    opened = client.post("/mcp", headers=bearer, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    assert opened.status_code == 200, opened.text
    session = {**bearer, "Mcp-Session-Id": opened.headers["mcp-session-id"], "Mcp-Protocol-Version": HANDSHAKE}
    client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
    answered = client.post("/mcp", headers=session, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                                         "params": {"name": name, "arguments": {"text": "o"}}})
    assert answered.status_code == 200, answered.text
    record = only_call(client, name)
    assert record["via"] == "mcp" and record["outcome"] == "ok"
    assert record["caller"]["client"] == client_id
    # a static token's call names no client
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "s"}), 200)
    assert calls(client, tool=name)[0]["caller"]["client"] is None


def test_healthz_says_what_the_log_wrote_and_what_a_full_queue_dropped(client: TestClient) -> None:
    name = publish(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "a"}), 200)
    only_call(client, name)  # written
    health = expect(client.get("/healthz"), 200).json()["callLog"]
    assert health["on"] is True and health["written"] >= 1 and health["dropped"] == 0 and health["failed"] == 0
    log = client.app.state.services.toolbox.call_log
    log.capacity = 0  # the queue has no room: each call is counted, never written, never slowed
    try:
        expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "b"}), 200)
        expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "c"}), 200)
    finally:
        log.capacity = 50_000
    assert expect(client.get("/healthz"), 200).json()["callLog"]["dropped"] == 2
    assert len(calls(client, tool=name)) == 1


def test_value_capture_keeps_one_tools_values_redacted_and_capped_once_an_admin_switches_it_on(client: TestClient) -> None:
    secret_value = "sk-live-capture-0123456789abcdef"
    secret_id = unique_id("key")
    expect(client.post("/api/v1/admin/secrets", json={"id": secret_id, "value": secret_value}), 201)
    name = publish(client)
    other = publish(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "before"}), 200)
    assert "captured" not in only_call(client, name)  # off by default
    assert expect(client.get(f"{CALLS}/capture"), 200).json() == []

    switched = expect(client.put(f"{CALLS}/capture/{name}", json={"maxBytes": 64}), 200).json()
    assert switched == {"tool": name, "maxBytes": 64, "capture": True}
    listed = expect(client.get(f"{CALLS}/capture"), 200).json()
    assert [(c["tool"], c["maxBytes"]) for c in listed] == [(name, 64)]
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": f"my key is {secret_value}"}), 200)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "x" * 200}), 200)
    expect(client.post(f"/api/v1/tools/{other}/call", json={"text": "not captured"}), 200)
    long, keyed = calls(client, tool=name)[:2]
    assert keyed["captured"]["arguments"] == json.dumps({"text": "my key is [secret]"}, separators=(",", ":"))
    assert secret_value not in json.dumps(keyed) and "[secret]" in keyed["captured"]["result"]
    assert keyed["argumentsSha256"] == sha({"text": f"my key is {secret_value}"})  # the hash is of what was sent
    assert long["captured"]["argumentsCut"] is True and len(long["captured"]["arguments"].encode()) == 64
    assert long["captured"]["maxBytes"] == 64
    assert "captured" not in only_call(client, other)
    from tests.console.test_console_others import console

    page = expect(console(client, ADMIN_TOKEN).get("/console/calls", params={"tool": name}), 200).text
    assert "Arguments kept" in page and "my key is [secret]" in page and secret_value not in page
    assert "cut at 64 bytes" in page
    # the switch itself is no call: not listed, not counted
    assert len(calls(client, tool=name)) == 3

    expect(client.delete(f"{CALLS}/capture/{name}"), 200)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "after"}), 200)
    assert "captured" not in calls(client, tool=name)[0]
    assert expect(client.get(f"{CALLS}/capture"), 200).json() == []
    # each switch is in the chain, which still verifies
    from domain.calls import verify_calls

    store = client.app.state.services.toolbox.call_log.store
    chain = list(store.chains("default"))
    switches = [r for r in chain if r["via"] == "capture" and r["tool"] == name]
    assert [s["outcome"] for s in switches] == ["capture on (64 bytes)", "capture off"]
    assert verify_calls(chain).intact


def test_value_capture_is_for_a_tool_that_exists_with_a_cap_in_bounds_and_admins_only(client: TestClient) -> None:
    name = publish(client)
    assert client.put(f"{CALLS}/capture/{unique_id('ghost')}", json={"maxBytes": 10}).status_code == 404
    for bad in ({"maxBytes": 0}, {"maxBytes": 10**7}, {"maxBytes": "many"}, {"cap": 5}):
        refused = client.put(f"{CALLS}/capture/{name}", json=bad)
        assert refused.status_code in (400, 422) and ("maxBytes" in refused.text or "cap" in refused.text), refused.text
    assert client.delete(f"{CALLS}/capture/{name}").status_code == 404  # it was not on
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "an auditor", "role": "auditor"}), 201).json()
    auditor = {"Authorization": f"Bearer {issued['token']}"}
    assert client.put(f"{CALLS}/capture/{name}", json={"maxBytes": 10}, headers=auditor).status_code == 403
    assert client.get(f"{CALLS}/capture", headers=auditor).status_code == 200
