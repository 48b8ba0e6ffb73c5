"""MCP resources (docs/mcp.md, Resources): `resources/list`, `resources/read`,
`resources/templates/list`, `resources/subscribe` and `unsubscribe`, and the change notifications.

The resources are those of every installed kind that has some (`application.resources`: a File
Search tool's documents). A caller sees a resource when it is offered one of the tools the
resource belongs to, on this server (`ResourceItem.shown_by`): the tenant, the usage profile and
the server's attached tools decide, as for tools. A resource it may not see, another tenant's,
and one that is not there are the same error (invalid params, SEP-2164's code, naming the URI).

`ResourceWatch` tells listeners what changed: a handshake-era session that listed resources or
subscribed to one hears `notifications/resources/list_changed` when the resources it may see come
or go, and `notifications/resources/updated` for a subscribed URI whose resource changed or went
(on its GET stream); a 2026-07-28 `subscriptions/listen` stream that asked for
`resourcesListChanged` or `resourceSubscriptions` hears the same on that stream (`resources/subscribe`
is not of that era: its wire cannot carry it). A subscription is accepted for any well-formed URI
(one that may appear later, or that the caller may never see: then nothing is ever sent for it,
so a subscription tells nothing of what exists). The watch looks again only when the store moved,
and at a tenant only when its resources' stamp or its catalog moved.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import orjson
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated, ServerEvent
from mcp_types import (
    INVALID_PARAMS, BlobResourceContents, EmptyResult, JSONRPCError, ListResourcesResult, ListResourceTemplatesResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResult, RequestId, Resource, ResourceTemplate,
    SubscribeRequestParams, SubscriptionFilter, TextResourceContents, UnsubscribeRequestParams,
)

from api import mcp_sdk
from api.mcp_gate import answer_in_session, handshake_session
from api.mcp_watch import Offer, offer_of, store_position, take_offer
from api.services import Services
from application.context import MCP
from application.queries import after_cursor, call_context, cursor_after
from application.resources import (
    NOT_KEPT, READ_MAX_CHARS, ReadsOnTheLoop, ResourceItem, ResourceTemplateItem, ResourceText, resource_sources,
)
from domain.errors import DocumentsUnavailable, UnknownRecord

log = logging.getLogger("toolsmith.mcp")

MAX_URI_CHARS = 2_048
MAX_SUBSCRIPTIONS = 1_000  # per session, or per listen stream
TOTAL_META = "toolsmith/totalCharacters"
OFFSET_META = "toolsmith/offset"
NEXT_META = "toolsmith/nextUri"
SOURCE_TYPE_META = "toolsmith/sourceMediaType"


def _not_found(uri: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"resource-not-found: this MCP server offers no resource {uri[:200]!r} to this caller",
                    {"uri": uri[:MAX_URI_CHARS]})


def _checked_uri(uri: Any) -> str:
    text = str(uri) if uri is not None else ""
    if not text or len(text) > MAX_URI_CHARS:
        raise MCPError(INVALID_PARAMS, f"uri: a resource URI of 1 to {MAX_URI_CHARS} characters is needed")
    return text


def shows(offer: Offer, item: ResourceItem | ResourceTemplateItem) -> bool:
    """Whether the caller is offered, here, one of the tools the resource belongs to, or the
    resource itself by its name or tags as a tool would be (no I/O)."""
    if item.key is not None:
        if offer.attached is not None and item.key not in offer.attached:
            return False
        permissions = offer.permissions
        return permissions.everything or item.key in permissions.tools or not permissions.tags.isdisjoint(item.tags)
    if isinstance(item, ResourceTemplateItem) and not item.shown_by:
        return True
    return any(offer.tool(name) is not None for name in item.shown_by)


class Resources:
    """Every resource source's items of a tenant, sorted by URI, kept while the sources' stamps hold."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._kept: dict[str, tuple[Hashable, list[ResourceItem]]] = {}
        self._sources: tuple[tuple[Any, ...], list[Any], bool] = ((), [], True)

    @property
    def sources(self) -> list[Any]:
        return self._of_kinds()[1]

    @property
    def on_the_loop(self) -> bool:
        """Whether every source may be asked on the loop which resource a URI is (`ReadsOnTheLoop`)."""
        return self._of_kinds()[2]

    def _of_kinds(self) -> tuple[tuple[Any, ...], list[Any], bool]:
        # Kept while the installed kinds are the same ones (a Protocol's isinstance costs a read).
        kinds = tuple(self._services.toolbox.kinds)
        kept = self._sources
        if len(kinds) != len(kept[0]) or any(a is not b for a, b in zip(kinds, kept[0])):
            sources = resource_sources(kinds)
            kept = self._sources = (kinds, sources, all(isinstance(s, ReadsOnTheLoop) for s in sources))
        return kept

    def stamp(self, tenant: str) -> Hashable:
        return tuple(source.resource_stamp(tenant) for source in self.sources)

    def items(self, tenant: str) -> tuple[Hashable, list[ResourceItem]]:
        """(stamp, items) (blocking)."""
        stamp = self.stamp(tenant)
        kept = self._kept.get(tenant)
        if kept is not None and kept[0] == stamp:
            return kept
        items = sorted((item for source in self.sources for item in source.resource_items(tenant)), key=lambda i: i.uri)
        self._kept[tenant] = (stamp, items)
        return stamp, items

    def visible(self, offer: Offer) -> dict[str, Hashable]:
        """Each resource the offer shows: its URI and stamp (blocking)."""
        return {item.uri: item.stamp for item in self.items(offer.principal.tenant)[1] if shows(offer, item)}


def read_page(services: Services, resources: Resources, offer: Offer, uri: str, trace: str | None) -> ReadResourceResult:
    """`resources/read` of `uri` for `offer`'s caller (blocking: the store, a module's run)."""
    return ReadResourceResult(contents=[_contents(uri, _read_text(services, resources, offer, uri, trace))])


def _read_text(services: Services, resources: Resources, offer: Offer, uri: str, trace: str | None) -> ResourceText:
    tenant = offer.principal.tenant
    for source in resources.sources:
        item = source.resource_item(tenant, uri)
        if item is None:
            continue
        if not shows(offer, item):
            break
        try:
            page = source.resource_text(tenant, uri, READ_MAX_CHARS, call_context(offer.principal, MCP, trace), services.toolbox)
        except (ValueError, DocumentsUnavailable) as error:
            raise _unreadable(uri, error) from None
        if page is None:
            break
        return page
    raise _not_found(uri)


async def read_on_the_loop(services: Services, resources: Resources, offer: Offer, uri: str, trace: str | None) -> ResourceText | None:
    """`_read_text` on the event loop, when every source can tell without I/O which resource `uri`
    is (what they keep is at the store's position) and the one it is reads on the loop: the same
    checks in the same order (the first source that has it; shown to the caller or not found).
    None: some source could not tell; `_read_text`, in a worker thread, answers then."""
    tenant = offer.principal.tenant
    for source in resources.sources:
        match = source.resource_match_as_read(tenant, uri)
        if match is None:
            continue
        if match is NOT_KEPT:
            return None
        if not shows(offer, match.item):
            break
        try:
            return await source.aresource_text(tenant, match, READ_MAX_CHARS, call_context(offer.principal, MCP, trace),
                                               services.toolbox)
        except (ValueError, DocumentsUnavailable) as error:
            raise _unreadable(uri, error) from None
    raise _not_found(uri)


def _unreadable(uri: str, error: ValueError | DocumentsUnavailable) -> MCPError:
    if isinstance(error, DocumentsUnavailable):
        return MCPError(INVALID_PARAMS, f"resource-unavailable: {error.detail}", {"uri": uri})
    return MCPError(INVALID_PARAMS, f"uri: {error}", {"uri": uri})


def _contents(uri: str, page: ResourceText) -> TextResourceContents | BlobResourceContents:
    kind = BlobResourceContents if page.blob is not None else TextResourceContents
    return kind.model_validate(_wire_contents(uri, page))


