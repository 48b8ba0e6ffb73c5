"""What each MCP caller is offered, and telling every live session when that changes (docs/mcp.md).

An `Offer` is what one caller (a principal, on one server) is offered: its permissions and the
server's attached tools, read from the catalog when asked, a tool by name or a page of tools by
name (issue 15: no request builds the whole list). The HTTP gate takes one per request, and the
handlers answer from it.

`ToolWatch` keeps the sessions that listen: handshake-era sessions (their connection's standalone
stream) and 2026-era `subscriptions/listen` streams. It polls the store's position; when it moves,
it asks each watched tenant's catalog what changed since (names whose winner changed, and changes
of servers and usage profiles), and tells only the watchers that could see a changed tool before
or after (its name, description, schema or tags), or whose server or permissions changed. Its
cost is the changes times the tenant's watchers, never the catalog's size. The position is the
event store's, so a change made by another process sharing the store is seen too. A watcher is
forgotten when its connection or stream ends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY, ServerEvent, ToolsListChanged, event_to_notification
from mcp_types import (
    INTERNAL_ERROR,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)

from api import mcp_sdk
from api.deps import permissions_of
from application.tool_search import OFF, ToolSearch, tool_search_of
from domain.callers import SERVER
from domain.catalog import Permissions, ToolEntry, shown_alike
from domain.errors import UnknownRecord
from application.principals import Principal
from api.services import Services

if TYPE_CHECKING:
    from application.toolbox import Change, Toolbox

log = logging.getLogger("toolsmith.mcp")

# The key under which the HTTP gate leaves the request's `Offer` in the ASGI scope's state.
OFFER_STATE = "toolsmith_mcp_offer"


@dataclass(frozen=True)
class Offer:
    """What `principal` is offered on `server_id` (None: the default server; `attached`, that
    server's tools), as of `generation` (the tenant's catalog position) or later."""

    principal: Principal
    server_id: str | None
    permissions: Permissions
    attached: frozenset[str] | None
    generation: int
    toolbox: Toolbox = field(repr=False, compare=False)
    # The server's tool search (application.tool_search): on, tools/list offers find_tool and
    # call_tool beside the pinned tools.
    tool_search: ToolSearch = OFF

    def shows(self, entry: ToolEntry | None) -> bool:
        return entry is not None and self.toolbox.offers(entry, self.permissions, self.attached)

    def tool(self, name: str) -> ToolEntry | None:
        """The tool `name` if this caller is offered it here, as of the catalog `take_offer`
        brought up to date for this request: no I/O, fit for the event loop."""
        entry = self.toolbox.entry_as_read(self.principal.tenant, name)
        return entry if self.shows(entry) else None

    def page(self, after: str | None, limit: int) -> tuple[list[ToolEntry], bool]:
        """Up to `limit` offered tools named after `after`, and whether more follow (blocking).
        A server's attached tools, or a profile that names its tools only, are looked at alone."""
        if self.permissions.none:
            return [], False
        among = self.attached
        if among is None and not self.permissions.everything and not self.permissions.tags:
            among = self.permissions.tools
        names = sorted(n for n in among if after is None or n > after) if among is not None else None
        return self.toolbox.page(self.principal.tenant, after=after, limit=limit, accept=self.shows, winners_only=True, among=names)

    def affected_by(self, change: Change) -> bool:
        """Whether the change is one this caller sees: a tool shown before or after, not alike."""
        before, after = self.shows(change.before), self.shows(change.after)
        if before != after:
            return True
        return before and not shown_alike(change.before, change.after)  # type: ignore[arg-type]

    @property
    def terms(self) -> tuple[Permissions, frozenset[str] | None, ToolSearch]:
        """What decides which tools are offered (and listed), besides the tools themselves."""
        return self.permissions, self.attached, self.tool_search


