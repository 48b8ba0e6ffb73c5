"""POST /test and the tool call route: what an admin and a plan see when code runs."""

from __future__ import annotations

from fastapi.testclient import TestClient

from entrypoints.compose import bootstrap
from infrastructure.settings import Settings
from entrypoints.web import create_app
from tests.helpers import ADMIN_TOKEN, expect, unique_id

BASE = "/api/v1/admin/code-modules"


def test_seed_verification_echo_returns_the_same_object(client: TestClient) -> None:
    # docs/kinds/code-modules.md, verification 1 and 2: create echo, publish it, test {"hello": "world"}
    echo = unique_id("echo")
    source = "exports.run = function (input) { return input; };"
    assert client.post(BASE, json={"id": echo, "description": "echo", "draftContent": source}).status_code == 201
    assert client.post(f"{BASE}/{echo}/publish").status_code == 200
    result = client.post(f"{BASE}/test", json={"id": echo, "draftContent": source, "input": {"hello": "world"}}).json()
    assert result["output"] == {"hello": "world"} and result["error"] is None
    assert result["durationMillis"] >= 0 and result["logs"] == []


def test_test_runs_an_unsaved_draft_with_published_imports_and_shows_logs(client: TestClient) -> None:
    lib = unique_id("lib")
    expect(client.post(BASE, json={"id": lib, "description": "d", "draftContent": "exports.twice = function (x) { return 2 * x; };"}), 201)
    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    source = f"exports.run = function (input) {{ log('doubling ' + input.n); return {lib}.twice(input.n); }};"
    result = client.post(f"{BASE}/test", json={"draftContent": source, "draftImports": [lib], "input": {"n": 21}}).json()
    assert result == {"output": 42, "error": None, "logs": ["doubling 21"], "durationMillis": result["durationMillis"]}
    assert client.get(BASE).json()["total"] == 1  # nothing was saved


def test_errors_are_results_not_failures(client: TestClient) -> None:
    cases = {
        "exports.run = function () { throw new Error('boom'); };": ("runtime", "boom"),
        "exports.run = function () { return ( };": ("syntax", "SyntaxError"),
        "exports.run = function () { while (true) {} };": ("timeout", "100 ms"),
    }
    for source, (kind, words) in cases.items():
        response = client.post(f"{BASE}/test", json={"draftContent": source, "tool": {"timeoutMillis": 100}})
        assert response.status_code == 200, response.text
        error = response.json()["error"]
        assert error["type"] == kind and words in error["message"], error
    assert client.post(f"{BASE}/test", json={"draftContent": "exports.run = () => 'alive';"}).json()["output"] == "alive"


def test_ai_context_names_the_caller_and_never_a_token(client: TestClient) -> None:
    source = "exports.run = function () { return ai.context(); };"
    context = client.post(f"{BASE}/test", json={"draftContent": source}).json()["output"]
    assert context["user"]["id"] == "admin" and context["tenant"] == "default"
    assert ADMIN_TOKEN not in str(context)


def test_a_tool_call_validates_arguments_and_applies_defaults(client: TestClient) -> None:
    tool = unique_id("greet")
    params = [{"name": "name", "required": True}, {"name": "greeting", "default": "Hello"}, {"name": "times", "type": "integer", "default": 1}]
    source = "exports.run = function (i) { return (i.greeting + ' ' + i.name + '! ').repeat(i.times).trim(); };"
    expect(client.post(BASE, json={"id": tool, "description": "greets", "draftContent": source, "tool": {"inputParameters": params}}), 201)
    expect(client.post(f"{BASE}/{tool}/publish"), 200)
    assert client.post(f"/api/v1/tools/{tool}/call", json={"name": "Ada"}).json()["output"] == "Hello Ada!"
    assert client.post(f"/api/v1/tools/{tool}/call", json={"name": "Ada", "times": 2}).json()["output"] == "Hello Ada! Hello Ada!"
    missing = client.post(f"/api/v1/tools/{tool}/call", json={})
    assert missing.status_code == 400 and "'name'" in missing.json()["detail"]
    wrong = client.post(f"/api/v1/tools/{tool}/call", json={"name": "Ada", "times": 3.5})
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["field"] == "input.times"


def test_with_the_sandbox_off_edits_work_but_test_and_publish_are_503(tmp_path) -> None:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, sandbox_url="")
    with TestClient(create_app(bootstrap(settings)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        module = unique_id()
        assert client.post(BASE, json={"id": module, "description": "d", "draftContent": "exports.run = () => 1;"}).status_code == 201
        assert client.put(f"{BASE}/{module}", json={"description": "edited"}).status_code == 200
        for response in (client.post(f"{BASE}/{module}/publish"), client.post(f"{BASE}/test", json={"draftContent": "1"})):
            assert response.status_code == 503
            assert "code-sandbox.url is not configured" in response.json()["detail"]
        assert client.get(f"{BASE}/{module}").json()["state"] == "UNPUBLISHED"


def test_testing_an_unnamed_draft_works_beside_a_module_named_draft(client: TestClient) -> None:
    # a module may be called `draft`; an unnamed draft under test must not stand in for it
    expect(client.post(BASE, json={"id": "base", "description": "d", "draftContent": "exports.word = 'base';"}), 201)
    expect(client.post(f"{BASE}/base/publish"), 200)
    expect(client.post(BASE, json={"id": "draft", "description": "d", "draftContent": "exports.word = base.word + '+draft';", "draftImports": ["base"]}), 201)
    expect(client.post(f"{BASE}/draft/publish"), 200)
    result = client.post(f"{BASE}/test", json={"draftContent": "exports.run = () => draft.word;", "draftImports": ["draft"]}).json()
    assert result["output"] == "base+draft", result
