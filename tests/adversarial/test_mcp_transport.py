"""The MCP family: streamable HTTP as a hostile or sloppy client drives it (issue 28, finding 8).

JSON-RPC batches of every shape (empty, past the limit, nested, not messages, mixed with
notifications and responses, carrying an initialize, on a version without batches, on no session
or another caller's), `Last-Event-ID` in every form a client could send, and tool calls with
arguments the tool does not declare, over MCP and REST. Each answer is held to the suite's rules:
never a 5xx, within its deadline, nothing of a secret; a refusal of an MCP message is a JSON-RPC
error (the form MCP clients show the model, `api.edge.as_json_rpc_error`), any other 4xx a
problem. The service is alive after every case.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.adversarial.conftest import ADMIN_TOKEN, CODE_MODULES, PROBLEM, Probe

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
NO_PARAMETERS = "mcp_probe_hello"
ONE_PARAMETER = "mcp_probe_double"
SERVER = "mcp_probe_server"
NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nothing"}}


def send_mcp(probe: Probe, method: str, path: str, *, body: Any = None, raw: bytes | None = None, headers: dict[str, Any] | None = None,
             token: str = ADMIN_TOKEN, deadline: float = 30.0) -> httpx.Response:
    """One MCP request under the suite's rules, a JSON-RPC error body allowed for a 4xx."""
    sent = {**ACCEPT, "Authorization": f"Bearer {token}", **(headers or {})}
    content = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    started = time.monotonic()
    try:
        answer = probe.http.request(method, path, headers=sent, content=content, timeout=deadline + 5)
    except httpx.TimeoutException:
        pytest.fail(f"{method} {path}: no answer within {deadline + 5} s")
    elapsed = time.monotonic() - started
    assert answer.status_code < 500, f"{method} {path}: {answer.status_code} {answer.text[:500]}"
    assert elapsed <= deadline, f"{method} {path}: answered after {elapsed:.1f} s"
    if 400 <= answer.status_code < 500:
        media = answer.headers.get("content-type", "")
        if media.startswith(PROBLEM):
            assert answer.json()["status"] == answer.status_code and answer.json()["detail"]
        else:
            assert media.startswith("application/json"), f"{answer.status_code} neither problem nor JSON-RPC: {media} {answer.text[:300]}"
            error = answer.json()["error"]
            assert isinstance(error["code"], int) and error["message"], answer.text[:300]
    probe.assert_no_secret_in(answer.text, f"the answer to {method} {path}")
    return answer


def open_session(probe: Probe, version: str, path: str = "/mcp", token: str = ADMIN_TOKEN) -> dict[str, str]:
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
    opened = send_mcp(probe, "POST", path, body=initialize, token=token)
    assert opened.status_code == 200, opened.text
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"]}
    if version != "2025-03-26":
        session["Mcp-Protocol-Version"] = version
    assert send_mcp(probe, "POST", path, body={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session, token=token).status_code == 202
    return session


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


def call(request_id: Any, name: str, arguments: Any) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": name, "arguments": arguments})


@pytest.fixture(scope="module")
def tools(probe: Probe) -> None:
    sources = {NO_PARAMETERS: ("exports.run = function () { return 'hello'; };", []),
               ONE_PARAMETER: ("exports.run = function (input) { return input.n * 2; };",
                               [{"name": "n", "type": "integer", "required": True, "description": "a number"}])}
    for name, (source, parameters) in sources.items():
        tool = {"inputParameters": parameters, "exposeInChat": True}
        made = probe.send("POST", CODE_MODULES, json={"id": name, "description": f"The tool {name}.", "draftContent": source, "tool": tool})
        assert made.status_code == 201, made.text
        assert probe.send("POST", f"{CODE_MODULES}/{name}/publish").status_code == 200
    made = probe.send("POST", "/api/v1/admin/mcp-servers", json={"id": SERVER, "tools": [NO_PARAMETERS, ONE_PARAMETER]})
    assert made.status_code == 201, made.text


@pytest.fixture
def old(probe: Probe, tools: None) -> Iterator[dict[str, str]]:
    """A 2025-03-26 session (batches allowed); the service is checked alive after the case."""
    yield open_session(probe, "2025-03-26")
    probe.assert_alive()


# -- batches ------------------------------------------------------------------------------------


BATCHES_REFUSED_WHOLE = {
    "empty": ([], "the batch is empty"),
    "past the limit": ([request(i, "ping") for i in range(101)], "the batch holds 101 messages; the limit is 100"),
    "huge": ([NOTIFICATION] * 20_000, "the batch holds 20000 messages; the limit is 100"),
}


@pytest.mark.parametrize("shape", BATCHES_REFUSED_WHOLE, ids=list(BATCHES_REFUSED_WHOLE))
def test_a_batch_refused_whole_says_why_in_one_line(probe: Probe, old: dict[str, str], shape: str) -> None:
    batch, why = BATCHES_REFUSED_WHOLE[shape]
    refused = send_mcp(probe, "POST", "/mcp", body=batch, headers=old)
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == -32600 and error["message"].startswith(why) and "\n" not in error["message"]


def test_a_batch_at_the_limit_is_served(probe: Probe, old: dict[str, str]) -> None:
    answered = send_mcp(probe, "POST", "/mcp", body=[request(i, "ping") for i in range(100)], headers=old, deadline=60)
    assert answered.status_code == 200
    assert [a["id"] for a in answered.json()] == list(range(100))


NOT_MESSAGES = {
    "nested batch": [[request(1, "ping")]],
    "scalars": [1, "ping", None, True],
    "no jsonrpc": [{"id": 1, "method": "ping"}],
    "wrong jsonrpc": [{"jsonrpc": "1.0", "id": 1, "method": "ping"}],
    "method not a string": [{"jsonrpc": "2.0", "id": 1, "method": 7}],
    "id an object": [{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}],
    "initialize": [request(9, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})],
}


