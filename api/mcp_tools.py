"""MCP's `tools/list` and `tools/call` (docs/mcp.md): the toolbox's offer and calls, as MCP types.

Every refusal of a call (an argument missing or of the wrong type, a tool this server does not
offer to this caller, a tool whose kind has no capacity left, an absent sandbox) and every failure of the code itself is a tool
result with `isError`, which the model can read and act on, never a JSON-RPC error.
"""

from __future__ import annotations

import logging
from functools import lru_cache, partial
from typing import Any

import anyio.to_thread
import orjson
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS, CallToolRequestParams, CallToolResult, Icon, ListToolsResult, PaginatedRequestParams, TextContent, Tool,
    ToolAnnotations,
)

from api.mcp_watch import offer_of
from application.context import MCP
from application.queries import after_cursor, call_context, cursor_after
from domain.catalog import Permissions, ToolEntry
from domain.errors import ModuleError
from domain.ports import ExecutionResult
from api.services import Services
from application.principals import Principal

log = logging.getLogger("toolsmith.mcp")

# `_meta` keys of this server (the `io.modelcontextprotocol/` prefix is the spec's own).
TAGS_META = "toolsmith/tags"
LOGS_META = "toolsmith/logs"
DURATION_META = "toolsmith/durationMillis"
CALL_FAILED = "internal-error: the call failed; it has been logged"


# A tool that only reads what the server holds (a File Search tool's capabilities): MCP's hints.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def mcp_tool(entry: ToolEntry) -> Tool:
    return Tool(name=entry.name, description=entry.description, input_schema=entry.input_schema,
                output_schema=entry.output_schema,
                annotations=_annotations(entry), icons=_icons(entry), _meta={TAGS_META: list(entry.tags)})


def _annotations(entry: ToolEntry) -> ToolAnnotations | None:
    """The kind's derived hints overlaid by the admin's (domain.annotations), kept per entry: an
    entry is immutable and listed again and again."""
    if entry.annotations is not None:
        return _shown_annotations(tuple(entry.annotations.items()))
    return READ_ONLY if entry.read_only else None


@lru_cache(maxsize=4_096)
def _shown_annotations(items: tuple[tuple[str, Any], ...]) -> ToolAnnotations:
    return ToolAnnotations.model_validate(dict(items))


def _icons(entry: ToolEntry) -> list[Icon] | None:
    return [Icon.model_validate(icon) for icon in entry.icons] if entry.icons else None


def mcp_result(result: ExecutionResult) -> CallToolResult:
    """The output as text (a string as it is, anything else as JSON), and as `structuredContent`
    when it is a JSON object; a failure of the code as `"<type>: <message>"` with `isError`."""
    meta = {LOGS_META: list(result.logs), DURATION_META: result.duration_millis}
    if result.error is not None:
        return CallToolResult(content=[TextContent(text=f"{result.error.type}: {result.error.message}")], is_error=True, _meta=meta)
    output = result.output
    structured = output if isinstance(output, dict) else None
    if result.content is not None:
        # MCP content the code returned (domain.content): the items as they are, already checked.
        return CallToolResult.model_validate({"content": list(result.content), "structuredContent": structured, "_meta": meta})
    text = output if isinstance(output, str) else orjson.dumps(output).decode()
    return CallToolResult(content=[TextContent(text=text)], structured_content=structured, _meta=meta)


def refused(error: ModuleError) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=refusal_text(error))], is_error=True)


def refusal_text(error: ModuleError) -> str:
    return f"{error.code}: {error.detail}"


def not_offered_text(server_id: str | None, name: str) -> str:
    """Why a `tools/call` of a tool this server does not offer this caller gets nothing."""
    where = f"the MCP server {server_id!r}" if server_id else "this MCP server"
    return f"tool-not-found: {where} offers no tool {name!r} to this caller"


