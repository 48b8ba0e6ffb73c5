"""Issue 12 at the HTTP edge: deep bodies, lone surrogates, bad URLs, two Authorization headers,
HEAD on every GET route, checked results, and plans that run with their caller's permissions."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from domain.values import MAX_DEPTH
from infrastructure.settings import Settings
from tests.api.test_bad_input import assert_problem
from tests.api.test_catalog import as_token, caller
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, expect, unique_id

MODULES = "/api/v1/admin/code-modules"
PLANS = "/api/v1/admin/plans"
TOOLS = "/api/v1/admin/tools"


def nested(levels: int, inner: str = "0") -> str:
    """JSON text of `levels` arrays nested in one another."""
    return "[" * levels + inner + "]" * levels


def post_raw(client: TestClient, path: str, text: str, method: str = "POST") -> Any:
    return client.request(method, path, content=text.encode(), headers={"Content-Type": "application/json"})


def module(client: TestClient, source: str, *, params: list[dict[str, Any]] = (), tags: list[str] = (), name: str | None = None) -> str:  # type: ignore[assignment]
    name = name or unique_id("edge")
    body = {"id": name, "description": "d", "draftContent": source,
            "tool": {"inputParameters": list(params), "tags": list(tags), "exposeInChat": True}}
    expect(client.post(MODULES, json=body), 201)
    expect(client.post(f"{MODULES}/{name}/publish"), 200)
    return name


# -- depth ----------------------------------------------------------------------------------------


def _json_routes(client: TestClient) -> Iterator[tuple[str, str]]:
    """Every (method, path) of the OpenAPI document that takes a JSON body, path parameters filled."""
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        for method, operation in operations.items():
            if "application/json" in operation.get("requestBody", {}).get("content", {}):
                yield method.upper(), re.sub(r"\{[^}]+\}", "x", path)


def test_a_body_nested_deeper_than_the_limit_is_400_on_every_json_route(client: TestClient) -> None:
    routes = list(_json_routes(client))
    assert len(routes) >= 15, routes
    for method, path in routes:
        for levels in (MAX_DEPTH + 1, 500, 100_000):
            problem = assert_problem(post_raw(client, path, '{"id": "a", "x": ' + nested(levels) + "}", method), 400, "body-too-deep")
            # the field it happens in, by its first keys and indexes on the way down
            assert problem["errors"] == [{"field": "x[0][0][0]", "rule": "max-depth", "message": f"nested more than {MAX_DEPTH} levels deep"}]
            assert str(MAX_DEPTH) in problem["detail"] and "(at x[0][0][0]…)" in problem["detail"]
    # brackets inside strings are text, not nesting; at the limit a body is read as usual
    text = json.dumps({"id": unique_id(), "description": "[" * 500, "draftContent": ""})
    assert post_raw(client, MODULES, text).status_code == 201
    at_limit = assert_problem(post_raw(client, f"{MODULES}/test", '{"x": ' + nested(MAX_DEPTH - 1) + "}"), 400, "invalid-request")
    assert any(error["field"] == "x" for error in at_limit["errors"]), at_limit
    assert client.get(MODULES).status_code == 200


def test_a_deep_parameter_default_and_a_deep_argument_are_400_and_nothing_is_written(client: TestClient) -> None:
    name = unique_id("deep")
    parameter = '{"name": "p", "type": "object", "required": false, "default": ' + nested(500, "{}") + "}"
    create = '{"id": "' + name + '", "description": "d", "draftContent": "", "tool": {"inputParameters": [' + parameter + "]}}"
    assert_problem(post_raw(client, MODULES, create), 400, "body-too-deep")
    assert client.get(f"{MODULES}/{name}").status_code == 404
    echo = module(client, "exports.run = function (i) { return i; };", params=[{"name": "v", "type": "object", "required": False}])
    assert_problem(post_raw(client, f"/api/v1/tools/{echo}/call", '{"v": ' + nested(300) + "}"), 400, "body-too-deep")
    assert client.post(f"/api/v1/tools/{echo}/call", json={"v": {"a": 1}}).json()["output"] == {"v": {"a": 1}}


# -- lone surrogates ------------------------------------------------------------------------------


def test_a_lone_surrogate_in_any_field_is_400_naming_it_and_nothing_is_written(client: TestClient) -> None:
    name = module(client, "exports.run = function (i) { return 1; };")
    before = expect(client.get(f"{MODULES}/{name}"), 200)
    bad = "a\ud800b"  # json.dumps writes it as the escape \ud800
    cases = [
        ("POST", MODULES, {"id": unique_id(), "description": bad, "draftContent": ""}, "description"),
        ("PUT", f"{MODULES}/{name}", {"description": bad}, "description"),
        ("PUT", f"{MODULES}/{name}", {"tool": {"tags": ["ok", bad]}}, "tool.tags[1]"),
        ("PUT", f"{MODULES}/{name}", {"draftContent": f"exports.run = () => '{bad}';"}, "draftContent"),
        ("POST", PLANS, {"id": unique_id("p"), "description": bad, "nodes": [{"toolName": name}]}, "description"),
        ("POST", "/api/v1/admin/agents", {"id": unique_id("a"), "description": bad}, "description"),
        ("POST", "/api/v1/admin/tokens", {"name": bad, "role": "auditor"}, "name"),
        ("POST", f"/api/v1/tools/{name}/call", {"\udc00": 1}, "\\udc00"),
        ("POST", f"/api/v1/tools/{name}/call", {"nested": {"list": [1, "\udfff"]}}, "nested.list[1]"),
    ]
    for method, path, body, field in cases:
        problem = assert_problem(post_raw(client, path, json.dumps(body), method), 400, "lone-surrogate")
        assert problem["errors"][0]["field"] == field and problem["errors"][0]["rule"] == "lone-surrogate", problem
    # the same surrogate as raw UTF-8 bytes (ED A0 80) is refused too
    raw = b'{"description": "\xed\xa0\x80"}'
    assert_problem(client.put(f"{MODULES}/{name}", content=raw, headers={"Content-Type": "application/json"}), 400, "lone-surrogate")
    after = client.get(f"{MODULES}/{name}")
    assert after.json() == before.json() and after.headers["etag"] == before.headers["etag"]
    assert all("\ufffd" not in t["name"] for t in client.get("/api/v1/admin/tokens").json())
    # a pair of surrogates is one character, and an escaped backslash is not an escape
    fine = client.put(f"{MODULES}/{name}", json={"description": "\U0001F600 \\ud800"})
    assert fine.status_code == 200 and fine.json()["description"] == "\U0001F600 \\ud800"


def test_query_strings_and_paths_with_nul_or_bad_utf8_are_400(client: TestClient) -> None:
    name = module(client, "exports.run = function () { return 1; };")
    for url in (f"{MODULES}/%ED%A0%80", f"{MODULES}/a%00b", f"{MODULES}/%FF", f"{MODULES}?search=%ED%A0%80",
                f"{MODULES}?search=a%00", f"{TOOLS}?tag=%00", f"{MODULES}/{name}?asOf=%ED%A0%80", f"{MODULES}/availability?id=%C0"):
        problem = assert_problem(client.get(url), 400, "invalid-url")
        assert ("path" in problem["detail"]) == ("?" not in url), (url, problem)
    assert_problem(client.post(f"/api/v1/tools/{name}%00/call", json={}), 400, "invalid-url")
    # a well-formed non-ASCII query is fine
    assert client.get(MODULES, params={"search": "café \U0001F600"}).status_code == 200


# -- Authorization and HEAD -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ('{"a": 1}'.encode("utf-16"), "malformed-json", "not UTF-8"),  # Python's reader would guess UTF-16
        ('{"a": 1}'.encode("utf-16-le"), "malformed-json", "not valid JSON"),  # no BOM: NULs between the bytes
        (b'\xef\xbb\xbf{"a": 1}', "malformed-json", "byte order mark"),
        (b'{"a": 1, "a": 2}', "duplicate-key", '"a" appears twice'),
        (b'{"a": {"b": 1, "b": 1}}', "duplicate-key", '"b" appears twice'),
        (b'{"a": NaN}', "malformed-json", "NaN"),
        (b'{"a": -Infinity}', "malformed-json", "-Infinity"),
        (b'{"a": 1e999}', "malformed-json", "too large"),
        (b'{"a": ' + b"9" * 5000 + b"}", "malformed-json", "not valid JSON"),
    ],
)
def test_a_body_python_reads_but_rfc_8259_does_not_is_400_and_nothing_is_written(client: TestClient, body: bytes, code: str, words: str) -> None:
    name = module(client, "exports.run = function (i) { return i; };")
    before = expect(client.get(f"{MODULES}/{name}"), 200)
    for method, path in (("PUT", f"{MODULES}/{name}"), ("POST", f"/api/v1/tools/{name}/call"), ("POST", PLANS)):
        response = client.request(method, path, content=body, headers={"Content-Type": "application/json"})
        problem = assert_problem(response, 400, code)
        assert words in problem["detail"], problem
    after = client.get(f"{MODULES}/{name}")
    assert after.json() == before.json() and after.headers["etag"] == before.headers["etag"]


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"])
def test_a_body_not_declared_as_json_is_415_on_every_route_that_takes_one(client: TestClient, content_type: str | None) -> None:
    name = module(client, "exports.run = function (i) { return i; };")
    headers = {"Content-Type": content_type} if content_type else {}
    for method, path in (("POST", MODULES), ("PUT", f"{MODULES}/{name}"), ("POST", f"/api/v1/tools/{name}/call"), ("POST", PLANS)):
        response = client.request(method, path, content=b'{"a": 1}', headers=headers)
        assert_problem(response, 415, "unsupported-media-type")
    # an empty body (publish takes none) needs no type
    assert client.put(f"{MODULES}/{name}", json={"draftContent": "exports.run = function () { return 2; };"}).status_code == 200
    assert client.post(f"{MODULES}/{name}/publish", headers=headers).status_code == 200


def test_a_tool_call_takes_a_json_object_of_arguments_even_when_the_tool_declares_none(client: TestClient) -> None:
    name = module(client, "exports.run = function (i) { return i === undefined ? null : i; };")
    for body in ('"a string"', "[1, 2]", "3", "true"):
        problem = assert_problem(post_raw(client, f"/api/v1/tools/{name}/call", body), 400, "invalid-input")
        assert "must be a JSON object" in problem["detail"]
    # the tool declares no parameters: its schema is closed, so an argument is an unknown one
    problem = assert_problem(client.post(f"/api/v1/tools/{name}/call", json={"a": 1}), 400, "invalid-input")
    assert [e["field"] for e in problem["errors"]] == ["input.a"]
    assert client.post(f"/api/v1/tools/{name}/call", json={}).json()["output"] == {}
    assert client.post(f"/api/v1/tools/{name}/call").json()["output"] is None  # no body: no arguments


def test_two_authorization_headers_are_400_on_rest_and_mcp(client: TestClient) -> None:
    good = ("Authorization", f"Bearer {ADMIN_TOKEN}")
    for second in (good, ("Authorization", "Bearer tsa_someone-else"), ("authorization", "Basic abc")):
        for method, path in (("GET", MODULES), ("POST", "/mcp")):
            response = client.request(method, path, headers=[good, second, ("Content-Type", "application/json"),
                                                              ("Accept", "application/json, text/event-stream")], content=b"{}")
            problem = assert_problem(response, 400, "duplicate-authorization")
            assert "2 Authorization headers" in problem["detail"]
            assert ADMIN_TOKEN not in response.text
    assert client.get(MODULES).status_code == 200


def test_head_answers_every_get_route_as_get_does_without_a_body(client: TestClient) -> None:
    name = module(client, "exports.run = function () { return 1; };")
    filled = {"id": name, "version": "1", "name": name}
    assert client.post(PLANS, json={"id": name + "_plan", "description": "p", "nodes": [{"toolName": name}]}).status_code == 201
    assert client.post("/api/v1/admin/secrets", json={"id": name, "value": "v"}).status_code == 201
    api_tool = {"id": name + "_api", "description": "an API URL tool", "urlTemplate": "https://api.example.invalid/v1"}
    assert client.post("/api/v1/admin/api-tools", json=api_tool).status_code == 201
    search_tool = {"id": name + "_fs", "description": "a File Search tool"}
    assert client.post("/api/v1/admin/search-tools", json=search_tool).status_code == 201
    uploaded = client.post(f"/api/v1/admin/search-tools/{name}_fs/documents", files=[("files", ("a.txt", b"some text"))])
    assert uploaded.status_code == 202, uploaded.text
    filled["docId"] = uploaded.json()["documents"][0]["id"]
    _kind_of(client).wait_idle(30)  # GET and HEAD must see one state of the document
    assert client.post(MODULES, json={"id": name + "_cs", "description": "c", "draftContent": "exports.x = 1;"}).status_code == 201
    changeset = client.post(f"{MODULES}/publish", json={"ids": [name + "_cs"]})
    assert changeset.status_code == 200, changeset.text
    prompt = {"id": name + "_prompt", "description": "p", "messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}]}
    resource = {"id": name + "_res", "description": "r", "uri": "memo://edge", "mimeType": "text/plain", "text": "hello"}
    for collection, body in (("/api/v1/admin/prompts", prompt), ("/api/v1/admin/resources", resource)):
        assert client.post(collection, json=body).status_code == 201
        assert client.post(f"{collection}/{body['id']}/publish", json={}).status_code == 200
    person = client.post("/api/v1/admin/users", json={"email": f"{name}@example.com", "name": "Edge", "role": "auditor"})
    assert person.status_code == 201, person.text
    # /healthz tells the read model's lag: let it catch up first, so that GET and HEAD see one state.
    deadline = time.monotonic() + 10
    while client.get("/healthz").json()["readModel"]["lag"] and time.monotonic() < deadline:
        time.sleep(0.01)
    client.post(f"/api/v1/tools/{name}/call", json={})  # a record of the call log (docs/calls.md), answered or refused
    call = client.get("/api/v1/admin/calls", params={"tool": name}).json()[0]
    ok, missed = 0, []
    paths = [p for p, ops in client.get("/openapi.json").json()["paths"].items() if "get" in ops]
    assert len(paths) >= 15, paths
    for path in paths:
        url = re.sub(r"\{([^}]+)\}", lambda m: filled.get(m.group(1), name), path)
        if url.startswith(PLANS + "/"):
            url = url.replace(name, name + "_plan", 1)
        if url.startswith("/api/v1/admin/api-tools/"):
            url = url.replace(name, name + "_api", 1)
        if url.startswith("/api/v1/admin/search-tools/"):
            url = url.replace(name, name + "_fs", 1)
        if url.startswith("/api/v1/admin/users/"):
            url = url.replace(name, person.json()["id"], 1)
        if url.startswith("/api/v1/admin/prompts/"):
            url = url.replace(name, name + "_prompt", 1)
        if url.startswith("/api/v1/admin/resources/"):
            url = url.replace(name, name + "_res", 1)
        if url.startswith("/api/v1/admin/calls/"):
            url = url.replace(name, call["id"], 1)
        if url.startswith("/api/v1/admin/changesets/"):
            url = url.replace(name, changeset.json()["id"], 1)
        if url.startswith("/api/v1/operator/"):  # the operator's routes (docs/tenants.md), with its token
            url = url.replace(name, "default", 1)
            headers = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
        else:
            headers = {}
        got, head = client.get(url, headers=headers), client.head(url, headers=headers)
        assert head.status_code == got.status_code, (url, got.status_code, head.status_code)
        assert head.content == b"", url
        assert dict(head.headers) == dict(got.headers), url
        ok += got.status_code == 200
        if got.status_code != 200:
            missed.append(f"{url} {got.status_code}")
    assert ok >= len(paths) - 3, missed  # a few need what this test did not create (an agent, a server, a profile)
    for url in ("/healthz", "/openapi.json", "/api/v1/nowhere"):
        assert client.head(url).status_code == client.get(url).status_code
    assert_problem(client.patch(f"{MODULES}/x", json={}), 405, "method-not-allowed")


# -- results --------------------------------------------------------------------------------------


@pytest.fixture
def native(settings: Settings, shared_sandbox: object, tmp_path: Path) -> Iterator[TestClient]:
    """The admin's client of an app whose tools file declares the sample native tools."""
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps({"native": [
        {"name": "nested", "description": "Nests arrays", "entrypoint": "tests.native_tools:nested", "tags": ["deep"]},
        {"name": "surrogates", "description": "Lone surrogates", "entrypoint": "tests.native_tools:lone_surrogates"},
        {"name": "add", "description": "Adds", "entrypoint": "tests.native_tools:add", "tags": ["math"]},
    ]}))
    app = create_app(wire(settings.model_copy(update={"tools_file": tools_file}), shared_sandbox))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def test_a_native_tool_result_deeper_than_the_limit_is_a_result_error(native: TestClient) -> None:
    assert native.post("/api/v1/tools/nested/call", json={"levels": MAX_DEPTH}).json()["error"] is None
    for levels in (MAX_DEPTH + 1, 300, 5000):
        answer = native.post("/api/v1/tools/nested/call", json={"levels": levels})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["output"] is None and body["error"]["type"] == "result"
        assert f"more than {MAX_DEPTH} levels" in body["error"]["message"]
    # in a plan, the node that answered it is named
    plan = {"id": "deep_plan", "description": "p", "nodes": [{"toolName": "nested"}], "exposeAsTool": True}
    assert native.post(PLANS, json=plan).status_code == 201
    run = native.post("/api/v1/tools/deep_plan/call", json={"levels": 300}).json()
    assert run["error"]["type"] == "result" and run["error"]["message"].startswith("node 1 (nested): ")
    assert native.get(MODULES).status_code == 200


