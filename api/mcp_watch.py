"""What each MCP caller is offered, and telling every live session when that changes (DESIGN §4).

An `Offer` is what one caller (a principal, on one server) is offered at one event-store position.
The HTTP gate takes one per request, and the handlers answer from it.

`ToolWatch` keeps the sessions that listen: handshake-era sessions (their connection's standalone
stream) and 2026-era `subscriptions/listen` streams. It polls the toolbox's generation; when it
moves, it takes each stale watcher's offer again and tells only those whose list (names,
descriptions, schemas, tags) changed. The generation is the event store's position, so a change
made by another process sharing the store is seen too. A watcher is forgotten when its connection
or stream ends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import orjson
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ToolsListChanged, event_to_notification
from mcp_types import (
    INTERNAL_ERROR,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)

from api.deps import permissions_of
from domain.catalog import Permissions, ToolEntry
from domain.errors import UnknownRecord
from infrastructure.auth import Principal
from api.services import Services

log = logging.getLogger("toolsmith.mcp")

# The key under which the HTTP gate leaves the request's `Offer` in the ASGI scope's state.
OFFER_STATE = "toolsmith_mcp_offer"

Fingerprint = tuple[tuple[str, str, bytes, tuple[str, ...]], ...]


@dataclass(frozen=True)
class Offer:
    """What `principal` is offered on `server_id` (None: the default server) at `generation`."""

    principal: Principal
    server_id: str | None
    permissions: Permissions
    generation: int
    tools: tuple[ToolEntry, ...]

    def tool(self, name: str) -> ToolEntry | None:
        return next((entry for entry in self.tools if entry.name == name), None)

    @property
    def fingerprint(self) -> Fingerprint:
        """What a client sees of the list: a change here is worth a `list_changed`."""
        return tuple(
            (e.name, e.description, orjson.dumps(e.input_schema, option=orjson.OPT_SORT_KEYS), e.tags) for e in self.tools
        )


def take_offer(services: Services, principal: Principal, server_id: str | None) -> Offer:
    """Blocking (the event store): run it in a thread. Raises `UnknownRecord` for a server the
    principal's tenant does not have."""
    # The generation is read first: a change landing in between makes the offer look older than
    # it is, and the watch takes it again; never the other way round.
    generation = services.toolbox.generation()
    permissions = permissions_of(services, principal)
    tools = services.toolbox.offered(principal.tenant, permissions, server_id)
    return Offer(principal, server_id, permissions, generation, tuple(tools))


def offer_of(ctx: ServerRequestContext[Any, Any]) -> Offer:
    """The offer the HTTP gate took for the request this handler serves."""
    request = ctx.request
    offer = request.scope.get("state", {}).get(OFFER_STATE) if request is not None else None
    if offer is None:  # only reachable if the server were served without the gate
        raise MCPError(INTERNAL_ERROR, "this MCP endpoint is served without its HTTP gate")
    return offer


@dataclass(eq=False)
class _Watcher:
    principal: Principal
    server_id: str | None
    generation: int
    fingerprint: Fingerprint
    tell: Callable[[], Awaitable[None]] = field(repr=False)


