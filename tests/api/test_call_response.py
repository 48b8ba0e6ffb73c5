"""The answer of `POST /api/v1/tools/{name}/call` (docs/rest-api.md), written once (issue 30): byte for
byte the JSON its `ExecutionOut` response model wrote when FastAPI validated the result into it and
dumped it, for every kind of value a tool answers, and the same model in the OpenAPI document."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter

from api.presenters import execution_json
from api.schemas import ExecutionOut
from domain.ports import ExecutionError, ExecutionResult
from tests.helpers import unique_id

BASE = "/api/v1/admin/code-modules"
MODEL: TypeAdapter[ExecutionOut] = TypeAdapter(ExecutionOut)


def _as_the_model_writes_it(out: Any) -> bytes:
    return MODEL.dump_json(MODEL.validate_python(out))


def _published(client: TestClient, body: str) -> str:
    name = unique_id("answer")
    created = client.post(BASE, json={"id": name, "description": "answers", "draftContent": f"exports.run = function (input) {{ {body} }};",
                                      "tool": {"inputParameters": [], "exposeInChat": True}})
    assert created.status_code == 201, created.text
    assert client.post(f"{BASE}/{name}/publish").status_code == 200
    return name


@pytest.mark.parametrize("body", [
    "return 41 + 1;",
    "return null;",
    "log('d\\u00e9j\\u00e0 \\u2028 \\ud800'); return {a: [1.5, -0, 1e21, 1e-7, 2**53, true, null, 'x\\u0000y\\ud83d\\ude00'], b: {}, c: []};",
    "return 2**70;",  # past 64 bits: the encoder of last resort writes it
    "throw new Error('no \\u00e9');",
    "log('one'); log({k: 1}); return 'two';",
])
def test_a_calls_answer_is_what_its_response_model_writes(client: TestClient, body: str) -> None:
    name = _published(client, body)
    answer = client.post(f"/api/v1/tools/{name}/call", json={})
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.content == _as_the_model_writes_it(answer.json())
    assert list(answer.json()) == ["output", "error", "logs", "durationMillis"]


@pytest.mark.parametrize("result", [
    ExecutionResult(output={"n": 1, "nested": [1, 2.5, "é", None, True]}, logs=("a", "b"), duration_millis=1.25),
    ExecutionResult(output=None, error=ExecutionError("runtime", "Error: no"), duration_millis=3),  # an int duration is a float
    ExecutionResult(output=2**70),
    ExecutionResult(output={1: "a non-string key"}),
    ExecutionResult(output=("a", "tuple")),
])
def test_execution_json_is_the_response_models_json(result: ExecutionResult) -> None:
    out = {"output": result.output, "error": result.error.as_dict() if result.error else None,
           "logs": list(result.logs), "durationMillis": result.duration_millis}
    assert execution_json(result) == _as_the_model_writes_it(out)


def test_the_document_shows_the_calls_answer_and_its_bearer_security(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/api/v1/tools/{name}/call"]["post"]
    assert operation["responses"]["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ExecutionOut"}
    assert operation["security"] == [{"HTTPBearer": []}]
    assert operation["requestBody"]["content"]["application/json"]