def test_a_native_tool_result_with_lone_surrogates_comes_back_with_u_fffd(native: TestClient) -> None:
    answer = native.post("/api/v1/tools/surrogates/call", json={})
    assert answer.status_code == 200, answer.text
    assert answer.json()["output"] == {"text": "a\ufffdb", "\ufffdkey": ["\ufffd"]}


def test_code_results_are_checked_for_depth_and_surrogates(client: TestClient) -> None:
    deep = module(client, "exports.run = function (i) { let v = 0; for (let k = 0; k < i.n; k++) v = [v]; return v; };",
                  params=[{"name": "n", "type": "integer", "required": True}])
    assert client.post(f"/api/v1/tools/{deep}/call", json={"n": MAX_DEPTH}).json()["error"] is None
    for n in (MAX_DEPTH + 1, 300):
        body = client.post(f"/api/v1/tools/{deep}/call", json={"n": n}).json()
        assert body["error"]["type"] == "result" and body["output"] is None, n
    odd = module(client, "exports.run = function () { log('x\\ud800'); return {s: 'a\\udfffb'}; };")
    body = client.post(f"/api/v1/tools/{odd}/call", json={}).json()
    assert body["output"] == {"s": "a\ufffdb"} and body["logs"] == ["x\ufffd"]
    # the editor's test run too
    tried = client.post(f"{MODULES}/test", json={"draftContent": "exports.run = () => { let v = 0; for (let k = 0; k < 300; k++) v = [v]; return v; };"})
    assert tried.status_code == 200 and tried.json()["error"]["type"] == "result"
    thrown = client.post(f"{MODULES}/test", json={"draftContent": "exports.run = () => { throw new Error('\\ud800'); };"})
    assert thrown.status_code == 200 and "\ufffd" in thrown.json()["error"]["message"]


