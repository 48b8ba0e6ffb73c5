"""The MCP SDK's private names this service relies on, in one place (docs/mcp.md).

SDK 2.3 (pinned in pyproject.toml) has no public way to do five things the MCP endpoint needs:

- list the sessions the manager serves, with who opened each, and end one (a suspended tenant's
  sessions end: `api/mcp.py`): `StreamableHTTPSessionManager._session_owners`,
  `._server_instances` and `._discard_session(session_id, transport)`;
- reach the transport of a session, to answer its `tools/call` in the request's own task and keep
  its idle clock as the transport does (`api/mcp_direct.py`): `StreamableHTTPServerTransport.
  _requests_in_flight` and `._idle_timeout`;
- reach a request's `Connection` from its handler context, to keep a session's state and tell it of
  changes (`api/mcp_direct.py`, `api/mcp_watch.py`): `ServerSession._connection`;
- tell whether a tool's input schema declares any `x-mcp-header`, the one thing that decides whether
  a 2026-era call's `Mcp-Param-*` headers need checking (`api/mcp_direct.py`):
  `mcp.shared.inbound._annotated_positions`, the walk the SDK's own check makes.

Every use goes through a function here, and each answers "none" rather than fail when the SDK moved
what it reads: `tests/unit/test_mcp_sdk.py` fails then, naming what moved, so an upgrade of the SDK
is a change of this module alone.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.shared import inbound
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

# What the functions below read, by the SDK class they read it on (the test holds the pinned SDK to it).
RELIED_ON: dict[type, tuple[str, ...]] = {
    StreamableHTTPSessionManager: ("_session_owners", "_server_instances", "_discard_session"),
    StreamableHTTPServerTransport: ("_requests_in_flight", "_idle_timeout", "idle_scope", "is_terminated"),
}
# `ServerSession` keeps the connection it was made with here.
CONNECTION = "_connection"


def session_owners(manager: StreamableHTTPSessionManager) -> dict[str, Mapping[str, Any]]:
    """Each session the manager serves, with the authorization of whoever opened it (a copy)."""
    return dict(getattr(manager, "_session_owners", {}))


def transport_of(manager: StreamableHTTPSessionManager, session_id: str) -> StreamableHTTPServerTransport | None:
    """The transport of the session the manager serves under this id; None for none."""
    return getattr(manager, "_server_instances", {}).get(session_id)


async def end_session(manager: StreamableHTTPSessionManager, session_id: str, transport: StreamableHTTPServerTransport) -> None:
    """Ends a session as the manager ends an expired one: terminated and forgotten."""
    await manager._discard_session(session_id, transport)  # noqa: SLF001 - no public way in SDK 2.3 (see the module)


def connection_of(session: Any) -> Any:
    """The `Connection` a handler's `ServerSession` was made with; None if the SDK moved it."""
    return getattr(session, CONNECTION, None)


def keeps_idle_clock(transport: StreamableHTTPServerTransport) -> bool:
    """Whether `in_flight` can keep this transport's session alive as its own requests do."""
    return hasattr(transport, "_requests_in_flight")


@asynccontextmanager
async def in_flight(transport: StreamableHTTPServerTransport) -> AsyncIterator[None]:
    """Keeps the session alive while a call runs, and restarts its idle clock after, as the
    SDK's transport does for each request it serves (`StreamableHTTPServerTransport.handle_request`)."""
    started = call_started(transport)
    try:
        yield
    finally:
        if started:
            call_ended(transport)


def call_started(transport: StreamableHTTPServerTransport) -> bool:
    """`in_flight`'s start, for a caller that ends it itself (`call_ended`, in a `finally`) without a
    context manager's cost; False: the transport keeps no idle clock, so nothing is to end."""
    idle = transport.idle_scope
    if idle is None or getattr(transport, "_idle_timeout", None) is None:
        return False
    transport._requests_in_flight += 1  # noqa: SLF001 - no public way in SDK 2.3 (see the module)
    idle.deadline = math.inf
    return True


def call_ended(transport: StreamableHTTPServerTransport) -> None:
    transport._requests_in_flight -= 1  # noqa: SLF001
    if not transport._requests_in_flight:  # noqa: SLF001
        transport.idle_scope.deadline = _now() + transport._idle_timeout  # type: ignore[union-attr,operator]  # noqa: SLF001


def _now() -> float:
    """`anyio.current_time()`: on asyncio, the running loop's clock (what anyio's asyncio backend
    answers, without its look-up of the backend: half the cost of a call's idle clock)."""
    try:
        return asyncio.get_running_loop().time()
    except RuntimeError:  # not on asyncio (trio)
        return anyio.current_time()


def header_positions(input_schema: Any) -> Any:
    """The `x-mcp-header` declarations of a tool's input schema as the SDK's check walks them (any
    iterable; empty: the check has nothing to compare). Where the SDK moved its walk, one
    declaration is assumed, so every call's headers are checked by the SDK's public function."""
    walk = getattr(inbound, "_annotated_positions", None)
    return walk(input_schema) if walk is not None else (("unknown",),)
