"""A plain `tools/call` answered without the SDK's kernel (api/mcp_direct.py `FastCalls`) puts the
same bytes on the wire as the kernel does, for every kind of result, on every protocol version it
answers: the SDK's `CallToolResult` through its result surface, then its JSON writer of each era."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.runner import ServerRunner
from mcp_types import CallToolResult, JSONRPCResponse, TextContent

from api import mcp_direct
from api.mcp_tools import CALL_FAILED, mcp_result, not_offered_text, refusal_text, refused, wire_error, wire_result
from domain.errors import ToolNotCallable
from domain.content import content_of
from domain.ports import ExecutionError, ExecutionResult

RESULTS = [
    ExecutionResult(output=42, logs=(), duration_millis=0.865),
    ExecutionResult(output="plain text, ünïcödé and \u2028 and an emoji \U0001F600", logs=("one", "twö"), duration_millis=3),
    ExecutionResult(output={"loud": "HI", "nested": {"none": None, "list": [1, 2.5, None, True, "ä"]}, "big": 2**53, "tiny": 1e-7,
                            "huge": 1e21, "neg": -0.0}, logs=("a log",), duration_millis=12.0),
    ExecutionResult(output=[1, {"a": None}], duration_millis=0.001),
    ExecutionResult(output=None, duration_millis=1e16),
    ExecutionResult(output={}, duration_millis=0.1),
    ExecutionResult(error=ExecutionError("runtime", "TypeError: no way ü"), logs=("before",), duration_millis=0.5),
    # MCP content a module returned (ai.content), read as the toolbox reads it, with and without a structured value
    ExecutionResult(content=tuple(content_of([
        {"$mcp": "text", "text": "ä"}, {"$mcp": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"$mcp": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"$mcp": "resource", "uri": "test://r", "mimeType": "text/plain", "text": "t"}, {"$mcp": "resource", "uri": "test://b", "blob": "AAAA"},
        {"$mcp": "link", "uri": "test://l", "name": "l", "mimeType": "text/plain", "description": "d"}])[0]), duration_millis=0.2),
    ExecutionResult(output={"total": 2}, content=tuple(content_of({"$mcp": "text", "text": "two"})[0]), duration_millis=0.3),
]
REFUSALS = [
    (wire_error(refusal_text(ToolNotCallable("x", "the tool is disabled"))), refused(ToolNotCallable("x", "the tool is disabled"))),
    (wire_error(not_offered_text("srv", "x")), CallToolResult(content=[TextContent(text=not_offered_text("srv", "x"))], is_error=True)),
    (wire_error(CALL_FAILED), CallToolResult(content=[TextContent(text=CALL_FAILED)], is_error=True)),
]
STAMP = {"name": "toolsmith", "version": "0.1.0"}


class _Server:
    """What `ServerRunner._serialize` reads of the server."""

    cache_hints: dict[str, Any] = {}
    server_info_stamp = STAMP


def kernels_bytes(result: CallToolResult, version: str, request_id: Any) -> bytes:
    """What the SDK writes: the kernel's serialization, then the session answer's
    (`api.mcp_direct.DirectCalls.answer`) or the 2026 entry's JSON writer."""
    runner = ServerRunner(_Server(), None, None)  # type: ignore[arg-type]
    dumped = runner._serialize("tools/call", version, result)  # noqa: SLF001 - the kernel's own step
    response = JSONRPCResponse(jsonrpc="2.0", id=request_id, result=dumped)
    if version == mcp_direct.MODERN_VERSION:
        return json.dumps(response.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")).encode()
    return response.model_dump_json(by_alias=True, exclude_unset=True).encode()


def fast_bytes(wire: dict[str, Any], version: str, request_id: Any) -> bytes:
    if version == mcp_direct.MODERN_VERSION:
        status, body = mcp_direct._modern_answer(request_id, wire, dict(STAMP))  # noqa: SLF001
        assert status == 200
        return body
    return mcp_direct._session_answer(request_id, wire)  # noqa: SLF001


@pytest.mark.parametrize("version", sorted(mcp_direct.KNOWN_VERSIONS))
@pytest.mark.parametrize("request_id", [7, "a-1"])
def test_a_results_bytes_are_the_kernels(version: str, request_id: Any) -> None:
    for result in RESULTS:
        assert fast_bytes(wire_result(result), version, request_id) == kernels_bytes(mcp_result(result), version, request_id), result
    for wire, model in REFUSALS:
        assert fast_bytes(wire, version, request_id) == kernels_bytes(model, version, request_id), wire


def test_only_the_plainest_tools_call_is_taken() -> None:
    plain = b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}'
    assert mcp_direct._plain_call(plain) is not None  # noqa: SLF001
    for body in (
        b'{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"echo"}}',  # a bool is no id
        b'{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"echo"}}',
        b'{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"echo"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":[1]}}',
        b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}',  # a notification
        b'[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}]',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"n":NaN}}}',
    ):
        assert mcp_direct._plain_call(body) is None, body  # noqa: SLF001