# -- plans run with the caller's permissions ------------------------------------------------------


def test_a_plan_runs_with_its_callers_permissions(native: TestClient) -> None:
    secret = module(native, "exports.run = function (i) { return 'secret ' + JSON.stringify(i); };")
    plan = {"id": "leaky", "description": "add, then the secret", "nodes": [{"toolName": "add"}, {"toolName": secret}],
            "exposeAsTool": True, "exposeInChat": True}
    assert native.post(PLANS, json=plan).status_code == 201
    outer = {"id": "outer", "description": "the plan in a plan", "nodes": [{"toolName": "leaky"}], "exposeAsTool": True}
    assert native.post(PLANS, json=outer).status_code == 201

    catalog = {(t["name"], t["callType"]): t for t in native.get(TOOLS).json()}
    assert catalog[("leaky", "PLAN")]["runsWith"] == "caller"
    assert catalog[(secret, "CODE")]["runsWith"] is None and catalog[("add", "LOCAL")]["runsWith"] is None

    # the admin may use every tool, so the plan runs
    assert native.post("/api/v1/tools/leaky/call", json={"a": 1}).json()["output"] == "secret 3"

    # a caller allowed the plan and `add`, not the secret: refused before anything runs, naming the node
    limited = caller(native, tools=["leaky", "outer"], tags=["math"])
    assert limited.post("/api/v1/tools/add/call", json={"a": 1}).json()["output"] == 3
    direct = assert_problem(limited.post(f"/api/v1/tools/{secret}/call", json={}), 404, "tool-not-found")
    refused = assert_problem(limited.post("/api/v1/tools/leaky/call", json={"a": 1}), 404, "tool-not-found")
    assert f"node 2 ({secret}) is not allowed for this caller (R14)" in refused["detail"]
    assert "not allowed for this caller (R14)" in direct["detail"]
    nested_refusal = assert_problem(limited.post("/api/v1/tools/outer/call", json={"a": 1}), 404, "tool-not-found")
    assert f"node 1 (leaky) > node 2 ({secret})" in nested_refusal["detail"]

    # allowed every node, the caller runs it
    everything = caller(native, tools=["leaky", secret, "add"])
    assert everything.post("/api/v1/tools/leaky/call", json={"a": 1}).json()["output"] == "secret 3"
    assert as_token(native, ADMIN_TOKEN).get(TOOLS).status_code == 200


def test_mcp_bodies_pass_the_same_checks(client: TestClient) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {"\ud800": 1}}}
    # refused as JSON-RPC errors, whose message MCP clients show (the problem rides in `data`)
    refused = client.post("/mcp", content=json.dumps(call).encode(), headers=headers)
    assert refused.status_code == 400 and refused.headers["content-type"] == "application/json"
    error = refused.json()["error"]
    assert error["code"] == -32600 and error["message"].startswith("lone-surrogate: params.arguments.\\ud800")
    assert error["data"]["errors"][0]["field"] == "params.arguments.\\ud800"
    deep = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {"v": ' + nested(300) + "}}}"
    refused = client.post("/mcp", content=deep.encode(), headers=headers)
    assert refused.status_code == 400 and refused.json()["error"]["data"]["code"] == "body-too-deep"
    refused = client.post("/mcp", content=b'{"jsonrpc": "2.0", "id": 1, "method": NaN}', headers=headers)
    assert refused.status_code == 400 and refused.json()["error"]["code"] == -32700


def _kind_of(client: TestClient) -> Any:
    from toolkinds.search_tools.kind import SearchToolKind

    return client.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]
