"""MCP's prompts (docs/mcp.md, docs/kinds/prompts.md): `prompts/list`, `prompts/get`,
`completion/complete` for `ref/prompt`, and `notifications/prompts/list_changed`, from every
installed kind that offers prompts (`application.kinds.prompting.OffersPrompts`), in both eras.

A prompt is offered as a tool is: on the default server every published prompt the caller may
use (an admin: all; a caller: those its usage profile names, or tags), on an MCP server those
attached to it too. One the caller is not offered, one of another tenant and one that does not
exist are the same JSON-RPC error (invalid params, "unknown prompt").

`PromptWatch` tells the sessions and listen streams when a prompt was published or deleted: it
follows the store's position, and on a move reads only the prompt kinds' `Published` and `Deleted`
events since (what `change_topics` names), telling the watchers of that tenant that may see it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import orjson
import pydantic_core
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ServerEvent
from mcp_types import (
    INTERNAL_ERROR, INVALID_PARAMS, CompleteRequestParams, CompleteResult, Completion, GetPromptRequestParams, GetPromptResult,
    JSONRPCError, ListPromptsResult, PaginatedRequestParams, Prompt, RequestId, SubscriptionFilter,
)

from api import mcp_sdk
from api.mcp_gate import answer_in_session, handshake_session
from api.mcp_tools import after
from api.mcp_watch import Offer, offer_of, store_position, take_offer
from api.services import Services
from application.context import MCP
from application.kinds.prompting import Listed, OffersPrompts
from application.projected import topics_of
from application.queries import call_context, cursor_after
from domain.errors import InvalidInput, ModuleError, ToolNotCallable

log = logging.getLogger("toolsmith.mcp")


def prompt_kinds(services: Services) -> list[Any]:
    return [kind for kind in services.toolbox.kinds if isinstance(kind, OffersPrompts)]


def _unknown(name: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"unknown prompt: {name!r}")


def _offered(services: Services, offer: Offer, name: str) -> tuple[Any, Listed]:
    """The kind and listing of the prompt `name` as `offer` shows it (blocking); else unknown."""
    if isinstance(name, str):
        for kind in prompt_kinds(services):
            listed = kind.listing(offer.principal.tenant, name)
            if listed is not None and listed.allowed(offer.permissions, offer.attached):
                return kind, listed
    raise _unknown(str(name))


def _refused(error: ModuleError) -> MCPError:
    if isinstance(error, InvalidInput):
        return MCPError(INVALID_PARAMS, "; ".join(f"{v.field}: {v.message}" for v in error.violations))
    if isinstance(error, ToolNotCallable):
        return MCPError(INTERNAL_ERROR, str(error))
    return MCPError(INVALID_PARAMS, str(error))


class PromptHandlers:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._page_size = services.settings.mcp_page_size

    @property
    def offered(self) -> bool:
        """Whether any installed kind offers prompts (the capability is announced then)."""
        return bool(prompt_kinds(self._services))

    async def list_prompts(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListPromptsResult:
        offer = offer_of(ctx)
        start = after(params.cursor if params is not None else None)

        def page() -> ListPromptsResult:
            if offer.permissions.none:
                return ListPromptsResult(prompts=[])
            found = sorted((listed for kind in prompt_kinds(self._services) for listed in kind.listed(offer.principal.tenant)
                            if listed.allowed(offer.permissions, offer.attached) and (start is None or listed.name > start)),
                           key=lambda listed: listed.name)
            shown, more = found[:self._page_size], len(found) > self._page_size
            return ListPromptsResult(prompts=[Prompt.model_validate(p.wire()) for p in shown],
                                     next_cursor=cursor_after(shown[-1].name) if more else None)

        return await anyio.to_thread.run_sync(page)

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any], params: GetPromptRequestParams) -> GetPromptResult:
        offer = offer_of(ctx)
        kind, _ = await anyio.to_thread.run_sync(_offered, self._services, offer, params.name)
        context = call_context(offer.principal, MCP, str(ctx.request_id))
        try:
            rendered = await kind.render(offer.principal.tenant, params.name, params.arguments, context, self._services.toolbox)
        except ModuleError as error:
            raise _refused(error) from None
        return GetPromptResult.model_validate(rendered)

    async def complete(self, ctx: ServerRequestContext[Any, Any], params: CompleteRequestParams) -> CompleteResult:
        offer = offer_of(ctx)
        ref = params.ref
        if getattr(ref, "type", None) != "ref/prompt":
            # Completions are a prompt's; a resource template's arguments have none to offer.
            return CompleteResult(completion=Completion(values=[], total=0, has_more=False))
        kind, _ = await anyio.to_thread.run_sync(_offered, self._services, offer, ref.name)
        given = dict(params.context.arguments or {}) if params.context is not None else {}
        context = call_context(offer.principal, MCP, str(ctx.request_id))
        try:
            values = await kind.complete(offer.principal.tenant, ref.name, params.argument.name, params.argument.value, given,
                                         context, self._services.toolbox)
        except ModuleError as error:
            raise _refused(error) from None
        return CompleteResult(completion=Completion(values=values, total=len(values), has_more=False))


@dataclass(eq=False)
class _Listener:
    offer: Offer
    position: int
    tell: Callable[[], Awaitable[None]] = field(repr=False)

    def sees(self, listed: Listed | None, name: str) -> bool:
        """Whether a change of the prompt `name` (now `listed`, None once deleted) is one it may see."""
        permissions, attached = self.offer.permissions, self.offer.attached
        if listed is not None:
            return listed.allowed(permissions, attached)
        return (attached is None or name in attached) and (permissions.everything or name in permissions.tools or bool(permissions.tags))


class PromptWatch:
    """The sessions and listen streams that hear of prompts, and the loop that tells them."""

    def __init__(self, services: Services, *, interval: float = 0.25) -> None:
        self._services = services
        self._interval = interval
        self._listeners: dict[Hashable, _Listener] = {}
        kinds = prompt_kinds(services)
        self._topics = topics_of(*(topic for kind in kinds for topic in kind.change_topics()))

    def __len__(self) -> int:
        return len(self._listeners)

    def forget(self, key: Hashable) -> None:
        self._listeners.pop(key, None)

    async def session_middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """A handshake-era session hears of prompts from its first message until its connection ends."""
        connection = mcp_sdk.connection_of(ctx.session)
        if self._topics and connection is not None and connection.session_id is not None and connection not in self._listeners:
            offer = offer_of(ctx)
            self._listeners[connection] = _Listener(offer, offer.generation, connection.send_prompt_list_changed)
            connection.exit_stack.callback(self.forget, connection)
        return await call_next(ctx)

    async def listen(self, offer: Offer, wanted: SubscriptionFilter,
                     emit: Callable[[ServerEvent], None]) -> tuple[dict[str, Any], Callable[[], None]]:
        """A `subscriptions/listen` stream's prompts part (`ToolWatch.listen_parts`)."""
        if wanted.prompts_list_changed is not True or not self._topics:
            return {}, lambda: None
        key = object()

        async def tell() -> None:
            emit(PromptsListChanged())

        self._listeners[key] = _Listener(offer, offer.generation, tell)
        return {"prompts_list_changed": True}, lambda: self.forget(key)

    async def run(self) -> None:
        while True:
            await anyio.sleep(self._interval)
            if not self._listeners:
                continue
            try:
                await self.check()
            except Exception:
                log.exception("the MCP prompt watch failed a round; trying again")

    async def check(self) -> None:
        current = await store_position(self._services)
        behind = [listener for listener in list(self._listeners.values()) if listener.position < current]
        if not behind:
            return
        for listener in await anyio.to_thread.run_sync(self._review, behind, current):
            with anyio.move_on_after(1):  # advisory: a client that stopped reading holds up no one
                try:
                    await listener.tell()
                except Exception:
                    log.warning("could not send prompts/list_changed", exc_info=True)

    def _review(self, behind: list[_Listener], current: int) -> list[_Listener]:
        """The listeners a prompt change since their position concerns (blocking): the prompt
        kinds' events between the oldest position and `current`, read by topic."""
        store = self._services.store
        start = min(listener.position for listener in behind)
        changed: list[tuple[int, str, str]] = []  # (position, tenant, name)
        while True:
            found = store.recorder.select_notifications(start, 1_000, stop=current, topics=self._topics, inclusive_of_start=False)
            for notification in found:
                happened = store.mapper.to_domain_event(notification)
                changed.append((notification.id, happened.tenant, happened.item_id))
            if len(found) < 1_000:
                break
            start = found[-1].id
        told = []
        kinds = prompt_kinds(self._services)
        for listener in behind:
            tenant = listener.offer.principal.tenant
            mine = {name for position, t, name in changed if t == tenant and position > listener.position}
            listener.position = current
            if any(listener.sees(next((l for k in kinds if (l := k.listing(tenant, name)) is not None), None), name) for name in mine):
                told.append(listener)
        return told


