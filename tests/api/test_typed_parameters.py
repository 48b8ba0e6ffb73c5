"""V1 typed parameters over HTTP: the `inputSchema` a module shows, and what the code receives.

A tool is run two ways, both checked here: `POST …/test` with the definition as the editor holds it,
and `POST /api/v1/tools/{name}/call` on the published version. Either way the arguments are
validated before any JavaScript runs; in script style (docs/kinds/code-modules.md) each parameter is a variable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from httpx import Response

from tests.helpers import unique_id

BASE = "/api/v1/admin/code-modules"
MAX_SAFE_INTEGER = 2**53 - 1
ROUTES = ("test", "call")

# One parameter of each of the seven V1 types; two required, three with defaults.
SEVEN_TYPES = [
    {"name": "text", "type": "string", "required": True, "description": "what to say"},
    {"name": "count", "type": "integer", "default": 2},
    {"name": "amount", "type": "decimal", "required": True},
    {"name": "when", "type": "date", "default": "2024-05-06"},
    {"name": "loud", "type": "boolean", "default": False},
    {"name": "items", "type": "array"},
    {"name": "options", "type": "object"},
]
SEVEN_TYPES_SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "what to say"},
        "count": {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER, "default": 2},
        "amount": {"type": "number"},
        "when": {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}], "default": "2024-05-06"},
        "loud": {"type": "boolean", "default": False},
        "items": {"type": "array"},
        "options": {"type": "object"},
    },
    "required": ["text", "amount"],
    "additionalProperties": False,
}
ALL_GIVEN = {
    "text": "hi",
    "count": 3,
    "amount": 1.5,
    "when": "2024-05-06T10:00:00+02:00",
    "loud": True,
    "items": [1, 2],
    "options": {"a": 1},
}
# What each variable is in JavaScript, as a script sees it.
TYPES_SEEN = """[typeof text, typeof count, Number.isInteger(count), typeof amount,
 when instanceof Date && when.toISOString(), typeof loud, Array.isArray(items), typeof options]"""


def create(client: TestClient, *, source: str, tool: dict[str, Any] | None, module_id: str | None = None) -> dict[str, Any]:
    body = {"id": module_id or unique_id("tool"), "description": "a tool", "draftContent": source, "tool": tool}
    response = client.post(BASE, json=body)
    assert response.status_code == 201, response.text
    return response.json()


def publish(client: TestClient, module_id: str) -> dict[str, Any]:
    response = client.post(f"{BASE}/{module_id}/publish")
    assert response.status_code == 200, response.text
    return response.json()


def runner(client: TestClient, route: str, source: str, tool: dict[str, Any]) -> Callable[[Any], Response]:
    """Runs `source` with an input: as an unsaved draft through /test, or published through the tool call."""
    if route == "test":
        return lambda arguments: client.post(f"{BASE}/test", json={"draftContent": source, "tool": tool, "input": arguments})
    module_id = create(client, source=source, tool=tool)["id"]
    publish(client, module_id)
    return lambda arguments: client.post(f"/api/v1/tools/{module_id}/call", json=arguments)


def output(response: Response) -> Any:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["error"] is None, body
    return body["output"]


def refused(response: Response, *fields: str) -> dict[str, Any]:
    """Asserts a 400 invalid-input problem whose errors name exactly `fields`, under V1."""
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["code"] == "invalid-input" and body["status"] == 400
    assert sorted(e["field"] for e in body["errors"]) == sorted(fields), body
    assert {e["rule"] for e in body["errors"]} == {"V1"}
    assert "output" not in body and "logs" not in body  # refused, not run
    return body


# -- inputSchema on the module ----------------------------------------------------------------------


def test_a_tool_shows_the_json_schema_of_its_seven_typed_parameters(client: TestClient) -> None:
    created = create(client, source="text", tool={"style": "script", "inputParameters": SEVEN_TYPES})
    assert created["inputSchema"] == SEVEN_TYPES_SCHEMA
    assert client.get(f"{BASE}/{created['id']}").json()["inputSchema"] == SEVEN_TYPES_SCHEMA


def test_a_tool_without_parameters_takes_no_argument(client: TestClient) -> None:
    created = create(client, source="exports.run = (i) => i;", tool={})
    assert client.get(f"{BASE}/{created['id']}").json()["inputSchema"] == {"type": "object", "properties": {}, "additionalProperties": False}


def test_a_library_has_no_input_schema(client: TestClient) -> None:
    created = create(client, source="exports.twice = (x) => 2 * x;", tool=None)
    assert client.get(f"{BASE}/{created['id']}").json()["inputSchema"] is None


def test_the_input_schema_follows_the_draft_until_published_then_the_published_version(client: TestClient) -> None:
    def tool(name: str) -> dict[str, Any]:
        return {"style": "script", "inputParameters": [{"name": name, "type": "integer", "required": True}]}

    module_id = create(client, source="1", tool=tool("first"))["id"]
    # never published: the schema is the draft's, and follows an edit
    edited = client.put(f"{BASE}/{module_id}", json={"tool": tool("second")})
    assert edited.status_code == 200 and list(edited.json()["inputSchema"]["properties"]) == ["second"]
    assert client.get(f"{BASE}/{module_id}").json()["inputSchema"]["required"] == ["second"]
    assert list(publish(client, module_id)["inputSchema"]["properties"]) == ["second"]
    # published with a pending draft: callers still get the published version, so does the schema
    pending = client.put(f"{BASE}/{module_id}", json={"tool": tool("third")}).json()
    assert pending["state"] == "DRAFT" and list(pending["inputSchema"]["properties"]) == ["second"]
    assert list(publish(client, module_id)["inputSchema"]["properties"]) == ["third"]
    # the draft turns the tool into a library: the published tool is still what callers see
    library = client.put(f"{BASE}/{module_id}", json={"tool": None}).json()
    assert library["draft"]["tool"] is None and list(library["inputSchema"]["properties"]) == ["third"]
    assert publish(client, module_id)["inputSchema"] is None


def test_openapi_documents_the_input_schema_of_a_module(client: TestClient) -> None:
    module_schema = client.get("/openapi.json").json()["components"]["schemas"]["ModulePublic"]
    assert "inputSchema" in module_schema["required"]
    assert "JSON Schema" in module_schema["properties"]["inputSchema"]["description"]


# -- script style: each parameter is a variable of its type ----------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
def test_each_parameter_is_a_top_level_variable_of_its_declared_type(client: TestClient, route: str) -> None:
    run = runner(client, route, TYPES_SEEN, {"style": "script", "inputParameters": SEVEN_TYPES})
    assert output(run(ALL_GIVEN)) == ["string", "number", True, "number", "2024-05-06T08:00:00.000Z", "boolean", True, "object"]


@pytest.mark.parametrize("route", ROUTES)
def test_omitted_optional_values_take_their_defaults_or_null(client: TestClient, route: str) -> None:
    source = "[count, when.toISOString(), loud, items, options]"
    run = runner(client, route, source, {"style": "script", "inputParameters": SEVEN_TYPES})
    # `items` and `options` have no default: their variables exist, and are null
    assert output(run({"text": "hi", "amount": 1})) == [2, "2024-05-06T00:00:00.000Z", False, None, None]


@pytest.mark.parametrize("route", ROUTES)
def test_the_last_expression_is_the_result(client: TestClient, route: str) -> None:
    source = "const said = text + ' x' + count;\nsaid;"
    run = runner(client, route, source, {"style": "script", "inputParameters": SEVEN_TYPES})
    assert output(run({"text": "hi", "amount": 1, "count": 3})) == "hi x3"


@pytest.mark.parametrize("route", ROUTES)
def test_an_explicit_return_is_the_result(client: TestClient, route: str) -> None:
    source = "if (loud) {\n  return text.toUpperCase() + '!';\n}\nreturn text;"
    run = runner(client, route, source, {"style": "script", "inputParameters": SEVEN_TYPES})
    assert output(run({"text": "hi", "amount": 1, "loud": True})) == "HI!"
    assert output(run({"text": "hi", "amount": 1})) == "hi"


@pytest.mark.parametrize("route", ROUTES)
def test_an_integer_given_as_3_point_0_arrives_as_3(client: TestClient, route: str) -> None:
    run = runner(client, route, "[count, Number.isInteger(count)]", {"style": "script", "inputParameters": SEVEN_TYPES})
    assert output(run({"text": "hi", "amount": 1, "count": 3.0})) == [3, True]


# -- validation before any JavaScript runs, in both styles -------------------------------------------------

# Both sources throw when they run: a refusal that shows no such error proves that nothing ran.
THROWING = {
    "script": "log('the code ran');\nthrow new Error('JavaScript ran');",
    "module": "exports.run = function (input) { log('the code ran'); throw new Error('JavaScript ran'); };",
}
STYLE_AND_ROUTE = [(style, route) for style in THROWING for route in ROUTES]


def throwing_tool(client: TestClient, style: str, route: str) -> Callable[[Any], Response]:
    run = runner(client, route, THROWING[style], {"style": style, "inputParameters": SEVEN_TYPES})
    # valid arguments do run the code (so the refusals below are what stopped it)
    ran = run({"text": "hi", "amount": 1})
    assert ran.status_code == 200 and ran.json()["error"]["message"] == "Error: JavaScript ran", ran.text
    assert ran.json()["logs"] == ["the code ran"]
    return run


@pytest.mark.parametrize(("style", "route"), STYLE_AND_ROUTE)
def test_a_missing_required_value_is_refused_naming_it_before_any_javascript_runs(client: TestClient, style: str, route: str) -> None:
    run = throwing_tool(client, style, route)
    body = refused(run({"amount": 1}), "input.text")
    assert "'text'" in body["detail"] and "missing" in body["detail"]
    refused(run({"text": None, "amount": 1}), "input.text")  # null counts as missing
    refused(run(None), "input.text", "input.amount")  # no input at all


@pytest.mark.parametrize(("style", "route"), STYLE_AND_ROUTE)
@pytest.mark.parametrize(
    "count",
    [
        pytest.param(3.5, id="3.5"),
        pytest.param("3", id="string-3"),
        pytest.param(True, id="true"),
        pytest.param(MAX_SAFE_INTEGER + 1, id="2^53"),
    ],
)
def test_a_value_that_is_not_an_integer_is_refused(client: TestClient, style: str, route: str, count: Any) -> None:
    run = throwing_tool(client, style, route)
    body = refused(run({"text": "hi", "amount": 1, "count": count}), "input.count")
    assert "integer" in body["errors"][0]["message"]


@pytest.mark.parametrize(("style", "route"), STYLE_AND_ROUTE)
def test_an_argument_the_tool_does_not_declare_is_refused_naming_it(client: TestClient, style: str, route: str) -> None:
    run = throwing_tool(client, style, route)
    body = refused(run({"text": "hi", "amount": 1, "cuont": 3}), "input.cuont")
    assert body["errors"][0]["message"] == "unknown parameter 'cuont'; the tool takes: text, count, amount, when, loud, items, options"


@pytest.mark.parametrize(("style", "route"), STYLE_AND_ROUTE)
def test_every_bad_value_is_named_in_one_refusal(client: TestClient, style: str, route: str) -> None:
    run = throwing_tool(client, style, route)
    arguments = {"amount": True, "count": "3", "when": "next tuesday", "loud": "yes", "items": {}, "options": [], "extra": 1}
    body = refused(
        run(arguments),
        "input.text",
        "input.amount",
        "input.count",
        "input.when",
        "input.loud",
        "input.items",
        "input.options",
        "input.extra",
    )
    for field in ("input.text", "input.amount", "input.count", "input.when", "input.extra"):
        assert field in body["detail"]


@pytest.mark.parametrize(("style", "route"), STYLE_AND_ROUTE)
def test_a_date_without_a_time_zone_is_refused_saying_what_is_accepted(client: TestClient, style: str, route: str) -> None:
    run = throwing_tool(client, style, route)
    message = refused(run({"text": "hi", "amount": 1, "when": "2024-05-06T10:00"}), "input.when")["errors"][0]["message"]
    assert "2024-05-06" in message and "2024-05-06T10:00:00Z" in message


# -- module style: the same arguments, as `input` ----------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES)
def test_a_module_style_tool_receives_typed_values_and_defaults_in_input(client: TestClient, route: str) -> None:
    source = """exports.run = function (input) {
      return [input.when instanceof Date && input.when.toISOString(), input.count, 'items' in input, Object.keys(input).length];
    };"""
    run = runner(client, route, source, {"style": "module", "inputParameters": SEVEN_TYPES})
    # the three defaults are applied; omitted optional values without a default are left out, as before
    assert output(run({"text": "hi", "amount": 1})) == ["2024-05-06T00:00:00.000Z", 2, False, 5]
    assert output(run({**ALL_GIVEN, "when": "2024-02-29T23:30:00-01:00"}))[0] == "2024-03-01T00:30:00.000Z"


# -- docs/kinds/code-modules.md worked example ------------------------------------------------------------------------------

FORMAT_CURRENCY = {
    "style": "script",
    "inputParameters": [
        {"name": "amount", "type": "decimal", "required": True},
        {"name": "currency_code", "type": "string", "required": True},
    ],
}
FORMAT_CURRENCY_BODY = (
    "const formatter = new Intl.NumberFormat('en-US', {style: 'currency', currency: currency_code});\n"
    "formatter.format(amount);"
)


@pytest.mark.parametrize("route", ROUTES)
def test_seed_000_format_currency_prints_dollars_and_euros(client: TestClient, route: str) -> None:
    run = runner(client, route, FORMAT_CURRENCY_BODY, FORMAT_CURRENCY)
    assert output(run({"amount": 1234.5, "currency_code": "USD"})) == "$1,234.50"
    assert output(run({"amount": 1234.5, "currency_code": "EUR"})) == "€1,234.50"
    refused(run({"amount": "1234.5", "currency_code": "USD"}), "input.amount")


@pytest.mark.parametrize("default", [{"_type_": "datetime_iso", "_data_": "2026-01-01"},
                                     {"a": [{"_data_": 1, "_type_": "nope"}]}])
def test_a_default_shaped_like_a_stored_type_is_refused_and_the_read_model_goes_on(client: TestClient, default: Any) -> None:
    module_id = unique_id()
    body = {"id": module_id, "description": "d", "draftContent": "exports.run = function (i) { return i; };",
            "tool": {"inputParameters": [{"name": "o", "type": "object", "required": False, "default": default}]}}
    refused = client.post(BASE, json=body)
    assert refused.status_code == 400
    [error] = refused.json()["errors"]
    assert (error["field"], error["rule"]) == ("tool.inputParameters[0].default", "V1")
    assert "_type_ and _data_" in error["message"]
    body["tool"]["inputParameters"][0]["default"] = {"_type_": "note", "_data_": 1, "why": "three keys are plain data"}
    assert client.post(BASE, json=body).status_code == 201
    assert client.get(BASE, params={"search": module_id}).json()["total"] == 1  # projected, not stuck


# -- an unknown type with an example (issue 28, finding 9) --------------------------------------------


def test_an_unknown_parameter_type_with_an_example_is_a_400_naming_the_type_on_create_test_and_update(client: TestClient) -> None:
    source = "exports.run = function (input) { return input.amount; };"
    unknown = {"inputParameters": [{"name": "amount", "type": "money"}],
               "examples": [{"name": "one", "input": {"amount": 1}, "output": 1}]}
    good = create(client, source=source, tool={"inputParameters": [{"name": "amount", "type": "decimal"}]})
    answers = {
        "create": client.post(BASE, json={"id": unique_id("tool"), "description": "a tool", "draftContent": source, "tool": unknown}),
        "test": client.post(f"{BASE}/test", json={"draftContent": source, "tool": unknown, "input": {"amount": 1}}),
        "update": client.put(f"{BASE}/{good['id']}", json={"tool": unknown}),
    }
    for route, answer in answers.items():
        assert answer.status_code == 400, (route, answer.status_code, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json"), route
        errors = answer.json()["errors"]
        assert {"field": "tool.inputParameters[0].type", "rule": "V1",
                "message": "must be one of string, integer, decimal, date, boolean, array, object"} in errors, (route, errors)