# -- the same results as wire dicts, for calls answered without the SDK's models (api/mcp_direct.py) --
# Each is what the SDK puts on the wire for the result above it (`CallToolResult` through the
# handshake-era surface: `_meta`, `content`, `isError`, `structuredContent`, Nones left out);
# tests/unit/test_mcp_wire.py holds them to the same bytes on every protocol version.

def wire_result(result: ExecutionResult) -> dict[str, Any]:
    """`mcp_result(result)` as the wire has it."""
    meta = {LOGS_META: list(result.logs), DURATION_META: result.duration_millis}
    if result.error is not None:
        return {"_meta": meta, "content": [_text(f"{result.error.type}: {result.error.message}")], "isError": True}
    output = result.output
    if result.content is not None:
        wire = {"_meta": meta, "content": list(result.content), "isError": False}
        if isinstance(output, dict):
            wire["structuredContent"] = output
        return wire
    wire = {"_meta": meta, "content": [_text(output if isinstance(output, str) else orjson.dumps(output).decode())], "isError": False}
    if isinstance(output, dict):
        wire["structuredContent"] = output
    return wire


def wire_error(text: str) -> dict[str, Any]:
    """A refusal (`refused`, a tool not offered, a failure outside the tool) as the wire has it."""
    return {"content": [_text(text)], "isError": True}


def _text(text: str) -> dict[str, Any]:
    return {"text": text, "type": "text"}


async def call_as(services: Services, principal: Principal, permissions: Permissions, name: str, arguments: Any, *,
                  way_in: str = MCP, trace: str | None = None) -> CallToolResult:
    """A `tools/call` of `name` with `arguments` by `principal` within `permissions`, as MCP answers
    it: every refusal and failure a result with `isError`. The console's Playground calls this too (`way_in`
    CONSOLE); `trace` is the MCP request's id."""
    try:
        # As on the REST path: when the tool's kind has no capacity left, say so at once rather than queue.
        services.toolbox.admit(principal.tenant, name, lambda: call_context(principal, way_in, trace))
        call = partial(
            services.toolbox.call,
            principal.tenant,
            name,
            arguments if arguments is not None else {},
            permissions=permissions,
            context=call_context(principal, way_in, trace),
        )
        result = await anyio.to_thread.run_sync(call)
    except ModuleError as error:
        return refused(error)
    except Exception:
        log.exception("an MCP tool call failed", extra={"tool": name})
        return CallToolResult(content=[TextContent(text=CALL_FAILED)], is_error=True)
    return mcp_result(result)


def after(cursor: str | None) -> str | None:
    """The name a cursor stands for; a cursor this server did not give is invalid params."""
    try:
        return after_cursor(cursor)
    except ValueError as error:
        raise MCPError(INVALID_PARAMS, str(error)) from None


class ToolHandlers:
    def __init__(self, services: Services) -> None:
        self._services = services
        self._page_size = services.settings.mcp_page_size

    async def list_tools(self, ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams | None) -> ListToolsResult:
        """One page of the caller's offer, sorted by name (`TOOLSMITH_MCP_PAGE_SIZE`), with
        `nextCursor` while more remain. Built in a thread: the event loop serves everyone else."""
        start = after(params.cursor if params is not None else None)
        offer = offer_of(ctx)

        def page() -> ListToolsResult:
            entries, more = offer.page(start, self._page_size)
            cursor = cursor_after(entries[-1].name) if more and entries else None
            return ListToolsResult(tools=[mcp_tool(entry) for entry in entries], next_cursor=cursor)

        return await anyio.to_thread.run_sync(page)

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> CallToolResult:
        offer = offer_of(ctx)
        if offer.tool(params.name) is None:
            # The toolbox would run any tool the caller may use; through this server, only what it offers.
            self._services.toolbox.refused(offer.principal.tenant, params.name, call_context(offer.principal, MCP), "tool-not-found")
            return CallToolResult(content=[TextContent(text=not_offered_text(offer.server_id, params.name))], is_error=True)
        return await call_as(self._services, offer.principal, offer.permissions, params.name, params.arguments,
                             trace=None if ctx.request_id is None else str(ctx.request_id))