def take_offer(services: Services, principal: Principal, server_id: str | None) -> Offer:
    """Blocking (the event store): run it in a thread. Raises `UnknownRecord` for a server the
    principal's tenant does not have."""
    toolbox = services.toolbox
    # The position is read first: a change landing in between makes the offer look older than it
    # is, and the watch looks at that change again; never the other way round.
    generation = toolbox.position(principal.tenant)
    permissions = permissions_of(services, principal)
    attached = toolbox.attached(principal.tenant, server_id)
    return Offer(principal, server_id, permissions, attached, generation, toolbox, tool_search_on(services, principal.tenant, server_id))


def tool_search_on(services: Services, tenant: str, server_id: str | None) -> ToolSearch:
    """The tool search of a server (its record's `toolSearch`), or of `/mcp` (the settings)."""
    if server_id is None:
        settings = services.settings
        if settings.mcp_tool_search != "on":
            return OFF
        return ToolSearch(True, tuple(settings.listed(settings.mcp_tool_search_pinned)))
    return tool_search_of(services.store.registry(tenant).get(SERVER, server_id))


async def store_position(services: Services) -> int:
    """The store's position, for a watch's round. A store that owns its writes keeps it from its own
    saves (`Store.position`: no I/O, so it is read on the loop; a thread hop per round four times a
    second per watch was about 5% of the API's samples under MCP load, issue 30); any other store
    is asked in a thread."""
    if services.store.owns_its_writes:
        return services.toolbox.generation()
    return await anyio.to_thread.run_sync(services.toolbox.generation)


def offer_of(ctx: ServerRequestContext[Any, Any]) -> Offer:
    """The offer the HTTP gate took for the request this handler serves."""
    request = ctx.request
    offer = request.scope.get("state", {}).get(OFFER_STATE) if request is not None else None
    if offer is None:  # only reachable if the server were served without the gate
        raise MCPError(INTERNAL_ERROR, "this MCP endpoint is served without its HTTP gate")
    return offer


@dataclass(eq=False)
class _Watcher:
    offer: Offer
    position: int
    tell: Callable[[], Awaitable[None]] = field(repr=False)
    # Ends a listen stream (its tenant was suspended); None for a session's watcher, whose
    # session the endpoint ends.
    end: Callable[[], None] | None = field(default=None, repr=False)