@pytest.mark.parametrize("shape", NOT_MESSAGES, ids=list(NOT_MESSAGES))
def test_what_is_not_a_message_gets_an_invalid_request_in_its_place(probe: Probe, old: dict[str, str], shape: str) -> None:
    batch = NOT_MESSAGES[shape] + [request("after", "ping")]
    answered = send_mcp(probe, "POST", "/mcp", body=batch, headers=old)
    assert answered.status_code == 200, answered.text
    answers = answered.json()
    assert len(answers) == len(batch)
    for answer in answers[:-1]:
        assert answer["error"]["code"] == -32600 and answer["error"]["message"].startswith("message ")
        assert "\n" not in answer["error"]["message"]
    assert answers[-1] == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_a_mixed_batch_answers_its_requests_in_order(probe: Probe, old: dict[str, str]) -> None:
    batch = [NOTIFICATION, call("c1", ONE_PARAMETER, {"n": 4}), {"jsonrpc": "2.0", "id": "from-client", "result": {}},
             request("p", "ping"), NOTIFICATION, call("c2", "no_such_tool", {}), call("c3", NO_PARAMETERS, {"extra": 1})]
    answered = send_mcp(probe, "POST", "/mcp", body=batch, headers=old)
    assert answered.status_code == 200, answered.text
    answers = answered.json()
    assert [a["id"] for a in answers] == ["c1", "p", "c2", "c3"]
    assert answers[0]["result"]["content"][0]["text"] == "8"
    assert answers[2]["result"]["isError"] is True and "no_such_tool" in answers[2]["result"]["content"][0]["text"]
    assert answers[3]["result"]["isError"] is True and "extra" in answers[3]["result"]["content"][0]["text"]


def test_a_batch_of_notifications_and_responses_only_is_202(probe: Probe, old: dict[str, str]) -> None:
    accepted = send_mcp(probe, "POST", "/mcp", body=[NOTIFICATION, {"jsonrpc": "2.0", "id": 5, "result": {}}, NOTIFICATION], headers=old)
    assert accepted.status_code == 202 and accepted.content == b""


def test_a_batch_with_repeated_ids_answers_each(probe: Probe, old: dict[str, str]) -> None:
    answered = send_mcp(probe, "POST", "/mcp", body=[request(1, "ping"), request(1, "ping"), call(1, ONE_PARAMETER, {"n": 1})], headers=old)
    assert answered.status_code == 200
    assert [a["id"] for a in answered.json()] == [1, 1, 1]


def test_a_batch_nested_too_deep_is_refused_by_the_edge(probe: Probe, old: dict[str, str]) -> None:
    deep = b"[" * 300 + b"]" * 300
    refused = send_mcp(probe, "POST", "/mcp", raw=deep, headers=old)
    assert refused.status_code == 400


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_a_batch_on_a_version_without_batches_is_refused(probe: Probe, tools: None, version: str) -> None:
    session = open_session(probe, version)
    for batch in ([request(1, "ping")], [NOTIFICATION], [], [[1]]):
        refused = send_mcp(probe, "POST", "/mcp", body=batch, headers=session)
        assert refused.status_code == 400
        assert refused.json()["error"] == {"code": -32600, "message": f"JSON-RPC batches are not part of MCP {version}; send each message in a POST of its own"}
    probe.assert_alive()