META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


@pytest.mark.parametrize("version", sorted(mcp_direct.KNOWN_VERSIONS))
def test_the_params_shortcut_answers_as_the_specs_validation(version: str) -> None:
    from mcp_types import methods

    def validates(params: dict[str, Any]) -> bool:
        try:
            methods.validate_client_request("tools/call", version, params)
        except Exception:  # noqa: BLE001
            return False
        return True

    cases = [
        {"name": "echo"}, {"name": "", "arguments": None}, {"name": "echo", "arguments": {"a": [1, None, {"b": 2.5}], "": "x"}},
        {"name": "echo", "arguments": {}, "_meta": META}, {"name": "echo", "_meta": {"progressToken": 3}},
        {"name": "echo", "_meta": {"progressToken": [3]}}, {"name": "echo", "_meta": {**META, "io.modelcontextprotocol/clientInfo": 5}},
        {"name": "echo", "_meta": {**META, "io.modelcontextprotocol/clientCapabilities": []}}, {"name": "echo", "_meta": {}},
        {"name": "echo", "task": {"ttl": "no"}}, {"name": "echo", "arguments": {"x": 1}, "_meta": {"traceparent": 7}},
    ]
    for params in cases:
        assert mcp_direct._valid_params(version, params) == validates(params), params  # noqa: SLF001
        assert mcp_direct._valid_params(version, {**params, "name": "other"}) == validates({**params, "name": "other"}), params  # noqa: SLF001


def test_the_accept_header_is_read_as_the_sdk_reads_it() -> None:
    from mcp.server.streamable_http import check_accept_headers
    from starlette.requests import Request

    for accept in ("", "application/json", "text/event-stream", "application/json, text/event-stream", "*/*", "application/*",
                   "APPLICATION/JSON;q=0.5", "text/*", "application/jsonx", " application/json ; charset=utf-8"):
        request = Request({"type": "http", "headers": [(b"accept", accept.encode())] if accept else []})
        assert mcp_direct.accepts_json(accept) == check_accept_headers(request)[0], accept


def test_the_2026_writer_is_the_stdlibs_compact_json_byte_for_byte() -> None:
    """`stdlib_compact` writes with orjson only when its bytes cannot differ from the stdlib's: past
    ASCII, DEL, NaN and infinities (orjson's `null`), exponents, big integers, non-string keys and
    lone surrogates are the stdlib's, and what the stdlib refuses is refused."""
    values: list[Any] = [
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "42"}], "isError": False}},
        [1, 2**63, 2**64, -(2**63) - 1, 1e16, 1e15, 1e-7, 0.412, -0.0, float("nan"), float("inf"), -float("inf"), None],
        ["null", "1e5", "ü", "\x7f", "\x00\x1f\n\t\"\\/", "\ud800", "\U0001F600", ""], {1: 2, "a": {"b": [True, False]}}, (1, 2), {},
    ]
    for value in values:
        assert mcp_direct.stdlib_compact(value) == json.dumps(value, separators=(",", ":")).encode(), value

    class Point:
        pass

    import dataclasses
    import datetime

    @dataclasses.dataclass
    class Pair:
        a: int

    for refused in (Point(), Pair(1), datetime.datetime(2026, 1, 1)):
        with pytest.raises(TypeError):
            json.dumps(refused)
        with pytest.raises(TypeError):
            mcp_direct.stdlib_compact(refused)
