"""A real `toolsmith serve` process on a free port, driven over HTTP (the launcher is `testing/launcher.py`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from testing.launcher import TOOLSMITH, Server

__all__ = ["TOOLSMITH", "Server", "mcp_client", "printed_tokens"]


def printed_tokens(output: str) -> list[str]:
    return re.findall(r"tsa_[A-Za-z0-9_-]+", output)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(data_dir=tmp_path / "data").start()
    tokens = printed_tokens(running.output)
    assert tokens, f"no admin token printed on first start:\n{running.output}"
    running.token = tokens[0]
    yield running
    if running.process and running.process.poll() is None:
        running.stop()



@asynccontextmanager
async def mcp_client(
    server: Server, token: str | None = None, path: str = "/mcp", *, mode: str = "legacy", on_message: Callable[[Any], Awaitable[None]] | None = None
) -> AsyncIterator[Any]:
    """The MCP SDK's client, connected to `path` of `server` with a bearer token (the admin's by
    default). `mode` is "legacy" (initialize handshake, session id, GET stream) or a 2026 version."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token or server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(server.url + path, http_client=http)
        async with Client(transport, mode=mode, message_handler=on_message, read_timeout_seconds=30) as client:
            yield client