def test_a_batch_needs_a_session_of_its_own_caller(probe: Probe, tools: None) -> None:
    assert send_mcp(probe, "POST", "/mcp", body=[request(1, "ping")]).status_code == 400  # no session id
    assert send_mcp(probe, "POST", "/mcp", body=[request(1, "ping")], headers={"Mcp-Session-Id": "forged"}).status_code == 404
    mine = open_session(probe, "2025-03-26")
    someone = probe.issue_token("admin")
    assert send_mcp(probe, "POST", "/mcp", body=[request(1, "ping")], headers=mine, token=someone).status_code == 404
    # on another server's path the session is not found either
    assert send_mcp(probe, "POST", f"/mcp/{SERVER}", body=[request(1, "ping")], headers=mine).status_code == 404
    probe.assert_alive()


# -- Last-Event-ID ------------------------------------------------------------------------------


LAST_EVENT_IDS: dict[str, str | bytes] = {
    "zero": "0", "empty": "", "inner spaces": "1 2 3", "long": "x" * 8_000, "uuid-like": "1f6755515ef64c26b049eb3220cd4163_42",
    "utf-8 bytes": "\u00e9\u00e8".encode(), "stream id and event": "_GET_stream:17", "control-free junk": "%00';--<script>",
}


@pytest.mark.parametrize("path", ["/mcp", f"/mcp/{SERVER}"])
@pytest.mark.parametrize("form", LAST_EVENT_IDS, ids=list(LAST_EVENT_IDS))
def test_a_get_asking_to_resume_is_refused_in_every_form(probe: Probe, tools: None, path: str, form: str) -> None:
    session = open_session(probe, "2025-11-25", path)
    headers = {**session, "Accept": "text/event-stream", "Last-Event-ID": LAST_EVENT_IDS[form]}
    refused = send_mcp(probe, "GET", path, headers=headers, deadline=10)
    assert refused.status_code == 400
    assert refused.headers["content-type"].startswith(PROBLEM) and refused.json()["code"] == "resumption-not-offered"
    probe.assert_alive()


def test_resumption_is_refused_without_a_session_and_on_an_unknown_server(probe: Probe, tools: None) -> None:
    resume = {"Accept": "text/event-stream", "Last-Event-ID": "1"}
    assert send_mcp(probe, "GET", "/mcp", headers=resume, deadline=10).status_code == 400
    assert send_mcp(probe, "GET", "/mcp", headers={**resume, "Mcp-Session-Id": "forged"}, deadline=10).status_code == 400
    assert send_mcp(probe, "GET", "/mcp/no_such_server", headers=resume, deadline=10).status_code == 404
    assert send_mcp(probe, "GET", "/mcp", headers=resume, token="tsa_not-a-token", deadline=10).status_code == 401
    probe.assert_alive()


# -- arguments the tool does not declare ------------------------------------------------------------


EXTRA_ARGUMENTS = {
    "one": (NO_PARAMETERS, {"surprise": 1}, ["surprise"]),
    "many": (NO_PARAMETERS, {f"k{i}": i for i in range(300)}, [f"k{i}" for i in range(300)]),
    "empty name": (NO_PARAMETERS, {"": None}, [""]),
    "beside a declared one": (ONE_PARAMETER, {"n": 2, "m": 3}, ["m"]),
    "prototype": (NO_PARAMETERS, {"__proto__": {"polluted": True}}, ["__proto__"]),
}


@pytest.mark.parametrize("case", EXTRA_ARGUMENTS, ids=list(EXTRA_ARGUMENTS))
def test_an_undeclared_argument_is_refused_on_mcp_and_rest_naming_it(probe: Probe, old: dict[str, str], case: str) -> None:
    name, arguments, unknown = EXTRA_ARGUMENTS[case]
    result = send_mcp(probe, "POST", "/mcp", body=call(1, name, arguments), headers=old).json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("invalid-input:") and all(f"input.{u}" in text for u in unknown[:20])
    refused = probe.send("POST", f"/api/v1/tools/{name}/call", json=arguments)
    assert refused.status_code == 400
    assert sorted(e["field"] for e in refused.json()["errors"]) == sorted(f"input.{u}" for u in unknown)


def test_schemas_are_closed_where_the_tool_declares_every_property(probe: Probe, old: dict[str, str]) -> None:
    tools = {t["name"]: t for t in send_mcp(probe, "POST", "/mcp", body=request(1, "tools/list"), headers=old).json()["result"]["tools"]}
    assert tools[NO_PARAMETERS]["inputSchema"] == {"type": "object", "properties": {}, "additionalProperties": False}
    assert tools[ONE_PARAMETER]["inputSchema"]["additionalProperties"] is False
    # an external MCP tool (tools file) keeps the schema its operator declared
    assert tools["weather"]["inputSchema"] == {"type": "object"}
    # no arguments, or none at all, is still a call
    for arguments in ({}, None):
        body = request(2, "tools/call", {"name": NO_PARAMETERS, **({"arguments": arguments} if arguments is not None else {})})
        result = send_mcp(probe, "POST", "/mcp", body=body, headers=old).json()["result"]
        assert result["content"][0]["text"] == "hello" and not result.get("isError")
