"""`tools/call` of an open handshake-era session, answered in the HTTP request's own task (issue 15).

The SDK serves every POST of a session through the session's loop: the request goes into the
session's message stream, its dispatcher starts a task for it, and the answer comes back through a
second stream and a router to the waiting POST. For a tool call that hop costs about as much as
the REST route does in all, so MCP calls ran at half the speed of REST calls of the same tool.

`DirectCalls` answers a `tools/call` POST of a session it knows with the SDK's own request kernel
(`ServerRunner.on_request`: the server's middleware, the spec's validation, the handler, the wire
shape) on the session's own `Connection`, and writes the JSON-RPC answer as the SDK's JSON response
mode does. Everything else (initialize, notifications, other methods, GET and DELETE, anything
malformed or unexpected) goes to the session manager as before, which then answers or refuses it.

A call is answered here only while the manager still serves its session (not ended, not expired),
for the owner that opened it (the same token and server: anyone else gets the manager's 404), on a
session that finished its handshake (else the kernel refuses, as the loop would). A call answered
here keeps its session alive, as the manager's own requests do. What such a call gives up is what
the JSON response mode gives up already (notifications tied to the request; server-to-client
requests) and one thing more: a posted `notifications/cancelled` does not stop it, just as it would
not stop the tool's work, which runs to its end in a worker thread either way.

Reaching into the manager (its sessions, their owners, a transport's idle clock) uses SDK 2.3
internals, all through `api/mcp_sdk.py`; if a later SDK moves them, `serves` answers False and every
call takes the SDK's path again (slower, never wrong). `tests/unit/test_mcp_sdk.py` and
`tests/api/test_mcp_direct.py` notice that.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.runner import ServerRunner
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import INTERNAL_ERROR, ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse, RequestId
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from api import mcp_sdk

log = logging.getLogger("toolsmith.mcp")

METHOD = "tools/call"


@dataclass
class _Session:
    connection: Any
    lifespan_state: Any
    owner: Any


@dataclass
class _CallContext:
    """The SDK's `DispatchContext` for one call answered with one JSON body: nothing can go to the
    client but the answer (as in the SDK's JSON response mode), so a notification tied to the call
    is dropped and a server-to-client request is refused."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: MessageMetadata
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        log.debug("dropped %s: a JSON answer carries only the result", method)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


class DirectCalls:
    """The sessions whose calls can be answered in the request's task, and the answering."""

    def __init__(self, server: Any) -> None:
        self._server = server
        self._sessions: dict[str, _Session] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    async def session_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """A `Server.middleware`: a session's first message (its initialize) makes it known, with
        its owner, and its connection's teardown forgets it, however the session ends."""
        connection = mcp_sdk.connection_of(ctx.session)
        session_id = getattr(connection, "session_id", None)
        request = ctx.request
        if session_id is not None and session_id not in self._sessions and isinstance(request, Request):
            user = request.scope.get("user")
            if isinstance(user, AuthenticatedUser):
                self._sessions[session_id] = _Session(connection, ctx.lifespan_context, user.access_token)
                connection.exit_stack.callback(self._sessions.pop, session_id, None)
        return await call_next(ctx)

    def negotiated_version(self, scope: Scope) -> str | None:
        """The protocol version the session a request names negotiated, if it is known here and
        the request comes from the session's owner."""
        session_id = Request(scope).headers.get(MCP_SESSION_ID_HEADER)
        session = self._sessions.get(session_id) if session_id is not None else None
        user = scope.get("user")
        if session is None or not isinstance(user, AuthenticatedUser) or user.access_token != session.owner:
            return None
        return getattr(session.connection, "protocol_version", None)

    def serves(self, manager: StreamableHTTPSessionManager, scope: Scope) -> tuple[_Session, Any] | None:
        """The session and transport a POST names, if its calls can be answered here."""
        if scope["method"] != "POST":
            return None
        http = Request(scope)
        headers = http.headers
        session_id = headers.get(MCP_SESSION_ID_HEADER)
        session = self._sessions.get(session_id) if session_id is not None else None
        transport = mcp_sdk.transport_of(manager, session_id) if session is not None else None
        if transport is None or transport.is_terminated or not mcp_sdk.keeps_idle_clock(transport):
            return None
        if transport.idle_scope is not None and transport.idle_scope.cancel_called:  # expired, going away
            return None
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser) or user.access_token != session.owner:
            return None
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None
        has_json, _ = check_accept_headers(http)
        if not has_json or headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return None
        return session, transport

    async def answer(self, found: tuple[_Session, Any], scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Answers the POST if it is one `tools/call`; else the receive to hand the SDK (the body,
        read here, replayed)."""
        session, transport = found
        body, ending = await read_body(receive)
        request = _tools_call(body) if ending is None else None
        if request is None:
            return replay_body(body, ending, receive)
        async with mcp_sdk.in_flight(transport):
            answer = await self._call(session, request, scope)
        headers = [(b"content-type", b"application/json"), (MCP_SESSION_ID_HEADER.encode(), transport.mcp_session_id.encode())]
        payload = answer.model_dump_json(by_alias=True, exclude_unset=True).encode()
        await send({"type": "http.response.start", "status": 200, "headers": headers + [(b"content-length", str(len(payload)).encode())]})
        await send({"type": "http.response.body", "body": payload})
        return None

    async def _call(self, session: _Session, request: JSONRPCRequest, scope: Scope) -> JSONRPCResponse | JSONRPCError:
        http = Request(scope)
        context = _CallContext(
            transport=TransportContext(kind="streamable-http", can_send_request=False, headers=http.headers),
            request_id=request.id,
            message_metadata=ServerMessageMetadata(request_context=http, can_send_request=False),
        )
        runner = ServerRunner(self._server, session.connection, session.lifespan_state)
        try:
            result = await runner.on_request(context, request.method, request.params)
        except Exception as error:
            data = handler_exception_to_error_data(error)
            if data is None:
                log.exception("an MCP tools/call failed outside the tool", extra={"requestId": request.id})
                data = ErrorData(code=INTERNAL_ERROR, message="Internal error")
            return JSONRPCError(jsonrpc="2.0", id=request.id, error=data)
        return JSONRPCResponse(jsonrpc="2.0", id=request.id, result=result)


def _tools_call(body: bytes) -> JSONRPCRequest | None:
    """The body as one JSON-RPC `tools/call` request, or None (anything else is the SDK's)."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(decoded, dict) or decoded.get("method") != METHOD:
        return None
    try:
        return JSONRPCRequest.model_validate(decoded, by_name=False)
    except ValidationError:
        return None


async def read_body(receive: Receive) -> tuple[bytes, Message | None]:
    """The request's body, and the message that ended it early (a disconnect), if one did."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


def replay_body(body: bytes, ending: Message | None, receive: Receive) -> Receive:
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}] if ending is None else [ending]

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return replay
