"""The session gate of the fast paths that answer a handshake-era session's plain request in the
request's own task, past the SDK's session loop: `api.mcp_prompts.FastPrompts` (`prompts/get`) and
`api.mcp_resources.FastReads` (`resources/read`), beside `api.mcp_direct.FastCalls` (`tools/call`,
which serves the 2026 era too and shares the session's own part, `DirectCalls.initialized`).

A request passes when the SDK would serve it as it is: its body within the transport's cap, the
server's middleware the plain chain (`FastCalls` knows it does nothing for such a request), a
handshake-era protocol version (or none), a session this process knows, whose owner is the caller
and whose handshake ended. Anything else is the SDK's to answer, with its own errors.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from api import mcp_sdk
from api.mcp_direct import first_header
from domain.errors import UnknownRecord

_VERSION = MCP_PROTOCOL_VERSION_HEADER.encode()
_SESSION_ID = MCP_SESSION_ID_HEADER.encode()


def handshake_session(manager: Any, scope: Any, body: bytes, direct: Any, fast: Any) -> tuple[Any, Any] | None:
    """The (session, transport) the POST of `body` may be answered in, here; None: the SDK's."""
    if len(body) > manager.max_request_body_size or not fast._plain_server():
        return None
    version = first_header(scope, _VERSION)
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None
    found: tuple[Any, Any] | None = direct.initialized(manager, scope)
    return found


async def answer_in_session(transport: Any, send: Any, answered: Awaitable[bytes]) -> bool:
    """Sends the JSON-RPC answer `answered` makes, as the session's transport would (its request
    counted in flight meanwhile, so the idle clock waits). False, nothing sent: a server the tenant
    does not have (`UnknownRecord`), which is the gate's 404 on the SDK's path."""
    started = mcp_sdk.call_started(transport)
    try:
        payload = await answered
    except UnknownRecord:
        return False
    finally:
        if started:
            mcp_sdk.call_ended(transport)
    headers = [(b"content-type", b"application/json"), (_SESSION_ID, transport.mcp_session_id.encode()),
               (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
    return True
