"""Richer results and a tool's own JSON Schemas (issue 33, points 3 and 4): a code module returns MCP
content (`ai.content.*`, `ai.result`), an `outputSchema` checks its structured value, and an
`inputSchema` (JSON Schema 2020-12) takes the place of typed parameters; over REST and MCP, in
both eras (the session's and 2026-07-28's)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.test_mcp_direct import ACCEPT, MODERN_META, call, client, headers, modern_call, open_session  # noqa: F401
from tests.helpers import expect, unique_id

BASE = "/api/v1/admin/code-modules"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
ADDRESS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string", "minLength": 1}},
                          "required": ["city"]}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "kind": {"enum": ["home", "work"]}, "email": {"type": "string", "format": "email"},
                   "contact": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
    "required": ["name"],
    "additionalProperties": False,
}
TOTAL_SCHEMA = {"type": "object", "properties": {"total": {"type": "integer"}, "items": {"type": "array", "items": {"type": "string"}}},
                "required": ["total"]}


def publish(client: TestClient, source: str, tool: dict[str, Any] | None = None, name: str | None = None) -> str:
    name = name or unique_id("rich")
    section = {"exposeInChat": True, **(tool or {})}
    expect(client.post(BASE, json={"id": name, "description": "A rich tool.", "draftContent": source, "tool": section}), 201)
    expect(client.post(f"{BASE}/{name}/publish"), 200)
    return name


def rest_call(client: TestClient, name: str, arguments: Any = None) -> Any:
    answer = client.post(f"/api/v1/tools/{name}/call", json=arguments if arguments is not None else {})
    return answer


def tools_list(client: TestClient, session: str) -> dict[str, Any]:
    listed = client.post("/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, headers=headers(session))
    assert listed.status_code == 200, listed.text
    body = listed.text
    if body.startswith("event:") or "data:" in body[:20]:
        body = next(line[5:] for line in body.splitlines() if line.startswith("data:"))
    return {tool["name"]: tool for tool in json.loads(body)["result"]["tools"]}


def result_of(answer: Any) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    text = answer.text
    if "data:" in text[:20] or text.startswith("event:"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    return json.loads(text)["result"]


# -- content ---------------------------------------------------------------------------------------


MIXED = (f"var PNG = {json.dumps(PNG)};\n"
         "exports.run = function () { return [ai.content.text('three things'), ai.content.image(PNG, 'image/png'),"
         " ai.content.audio('UklGRg==', 'audio/wav'),"
         " ai.content.resource('test://doc', {mimeType: 'application/json', text: '{\"a\":1}'}),"
         " ai.content.resource('test://bin', {blob: 'AAEC'}),"
         " ai.content.link('test://far', {name: 'far', description: 'a document elsewhere', mimeType: 'text/plain'})]; };")
MIXED_CONTENT = [
    {"type": "text", "text": "three things"},
    {"type": "image", "data": PNG, "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    {"type": "resource", "resource": {"uri": "test://doc", "mimeType": "application/json", "text": '{"a":1}'}},
    {"type": "resource", "resource": {"uri": "test://bin", "blob": "AAEC"}},
    {"type": "resource_link", "uri": "test://far", "name": "far", "description": "a document elsewhere", "mimeType": "text/plain"},
]


def test_a_module_returns_mcp_content_in_any_mix_over_rest_and_both_mcp_eras(client: TestClient) -> None:
    name = publish(client, MIXED)
    rest = rest_call(client, name).json()
    assert rest["error"] is None and rest["output"] is None
    assert rest["content"] == MIXED_CONTENT
    session = open_session(client)
    for answer in (call(client, session, name, {}), modern_call(client, name, {})):
        result = result_of(answer)
        assert result["isError"] is False and result["content"] == MIXED_CONTENT
        assert "structuredContent" not in result
    # the decoded image is the PNG it was
    assert base64.b64decode(rest["content"][1]["data"]).startswith(b"\x89PNG")


def test_a_plain_return_value_is_answered_as_before(client: TestClient) -> None:
    name = publish(client, "exports.run = function () { return {a: 1}; };")
    answer = rest_call(client, name)
    assert answer.json() == {"output": {"a": 1}, "error": None, "logs": [], "durationMillis": answer.json()["durationMillis"]}
    result = result_of(call(client, open_session(client), name, {}))
    assert result["content"] == [{"type": "text", "text": '{"a":1}'}] and result["structuredContent"] == {"a": 1}


def test_ai_result_carries_content_and_a_structured_value(client: TestClient) -> None:
    name = publish(client, "exports.run = function () { return ai.result([ai.content.text('2 items')], {total: 2, items: ['a', 'b']}); };",
                   {"outputSchema": TOTAL_SCHEMA})
    rest = rest_call(client, name).json()
    assert rest["output"] == {"total": 2, "items": ["a", "b"]} and rest["content"] == [{"type": "text", "text": "2 items"}]
    result = result_of(modern_call(client, name, {}))
    assert result["structuredContent"] == {"total": 2, "items": ["a", "b"]}
    assert result["content"] == [{"type": "text", "text": "2 items"}]


def test_a_30_mb_image_is_a_clear_error_and_the_service_keeps_serving(client: TestClient) -> None:
    name = publish(client, "exports.run = function () { return ai.content.image('A'.repeat(30 * 1024 * 1024), 'image/png'); };",
                   {"memoryLimitMb": 256})
    error = rest_call(client, name).json()["error"]
    assert error["type"] == "runtime" and "ai.content.image" in error["message"] and "at most 6291456 (about 4.5 MiB)" in error["message"]
    # built by hand past the helper: the sandbox's cap on a result refuses 30 MB, the toolbox's own check 7 MB
    forged = publish(client, "exports.run = function (i) { return {$mcp: 'image', mimeType: 'image/png', data: 'A'.repeat(i.mb * 1024 * 1024)}; };",
                     {"memoryLimitMb": 256, "inputParameters": [{"name": "mb", "type": "integer", "required": True}]})
    error = rest_call(client, forged, {"mb": 30}).json()["error"]
    assert error == {"type": "result", "message": "the result is larger than 8388608 characters of JSON"}
    error = rest_call(client, forged, {"mb": 7}).json()["error"]
    assert error["type"] == "result" and "content[0].data" in error["message"] and "6,291,456" in error["message"]
    result = result_of(call(client, open_session(client), forged, {"mb": 7}))
    assert result["isError"] is True and "content[0].data" in result["content"][0]["text"]
    alive = publish(client, "exports.run = function () { return 'alive'; };")
    assert rest_call(client, alive).json()["output"] == "alive"


@pytest.mark.parametrize(("source", "says"), [
    ("return ai.content.image(1, 'image/png')", "ai.content.image(data, mimeType): data must be a string"),
    ("return {$mcp: 'image', data: 'not base64!', mimeType: 'image/png'}", "content[0].data is not base64"),
    ("return ai.content.image('AAAA', 'text/plain')", "content[0].mimeType: an image's media type is image/"),
    ("return [ai.content.text('a'), {b: 1}]", "content[1] is not a content item"),
    ("return ai.content.resource('test://x', {})", "exactly one of text or blob"),
    ("return ai.content.resource('no uri', {text: 't'})", "content[0].uri must be an absolute URI"),
    ("return ai.content.link('test://x', {})", "content[0].name: a resource link needs a name"),
    ("return {$mcp: 'video', data: 'AAAA'}", "'video' is not a kind of content"),
])
def test_content_that_mcp_cannot_carry_is_an_error_naming_the_item(client: TestClient, source: str, says: str) -> None:
    answer = client.post(f"{BASE}/test", json={"draftContent": f"exports.run = function () {{ {source}; }};"})
    assert answer.status_code == 200, answer.text
    assert says in answer.json()["error"]["message"]


def test_the_content_helpers_need_no_host_call(client: TestClient) -> None:
    # a module naming `ai` but never its context gets the helpers alone: no host function is set up
    answer = client.post(f"{BASE}/test", json={"draftContent": "exports.run = function () { return Object.keys(ai).join(); };"})
    assert answer.json()["output"] == "content,result"
    answer = client.post(f"{BASE}/test", json={"draftContent": "exports.run = function () { return Object.keys(ai).join() + ' ' + typeof ai.context(); };"})
    assert answer.json()["output"] == "context,content,result object"


# -- outputSchema ----------------------------------------------------------------------------------


def test_an_output_schema_is_listed_checked_and_sent_as_structured_content(client: TestClient) -> None:
    name = publish(client, "exports.run = function (input) { return input.bad ? {total: 'many', items: [1]} : {total: 3, items: ['a']}; };",
                   {"outputSchema": TOTAL_SCHEMA, "inputParameters": [{"name": "bad", "type": "boolean"}]})
    session = open_session(client)
    assert tools_list(client, session)[name]["outputSchema"] == TOTAL_SCHEMA
    assert client.get(f"{BASE}/{name}").json()["published"]["tool"]["outputSchema"] == TOTAL_SCHEMA
    good = result_of(call(client, session, name, {}))
    assert good["structuredContent"] == {"total": 3, "items": ["a"]} and good["isError"] is False
    for answer in (call(client, session, name, {"bad": True}), modern_call(client, name, {"bad": True})):
        bad = result_of(answer)
        assert bad["isError"] is True and "structuredContent" not in bad
        assert "outputSchema at $.items[0]: 1 is not of type \"string\"" in bad["content"][0]["text"]
    rest = rest_call(client, name, {"bad": True}).json()
    assert rest["output"] is None and rest["error"]["type"] == "result" and "$.items[0]" in rest["error"]["message"]


def test_content_without_a_structured_value_fails_a_tool_with_an_output_schema(client: TestClient) -> None:
    name = publish(client, "exports.run = function () { return ai.content.text('no numbers'); };", {"outputSchema": TOTAL_SCHEMA})
    error = rest_call(client, name).json()["error"]
    assert error["type"] == "result" and "ai.result(content, structured)" in error["message"]


def test_the_editors_test_checks_the_drafts_output_schema(client: TestClient) -> None:
    body = {"draftContent": "exports.run = function () { return {total: 1.5}; };", "tool": {"outputSchema": TOTAL_SCHEMA}}
    error = client.post(f"{BASE}/test", json=body).json()["error"]
    assert error["type"] == "result" and "$.total: 1.5 is not of type \"integer\"" in error["message"]


# -- inputSchema -----------------------------------------------------------------------------------


def test_an_input_schema_is_advertised_as_it_is_and_enforced_before_any_code_runs(client: TestClient) -> None:
    name = publish(client, "log('ran'); exports.run = function (input) { log('ran'); return input; };", {"inputSchema": ADDRESS_SCHEMA})
    session = open_session(client)
    assert tools_list(client, session)[name]["inputSchema"] == ADDRESS_SCHEMA
    given = {"name": "Ada", "address": {"city": "London"}, "kind": "home", "email": "ada@example.org", "contact": 7}
    assert rest_call(client, name, given).json()["output"] == given
    for wrong, field in [
        ({"address": {"city": "London"}}, "input"),                 # name is required
        ({"name": "Ada", "address": {"city": ""}}, "input.address.city"),  # via $defs
        ({"name": "Ada", "kind": "boat"}, "input.kind"),             # enum
        ({"name": "Ada", "email": "not an email"}, "input.email"),   # format
        ({"name": "Ada", "contact": 1.5}, "input.contact"),          # oneOf
        ({"name": "Ada", "extra": 1}, "input"),                      # additionalProperties
    ]:
        refused = rest_call(client, name, wrong)
        assert refused.status_code == 400, (wrong, refused.text)
        assert refused.json()["errors"][0]["field"] == field, (wrong, refused.text)
        mcp = result_of(call(client, session, name, wrong))
        assert mcp["isError"] is True and "invalid-input" in mcp["content"][0]["text"] and mcp.get("_meta", {}).get("toolsmith/logs") is None


def test_typed_parameters_and_an_input_schema_are_one_or_the_other(client: TestClient) -> None:
    tool = {"inputSchema": ADDRESS_SCHEMA, "inputParameters": [{"name": "x"}]}
    refused = client.post(BASE, json={"id": unique_id("both"), "description": "d", "draftContent": "exports.run = () => 1;", "tool": tool})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "tool.inputSchema", refused.text


def test_examples_are_checked_against_the_input_schema(client: TestClient) -> None:
    tool = {"inputSchema": ADDRESS_SCHEMA, "examples": [{"name": "noName", "input": {"kind": "home"}, "output": {}}]}
    refused = client.post(BASE, json={"id": unique_id("ex"), "description": "d", "draftContent": "exports.run = (i) => i;", "tool": tool})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "tool.examples[0].input", refused.text


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize(("schema", "field", "says"), [
    ({"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "$ref", "loops back"),
    ({"type": "object", "allOf": [{"$ref": "#"}]}, "$ref", "loops back"),
    ({"type": "object", "properties": {"a": {"$ref": "https://example.org/schema"}}}, "tool.{key}.properties.a.$ref", "inside the schema"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}, "tool.{key}.properties.a.$ref", "does not hold"),
    (nested(40), "tool.{key}", "levels deep; at most 32"),
    ({"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 100} for i in range(1000)}}, "tool.{key}", "at most 65536"),
    ({"type": "object", "properties": {"a": {"type": "strin"}}}, "tool.{key}.properties.a.type", "not a valid JSON Schema 2020-12"),
    ({"type": "array"}, "tool.{key}.type", 'must be "object"'),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}, "tool.{key}.$schema", "2020-12"),
    ({"type": "object", "properties": {"a": {"type": "integer", "maximum": 87726941527032643584}}}, "tool.{key}", "64-bit"),
])
@pytest.mark.parametrize("key", ["inputSchema", "outputSchema"])
def test_a_bad_schema_is_a_400_naming_the_field(client: TestClient, schema: dict[str, Any], field: str, says: str, key: str) -> None:
    refused = client.post(BASE, json={"id": unique_id("bad"), "description": "d", "draftContent": "exports.run = () => ({});",
                                      "tool": {key: schema}})
    assert refused.status_code == 400, refused.text
    error = refused.json()["errors"][0]
    assert error["field"].startswith(f"tool.{key}") and error["field"].endswith(field.format(key=key)), refused.text
    assert says in error["message"] and error["rule"] == "V6"


def test_a_schema_nested_10000_deep_is_a_clear_400_and_the_service_keeps_serving(client: TestClient) -> None:
    body = '{"id": "deep", "description": "d", "draftContent": "exports.run = () => 1;", "tool": {"inputSchema": ' + \
        '{"type": "object", "properties": {"a": ' * 10_000 + "{}" + "}}" * 10_000 + "}}"
    refused = client.post(BASE, content=body, headers={"Content-Type": "application/json"})
    assert refused.status_code == 400 and refused.json()["errors"][0] == {
        "field": "tool.inputSchema.properties.a", "rule": "max-depth", "message": "nested more than 100 levels deep"}, refused.text
    assert client.post(f"{BASE}/test", json={"draftContent": "exports.run = () => 'alive';"}).json()["output"] == "alive"


def test_a_recursive_schema_through_properties_is_allowed(client: TestClient) -> None:
    tree = {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#"}}}}
    name = publish(client, "exports.run = function (t) { return {n: (t.children || []).length}; };", {"inputSchema": tree})
    assert rest_call(client, name, {"name": "a", "children": [{"name": "b", "children": []}]}).json()["output"] == {"n": 1}
    refused = rest_call(client, name, {"name": "a", "children": [{"name": 3}]})
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "input.children[0].name"
