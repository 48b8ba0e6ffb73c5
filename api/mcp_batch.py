"""JSON-RPC batches on MCP's streamable HTTP (issue 28): accepted where the session's protocol
version has them, refused in one line where it does not.

MCP 2025-03-26 (and 2024-11-05) say a server MUST accept a POST whose body is a JSON-RPC batch;
2025-06-18 took batches out of the protocol, and later versions (2025-11-25, 2026-07-28) leave them
out. The SDK reads every body as one message, so a batch got `-32602` with a pydantic dump.

Under a version with batches, each message of the batch is served as a POST of its own on the
same request (the same gate's offer, the same session, the SDK's own checks and handlers), one
after another, and the answers come back as one JSON array in the batch's order; a batch of
notifications and responses only is answered 202 with no body, as one such message is. A message
of the batch that is not a JSON-RPC message gets an Invalid Request error in its place (JSON-RPC
2.0 docs/sandbox.md). When the first message is refused before it is dispatched (no session, an expired one, a
version the SDK does not take) that refusal answers the whole batch: nothing of it ran.

The version is the session's negotiated one (its initialize), else the `MCP-Protocol-Version`
header, else 2025-03-26, which the spec says a server assumes when a client sends no header.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import INVALID_REQUEST, JSONRPCRequest
from mcp_types.jsonrpc import jsonrpc_message_adapter
from pydantic import ValidationError
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

# The protocol versions whose streamable HTTP takes a JSON-RPC batch in one POST.
BATCH_VERSIONS = frozenset({"2024-11-05", "2025-03-26"})
ASSUMED_VERSION = "2025-03-26"
# A batch is served message by message; more than this many in one POST is refused whole.
MAX_MESSAGES = 100

ServeOne = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_batch(body: bytes) -> bool:
    """Whether the body is a JSON array (the edge has checked it is JSON)."""
    return body.lstrip(b" \t\r\n")[:1] == b"["


def version_of(scope: Scope, negotiated: str | None) -> str:
    if negotiated is not None:
        return negotiated
    for key, value in scope.get("headers") or []:
        if key == MCP_PROTOCOL_VERSION_HEADER.encode():
            return value.decode("latin-1")
    return ASSUMED_VERSION


def _error(request_id: Any, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": INVALID_REQUEST, "message": message}}


def refusal(message: str) -> Response:
    """A batch refused whole: one JSON-RPC Invalid Request error (id null, as no message was read)."""
    return Response(orjson.dumps(_error(None, message)), status_code=400, media_type="application/json")


class _Captured:
    """The answer the SDK gave one message of the batch."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k.lower() == name), None)

    async def replay(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})


def _id_of(element: Any) -> Any:
    """The id of a batch element, where it has one a JSON-RPC answer may repeat."""
    request_id = element.get("id") if isinstance(element, dict) else None
    return request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def _invalid(index: int, element: Any) -> str | None:
    """Why a batch element is not a message to serve, or None."""
    where = f"message {index + 1} of the batch"
    if not isinstance(element, dict):
        return f"{where} is not a JSON-RPC message object"
    if "id" in element and _id_of(element) is None:  # else read as a notification, and never answered
        return f"{where} has an id that is not a string or an integer (MCP's ids are never null)"
    try:
        message = jsonrpc_message_adapter.validate_python(element, by_name=False)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"] if not isinstance(part, int)) or "message"
        return f"{where} is not a valid JSON-RPC message ({field}: {first['msg']})"
    if isinstance(message, JSONRPCRequest) and message.method == "initialize":
        return f"{where} is an initialize request, which may not be part of a batch"
    return None


def _one(scope: Scope, body: bytes) -> tuple[Scope, Receive]:
    """A POST of one message, on the batch's own request."""
    headers = [(k, v) for k, v in scope.get("headers") or [] if k != b"content-length"]
    headers.append((b"content-length", str(len(body)).encode()))
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> Message:
        if pending:
            return pending.pop()
        return {"type": "http.disconnect"}

    return {**scope, "headers": headers}, receive


async def answer(body: bytes, version: str, scope: Scope, receive: Receive, send: Send, serve_one: ServeOne) -> None:
    """Answers the POST whose body is the batch `body`, under the session's protocol `version`."""
    if version not in BATCH_VERSIONS:
        await refusal(f"JSON-RPC batches are not part of MCP {version}; send each message in a POST of its own")(scope, receive, send)
        return
    elements = orjson.loads(body)
    if not elements:
        await refusal("the batch is empty; a batch holds at least one JSON-RPC message")(scope, receive, send)
        return
    if len(elements) > MAX_MESSAGES:
        await refusal(f"the batch holds {len(elements)} messages; the limit is {MAX_MESSAGES}")(scope, receive, send)
        return
    answers: list[Any] = []
    session_id: bytes | None = None
    served = 0
    for index, element in enumerate(elements):
        reason = _invalid(index, element)
        if reason is not None:
            answers.append(_error(_id_of(element), reason))
            continue
        one_scope, one_receive = _one(scope, orjson.dumps(element))
        captured = _Captured()
        await serve_one(one_scope, one_receive, captured)
        served += 1
        session_id = session_id or captured.header(MCP_SESSION_ID_HEADER.encode())
        if captured.status == 202:
            continue
        if captured.status >= 400 and served == 1:
            await captured.replay(send)  # refused before dispatch: the batch's answer, nothing ran
            return
        answers.append(_answer_of(captured, element))
    if not answers:
        await Response(status_code=202)(scope, receive, send)
        return
    headers = {MCP_SESSION_ID_HEADER: session_id.decode()} if session_id else None
    await Response(orjson.dumps(answers), media_type="application/json", headers=headers)(scope, receive, send)


def _answer_of(captured: _Captured, element: dict[str, Any]) -> Any:
    """The JSON-RPC answer the SDK gave a request, or an error in its place for anything else
    (the session ended between two messages of the batch)."""
    try:
        decoded = orjson.loads(captured.body)
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and ("result" in decoded or "error" in decoded):
        if decoded.get("id") is None and "error" in decoded:
            decoded["id"] = _id_of(element)
        return decoded
    return _error(_id_of(element), f"the message was refused (HTTP {captured.status})")