def _wire_contents(uri: str, page: ResourceText) -> dict[str, Any]:
    """A page as the wire has it (`_contents` of it, dumped by alias without its None fields), made
    without a model: a page's fields are plain JSON already."""
    meta: dict[str, Any] = {TOTAL_META: page.total, OFFSET_META: page.offset}
    if page.next_uri is not None:
        meta[NEXT_META] = page.next_uri
    if page.source_media_type:
        meta[SOURCE_TYPE_META] = page.source_media_type
    if page.blob is not None:
        return {"uri": uri, "mimeType": page.mime_type, "_meta": meta, "blob": page.blob}
    return {"uri": uri, "mimeType": page.mime_type, "_meta": meta, "text": page.text}


class ResourceHandlers:
    def __init__(self, services: Services, watch: ResourceWatch) -> None:
        self._services = services
        self._resources = watch.resources
        self._watch = watch
        self._page_size = services.settings.mcp_page_size

    async def list_resources(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListResourcesResult:
        """A page of the resources the caller may read here, by URI (`TOOLSMITH_MCP_PAGE_SIZE`)."""
        try:
            start = after_cursor(params.cursor if params is not None else None)
        except ValueError as error:
            raise MCPError(INVALID_PARAMS, str(error)) from None
        offer = offer_of(ctx)
        await self._watch.session_listens(ctx, offer)

        def page() -> ListResourcesResult:
            items = [i for i in self._resources.items(offer.principal.tenant)[1]
                     if (start is None or i.uri > start) and shows(offer, i)]
            taken = items[: self._page_size]
            cursor = cursor_after(taken[-1].uri) if len(items) > len(taken) else None
            return ListResourcesResult(resources=[_resource(item) for item in taken], next_cursor=cursor)

        return await anyio.to_thread.run_sync(page)

    async def list_templates(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
        offer = offer_of(ctx)

        def listed() -> ListResourceTemplatesResult:
            templates = [t for source in self._resources.sources for t in source.resource_templates(offer.principal.tenant)
                         if shows(offer, t)]
            return ListResourceTemplatesResult(resource_templates=[
                ResourceTemplate(uri_template=t.uri_template, name=t.name, title=t.title, description=t.description,
                                 mime_type=t.mime_type) for t in templates])

        return await anyio.to_thread.run_sync(listed)

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], params: ReadResourceRequestParams) -> ReadResourceResult:
        """The resource's text, at most `READ_MAX_CHARS` characters a read: a longer one says, in
        its `_meta`, the URI of the next page (`?offset=`) and the text's length."""
        uri = _checked_uri(params.uri)
        offer = offer_of(ctx)
        trace = None if ctx.request_id is None else str(ctx.request_id)
        return await anyio.to_thread.run_sync(read_page, self._services, self._resources, offer, uri, trace)

    async def subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        uri = _checked_uri(params.uri)
        watcher = await self._watch.session_listens(ctx, offer_of(ctx))
        if watcher is not None and uri not in watcher.subscribed:
            if len(watcher.subscribed) >= MAX_SUBSCRIPTIONS:
                raise MCPError(INVALID_PARAMS, f"uri: a session subscribes to at most {MAX_SUBSCRIPTIONS} resources")
            watcher.subscribed.add(uri)
        return EmptyResult()

    async def unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        uri = _checked_uri(params.uri)
        watcher = self._watch.watcher(mcp_sdk.connection_of(ctx.session))
        if watcher is not None:
            watcher.subscribed.discard(uri)
        return EmptyResult()


def _resource(item: ResourceItem) -> Resource:
    annotations = {"lastModified": item.updated_at} if item.updated_at else None
    return Resource(uri=item.uri, name=item.name, title=item.title, description=item.description, mime_type=item.mime_type,
                    annotations=annotations)


@dataclass(eq=False)
class ResourceWatcher:
    offer: Offer
    seen: dict[str, Hashable]
    wants_list: bool
    subscribed: set[str]
    tell: Callable[[ServerEvent], Awaitable[None]] = field(repr=False)


