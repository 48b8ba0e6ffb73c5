"""The MCP SDK's client for a declared MCP server, with every request through the egress transport.

The SDK would happily open its own `httpx2` client (given a URL string, or no `http_client`); this is
the one place the product makes an MCP client, and it always hands the SDK `declared_origin_client`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from infrastructure.egress.transport import declared_origin_client


def mcp_client(url: str, *, seconds: float, headers: Mapping[str, str] | None = None,
               event_hooks: Mapping[str, list[Callable[..., Any]]] | None = None, **options: Any) -> Any:
    """An `mcp.Client` (not yet entered) for the server at `url` as declared, its streamable-HTTP
    transport over `declared_origin_client(url, seconds=...)`; `options` go to `mcp.Client`."""
    from mcp import Client

    return Client(_streamable_http(url, seconds=seconds, headers=headers, event_hooks=event_hooks), **options)


@asynccontextmanager
async def _streamable_http(url: str, *, seconds: float, headers: Mapping[str, str] | None,
                           event_hooks: Mapping[str, list[Callable[..., Any]]] | None) -> AsyncIterator[Any]:
    from mcp.client.streamable_http import streamable_http_client

    async with declared_origin_client(url, seconds=seconds, headers=headers, event_hooks=event_hooks) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams
