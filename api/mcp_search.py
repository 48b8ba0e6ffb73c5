"""Tool search over MCP (docs/mcp.md, "Tool search"): `find_tool` and `call_tool` on a server whose
`toolSearch` is on (a server record's, or `/mcp`'s settings).

With tool search on, `tools/list` answers the two tools and the pinned ones the caller is offered
(one page). `find_tool` ranks the caller's offered tools only (`application.tool_search`: the
offer's mask is applied before ranking), and `call_tool` calls a tool exactly as `tools/call`
would: the same offer check (a tool the caller is not offered here is `tool-not-found`, recorded
as refused), the same toolbox call, call log and errors. A `tools/call` of an offered tool that is
not pinned is still answered: tool search changes what is listed, never what may be called.
"""

from __future__ import annotations

from typing import Any

import anyio.to_thread
import orjson
from mcp.server.context import ServerRequestContext
from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams, TextContent, Tool, ToolAnnotations

from api.mcp_tools import ToolHandlers, after, call_as, mcp_tool, not_offered_text
from api.mcp_watch import Offer, offer_of
from api.services import Services
from application.context import MCP
from application.queries import call_context
from application.tool_search import (
    CALL_TOOL, DEFAULT_LIMIT, FIND_TOOL, MAX_LIMIT, MAX_QUERY, META_TOOLS, ToolIndex, described,
)
from domain.catalog import ToolEntry

FIND_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY,
                  "description": "what the tool should do, in your own words"},
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                  "description": "how many tools to answer"},
    },
    "required": ["query"],
    "additionalProperties": False,
}
CALL_TOOL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "the tool's name, as find_tool answered it"},
        "arguments": {"type": "object", "description": "the tool's arguments, by its input schema"},
    },
    "required": ["name"],
    "additionalProperties": False,
}
FIND = Tool(name=FIND_TOOL, input_schema=FIND_TOOL_SCHEMA,
            description=("Finds the tools for a task among the many this server offers: describe what you need; "
                         "answers each tool's name, description and input schema. Call one with call_tool."),
            annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False))
CALL = Tool(name=CALL_TOOL, input_schema=CALL_TOOL_SCHEMA,
            description="Calls a tool that find_tool found, by its name, with its arguments.")
SCHEMAS = {FIND_TOOL: FIND_TOOL_SCHEMA, CALL_TOOL: CALL_TOOL_SCHEMA}


def searching(offer: Offer) -> bool:
    return offer.tool_search.enabled


def meta_call(offer: Offer, name: str) -> bool:
    """Whether a `tools/call` of `name` is one of tool search's own tools on this offer."""
    return name in META_TOOLS and offer.tool_search.enabled


def pinned(offer: Offer) -> list[ToolEntry]:
    names = sorted(set(offer.toolbox.expanded(offer.principal.tenant, offer.tool_search.pinned)))
    return [entry for name in names if (entry := offer.tool(name)) is not None]


def listed(offer: Offer) -> ListToolsResult:
    """tools/list with tool search on: find_tool, call_tool and the pinned tools offered (blocking)."""
    return ListToolsResult(tools=[FIND, CALL, *(mcp_tool(entry) for entry in pinned(offer))], next_cursor=None)


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=True)


def _invalid(field: str, rule: str) -> CallToolResult:
    return _error(f"invalid-input: {field} {rule}")


class SearchCalls:
    def __init__(self, services: Services, index: ToolIndex) -> None:
        self._services = services
        self.index = index

    async def call(self, offer: Offer, name: str, arguments: Any, request_id: str | None) -> CallToolResult:
        arguments = arguments if arguments is not None else {}
        if not isinstance(arguments, dict):
            return _invalid("arguments", "must be an object")
        if name == FIND_TOOL:
            return await self.find(offer, arguments)
        return await self.call_tool(offer, arguments, request_id)

    async def find(self, offer: Offer, arguments: dict[str, Any]) -> CallToolResult:
        unknown = sorted(set(arguments) - {"query", "limit"})
        if unknown:
            return _invalid(unknown[0], "is not an argument of find_tool (query, limit)")
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return _invalid("query", "must be a non-empty string")
        if len(query) > MAX_QUERY:
            return _invalid("query", f"must be at most {MAX_QUERY} characters")
        limit = arguments.get("limit", DEFAULT_LIMIT)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            return _invalid("limit", f"must be an integer from 1 to {MAX_LIMIT}")
        among = None if offer.attached is None else sorted(offer.attached)
        if among is None and not offer.permissions.everything and not offer.permissions.tags:
            among = sorted(offer.permissions.tools)
        if offer.permissions.none:
            found = []
        else:
            found = await anyio.to_thread.run_sync(
                lambda: self.index.find(offer.principal.tenant, offer.shows, offer.terms[:2], query, limit, among))
        tools = [described(f) for f in found]
        answer = {"tools": tools}
        return CallToolResult(content=[TextContent(text=orjson.dumps(answer).decode())], structured_content=answer)

    async def call_tool(self, offer: Offer, arguments: dict[str, Any], request_id: str | None) -> CallToolResult:
        unknown = sorted(set(arguments) - {"name", "arguments"})
        if unknown:
            return _invalid(unknown[0], "is not an argument of call_tool (name, arguments)")
        name, inner = arguments.get("name"), arguments.get("arguments")
        if not isinstance(name, str) or not name:
            return _invalid("name", "must be a tool's name")
        if inner is not None and not isinstance(inner, dict):
            return _invalid("arguments", "must be an object")
        services = self._services
        if offer.tool(name) is None:
            # As tools/call: through this server, only what it offers this caller.
            services.toolbox.refused(offer.principal.tenant, name, call_context(offer.principal, MCP, request_id), "tool-not-found")
            return _error(not_offered_text(offer.server_id, name))
        return await call_as(services, offer.principal, offer.permissions, name, inner, trace=request_id)


class SearchingToolHandlers(ToolHandlers):
    """`ToolHandlers`, with tool search's list and its two tools where the offer has it on."""

    def __init__(self, services: Services, index: ToolIndex) -> None:
        super().__init__(services)
        self.search = SearchCalls(services, index)

    async def list_tools(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        offer = offer_of(ctx)
        if not searching(offer):
            return await super().list_tools(ctx, params)
        after(params.cursor if params is not None else None)  # a cursor this server did not give is refused
        return await anyio.to_thread.run_sync(listed, offer)

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        offer = offer_of(ctx)
        if not meta_call(offer, params.name):
            return await super().call_tool(ctx, params)
        return await self.search.call(offer, params.name, params.arguments, None if ctx.request_id is None else str(ctx.request_id))


def input_schema_of(offer: Offer, name: str) -> dict[str, Any] | None:
    """The schema of tool search's own tools on an offer that has it on (for `api.mcp.input_schema`)."""
    return SCHEMAS.get(name) if meta_call(offer, name) else None
