"""MCP for AI clients over streamable HTTP (docs/mcp.md, docs/security.md), with the official `mcp` SDK.

`/mcp` is the default server (every chat-exposed tool the caller may use) and `/mcp/{serverId}`
one per MCP server record. Both are served by ONE low-level `Server` (tools are dynamic: each
request is answered from the caller's current offer) and ONE stateful `StreamableHTTPSessionManager`,
which also serves the 2026-07-28 era (one self-contained POST per request, `subscriptions/listen`
for change notifications) next to the handshake era (initialize, session id, GET stream).

A POST is answered with one JSON body (the SDK's JSON response mode): no SSE stream per request.
What needs a stream still gets one: a session's GET stream (its `tools/list_changed`) and a
`subscriptions/listen` call. A session's `tools/call` is answered in its own request's task
(`api.mcp_direct`), without the session loop's hop. A JSON-RPC batch is served message by message
where the session's version has batches (2025-03-26) and refused where it does not
(`api.mcp_batch`). Streams are not resumed: a GET with `Last-Event-ID` is refused (400), since no
event carries an id to resume from.

In front of the SDK, an HTTP gate refuses, as problem details: a Host or Origin the settings do
not allow (DNS rebinding), a missing or unknown bearer token (401), a role that may not call tools
(403), a server the caller's tenant does not have (404). It binds the session to the token and the
server that opened it: the SDK answers 404 to a session id presented with another token or on
another server's path. A plain `tools/call` of either era is then answered by `api.mcp_direct`'s
`FastCalls`, which takes (or keeps) the caller's offer with the call; for anything else the gate takes the offer (see `api.mcp_watch`) and leaves it in the
request's state for the SDK's handlers.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import warnings
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from functools import lru_cache, partial
from typing import Any

import anyio
import anyio.to_thread
import orjson
from fastapi import FastAPI
from mcp import MCPDeprecationWarning
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette._utils import get_route_path
from starlette.types import ASGIApp, Receive, Scope, Send

from api import problems
from api.admission import Refusal, client_address
from api.direct import ROUTE_TEMPLATE, _route_selected
from api import mcp_batch, mcp_sdk
from api.mcp_direct import DirectCalls, FastCalls, read_body, replay_body
from api.mcp_resources import FastReads, ResourceHandlers, ResourceWatch
from api.mcp_prompts import FastPrompts, PromptHandlers, PromptWatch
from api.mcp_progress import SessionLevels
from api.mcp_search import SearchingToolHandlers, input_schema_of
from application.tool_search import ToolIndex
from api.mcp_watch import OFFER_STATE, Offer, ToolWatch, store_position, take_offer
from domain.errors import UnknownRecord
from infrastructure.embeddings import default_embedder
from application.principals import ADMIN, CALLER, Principal
from api.services import Services

DEFAULT_PATH = "/mcp"
MCP_ROLES = (ADMIN, CALLER)
# How often the sessions of suspended tenants are looked for (a suspension made in this process
# is seen at the next sweep; one made by another replica within the tenants' cache, a second, too).
SWEEP_SECONDS = 0.5
# How often tool search's index looks for catalog changes to embed (as the tool watch does).
FOLLOW_SECONDS = 0.25
# A GET that asks to resume a stream (SSE `Last-Event-ID`) is refused: this server gives its events
# no ids (no event store: a POST is answered with one JSON body, and the GET stream carries only
# `tools/list_changed`, which says "list again", so nothing is lost by a fresh stream), and an id it
# never gave cannot be resumed from. The SDK, without a store, answered such a GET with nothing (500).
LAST_EVENT_ID = b"last-event-id"
RESUMPTION_NOT_OFFERED = (
    "this server does not resume streams (its events carry no ids, so no Last-Event-ID is one it gave): "
    "open a new GET stream without Last-Event-ID, then call tools/list for the current tools"
)

log = logging.getLogger("toolsmith.mcp")

# The offer the gate took for the request being served, for `input_schema` (which the SDK calls
# without a request context).
_REQUEST_OFFER: ContextVar[Offer | None] = ContextVar("toolsmith_mcp_request_offer", default=None)


class ToolServer(Server[Any]):
    """The low-level server, announcing `tools.listChanged` on the handshake era too: the session
    manager initializes sessions with the server's default options, which announce nothing."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True), experimental_capabilities, extensions
        )