class ResourceWatch:
    """The sessions and listen streams that hear of resources, and the loop that tells them."""

    def __init__(self, services: Services, *, interval: float = 0.25) -> None:
        self._services = services
        self._interval = interval
        self.resources = Resources(services)
        self._watchers: dict[Hashable, ResourceWatcher] = {}
        self._generation = -1
        self._tenants: dict[str, tuple[Hashable, int]] = {}  # tenant: (stamp, catalog position) last looked at

    def __len__(self) -> int:
        return len(self._watchers)

    def watcher(self, key: Hashable) -> ResourceWatcher | None:
        return self._watchers.get(key) if key is not None else None

    async def watch(self, key: Hashable, offer: Offer, tell: Callable[[ServerEvent], Awaitable[None]], *,
                    wants_list: bool, subscribed: Sequence[str] = ()) -> ResourceWatcher:
        seen = await anyio.to_thread.run_sync(self.resources.visible, offer)
        watcher = ResourceWatcher(offer, seen, wants_list, set(subscribed), tell)
        self._watchers[key] = watcher
        return watcher

    def forget(self, key: Hashable) -> None:
        self._watchers.pop(key, None)

    async def session_listens(self, ctx: ServerRequestContext[Any, Any], offer: Offer) -> ResourceWatcher | None:
        """A handshake-era session that lists resources or subscribes becomes a watcher, forgotten
        with its connection; None when the request has no session (nothing could be sent to it)."""
        connection = mcp_sdk.connection_of(ctx.session)
        if connection is None or connection.session_id is None:
            return None
        found = self._watchers.get(connection)
        if found is not None:
            return found

        async def tell(event: ServerEvent) -> None:
            if isinstance(event, ResourceUpdated):
                await connection.send_resource_updated(event.uri)
            else:
                await connection.send_resource_list_changed()

        watcher = await self.watch(connection, offer, tell, wants_list=True)
        connection.exit_stack.callback(self.forget, connection)
        return watcher

    async def listen(self, offer: Offer, wanted: SubscriptionFilter,
                     emit: Callable[[ServerEvent], None]) -> tuple[dict[str, Any], Callable[[], None]]:
        """A `subscriptions/listen` stream's resource part (`ToolWatch.listen` calls it): what it
        honors of `wanted`, and what ends it."""
        uris = list(dict.fromkeys(u for u in (wanted.resource_subscriptions or []) if isinstance(u, str) and 0 < len(u) <= MAX_URI_CHARS))
        uris = uris[:MAX_SUBSCRIPTIONS]
        wants_list = wanted.resources_list_changed is True
        if not wants_list and not uris:
            return {}, lambda: None
        key = object()

        async def tell(event: ServerEvent) -> None:
            emit(event)

        await self.watch(key, offer, tell, wants_list=wants_list, subscribed=uris)
        honored: dict[str, Any] = {}
        if wants_list:
            honored["resources_list_changed"] = True
        if uris:
            honored["resource_subscriptions"] = uris
        return honored, lambda: self.forget(key)

    # -- the loop --------------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            await anyio.sleep(self._interval)
            if not self._watchers:
                continue
            try:
                await self.check()
            except Exception:
                log.exception("the MCP resource watch failed a round; trying again")

    async def check(self) -> None:
        """One round: each watcher hears of what changed among the resources it may see."""
        generation = await store_position(self._services)  # on the loop when the store keeps it
        if generation == self._generation:
            return
        self._generation = generation
        for watcher, events in await anyio.to_thread.run_sync(self._review, list(self._watchers.values())):
            for event in events:
                with anyio.move_on_after(1):  # advisory: a client that stopped reading holds up no one
                    try:
                        await watcher.tell(event)
                    except Exception:
                        log.warning("could not send a resource notification", exc_info=True)

    def _review(self, watchers: list[ResourceWatcher]) -> list[tuple[ResourceWatcher, list[ServerEvent]]]:
        by_tenant: dict[str, list[ResourceWatcher]] = {}
        for watcher in watchers:
            by_tenant.setdefault(watcher.offer.principal.tenant, []).append(watcher)
        told = []
        toolbox = self._services.toolbox
        for tenant, mine in by_tenant.items():
            looked = (self.resources.stamp(tenant), toolbox.position(tenant))
            if self._tenants.get(tenant) == looked:
                continue
            self._tenants[tenant] = looked
            for watcher in mine:
                offer = watcher.offer
                try:
                    watcher.offer = take_offer(self._services, offer.principal, offer.server_id)
                    seen = self.resources.visible(watcher.offer)
                except UnknownRecord:  # its server was deleted: it sees nothing now
                    seen = {}
                events: list[ServerEvent] = []
                if watcher.wants_list and seen.keys() != watcher.seen.keys():
                    events.append(ResourcesListChanged())
                events += [ResourceUpdated(uri) for uri in sorted(watcher.subscribed)
                           if (uri in seen or uri in watcher.seen) and seen.get(uri) != watcher.seen.get(uri)]
                watcher.seen = seen
                if events:
                    told.append((watcher, events))
        return told