# -- a session's plain prompts/get, answered in the request's task -------------------------------

GET = "prompts/get"
MAX_KEPT = 4_096


def _plain_get(body: bytes) -> tuple[RequestId, str, dict[str, Any] | None] | None:
    """The id, name and arguments of a body that is one `prompts/get` of the plainest shape, else None."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(decoded, dict) or decoded.get("method") != GET or decoded.get("jsonrpc") != "2.0":
        return None
    request_id, params = decoded.get("id"), decoded.get("params")
    if type(request_id) not in (int, str) or not isinstance(params, dict) or not params.keys() <= {"name", "arguments"}:
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or not (arguments is None or (isinstance(arguments, dict)
                                                               and all(isinstance(v, str) for v in arguments.values()))):
        return None
    return request_id, name, arguments


class FastPrompts:
    """A handshake-era session's plain `prompts/get`, answered in the request's own task as
    `api.mcp_direct.FastCalls` answers a `tools/call` (the same session checks, its offer kept per
    caller and server while the store has not moved, the published prompt too): the SDK's session
    loop and two thread hops cost more than rendering a prompt. Anything else (the 2026 era, a
    server with tracing on, a request of another shape) is the SDK's to answer, as before."""

    def __init__(self, services: Services, direct: Any, fast: Any) -> None:
        self._services = services
        self._direct = direct
        self._fast = fast
        self._offers: dict[tuple[Any, str | None], Offer] = {}
        self._prompts: dict[tuple[str, str], tuple[int, Any, Any]] = {}  # (tenant, name): (generation, kind, published)

    async def answer(self, manager: Any, scope: Any, body: bytes, principal: Any, server_id: str | None, send: Any) -> bool:
        request = _plain_get(body)
        found = handshake_session(manager, scope, body, self._direct, self._fast) if request is not None else None
        if request is None or found is None:
            return False
        request_id, name, arguments = request
        return await answer_in_session(found[1], send, self._get(principal, server_id, request_id, name, arguments))

    async def _get(self, principal: Any, server_id: str | None, request_id: RequestId, name: str,
                   arguments: dict[str, Any] | None) -> bytes:
        services = self._services
        if not services.store.owns_its_writes:
            # A store others write too (PostgreSQL): its position is a database read, so it is read in
            # the worker thread with the offer and the prompt, and nothing is kept (as FastCalls does).
            offer, kept = await anyio.to_thread.run_sync(self._take, principal, server_id, name, None)
        else:
            generation = services.toolbox.generation()  # kept from the store's own saves: no I/O
            key = (principal, server_id)
            offer = self._offers.get(key)
            kept = self._prompts.get((principal.tenant, name))
            if offer is None or offer.generation != generation or kept is None or kept[0] != generation:
                offer, kept = await anyio.to_thread.run_sync(self._take, principal, server_id, name, generation)
                # Kept here, on the loop: the only place the kept offers and prompts change.
                for found, at, value in ((self._offers, key, offer), (self._prompts, (principal.tenant, name), kept)):
                    found.pop(at, None)
                    if len(found) >= MAX_KEPT:
                        found.pop(next(iter(found)), None)
                    found[at] = value
        _, kind, published = kept
        try:
            if kind is None:
                raise _unknown(name)
            if not kind.listing_of(name, published).allowed(offer.permissions, offer.attached):
                raise _unknown(name)
            context = call_context(principal, MCP, str(request_id))
            try:
                rendered = await kind.render_published(published, principal.tenant, arguments, context, services.toolbox)
            except ModuleError as error:
                raise _refused(error) from None
        except MCPError as error:
            return JSONRPCError(jsonrpc="2.0", id=request_id, error=error.error).model_dump_json(by_alias=True, exclude_unset=True).encode()
        # The rendered messages are the wire's shape already (a template's were checked at its save,
        # a module's answer as it was read): written as they are.
        return pydantic_core.to_json({"jsonrpc": "2.0", "id": request_id, "result": rendered})

    def _take(self, principal: Any, server_id: str | None, name: str,
              generation: int | None) -> tuple[Offer, tuple[int, Any, Any]]:
        """The caller's offer and the published prompt `name`, as of the store's position
        (`generation`, read here when None; blocking)."""
        if generation is None:
            generation = self._services.toolbox.generation()
        offer = take_offer(self._services, principal, server_id)
        kept: tuple[int, Any, Any] = (generation, None, None)
        for kind in prompt_kinds(self._services):
            published = kind.published(principal.tenant, name)
            if published is not None:
                kept = (generation, kind, published)
                break
        return offer, kept