def input_schema(name: str) -> Mapping[str, Any] | None:
    """The input schema of the tool `name` as this request's caller is offered it, which the SDK
    checks a 2026-era call's `Mcp-Param-*` headers against. Without it the SDK runs `tools/list`
    (every page of the caller's offer) on every such call that has arguments, to find the schema."""
    offer = _REQUEST_OFFER.get()
    if offer is not None and (own := input_schema_of(offer, name)) is not None:
        return own
    entry = offer.tool(name) if offer is not None else None
    return entry.input_schema if entry is not None else None


def build_server(services: Services, watch: ToolWatch, resource_watch: ResourceWatch | None = None,
                 prompt_watch: PromptWatch | None = None, tool_index: ToolIndex | None = None) -> ToolServer:
    handlers = SearchingToolHandlers(services, tool_index if tool_index is not None else new_index(services))
    levels = SessionLevels()
    resource_watch = ResourceWatch(services) if resource_watch is None else resource_watch
    resources = ResourceHandlers(services, resource_watch)
    watch.listen_parts.append(resource_watch.listen)
    prompt_watch = PromptWatch(services) if prompt_watch is None else prompt_watch
    prompts = PromptHandlers(services)
    watch.listen_parts.append(prompt_watch.listen)
    # (The SDK warns that logging is deprecated in 2026-07-28: the handshake era still has it.)
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning, message="The logging capability is deprecated")
    server = ToolServer(
        "toolsmith",
        version="0.1.0",
        instructions="JavaScript tools published in Toolsmith; each tool's input schema says what it takes.",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_subscriptions_listen=watch.listen,
        # The handshake era's `logging/setLevel` (api.mcp_progress): a call's log lines as notifications.
        on_set_logging_level=levels.set_level,
        on_list_resources=resources.list_resources,
        on_list_resource_templates=resources.list_templates,
        on_read_resource=resources.read_resource,
        on_subscribe_resource=resources.subscribe,
        on_unsubscribe_resource=resources.unsubscribe,
        on_list_prompts=prompts.list_prompts,
        on_get_prompt=prompts.get_prompt,
        on_completion=prompts.complete,
        get_tool_input_schema=input_schema,
        # What a caller is offered depends on its token: a list is never to be shared or kept.
        cache_hints={"tools/list": CacheHint(ttl_ms=0, scope="private"),
                     "resources/list": CacheHint(ttl_ms=0, scope="private"),
                     "resources/read": CacheHint(ttl_ms=0, scope="private"),
                     "prompts/list": CacheHint(ttl_ms=0, scope="private")},
    )
    server.middleware.append(watch.session_middleware)
    server.log_levels = levels  # read by api.mcp_direct.FastCalls, which answers the calls
    server.middleware.append(prompt_watch.session_middleware)
    return server


class AllowedNames:
    """The Host or Origin values a setting allows: `name` exactly, or `name:*` for `name` with any
    port. Compared case-insensitively (host names and schemes are); a port is digits only, so
    `127.0.0.1:18701.evil` is not `127.0.0.1:*`. (The SDK's own check takes any suffix after the
    colon and compares case-sensitively, so the gate checks instead, and the SDK's is off.)"""

    def __init__(self, patterns: list[str]) -> None:
        exact = [re.escape(p) for p in patterns if not p.endswith(":*")]
        ported = [re.escape(p[:-2]) + r":[0-9]{1,5}" for p in patterns if p.endswith(":*")]
        self._pattern = re.compile("|".join(exact + ported) or r"(?!)", re.IGNORECASE | re.ASCII)

    def allow(self, value: str) -> bool:
        return self._pattern.fullmatch(value) is not None


def transport_security(services: Services) -> TransportSecuritySettings:
    """The SDK's own Host/Origin check is off: the gate does it (`AllowedNames`). Its Content-Type
    check for POST stays."""
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


