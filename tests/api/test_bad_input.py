"""Bad input gets a 4xx problem naming what is wrong, never a 500; nothing is written by a refusal."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.helpers import ADMIN_TOKEN, expect, unique_id

BASE = "/api/v1/admin/code-modules"


def assert_problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == code and body["status"] == status
    assert "Traceback" not in response.text
    return body


@pytest.mark.parametrize("raw", ['{"id": "x",', "not json", "[1, 2", '{"id": "x" "description": 1}'])
def test_malformed_json_is_400(client: TestClient, raw: str) -> None:
    response = client.post(BASE, content=raw, headers={"Content-Type": "application/json"})
    assert_problem(response, 400, "malformed-json")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"id": 12, "description": "d", "draftContent": ""}, "id"),
        ({"id": "a", "description": ["d"], "draftContent": ""}, "description"),
        ({"id": "a", "description": "d", "draftContent": None}, "draftContent"),
        ({"id": "a", "description": "d", "draftContent": "", "draftImports": "lib"}, "draftImports"),
        ({"id": "a", "description": "d", "draftContent": "", "tool": {"timeoutMillis": "3000"}}, "tool.timeoutMillis"),
        ({"id": "a", "description": "d", "draftContent": "", "tool": {"exposeInChat": "yes"}}, "tool.exposeInChat"),
        ({"id": "a", "description": "d", "draftContent": "", "tool": {"inputParameters": [{"required": True}]}}, "tool.inputParameters.0.name"),
        ({"description": "d", "draftContent": ""}, "id"),
    ],
)
def test_wrong_types_and_missing_fields_are_400_naming_the_field(client: TestClient, body: dict, field: str) -> None:
    problem = assert_problem(client.post(BASE, json=body), 400, "invalid-request")
    assert any(error["field"] == field for error in problem["errors"]), problem


def test_unknown_fields_are_refused(client: TestClient) -> None:
    body = {"id": unique_id(), "description": "d", "draftContent": "", "allowedDomains": ["example.com"]}
    problem = assert_problem(client.post(BASE, json=body), 400, "invalid-request")
    assert problem["errors"][0]["field"] == "allowedDomains"
    tool = {"id": unique_id(), "description": "d", "draftContent": "", "tool": {"timeout": 5}}
    assert_problem(client.post(BASE, json=tool), 400, "invalid-request")
    assert client.get(BASE).json()["total"] == 0


def test_a_huge_body_is_413_and_the_service_keeps_serving(client: TestClient) -> None:
    huge = '{"id": "big", "description": "' + "x" * (3 * 1024 * 1024) + '", "draftContent": ""}'
    assert_problem(client.post(BASE, content=huge, headers={"Content-Type": "application/json"}), 413, "body-too-large")

    def chunks():
        for _ in range(64):
            yield b"x" * 65536

    # no Content-Length: the limit holds while the body streams in
    assert_problem(client.post(BASE, content=chunks(), headers={"Content-Type": "application/json"}), 413, "body-too-large")
    assert client.get(BASE).status_code == 200


def test_bad_list_queries_are_400(client: TestClient) -> None:
    for params in ({"limit": 101}, {"limit": 0}, {"offset": -1}, {"orderBy": "code"}, {"state": "GONE"}, {"tool": "maybe"}):
        assert_problem(client.get(BASE, params=params), 400, "invalid-request")


def test_a_missing_or_wrong_token_is_401_and_health_needs_none(client: TestClient) -> None:
    for headers in ({"Authorization": ""}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}):
        response = client.get(BASE, headers=headers)
        body = assert_problem(response, 401, "http-error")
        assert response.headers["www-authenticate"] == "Bearer"
        assert ADMIN_TOKEN not in str(body)
    assert client.get("/healthz", headers={"Authorization": ""}).status_code == 200
    assert client.get("/openapi.json", headers={"Authorization": ""}).status_code == 200


def test_unknown_routes_and_methods_are_problems(client: TestClient) -> None:
    assert_problem(client.get("/api/v1/nowhere"), 404, "not-found")
    assert_problem(client.patch(f"{BASE}/x", json={}), 405, "method-not-allowed")


def test_test_route_refuses_bad_definitions_without_running_them(client: TestClient) -> None:
    response = client.post(f"{BASE}/test", json={"draftContent": "x" * 262_145})
    assert_problem(response, 400, "invalid-module")
    response = client.post(f"{BASE}/test", json={"draftContent": "exports.run = () => 1;", "draftImports": ["nowhere"]})
    assert_problem(response, 400, "invalid-import")
    response = client.post(
        f"{BASE}/test",
        json={"draftContent": "exports.run = (i) => i.text;", "tool": {"inputParameters": [{"name": "text", "required": True}]}, "input": {}},
    )
    body = assert_problem(response, 400, "invalid-input")
    assert body["errors"][0]["field"] == "input.text"


def test_calling_what_is_not_a_published_enabled_tool_is_404(client: TestClient) -> None:
    library = unique_id()
    expect(client.post(BASE, json={"id": library, "description": "d", "draftContent": "exports.x = 1;"}), 201)
    assert_problem(client.post(f"/api/v1/tools/{library}/call", json={}), 404, "tool-not-found")
    expect(client.post(f"{BASE}/{library}/publish"), 200)
    assert_problem(client.post(f"/api/v1/tools/{library}/call", json={}), 404, "tool-not-found")
    disabled = unique_id()
    expect(client.post(BASE, json={"id": disabled, "description": "d", "draftContent": "exports.run = () => 1;", "tool": {"enabled": False}}), 201)
    expect(client.post(f"{BASE}/{disabled}/publish"), 200)
    assert_problem(client.post(f"/api/v1/tools/{disabled}/call", json={}), 404, "tool-not-found")
    assert_problem(client.post("/api/v1/tools/nowhere/call", json={}), 404, "tool-not-found")


def test_a_source_with_a_nul_character_is_refused_at_save_and_in_test(client: TestClient) -> None:
    body = {"id": unique_id(), "description": "d", "draftContent": "exports.run = () => 'a\u0000b';"}
    problem = assert_problem(client.post(BASE, json=body), 400, "invalid-module")
    assert problem["errors"][0]["field"] == "draftContent" and problem["errors"][0]["rule"] == "R4"
    assert_problem(client.post(f"{BASE}/test", json={"draftContent": body["draftContent"]}), 400, "invalid-module")
    # written as an escape inside a string, it runs
    escaped = client.post(f"{BASE}/test", json={"draftContent": "exports.run = () => 'a\\u0000b'.length;"}).json()
    assert escaped["output"] == 3


def test_a_draft_source_set_to_null_beside_a_tool_section_is_refused_naming_the_source(client: TestClient) -> None:
    """PUT's `draftContent: null` is a source that is no text: its rule names it (the tool section's
    hints read the source for `http`, which was a 500 the fuzzer found); the module is unchanged."""
    module_id = unique_id()
    expect(client.post(BASE, json={"id": module_id, "description": "d", "draftContent": "exports.run = () => 1;"}), 201)
    before = client.get(f"{BASE}/{module_id}").json()
    problem = assert_problem(client.put(f"{BASE}/{module_id}", json={"draftContent": None, "description": None, "tool": {}}),
                             400, "invalid-module")
    assert any(error["field"] == "draftContent" for error in problem["errors"]), problem
    after = client.get(f"{BASE}/{module_id}").json()
    assert after == before