# -- a session's plain resources/read, answered in the request's task -----------------------------

READ = "resources/read"
MAX_KEPT = 4_096


def _plain_read(body: bytes) -> tuple[RequestId, str] | None:
    """The id and URI of a body that is one `resources/read` of the plainest shape, else None."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(decoded, dict) or decoded.get("method") != READ or decoded.get("jsonrpc") != "2.0":
        return None
    request_id, params = decoded.get("id"), decoded.get("params")
    if type(request_id) not in (int, str) or not isinstance(params, dict) or params.keys() != {"uri"}:
        return None
    uri = params["uri"]
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS:
        return None
    return request_id, uri


class FastReads:
    """A handshake-era session's plain `resources/read`, answered in the request's own task as
    `api.mcp_direct.FastCalls` answers a `tools/call` and `api.mcp_prompts.FastPrompts` a
    `prompts/get` (`api.mcp_gate`'s session checks; the caller's offer kept while the store, owning
    its writes, has not moved): then, when every resource source can tell on the loop which resource
    the URI is (`read_on_the_loop`: an admin's published resources as kept at that position), the
    read is made there, a rendering module's call awaited as a tool call is; otherwise it is one
    trip to a worker thread. The SDK's session loop and its thread hops cost more than reading a
    resource. Anything else is the SDK's to answer, as before."""

    def __init__(self, services: Services, resources: Resources, direct: Any, fast: Any) -> None:
        self._services = services
        self._resources = resources
        self._direct = direct
        self._fast = fast
        self._offers: dict[tuple[Any, str | None], Offer] = {}

    async def answer(self, manager: Any, scope: Any, body: bytes, principal: Any, server_id: str | None, send: Any) -> bool:
        request = _plain_read(body)
        found = handshake_session(manager, scope, body, self._direct, self._fast) if request is not None else None
        if request is None or found is None:
            return False
        request_id, uri = request
        return await answer_in_session(found[1], send, self._read(principal, server_id, request_id, uri))

    async def _read(self, principal: Any, server_id: str | None, request_id: RequestId, uri: str) -> bytes:
        services = self._services
        key = (principal, server_id)
        offer = self._offers.get(key) if services.store.owns_its_writes else None
        trace = str(request_id)
        page: ResourceText | MCPError | None = None
        if offer is not None and offer.generation == services.toolbox.generation() and self._resources.on_the_loop:
            try:
                page = await read_on_the_loop(services, self._resources, offer, uri, trace)
            except MCPError as error:
                page = error
        if page is None:
            fresh = offer is None or offer.generation != services.toolbox.generation()

            def read() -> tuple[Offer, ResourceText | MCPError]:
                # Raises UnknownRecord for a server the tenant does not have, as the gate's offer does.
                taken = take_offer(services, principal, server_id) if fresh or offer is None else offer
                try:
                    return taken, _read_text(services, self._resources, taken, uri, trace)
                except MCPError as error:
                    return taken, error

            taken, page = await anyio.to_thread.run_sync(read)
            if fresh and services.store.owns_its_writes:  # kept here, on the loop: the only place the kept offers change
                self._offers.pop(key, None)
                if len(self._offers) >= MAX_KEPT:
                    self._offers.pop(next(iter(self._offers)), None)
                self._offers[key] = taken
        if isinstance(page, MCPError):
            return JSONRPCError(jsonrpc="2.0", id=request_id, error=page.error).model_dump_json(by_alias=True, exclude_unset=True).encode()
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"contents": [_wire_contents(uri, page)]}})