class McpEndpoint:
    """The ASGI app behind both MCP paths: the HTTP gate, then the SDK's session manager."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.security = transport_security(services)
        settings = services.settings
        self.hosts = AllowedNames(settings.listed(settings.mcp_allowed_hosts))
        self.origins = AllowedNames(settings.listed(settings.mcp_allowed_origins))
        self.watch = ToolWatch(services)
        self.resource_watch = ResourceWatch(services)
        self.prompt_watch = PromptWatch(services)
        # Tool search's index (application.tool_search), kept up to the catalogs by `_follow_tools`.
        self.tool_index = new_index(services)
        self.server = build_server(services, self.watch, self.resource_watch, self.prompt_watch, self.tool_index)
        # A session's tool calls are answered in their own request's task (api.mcp_direct).
        self.direct = DirectCalls(self.server)
        self.server.middleware.append(self.direct.session_middleware)
        # A plain tools/call of either era, without the SDK's kernel (api.mcp_direct).
        self.fast = FastCalls(services, self.server, self.direct, self.security)
        self.fast.seal()
        # A session's plain prompts/get, likewise (api.mcp_prompts).
        self.fast_prompts = FastPrompts(services, self.direct, self.fast)
        # A session's plain resources/read, likewise (api.mcp_resources).
        self.fast_reads = FastReads(services, self.resource_watch.resources, self.direct, self.fast)
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The session manager and the change watch, for as long as the app runs. A manager runs
        once, so each start (tests start one app several times) gets a new one."""
        manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            security_settings=self.security,
            max_request_body_size=self.services.settings.max_body_bytes,
        )
        async with manager.run(), anyio.create_task_group() as tasks:
            self._manager = manager
            tasks.start_soon(self.watch.run)
            tasks.start_soon(self.resource_watch.run)
            tasks.start_soon(self.prompt_watch.run)
            tasks.start_soon(self._end_stopped_tenants)
            tasks.start_soon(self._follow_tools)
            try:
                yield
            finally:
                self._manager = None
                tasks.cancel_scope.cancel()

    async def _follow_tools(self) -> None:
        """Tool search's index follows each indexed tenant's catalog: a tool is embedded when it
        changes (the store's position moved), not when it is looked for."""
        seen = -1
        while True:
            await anyio.sleep(FOLLOW_SECONDS)
            if not self.tool_index.tenants():
                continue
            try:
                current = await store_position(self.services)
                if current != seen:
                    await anyio.to_thread.run_sync(self.tool_index.refresh_all)
                    seen = current
            except Exception:
                log.exception("tool search's index could not follow the catalog; trying again")

    async def _end_stopped_tenants(self) -> None:
        """docs/tenants.md: the open sessions and listen streams of a suspended (or deleted) tenant end,
        whichever replica suspended it; its tokens are refused by the gate meanwhile."""
        while True:
            await anyio.sleep(SWEEP_SECONDS)
            try:
                await self.end_stopped_tenants()
            except Exception:
                log.exception("could not end the MCP sessions of suspended tenants; trying again")

    async def end_stopped_tenants(self) -> int:
        """One sweep: how many sessions and listen streams it ended."""
        manager = self._manager
        tenants = self.services.tenants
        states: dict[str, bool] = {}

        def stopped(tenant: str) -> bool:
            if tenant not in states:
                state = tenants.state(tenant)
                states[tenant] = state.suspended or not state.exists
            return states[tenant]

        ended = self.watch.end_listeners(stopped)
        if manager is None:
            return ended
        for session_id, owner in mcp_sdk.session_owners(manager).items():
            tenant = _tenant_of(owner.get("client_id"))
            if tenant is not None and stopped(tenant):
                transport = mcp_sdk.transport_of(manager, session_id)
                if transport is not None:
                    log.info("MCP session ended: its tenant is suspended", extra={"tenant": tenant})
                    await mcp_sdk.end_session(manager, session_id, transport)
                    ended += 1
        return ended

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        admitted = self._admit(scope)
        if not isinstance(admitted, tuple):
            await admitted(scope, receive, send)
            return
        principal, server_id = admitted
        manager = self._manager
        body, ending = b"", None
        if scope["method"] == "POST":
            body, ending = await read_body(receive)
            receive = replay_body(body, ending, receive)
            # A plain tools/call (the hottest request there is): its offer is taken with the call.
            if manager is not None and ending is None and not mcp_batch.is_batch(body):
                if await self.fast.answer(manager, scope, body, principal, server_id, send):
                    return
                if await self.fast_prompts.answer(manager, scope, body, principal, server_id, send):
                    return
                if await self.fast_reads.answer(manager, scope, body, principal, server_id, send):
                    return
        try:
            offer = await anyio.to_thread.run_sync(take_offer, self.services, principal, server_id)
        except UnknownRecord as error:
            await problems.problem(404, error.code, error.detail)(scope, receive, send)
            return
        scope.setdefault("state", {})[OFFER_STATE] = offer
        if manager is None:
            await problems.problem(503, "starting", "the MCP endpoint is not running")(scope, receive, send)
            return
        if scope["method"] == "GET" and _header(scope, LAST_EVENT_ID) is not None:
            await problems.problem(400, "resumption-not-offered", RESUMPTION_NOT_OFFERED)(scope, receive, send)
            return
        if scope["method"] == "POST" and ending is None and mcp_batch.is_batch(body):
            version = mcp_batch.version_of(scope, self.direct.negotiated_version(scope))
            await mcp_batch.answer(body, version, scope, receive, send, partial(self._serve_one, manager))
            return
        await self._serve_one(manager, scope, receive, send)

    async def _serve_one(self, manager: StreamableHTTPSessionManager, scope: Scope, receive: Receive, send: Send) -> None:
        """One request of one JSON-RPC message (or a GET, a DELETE): a session's tool call in the
        request's own task, anything else through the session manager."""
        found = self.direct.serves(manager, scope)
        if found is not None:
            rest = await self.direct.answer(found, scope, receive, send)
            if rest is None:
                return
            receive = rest
        token = _REQUEST_OFFER.set(scope["state"][OFFER_STATE])
        try:
            await manager.handle_request(scope, receive, send)
        finally:
            _REQUEST_OFFER.reset(token)

    def _admit(self, scope: Scope) -> tuple[Principal, str | None] | Any:
        """The caller and the server its request is for, or the refusal to answer it with. (The
        offer is taken after: with a plain tool call, in the call's thread.)"""
        host, origin, authorization = _gate_headers(scope)
        # Host and Origin first: a page reaching a local server through DNS rebinding learns nothing.
        if not host or not self.hosts.allow(host):
            return problems.problem(421, "invalid-host", f"the Host header {host!r} is not allowed (TOOLSMITH_MCP_ALLOWED_HOSTS)")
        # No Origin: not a browser's cross-origin request.
        if origin and not self.origins.allow(origin):
            return problems.problem(403, "invalid-origin", f"the Origin {origin!r} is not allowed (TOOLSMITH_MCP_ALLOWED_ORIGINS)")
        server_id = scope.get("path_params", {}).get("server_id")
        try:
            # The URL's path names the OAuth resource (docs/oauth.md): a 401 names its metadata, a JWT's audience is checked.
            principal = self.services.admission.admit(_bearer(authorization), client_address(scope),
                                                      DEFAULT_PATH + ("/" + server_id if server_id else ""))
        except Refusal as refusal:
            return problems.problem(refusal.status, refusal.code, refusal.detail, headers=refusal.headers)
        if principal.role not in MCP_ROLES:
            return problems.problem(403, "forbidden", f"MCP needs the role {' or '.join(MCP_ROLES)}")
        scope["user"] = _session_owner(principal, server_id)
        return principal, server_id


