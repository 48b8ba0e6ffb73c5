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

`FastCalls` goes one step further for the plainest and hottest request there is, a valid
`tools/call` (issue 30: MCP at REST's cost), of a session as above or a self-contained 2026-07-28
POST: the body is parsed once (orjson); the call is awaited on the event loop (`Toolbox.acall`, as
REST's) with the caller's offer kept while the store has not moved since it was taken, else the
offer is taken afresh and the call made in one worker thread (one hop); and the answer is built
as a plain dict and serialized once, the same bytes as the SDK's kernel gives
(`tests/unit/test_mcp_wire.py`). It answers only what it can
answer exactly as the SDK would: the SDK's own checks run first (the spec's validation of the
params, the 2026 era's envelope, routing headers and `Mcp-Param-*` headers), and whatever they
would refuse, or anything it does not know to be plain (an OpenTelemetry tracer to report spans
to, a middleware it does not know, a kind with no capacity left, a protocol version whose result
surface it was not checked against), goes the way above, or to the SDK, as before.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import orjson
import pydantic_core
from opentelemetry import trace
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.runner import ServerRunner, modern_error_data
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS, MCP_METHOD_HEADER, MCP_NAME_HEADER, MCP_PARAM_HEADER_PREFIX, MCP_PROTOCOL_VERSION_HEADER, InboundModernRoute,
    classify_inbound_request, validate_mcp_param_headers,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import INTERNAL_ERROR, SERVER_INFO_META_KEY, ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse, RequestId
from mcp_types import methods as spec_methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from api import mcp_sdk, problems
from api import mcp_progress
from api.mcp_progress import CallNotifications, SessionLevels
from api.mcp_tools import CALL_FAILED, LOGS_META, not_offered_text, refusal_text, wire_error, wire_result
from api.mcp_watch import Offer, take_offer
from application.context import MCP
from application.tool_search import META_TOOLS
from application.queries import call_context
from application.queries import call_context as _call_context
from domain.errors import ModuleError, UnknownRecord
from domain.ports import ExecutionResult

if TYPE_CHECKING:
    from api.services import Services
    from application.principals import Principal

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

    def serves(self, manager: StreamableHTTPSessionManager, scope: Scope,
               headers: dict[str, str] | None = None) -> tuple[_Session, Any] | None:
        """The session and transport a POST names, if its calls can be answered here (`headers`:
        the request's `session_headers`, when the caller read them already)."""
        if scope["method"] != "POST":
            return None
        if headers is None:
            headers = session_headers(scope)
        session_id = headers.get(_SESSION_ID)
        session = self._sessions.get(session_id) if session_id is not None else None
        transport = mcp_sdk.transport_of(manager, session_id) if session is not None else None
        if transport is None or transport.is_terminated or not mcp_sdk.keeps_idle_clock(transport):
            return None
        if transport.idle_scope is not None and transport.idle_scope.cancel_called:  # expired, going away
            return None
        user = scope.get("user")
        # (The gate hands every request of one caller the same owner: `is` answers at once.)
        if not isinstance(user, AuthenticatedUser) or (user.access_token is not session.owner and user.access_token != session.owner):
            return None
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None
        has_json = accepts_json(headers.get("accept", ""))
        if not has_json or headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return None
        return session, transport

    def initialized(self, manager: StreamableHTTPSessionManager, scope: Scope,
                    headers: dict[str, str] | None = None) -> tuple[_Session, Any] | None:
        """`serves`, once the session's handshake ended (the kernel refuses a request before it):
        the session gate of the fast paths (`FastCalls`; `api.mcp_gate` for prompts and resources)."""
        found = self.serves(manager, scope, headers)
        return found if found is not None and getattr(found[0].connection, "initialize_accepted", False) else None

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


# A tracer provider named in the environment, which `trace.get_tracer_provider` loads when first asked.
_PROVIDER_IN_ENVIRONMENT = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_UNKNOWN = object()


def tracer_provider_set() -> bool:
    """Whether OpenTelemetry has a tracer provider (`trace.get_tracer_provider()` is not the
    proxy). While none is set, `get_tracer_provider` looks the environment up on every call (3 µs
    of a plain call's path); its module's global says the same at once: it is set once, never
    unset. A provider named in the environment, or an OpenTelemetry without that global: the
    public call answers."""
    if getattr(trace, "_TRACER_PROVIDER", _UNKNOWN) is None and not _PROVIDER_IN_ENVIRONMENT:
        return False
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def first_header(scope: Scope, name: bytes) -> str | None:
    """A header's first value (as Starlette's `Headers.get`), `name` in lowercase."""
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return value.decode("latin-1")
    return None


_SESSION_ID = MCP_SESSION_ID_HEADER.lower()
# What `serves` reads of a request's headers, each by its first value (as Starlette's `Headers.get`).
_SESSION_HEADERS = {name.encode(): name for name in (_SESSION_ID, MCP_PROTOCOL_VERSION_HEADER, "accept", "content-type")}


def session_headers(scope: Scope) -> dict[str, str]:
    """The first value of each header `serves` reads, by lowercase name, in one pass."""
    found: dict[str, str] = {}
    for key, value in scope.get("headers") or ():
        name = _SESSION_HEADERS.get(key.lower())
        if name is not None and name not in found:
            found[name] = value.decode("latin-1")
    return found


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


@lru_cache(maxsize=64)
def accepts_json(accept: str) -> bool:
    """Whether an `Accept` header's value takes JSON, as the SDK's `check_accept_headers` reads it
    (kept per value: a client sends the same one with every request)."""
    has_json, _ = check_accept_headers(_Accepting(accept))
    return has_json


@dataclass(frozen=True)
class _Accepting:
    """What `check_accept_headers` reads of a request: its `Accept` header."""

    accept: str

    @property
    def headers(self) -> dict[str, str]:
        return {"accept": self.accept}


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


# -- FastCalls: a plain `tools/call` of either era, without the SDK's kernel ------------------------

# The one 2026-era version whose result surface `_modern_result` was checked against.
MODERN_VERSION = "2026-07-28"
KNOWN_VERSIONS = frozenset(HANDSHAKE_PROTOCOL_VERSIONS) | {MODERN_VERSION}
PLAIN_PARAMS = frozenset({"name", "arguments"})
_PARAM_HEADER = MCP_PARAM_HEADER_PREFIX.lower()
# Offers kept for calls answered on the event loop, one per caller and server (the oldest goes first).
MAX_OFFERS_KEPT = 4_096
_JSON_HEADERS = [(b"content-type", b"application/json")]


class _Declined(Exception):
    """What the SDK must answer after all (a `Mcp-Param-*` header it refuses): nothing ran."""


@dataclass
class _Failed:
    """Building the answer failed after the call (the kernel would answer a JSON-RPC error)."""

    error: Exception


class FastCalls:
    """Answers a plain `tools/call` of a session or of the 2026 era in the request's own task, with
    the SDK's checks but not its kernel (see the module)."""

    def __init__(self, services: Services, server: Any, direct: DirectCalls, security: TransportSecuritySettings) -> None:
        self._services = services
        self._server = server
        self._direct = direct
        self._security = TransportSecurityMiddleware(security)
        self._chain: tuple[Any, ...] | None = None
        self._spans = True
        # The 2026 era's `serverInfo` stamp: the SDK copies it afresh for each answer, in case one
        # is changed; this one is only ever serialized.
        self._server_info = server.server_info_stamp
        self._offers: dict[tuple[Principal, str | None], Offer] = {}
        # The transport security's verdict per (Content-Type, Host, Origin) a 2026 call came with.
        self._secured: dict[tuple[str | None, str | None, str | None], bool] = {}
        # The log level each session asked for (`logging/setLevel`, served by the SDK's path).
        levels = getattr(server, "log_levels", None)
        self.levels: SessionLevels = levels if levels is not None else SessionLevels()

    def seal(self) -> None:
        """Takes the server's middleware as it is now as the chain known to do nothing for a plain
        call: OpenTelemetry's (while no tracer is configured) and the two session middlewares,
        which act on a session's first message only (they need no `Connection` of a 2026 call)."""
        self._chain = list(self._server.middleware)
        self._spans = any(isinstance(middleware, OpenTelemetryMiddleware) for middleware in self._chain)

    def _plain_server(self) -> bool:
        # (A list's == takes each element as equal when it is the same object, as the chain's are.)
        if self._chain is None or self._server.middleware != self._chain:
            return False
        # The SDK records a span per request once a tracer provider is set: it then serves the call.
        return not self._spans or not tracer_provider_set()

    async def answer(self, manager: StreamableHTTPSessionManager, scope: Scope, body: bytes, principal: Principal,
                     server_id: str | None, send: Send) -> bool:
        """Answers the POST whose body is `body` if it is a plain `tools/call`; False: not answered,
        nothing sent, nothing run (the caller serves it as before)."""
        request = _plain_call(body)
        if request is None or len(body) > manager.max_request_body_size or not self._plain_server():
            return False
        decoded, request_id, params = request
        if params["name"] in META_TOOLS:
            return False  # tool search's own tools (api.mcp_search), where the offer has it on: the SDK's path
        read = session_headers(scope)
        header_version = read.get(MCP_PROTOCOL_VERSION_HEADER)
        transport = None
        headers = None
        if header_version is None or header_version in HANDSHAKE_PROTOCOL_VERSIONS:
            found = self._direct.initialized(manager, scope, read)
            if found is None:
                return False  # not a session served here, or one before its handshake's end
            session, transport = found
            version = getattr(session.connection, "protocol_version", None)
        else:
            headers = Headers(scope=scope)
            version = await self._modern_version(scope, decoded)
        if version not in KNOWN_VERSIONS or not _valid_params(version, params):
            return False
        if any(kind.saturated() for kind in self._services.toolbox.kinds):
            return False  # the SDK's path says "busy" at once, before the call queues for a thread
        modern = version == MODERN_VERSION
        notes = self._notifications(read.get("accept"), params, None if modern else getattr(session.connection, "session_id", None))
        started = transport is not None and mcp_sdk.call_started(transport)
        try:
            if notes is not None:
                await self._streamed(notes, send, scope, principal, server_id, request_id, params, headers if modern else None,
                                     transport)
                return True
            answer = await self._call(principal, server_id, request_id, params, headers if modern else None)
        except _Declined:
            return False
        except UnknownRecord as error:
            await problems.problem(404, error.code, error.detail)(scope, _no_more, send)
            return True
        finally:
            if started:
                mcp_sdk.call_ended(transport)
        if modern:
            status, payload = _modern_answer(request_id, answer, self._server_info)
            response = [(b"content-length", str(len(payload)).encode()), *_JSON_HEADERS]
        else:
            assert transport is not None
            status, payload = 200, _session_answer(request_id, answer)
            response = [*_JSON_HEADERS, (MCP_SESSION_ID_HEADER.encode(), transport.mcp_session_id.encode()),
                        (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": response})
        await send({"type": "http.response.body", "body": payload})
        return True

    def _notifications(self, accept: str | None, params: dict[str, Any], session_id: str | None) -> CallNotifications | None:
        """The call's notifications, when it asks for some (a progress token; a log level: the
        session's, or the 2026 request's own) and takes an SSE answer (`accept`: the request's
        first `Accept` header); else None (a JSON answer)."""
        token = mcp_progress.progress_token(params)
        level = self.levels.level(session_id) if session_id is not None else mcp_progress.request_level(params)
        if token is None and not mcp_progress.sends_lines(level):
            return None
        if "text/event-stream" not in (accept or ""):
            return None
        return CallNotifications(token, level, params["name"])

    async def _streamed(self, notes: CallNotifications, send: Send, scope: Scope, principal: Principal, server_id: str | None,
                        request_id: RequestId, params: dict[str, Any], headers: Any, transport: Any) -> None:
        """Answers as the SDK's 2026 entry does in SSE mode: the JSON body when the call ends
        before telling anything, else `text/event-stream`, each notification as it comes and the
        response last. Raises `_Declined` (nothing sent) when the SDK must answer after all."""
        outcome: list[Any] = []

        async def run() -> None:
            try:
                with notes.sender:
                    answer = await self._call(principal, server_id, request_id, params, headers, notes.events)
                    if isinstance(answer, dict):
                        notes.lines_after(answer.get("_meta", {}).get(LOGS_META))
                    outcome.append(answer)
            except (_Declined, UnknownRecord) as error:
                outcome.append(error)

        modern = headers is not None
        session = [] if modern else [(MCP_SESSION_ID_HEADER.encode(), transport.mcp_session_id.encode())]
        async with notes.receiver, anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            try:
                first: bytes | None = await notes.receiver.receive()
            except anyio.EndOfStream:
                first = None
            if first is None:
                answer = outcome[0]
                if isinstance(answer, _Declined):
                    raise answer
                if isinstance(answer, UnknownRecord):
                    await problems.problem(404, answer.code, answer.detail)(scope, _no_more, send)
                    return
                status, payload = (_modern_answer(request_id, answer, self._server_info) if modern
                                   else (200, _session_answer(request_id, answer)))
                await send({"type": "http.response.start", "status": status,
                            "headers": [*_JSON_HEADERS, *session, (b"content-length", str(len(payload)).encode())]})
                await send({"type": "http.response.body", "body": payload})
                return
            await send({"type": "http.response.start", "status": 200, "headers": [*mcp_progress.SSE_HEADERS, *session]})
            await send({"type": "http.response.body", "body": first, "more_body": True})
            async for frame in notes.receiver:
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        answer = outcome[0]
        if isinstance(answer, (_Declined, UnknownRecord)):  # (a refusal after a notification cannot be: none ran)
            answer = _Failed(answer)
        payload = _modern_answer(request_id, answer, self._server_info)[1] if modern else _session_answer(request_id, answer)
        await send({"type": "http.response.body", "body": mcp_progress.sse_event(payload)})

    async def _modern_version(self, scope: Scope, decoded: dict[str, Any]) -> str | None:
        """The version of a 2026-era POST, if the SDK's checks before dispatch pass it
        (`mcp.server._streamable_http_modern.handle_modern_request`, in its order), else None."""
        routing = routing_headers(scope)
        if routing is None:
            return None  # (a routing header sent twice, which the SDK refuses)
        secured = (routing.pop("content-type", None), routing.pop("host", None), routing.pop("origin", None))
        if not await self._secure(secured):
            return None
        if not accepts_json(routing.pop("accept", "")):
            return None
        params = decoded["params"]
        try:
            meta = orjson.dumps(params.get("_meta"))
        except orjson.JSONEncodeError:  # (a number orjson cannot write, say): the SDK's ladder unkept
            return _modern_verdict_of(decoded, routing)
        return _modern_verdict(meta, params["name"], tuple(sorted(routing.items())))

    async def _call(self, principal: Principal, server_id: str | None, request_id: RequestId, params: dict[str, Any],
                    headers: Any, events: Any = None) -> dict[str, Any] | _Failed:
        """The wire result of the call: on the event loop with the caller's offer as of the store's
        position, when the store reads in memory and an offer taken at that position is kept;
        else the offer taken afresh and the call made in one worker thread. `events`: the
        listener of its notifications (api.mcp_progress), if the request asked for them."""
        services = self._services

        def call_context(principal: Principal, way_in: str, trace: str) -> Any:
            made = _call_context(principal, way_in, trace)
            return made if events is None else dataclasses.replace(made, events=events)

        name, arguments = params["name"], params.get("arguments")
        key = (principal, server_id)
        offer = self._offers.get(key) if services.store.owns_its_writes else None
        # The offer is everything the store said at its generation (its position): the tools, the
        # caller's profile, the server's tools. While the store has not moved, a new one would be
        # the same; any change (of any tenant) moves it, and the offer is taken again.
        if offer is not None and offer.generation == services.toolbox.generation():
            entry = offer.tool(name)
            self._check_param_headers(entry, arguments, headers)
            if entry is None:
                services.toolbox.refused(principal.tenant, name, call_context(principal, MCP, str(request_id)), "tool-not-found")
                return wire_error(not_offered_text(server_id, name))
            try:
                services.toolbox.admit(principal.tenant, name, lambda: call_context(principal, MCP, str(request_id)))
                result = await services.toolbox.acall(principal.tenant, name, arguments if arguments is not None else {},
                                                      permissions=offer.permissions, context=call_context(principal, MCP, str(request_id)))
            except Exception as error:
                return _call_failed(name, error)
            return _wired(result)

        taken: list[Offer] = []

        def offered_call() -> dict[str, Any] | _Failed:
            # Raises UnknownRecord for a server the tenant does not have, as the gate's offer does.
            taken.append(take_offer(services, principal, server_id))
            entry = taken[0].tool(name)
            self._check_param_headers(entry, arguments, headers)
            if entry is None:
                # The toolbox would run any tool the caller may use; through this server, only what it offers.
                services.toolbox.refused(principal.tenant, name, call_context(principal, MCP, str(request_id)), "tool-not-found")
                return wire_error(not_offered_text(server_id, name))
            try:
                services.toolbox.admit(principal.tenant, name, lambda: call_context(principal, MCP, str(request_id)))
                result = services.toolbox.call(principal.tenant, name, arguments if arguments is not None else {},
                                               permissions=taken[0].permissions, context=call_context(principal, MCP, str(request_id)))
            except Exception as error:
                return _call_failed(name, error)
            return _wired(result)

        try:
            return await anyio.to_thread.run_sync(offered_call)
        finally:
            if taken:  # kept here, on the loop: the only place the kept offers change
                self._keep(key, taken[0])

    async def _secure(self, secured: tuple[str | None, str | None, str | None]) -> bool:
        """Whether the SDK's transport security passes a POST with these first values of
        `Content-Type`, `Host` and `Origin` (all it reads of a request), asked once per values: a
        client sends the same ones with every call (bounded; what it refuses is the SDK's to say)."""
        kept = self._secured.get(secured)
        if kept is None:
            content_type, host, origin = secured
            asked = {name: value for name, value in (("content-type", content_type), ("host", host), ("origin", origin))
                     if value is not None}
            kept = await self._security.validate_request(_Headed(asked), is_post=True) is None  # type: ignore[arg-type]
            if len(self._secured) >= MAX_SECURED_KEPT:
                self._secured.pop(next(iter(self._secured)), None)
            self._secured[secured] = kept
        return kept

    @staticmethod
    def _check_param_headers(entry: Any, arguments: dict[str, Any] | None, headers: Any) -> None:
        """The SDK checks a 2026 call's Mcp-Param-* headers against the schema the caller is offered;
        one it refuses is the SDK's to answer (`_Declined`), before anything runs. A schema that
        declares no header passes whatever the headers say (`declares_headers`)."""
        if headers is None or entry is None or not declares_headers(entry):
            return
        if arguments or any(h.startswith(_PARAM_HEADER) for h in headers):
            if validate_mcp_param_headers(entry.input_schema, arguments or {}, headers) is not None:
                raise _Declined

    def _keep(self, key: tuple[Principal, str | None], offer: Offer) -> None:
        """Keeps the newest offer per caller and server (a bounded number of them)."""
        offers = self._offers
        offers.pop(key, None)
        if len(offers) >= MAX_OFFERS_KEPT:
            offers.pop(next(iter(offers)), None)
        offers[key] = offer


# What the SDK's checks before dispatch read of a 2026 request's headers: `Accept`, and the
# transport security's `Content-Type`, `Host` and `Origin` (each its first value, as Starlette's
# `Headers.get` answers), and the routing headers (each at most once:
# `find_duplicated_routing_header` refuses one sent twice).
_ACCEPT = b"accept"
_FIRST_ONLY = frozenset({_ACCEPT, b"content-type", b"host", b"origin"})
_ROUTING = {**{name: name.decode() for name in _FIRST_ONLY},
            **{name.encode(): name for name in (MCP_PROTOCOL_VERSION_HEADER, MCP_METHOD_HEADER, MCP_NAME_HEADER)}}
MAX_SECURED_KEPT = 256


def routing_headers(scope: Scope) -> dict[str, str] | None:
    """`Accept`, `Content-Type`, `Host`, `Origin` and the routing headers a request sent, by
    lowercase name, in one pass over its header lines; None when a routing header is sent twice."""
    found: dict[str, str] = {}
    for key, value in scope.get("headers") or ():
        lowered = key.lower()
        name = _ROUTING.get(lowered)
        if name is None:
            continue
        if name in found:
            if lowered not in _FIRST_ONLY:
                return None
            continue
        found[name] = value.decode("latin-1")
    return found


@dataclass(frozen=True)
class _Headed:
    """What `TransportSecurityMiddleware.validate_request` reads of a request: the first values of
    its `Content-Type`, `Host` and `Origin` headers (`headers.get`)."""

    headers: dict[str, str]


@lru_cache(maxsize=256)
def _modern_verdict(meta: bytes, name: str, routing: tuple[tuple[str, str], ...]) -> str | None:
    """The SDK's ladder over what it reads of a plain `tools/call` (the envelope in `_meta`, the
    tool's name, the routing headers), kept: a client sends the same envelope and headers with every
    call of a tool."""
    return _modern_verdict_of({"method": METHOD, "params": {"name": name, "_meta": orjson.loads(meta)}}, dict(routing))


def _modern_verdict_of(decoded: dict[str, Any], routing: dict[str, str]) -> str | None:
    verdict = classify_inbound_request(decoded, headers=routing)
    return verdict.protocol_version if isinstance(verdict, InboundModernRoute) else None


# Whether a tool's input schema declares an `x-mcp-header` (the SDK's own walk), per entry; an
# entry is immutable, and a tool's new version is a new entry (kept by id, with the entry itself so
# that a reused id is noticed; bounded).
_DECLARES: dict[int, tuple[Any, bool]] = {}
MAX_SCHEMAS_KEPT = 4_096


def declares_headers(entry: Any) -> bool:
    kept = _DECLARES.get(id(entry))
    if kept is not None and kept[0] is entry:
        return kept[1]
    declares = next(iter(mcp_sdk.header_positions(entry.input_schema)), None) is not None
    if len(_DECLARES) >= MAX_SCHEMAS_KEPT:
        _DECLARES.pop(next(iter(_DECLARES)), None)
    _DECLARES[id(entry)] = (entry, declares)
    return declares


def _call_failed(name: str, error: Exception) -> dict[str, Any]:
    """The wire error of a call that raised (called in its `except`): a refusal's own text, or
    CALL_FAILED with the error in the service's log."""
    if isinstance(error, ModuleError):
        return wire_error(refusal_text(error))
    log.exception("an MCP tool call failed", extra={"tool": name})
    return wire_error(CALL_FAILED)


def _wired(result: ExecutionResult) -> dict[str, Any] | _Failed:
    try:
        return wire_result(result)
    except Exception as error:  # an output JSON cannot carry: the kernel's error, as before
        return _Failed(error)


def _plain_call(body: bytes) -> tuple[dict[str, Any], RequestId, dict[str, Any]] | None:
    """The message, its id and its params, of a body that is one JSON-RPC `tools/call` request of the plainest shape
    (a subset of what `JSONRPCRequest` takes), else None."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(decoded, dict) or decoded.get("method") != METHOD or decoded.get("jsonrpc") != "2.0":
        return None
    request_id, params = decoded.get("id"), decoded.get("params")
    if type(request_id) not in (int, str) or not isinstance(params, dict):
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
        return None
    return decoded, request_id, params


def _valid_params(version: str, params: dict[str, Any]) -> bool:
    """The spec's validation of the params at `version`, as the kernel runs it first. Its fields
    are checked each on its own, so a plain `name` and `arguments` (as `_plain_call` took them)
    pass at every handshake-era version (the 2026 era's needs its `_meta`), and a `_meta` besides
    passes with any of them if it passes with one:
    a client sends the same `_meta` with every call (the 2026 era's envelope), checked once.
    (tests/unit/test_mcp_wire.py holds the shortcut to the validation.)"""
    extra = params.keys() - PLAIN_PARAMS
    if not extra and version in HANDSHAKE_PROTOCOL_VERSIONS:
        return True
    meta = params.get("_meta")
    if extra == {"_meta"} and isinstance(meta, dict):
        try:
            return _valid_meta(version, orjson.dumps(meta))
        except orjson.JSONEncodeError:
            pass
    return _valid(version, params)


@lru_cache(maxsize=256)
def _valid_meta(version: str, meta: bytes) -> bool:
    return _valid(version, {"name": "", "_meta": orjson.loads(meta)})


def _valid(version: str, params: dict[str, Any]) -> bool:
    try:
        spec_methods.validate_client_request(METHOD, version, params)
    except Exception:  # noqa: BLE001 - any refusal is the kernel's to answer
        return False
    return True


def _session_answer(request_id: RequestId, answer: dict[str, Any] | _Failed) -> bytes:
    """The JSON-RPC answer as `DirectCalls.answer` writes it (`JSONRPCResponse.model_dump_json`:
    pydantic's serializer, so the same bytes)."""
    if isinstance(answer, _Failed):
        log.error("an MCP tools/call failed outside the tool", exc_info=answer.error, extra={"requestId": request_id})
        error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INTERNAL_ERROR, message="Internal error"))
        return error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    return pydantic_core.to_json({"jsonrpc": "2.0", "id": request_id, "result": answer})


def _modern_result(wire: dict[str, Any], server_info: dict[str, Any]) -> dict[str, Any]:
    """A handshake-era wire result as the 2026-07-28 surface has it: `resultType` after `isError`,
    and the server's `serverInfo` stamped into `_meta` (appended when there was none)."""
    shaped = {key: wire[key] for key in ("_meta", "content", "isError") if key in wire}
    shaped["resultType"] = "complete"
    if "structuredContent" in wire:
        shaped["structuredContent"] = wire["structuredContent"]
    shaped["_meta"] = {**shaped.get("_meta", {}), SERVER_INFO_META_KEY: server_info}
    return shaped


def _modern_answer(request_id: RequestId, answer: dict[str, Any] | _Failed, server_info: dict[str, Any]) -> tuple[int, bytes]:
    """The status and body the SDK's 2026 entry writes (stdlib JSON, compact, ASCII)."""
    if isinstance(answer, _Failed):
        data = modern_error_data(answer.error)
        body = JSONRPCError(jsonrpc="2.0", id=request_id, error=data).model_dump(mode="json", by_alias=True, exclude_none=True)
        return ERROR_CODE_HTTP_STATUS.get(data.code, 200), json.dumps(body, separators=(",", ":")).encode()
    return 200, stdlib_compact({"jsonrpc": "2.0", "id": request_id, "result": _modern_result(answer, server_info)})


_STDLIB_COMPACT = json.JSONEncoder(separators=(",", ":"))
# What orjson writes otherwise than the stdlib's compact ASCII JSON, found in its output (by byte
# searches: a regular expression would cost more than the stdlib's encoder): a byte past ASCII (the
# stdlib escapes it), DEL (escaped too), `null` (a NaN or an infinity is `null` to orjson,
# `NaN`/`Infinity` to the stdlib; a real null is the same, but cannot be told apart), and a number
# in exponent form (`1e16` against `1e+16`, `1e-7` against `1e-07`: a digit before an `e`, found
# with every digit read as `0`); a string that merely looks so costs the stdlib's encoder, never a
# different byte.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


def _orjson_differs(written: bytes) -> bool:
    if not written.isascii() or b"\x7f" in written or b"null" in written:
        return True
    digits = written.translate(_DIGITS_AS_ZERO)
    return b"0e" in digits or b"0E" in digits
# orjson's types the stdlib does not write (a dataclass, a datetime, a subclass of a built-in) go
# to orjson's `default`, which has none: the stdlib's encoder decides, as before.
_PASSTHROUGH = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def stdlib_compact(value: Any) -> bytes:
    """`json.dumps(value, separators=(",", ":")).encode()`, byte for byte (tests/unit/test_mcp_wire.py),
    written by orjson when its output cannot differ (a tenth of the time), else by the stdlib."""
    try:
        written = orjson.dumps(value, option=_PASSTHROUGH)
    except TypeError:  # (orjson.JSONEncodeError is one) an integer past 64 bits, a key not a string, a lone surrogate
        written = None
    if written is not None and not _orjson_differs(written):
        return written
    return _STDLIB_COMPACT.encode(value).encode()


async def _no_more() -> Message:
    return {"type": "http.disconnect"}