class ToolWatch:
    """The live sessions and listen streams, and the loop that tells them of changes."""

    def __init__(self, services: Services, *, interval: float = 0.25, max_listeners: int = 1_024) -> None:
        self._services = services
        self._interval = interval
        self._max_listeners = max_listeners
        self._listeners = 0
        self._watchers: dict[Hashable, _Watcher] = {}
        # Other parts a listen stream may ask for (`api.mcp_resources`): each is handed the offer, the
        # filter asked for and the stream's `emit`, and answers the filter fields it honors and what
        # ends its part.
        self.listen_parts: list[Callable[[Offer, SubscriptionFilter, Callable[[ServerEvent], None]],
                                         Awaitable[tuple[dict[str, Any], Callable[[], None]]]]] = []

    def __len__(self) -> int:
        return len(self._watchers)

    def watch(self, key: Hashable, offer: Offer, tell: Callable[[], Awaitable[None]],
              end: Callable[[], None] | None = None) -> None:
        self._watchers[key] = _Watcher(offer, offer.generation, tell, end)

    def end_listeners(self, stopped: Callable[[str], bool]) -> int:
        """Ends the listen streams of every tenant `stopped` says is (suspended or gone); how many."""
        ended = 0
        for watcher in list(self._watchers.values()):
            if watcher.end is not None and stopped(watcher.offer.principal.tenant):
                watcher.end()
                ended += 1
        return ended

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
        """`subscriptions/listen`: one stream per call, carrying `tools/list_changed` when what this
        caller is offered on this server changed (never another caller's news), and what the
        `listen_parts` honor (resources: `api.mcp_resources`)."""
        if ctx.request_id is None:
            raise MCPError(INTERNAL_ERROR, "subscriptions/listen requires a request id")
        if self._listeners >= self._max_listeners:
            raise MCPError(INTERNAL_ERROR, "subscription limit reached")
        # What this server does not send is left out of the acknowledgment (spec).
        wanted = params.notifications
        honored_fields: dict[str, Any] = {"tools_list_changed": True if wanted.tools_list_changed else None}
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: ctx.request_id}
        # Each event pending once: it says "refetch" (or "read again"), however many changes it
        # stands for; the events a stream can have pending are bounded by what it subscribed to.
        pending: set[ServerEvent] = set()
        send, receive = anyio.create_memory_object_stream[ServerEvent](1 << 16)

        def emit(event: ServerEvent) -> None:
            if event in pending:
                return
            try:
                send.send_nowait(event)
                pending.add(event)
            except (anyio.WouldBlock, anyio.ClosedResourceError):
                pass

        async def tell() -> None:
            if honored_fields["tools_list_changed"]:
                emit(ToolsListChanged())

        key = object()
        offer = offer_of(ctx)
        # Watched whatever it asked for: a suspended tenant's stream ends (`end_listeners`).
        self.watch(key, offer, tell, end=send.close)
        ends: list[Callable[[], None]] = []
        self._listeners += 1
        try:
            for part in self.listen_parts:
                fields, end = await part(offer, wanted, emit)
                honored_fields.update(fields)
                ends.append(end)
            honored = SubscriptionFilter(**honored_fields)
            await ctx.session.send_notification(
                SubscriptionsAcknowledgedNotification(
                    params=SubscriptionsAcknowledgedNotificationParams(notifications=honored, _meta=meta)
                ),
                related_request_id=ctx.request_id,
            )
            async for event in receive:
                pending.discard(event)
                await ctx.session.send_notification(event_to_notification(event, meta), related_request_id=ctx.request_id)
        finally:
            self._listeners -= 1
            self.forget(key)
            for end in ends:
                end()
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
        """One round: every watcher behind the store hears of the changes it can see."""
        current = await store_position(self._services)
        behind = [w for w in list(self._watchers.values()) if w.position < current]
        if behind:
            for watcher in await anyio.to_thread.run_sync(self._review, behind):
                await self._tell(watcher)

    def _review(self, behind: list[_Watcher]) -> list[_Watcher]:
        """The watchers to tell, each brought up to its tenant's catalog (blocking)."""
        by_tenant: dict[str, list[_Watcher]] = {}
        for watcher in behind:
            by_tenant.setdefault(watcher.offer.principal.tenant, []).append(watcher)
        told = []
        for tenant, watchers in by_tenant.items():
            changes, position = self._services.toolbox.changes_since(tenant, min(w.position for w in watchers))
            for watcher in watchers:
                if self._affected(watcher, changes):
                    told.append(watcher)
                watcher.position = max(watcher.position, position)
        return told

    def _affected(self, watcher: _Watcher, changes: list[Change] | None) -> bool:
        if changes is None:  # the catalog was built afresh since: its changes are not known one by one
            return True
        mine = [c for c in changes if c.position > watcher.position]
        affected = False
        if any(c.name is None for c in mine):
            offer = watcher.offer
            try:
                fresh = take_offer(self._services, offer.principal, offer.server_id)
            except UnknownRecord:
                # A server deleted since offers nothing: its sessions hear that their list emptied.
                fresh = replace(offer, attached=frozenset())
            affected = fresh.terms != offer.terms
            watcher.offer = fresh
        return affected or any(watcher.offer.affected_by(c) for c in mine if c.name is not None)

    async def _tell(self, watcher: _Watcher) -> None:
        # A notification is advisory: a client that stopped reading must not hold up the others.
        with anyio.move_on_after(1):
            try:
                await watcher.tell()
            except Exception:
                log.warning("could not send tools/list_changed", exc_info=True)


def _connection_of(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The request's `Connection`. SDK 2.3's handler context does not expose it yet (its
    `Context.connection` is not built by the runner, TODO L54 there), but `ServerSession` holds it
    (`api/mcp_sdk.py`); None if a later SDK moves it, and then sessions are simply not told of changes."""
    return mcp_sdk.connection_of(ctx.session)