class ToolWatch:
    """The live sessions and listen streams, and the loop that tells them of changes."""

    def __init__(self, services: Services, *, interval: float = 0.25, max_listeners: int = 1_024) -> None:
        self._services = services
        self._interval = interval
        self._max_listeners = max_listeners
        self._listeners = 0
        self._watchers: dict[Hashable, _Watcher] = {}

    def __len__(self) -> int:
        return len(self._watchers)

    def watch(self, key: Hashable, offer: Offer, tell: Callable[[], Awaitable[None]]) -> None:
        self._watchers[key] = _Watcher(offer.principal, offer.server_id, offer.generation, offer.fingerprint, tell)

    def forget(self, key: Hashable) -> None:
        self._watchers.pop(key, None)

    # -- handshake-era sessions ------------------------------------------------------------------

    async def session_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """A `Server.middleware`: the first message of a stateful session makes it a watcher, and
        the connection's own teardown forgets it, however the session ends (DELETE, idle, crash)."""
        connection = _connection_of(ctx)
        if connection is not None and connection.session_id is not None and connection not in self._watchers:
            self.watch(connection, offer_of(ctx), connection.send_tool_list_changed)
            connection.exit_stack.callback(self.forget, connection)
        return await call_next(ctx)

    # -- 2026-era listen streams -----------------------------------------------------------------

    async def listen(self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams) -> SubscriptionsListenResult:
        """`subscriptions/listen`: one stream per call, carrying `tools/list_changed` only, and only
        when what this caller is offered on this server changed (never another caller's news)."""
        if ctx.request_id is None:
            raise MCPError(INTERNAL_ERROR, "subscriptions/listen requires a request id")
        if self._listeners >= self._max_listeners:
            raise MCPError(INTERNAL_ERROR, "subscription limit reached")
        # Tools are all this server has; other kinds are left out of the acknowledgment (spec).
        honored = SubscriptionFilter(tools_list_changed=True if params.notifications.tools_list_changed else None)
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        # One pending event is enough: it says "refetch", however many changes it stands for.
        send, receive = anyio.create_memory_object_stream[None](1)

        async def tell() -> None:
            try:
                send.send_nowait(None)
            except (anyio.WouldBlock, anyio.ClosedResourceError):
                pass

        key = object()
        if honored.tools_list_changed:
            self.watch(key, offer_of(ctx), tell)
        self._listeners += 1
        try:
            await ctx.session.send_notification(
                SubscriptionsAcknowledgedNotification(
                    params=SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
                ),
                related_request_id=ctx.request_id,
            )
            async for _ in receive:
                await ctx.session.send_notification(event_to_notification(ToolsListChanged(), meta), related_request_id=ctx.request_id)
        finally:
            self._listeners -= 1
            self.forget(key)
            send.close()
            receive.close()
        return SubscriptionsListenResult(_meta=meta)

    # -- the loop --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Polls until cancelled; a failing round is logged and the next one tries again."""
        while True:
            await anyio.sleep(self._interval)
            if not self._watchers:
                continue
            try:
                await self.check()
            except Exception:
                log.exception("the MCP tool watch failed a round; trying again")

    async def check(self) -> None:
        """One round: every watcher whose offer is older than the store is offered again."""
        toolbox = self._services.toolbox
        current = await anyio.to_thread.run_sync(toolbox.generation)
        stale = [w for w in list(self._watchers.values()) if w.generation != current]
        if not stale:
            return
        offers = await anyio.to_thread.run_sync(self._offers, {(w.principal, w.server_id) for w in stale})
        for watcher in stale:
            offer = offers[(watcher.principal, watcher.server_id)]
            # A server deleted since offers nothing: its sessions hear that their list emptied.
            fingerprint = offer.fingerprint if offer is not None else ()
            watcher.generation = offer.generation if offer is not None else current
            if fingerprint != watcher.fingerprint:
                watcher.fingerprint = fingerprint
                await self._tell(watcher)

    def _offers(self, keys: Iterable[tuple[Principal, str | None]]) -> dict[tuple[Principal, str | None], Offer | None]:
        offers: dict[tuple[Principal, str | None], Offer | None] = {}
        for principal, server_id in keys:
            try:
                offers[(principal, server_id)] = take_offer(self._services, principal, server_id)
            except UnknownRecord:
                offers[(principal, server_id)] = None
        return offers

    async def _tell(self, watcher: _Watcher) -> None:
        # A notification is advisory: a client that stopped reading must not hold up the others.
        with anyio.move_on_after(1):
            try:
                await watcher.tell()
            except Exception:
                log.warning("could not send tools/list_changed", exc_info=True)


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The request's `Connection`. SDK 2.3's handler context does not expose it yet (its
    `Context.connection` is not built by the runner, TODO L54 there), but `ServerSession` holds it;
    None if a later SDK moves it, and then sessions are simply not told of changes."""
    return getattr(ctx.session, "_connection", None)
