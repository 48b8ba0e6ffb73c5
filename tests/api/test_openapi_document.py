"""The OpenAPI document and the answers it promises (issue 28, finding 9): every schema title is
unique (a client generator drops a route otherwise), a 405's `Allow` lists every method of its
path, a method a path does not answer is a 405 before any body is read, every operation documents
its 401, 403 and 429 as problem+json, and the rules the domain enforces are in the schemas, with
the domain's own constants, so that a request that follows the document is not refused for them."""

from __future__ import annotations

import collections
import re
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from application.modules import MAX_CHANGESET
from application.principals import ROLES
from domain import callers, rules, secrets
from toolkinds.search_tools import model as search_tools
from toolkinds.api_tools import model as api_tools
from tests.helpers import unique_id

PROBLEM = "application/problem+json"


@pytest.fixture
def document(api: TestClient) -> dict[str, Any]:
    return api.get("/openapi.json").json()


def _filled(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


# -- titles -----------------------------------------------------------------------------------------


def test_every_schema_title_of_the_document_is_unique(document: dict[str, Any]) -> None:
    titles = collections.Counter(schema.get("title", name) for name, schema in document["components"]["schemas"].items())
    assert not [title for title, count in titles.items() if count > 1]
    # each component is named after its title: no module path in a name a client generator shows
    assert not [name for name in document["components"]["schemas"] if "__" in name]


# -- 405 --------------------------------------------------------------------------------------------


def test_a_405_allows_every_method_its_path_answers_on_every_path_of_the_document(api: TestClient, document: dict[str, Any]) -> None:
    for path, operations in document["paths"].items():
        documented = {method.upper() for method in operations} | ({"HEAD"} if "get" in operations else set())
        answer = api.options(_filled(path))
        assert answer.status_code == 405, (path, answer.status_code)
        assert answer.headers["content-type"].startswith(PROBLEM), path
        allowed = {m.strip() for m in answer.headers["allow"].split(",")}
        assert allowed >= documented, (path, answer.headers["allow"])
        for method in allowed:  # and each method it names is one the path answers
            assert api.request(method, _filled(path)).status_code != 405, (method, path)


def test_a_405_allows_every_method_on_every_console_path(app: FastAPI, api: TestClient) -> None:
    methods: dict[str, set[str]] = collections.defaultdict(set)
    for route in iter_route_contexts(app.routes):
        if route.path and route.path.startswith("/console/") and route.methods:
            methods[route.path] |= set(route.methods)
    assert len(methods) >= 30
    for path, answered in methods.items():
        answer = TestClient(app).request("PATCH", _filled(path))
        assert answer.status_code == 405, path
        assert {m.strip() for m in answer.headers["allow"].split(",")} >= answered, (path, answer.headers["allow"])


def test_a_method_a_path_does_not_answer_is_405_before_its_body_is_read(api: TestClient) -> None:
    documents = "/api/v1/admin/search-tools/x/documents"
    trace = api.request("TRACE", documents, files={"files": ("a.txt", b"hello")})
    assert trace.status_code == 405, trace.text
    assert trace.headers["allow"] == "GET, HEAD, POST"
    for method, body, headers in (("PATCH", b"{not json", {"Content-Type": "application/json"}),
                                  ("PATCH", b"<xml/>", {"Content-Type": "application/xml"}),
                                  ("TRACE", b"[" * 500, {"Content-Type": "application/json"})):
        answer = api.request(method, "/api/v1/admin/agents", content=body, headers=headers)
        assert answer.status_code == 405 and answer.headers["allow"] == "GET, HEAD, POST", (method, body, answer.text)
        assert answer.json()["code"] == "method-not-allowed"
    # a method the path answers still has its body checked
    assert api.post("/api/v1/admin/agents", content=b"{not json", headers={"Content-Type": "application/json"}).status_code == 400


# -- documented answers -----------------------------------------------------------------------------


def test_every_operation_documents_its_401_403_and_429_as_problem_json(document: dict[str, Any]) -> None:
    problem = {"$ref": "#/components/schemas/Problem"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            wanted = {"400"} | ({"401", "403", "429"} if path != "/healthz" else set())
            assert wanted <= set(responses), (method, path, sorted(responses))
            for status, response in responses.items():
                if status[0] == "4":
                    assert response["content"] == {PROBLEM: {"schema": problem}}, (method, path, status)


# -- enforced rules in the schemas ------------------------------------------------------------------


def _property(document: dict[str, Any], model: str, name: str) -> dict[str, Any]:
    schema = document["components"]["schemas"][model]["properties"][name]
    return schema


def test_the_schemas_carry_the_domains_own_rules(document: dict[str, Any]) -> None:
    module_id = _property(document, "ModuleCreate", "id")
    assert module_id["maxLength"] == rules.MAX_ID_LENGTH and module_id["minLength"] == 1
    assert re.fullmatch(module_id["pattern"].strip("^$"), "a_tool1") and not re.fullmatch(module_id["pattern"].strip("^$"), "1tool")
    assert set(module_id["not"]["enum"]) == rules.RESERVED_WORDS | rules.SANDBOX_NAMES
    assert _property(document, "TokenIn", "role")["enum"] == list(ROLES)
    nodes = _property(document, "PlanFields", "nodes")
    assert (nodes["minItems"], nodes["maxItems"]) == (1, callers.MAX_NODES)
    assert _property(document, "NodeIn", "type")["enum"] == list(callers.NODE_TYPES)
    tags = _property(document, "PlanFields", "tags")
    assert tags["maxItems"] == rules.MAX_TAGS and tags["items"]["maxLength"] == rules.MAX_TAG_LENGTH
    assert _property(document, "ParameterIn", "type")["enum"] == list(rules.PARAMETER_TYPES)
    assert _property(document, "ToolSectionIn", "style")["enum"] == list(rules.STYLES)
    timeout = _property(document, "ToolSectionIn", "timeoutMillis")
    assert (timeout["minimum"], timeout["maximum"]) == rules.TIMEOUT_RANGE
    assert _property(document, "ToolSectionIn", "examples")["maxItems"] == rules.MAX_EXAMPLES
    # on a field that may be null, beside its anyOf (a string's keywords say nothing of null)
    assert _property(document, "ModuleUpdate", "description")["maxLength"] == rules.MAX_DESCRIPTION
    assert _property(document, "ModuleCreate", "draftImports")["maxItems"] == rules.MAX_IMPORTS
    assert _property(document, "AgentIn", "id")["pattern"] == "^" + callers._SLUG.pattern.removesuffix(r"\Z") + "$"
    assert _property(document, "ChangesetRequest", "ids")["maxItems"] == MAX_CHANGESET
    assert _property(document, "SecretIn", "description")["maxLength"] == secrets.MAX_DESCRIPTION
    # the kinds' own bodies: an API URL tool's, a File Search tool's
    assert "description" in document["components"]["schemas"]["ApiToolBody"]["required"]
    assert _property(document, "ApiToolBody", "tags")["items"]["maxLength"] == rules.MAX_TAG_LENGTH
    assert _property(document, "ApiToolBody", "maxRedirects")["maximum"] == api_tools.REDIRECTS_CAP
    assert _property(document, "SearchToolBody", "id")["maxLength"] == search_tools.MAX_NAME
    created = document["components"]["schemas"]["ApiToolCreate"]
    assert {"id", "description"} <= set(created["required"]) and created["properties"]["id"]["type"] == "string"
    assert created["properties"]["id"]["maxLength"] == rules.MAX_ID_LENGTH
    # path parameters too: an id that breaks its rule names nothing
    put_plan = document["paths"]["/api/v1/admin/plans/{id}"]["put"]
    assert next(p for p in put_plan["parameters"] if p["name"] == "id")["schema"]["pattern"] == module_id["pattern"]


@pytest.mark.parametrize(("route", "body", "field"), [
    # each was valid by the document before, and refused with a 400 naming the rule
    ("/api/v1/admin/code-modules", {"id": "1tool", "description": "d", "draftContent": ""}, "id"),
    ("/api/v1/admin/code-modules", {"id": "class", "description": "d", "draftContent": ""}, "id"),
    ("/api/v1/admin/tokens", {"name": "n", "role": "superuser"}, "role"),
    ("/api/v1/admin/plans", {"id": "p_x", "description": "d", "nodes": []}, "nodes"),
    ("/api/v1/admin/plans", {"id": "p_y", "description": "d", "nodes": [{"toolName": "t"}], "tags": ["x" * 65]}, "tags[0]"),
    ("/api/v1/admin/agents", {"id": "-agent", "description": "d"}, "id"),
    ("/api/v1/admin/api-tools", {"id": "api_x", "description": " ", "urlTemplate": "https://example.com/"}, "description"),
    ("/api/v1/admin/search-tools", {"id": "f" * 41, "description": "d"}, "id"),
])
def test_a_request_the_document_now_calls_invalid_is_the_same_clear_400(api: TestClient, document: dict[str, Any],
                                                                        route: str, body: dict[str, Any], field: str) -> None:
    import jsonschema

    schema = document["paths"][route]["post"]["requestBody"]["content"]["application/json"]["schema"]
    resolved = {**schema, "components": document["components"]}
    assert not jsonschema.Draft202012Validator(resolved).is_valid(body), "the document accepts it"
    answer = api.post(route, json=body)
    assert answer.status_code == 400 and answer.headers["content-type"].startswith(PROBLEM), answer.text
    assert field in {error["field"] for error in answer.json()["errors"]}, answer.json()


def test_requests_the_document_calls_valid_at_the_limits_are_accepted(api: TestClient) -> None:
    name = "t" + "x" * (rules.MAX_ID_LENGTH - 1)
    assert api.post("/api/v1/admin/code-modules", json={"id": name, "description": "d" * rules.MAX_DESCRIPTION,
                                                         "draftContent": "exports.run = () => 1;",
                                                         "tool": {"tags": ["t" * rules.MAX_TAG_LENGTH] * 1}}).status_code == 201
    assert api.post(f"/api/v1/admin/code-modules/{name}/publish").status_code == 200
    plan = {"id": unique_id("plan"), "description": "d", "nodes": [{"toolName": name}] * callers.MAX_NODES}
    assert api.post("/api/v1/admin/plans", json=plan).status_code == 201, "a plan of the most nodes the document allows"