def _header(scope: Scope, name: bytes) -> bytes | None:
    return next((value for key, value in scope.get("headers") or [] if key == name), None)


_GATE_HEADERS = {b"host": 0, b"origin": 1, b"authorization": 2}


def _gate_headers(scope: Scope) -> list[str | None]:
    """The Host, Origin and Authorization headers (the first of each, as Starlette's `Headers.get`
    answers), in one pass over the request's headers."""
    found: list[str | None] = [None, None, None]
    for key, value in scope.get("headers") or []:
        index = _GATE_HEADERS.get(key)
        if index is not None and found[index] is None:
            found[index] = value.decode("latin-1")
    return found


def _bearer(authorization: str | None) -> str | None:
    scheme, _, token = (authorization or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


@lru_cache(maxsize=4_096)
def _tenant_of(client_id: str | None) -> str | None:
    """The tenant of the principal a session's owner names (`_session_owner`)."""
    try:
        tenant = orjson.loads(client_id or "").get("tenant")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return tenant if isinstance(tenant, str) else None


@lru_cache(maxsize=4_096)
def _session_owner(principal: Principal, server_id: str | None) -> AuthenticatedUser:
    """Who opened a session, as the SDK compares it on every later request of that session: the
    principal (`client_id`) and the server (`subject`). The token itself is not kept. Kept per
    caller and server: every request of a session asks again, and the answer never changes."""
    who = orjson.dumps(dataclasses.asdict(principal), option=orjson.OPT_SORT_KEYS).decode()
    return AuthenticatedUser(AccessToken(token="", client_id=who, scopes=[], subject=f"mcp-server:{server_id or ''}"))


def new_index(services: Services) -> ToolIndex:
    """Tool search's index, embedding with the offline model (loaded when first needed)."""

    def model() -> tuple[Callable[[Sequence[str]], Any], int]:
        embedder = default_embedder()
        return embedder.embed_array, embedder.dimensions

    return ToolIndex(services.toolbox, model)


def mount(app: FastAPI, services: Services) -> McpEndpoint:
    """Adds both paths to `app`; the caller runs `endpoint.running()` inside the app's lifespan."""
    endpoint = McpEndpoint(services)
    app.add_route(DEFAULT_PATH, endpoint, include_in_schema=False)
    app.add_route(DEFAULT_PATH + "/{server_id}", endpoint, include_in_schema=False)
    # Matched first: a tool call is the hottest request there is, and no other route starts with
    # /mcp, so it need not be tried against every route of the API and the console before it.
    routes = app.router.routes
    routes[:] = routes[-2:] + routes[:-2]
    # And served before the router's search (`McpFirst`), as the REST call is (api.direct).
    router = app.router
    router.middleware_stack = McpFirst(router.middleware_stack, router, endpoint, tuple(routes[:2]))
    return endpoint


class McpFirst:
    """The two MCP paths, served as soon as a request reaches the router (issue 30: MCP at REST's
    cost): a request of `/mcp` or `/mcp/{server_id}` (one segment, not empty, as Starlette's
    `{server_id}` is) goes to the endpoint with the scope the router would have given it (its
    `router`, `endpoint`, `path_params`; the route's template for the metrics and the request's
    span), without the router's walk over the routes before it, FastAPI's per-request wrapper or the
    route's method check (an MCP route takes every method: the endpoint refuses what it does not
    serve). Anything else (`/mcp/` included, which the router redirects) goes to the router, as before."""

    def __init__(self, app: ASGIApp, router: Any, endpoint: McpEndpoint, routes: tuple[Any, ...]) -> None:
        self.app = app
        self.router = router
        self.endpoint = endpoint
        self.default_route, self.server_route = routes
        self.default_path, self.server_path = DEFAULT_PATH, DEFAULT_PATH + "/"
        self.skip = len(self.server_path)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = get_route_path(scope)
            if path == self.default_path:
                route, parameters = self.default_route, {}
            elif path.startswith(self.server_path) and len(path) > self.skip and "/" not in path[self.skip:]:
                route, parameters = self.server_route, {"server_id": path[self.skip:]}
            else:
                await self.app(scope, receive, send)
                return
            scope.setdefault("router", self.router)
            scope["endpoint"] = self.endpoint
            scope["path_params"] = parameters
            scope[ROUTE_TEMPLATE] = route.path
            if _route_selected is not None and "fastapi.telemetry" in scope:
                _route_selected(scope=scope, path=route.path)
            await self.endpoint(scope, receive, send)
            return
        await self.app(scope, receive, send)
