"""An API URL tool's JMESPath, bounded (issue 28, findings 2 and 4), over REST against a local API.

What cannot be evaluated, or multiplies its answer by its very shape, is refused when the tool is
saved (400 naming `response.jmespath`); what a tool stored before those checks holds, and what an
accepted expression does to an answer the caller shapes (the local API echoes the body it is sent),
ends in a `response` error or a cut output, never a 500 nor the answer written out whole.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from domain import jmes
from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN
from tests.helpers import expect as expect_status
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"
DOUBLING_30 = "current" + ".[@,@]" * 30  # 2**30 times the answer written out; 185 characters
BAD = {
    "a slice step of 0": ("days[::0]", "slice step of 0"),
    "500 nested parentheses": ("(" * 500 + "days" + ")" * 500, "nested too deeply"),
    "30 doubling steps": (DOUBLING_30, "multiplies its input"),
}


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def api(tmp_path: Path, upstream: Upstream, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def weather(upstream: Upstream, jmespath: str | None = None) -> dict[str, Any]:
    return {"id": "weather", "description": "Current weather for a city", "urlTemplate": upstream.url + "/v1/weather/{city}",
            "parameters": [{"name": "city", "type": "string", "required": True, "location": "path"}],
            "response": {"jmespath": jmespath}}


def echo(upstream: Upstream, jmespath: str, max_output_chars: int = 1_000) -> dict[str, Any]:
    """A tool whose answer holds what the caller sends (`body.items`, `body.text`)."""
    return {"id": "echo", "description": "Echoes its body", "method": "POST", "urlTemplate": upstream.url + "/echo",
            "parameters": [{"name": "items", "type": "array", "location": "body"}, {"name": "text", "type": "string", "location": "body"}],
            "response": {"jmespath": jmespath, "maxOutputChars": max_output_chars}}


def refused_fields(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return response.json()["errors"]


def call(api: TestClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return expect_status(api.post(f"/api/v1/tools/{name}/call", json=arguments), 200).json()


@pytest.mark.parametrize("case", list(BAD))
def test_an_expression_that_cannot_be_evaluated_or_multiplies_is_refused_at_create_and_update(
        api: TestClient, upstream: Upstream, case: str) -> None:
    expression, says = BAD[case]
    errors = refused_fields(api.post(TOOLS, json=weather(upstream, expression)))
    assert [e["field"] for e in errors] == ["response.jmespath"] and says in errors[0]["message"]
    assert api.get(f"{TOOLS}/weather").status_code == 404

    created = expect_status(api.post(TOOLS, json=weather(upstream, "days[0]")), 201)
    errors = refused_fields(api.put(f"{TOOLS}/weather", json=weather(upstream, expression), headers={"If-Match": created.headers["ETag"]}))
    assert [e["field"] for e in errors] == ["response.jmespath"] and says in errors[0]["message"]
    assert call(api, "weather", {"city": "Oslo"})["output"] == 1  # unchanged


@pytest.mark.parametrize("case", list(BAD))
def test_a_tool_stored_before_the_checks_answers_a_response_error(api: TestClient, upstream: Upstream, case: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    expression, _ = BAD[case]
    with monkeypatch.context() as before:  # as the service saved it before it refused these
        before.setattr(jmes, "expression_problem", lambda expression: None)
        expect_status(api.post(TOOLS, json=weather(upstream, expression)), 201)

    result = call(api, "weather", {"city": "Oslo"})

    assert result["output"] is None
    assert result["error"]["type"] == "response"
    assert result["error"]["message"].startswith(("jmespath failed", "jmespath stopped"))
    tested = expect_status(api.post(f"{TOOLS}/weather/test", json={"arguments": {"city": "Oslo"}}), 200).json()
    assert tested["error"]["type"] == "response" and tested["status"] == 200


def test_an_accepted_expression_on_an_answer_the_caller_made_large_is_stopped(api: TestClient, upstream: Upstream) -> None:
    # 16 times each element, built for real: fine for a few, past the budget for 20 000
    expect_status(api.post(TOOLS, json=echo(upstream, "body.items[*].[" + ",".join(["@"] * 16) + "][]")), 201)
    assert len(call(api, "echo", {"items": [1, 2]})["output"]) == 32

    result = call(api, "echo", {"items": list(range(20_000))})

    assert result["output"] is None
    assert result["error"]["type"] == "response" and "builds more from this answer than its bound" in result["error"]["message"]


def test_a_result_of_references_is_cut_without_being_written_out(api: TestClient, upstream: Upstream) -> None:
    # 10 doubling steps are accepted (1024 times); on a 100 000-character text that is 102 MB written out
    expect_status(api.post(TOOLS, json=echo(upstream, "body.text" + ".[@,@]" * 10, max_output_chars=1_000)), 201)

    tracemalloc.start()
    try:
        output = call(api, "echo", {"text": "y" * 100_000})["output"]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert peak < 32 * 1_048_576, peak  # writing it out whole would take over 100 MB
    total = 2**10 * 100_002 + (2**10 - 1) * 3  # each string quoted, each pair "[", "," and "]"
    assert output == "[" * 10 + '"' + "y" * 989 + f"\n[output cut: 1000 of {total} characters shown (maxOutputChars)]"
