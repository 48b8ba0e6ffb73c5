"""An API URL tool's `outputSchema` (issue 33, point 3): checked at save (V6, naming the field),
every result checked against it (a `result` error naming the path), and listed by MCP."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.api.test_api_tools import TOOLS, api, call, expect, problem_fields, upstream, weather  # noqa: F401
from tests.upstream import Upstream

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "units": {"enum": ["metric", "imperial"]}}, "required": ["city"]}


def listed(api: TestClient, name: str) -> dict[str, Any]:
    from tests.api.test_mcp_direct import ACCEPT, INITIALIZE, headers  # the handshake-era session, as the direct tests open it
    opened = api.post("/mcp", json=INITIALIZE, headers={**ACCEPT, "Host": "127.0.0.1:8000"})
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    sent = {**headers(session), "Host": "127.0.0.1:8000"}
    assert api.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=sent).status_code == 202
    answer = api.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=sent)
    import json
    body = answer.text if answer.text.startswith("{") else next(line[5:] for line in answer.text.splitlines() if line.startswith("data:"))
    return {tool["name"]: tool for tool in json.loads(body)["result"]["tools"]}[name]


def test_an_api_tools_output_schema_checks_its_results_and_is_listed(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json=weather(upstream, outputSchema=WEATHER, exposeInChat=True)), 201)
    assert expect(api.get(f"{TOOLS}/weather"), 200)["outputSchema"] == WEATHER
    assert call(api, "weather", {"city": "Bern"})["output"]["city"] == "Bern"
    assert listed(api, "weather")["outputSchema"] == WEATHER

    strict = {**WEATHER, "properties": {**WEATHER["properties"], "units": {"enum": ["kelvin"]}}}
    expect(api.put(f"{TOOLS}/weather", json={**weather(upstream, outputSchema=strict)}), 200)
    result = call(api, "weather", {"city": "Bern"})
    assert result["output"] is None and result["error"]["type"] == "result"
    assert "outputSchema at $.units" in result["error"]["message"]


def test_a_bad_output_schema_is_refused_naming_the_field(api: TestClient, upstream: Upstream) -> None:
    looped = {"type": "object", "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}
    fields = problem_fields(api.post(TOOLS, json=weather(upstream, outputSchema=looped)))
    assert fields == ["outputSchema.$defs.a.$ref"]
    assert problem_fields(api.post(TOOLS, json=weather(upstream, outputSchema={"type": "array"}))) == ["outputSchema.type"]
    # A number beyond 64 bits (found by the fuzzer: it was a 500) is named, not stored.
    huge = {"type": "object", "properties": {"t": {"type": "number", "maximum": 87726941527032643584}}}
    assert problem_fields(api.post(TOOLS, json=weather(upstream, outputSchema=huge))) == ["outputSchema"]
