"""A tool call's notifications while it runs (docs/mcp.md, "Progress and logs"): `ai.progress` as
`notifications/progress`, the module's `log()` lines as `notifications/message`.

A `tools/call` asks for them with `_meta.progressToken` (progress, either era), or with a log level:
the session's `logging/setLevel` (the handshake era; `SessionLevels`), or the request's own
`_meta["io.modelcontextprotocol/logLevel"]` (2026-07-28, where the server MUST NOT send log
notifications otherwise). A module's lines are at level `info`: they go out when the level asked
for is `debug` or `info`. Such a call is answered as the SDK's 2026 entry answers in SSE mode, in
either era: the call runs; if it ends before telling anything, the answer is the usual JSON body;
otherwise the answer commits to `text/event-stream`, each notification an SSE `message` event as
it comes, the JSON-RPC response the last event (`api.mcp_direct.FastCalls`).

The sandbox rate-limits progress at its source (`sandbox.engine.PROGRESS_INTERVAL`: at most 20 a
second per call, increasing, the last one kept); here, a call's notifications wait in a bounded
queue (`MAX_QUEUED`) and what a slow client has not taken when it is full is dropped, never
blocking the call, nor the event loop, nor the worker.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from typing import Any

import anyio
import orjson
from mcp_types import LOG_LEVEL_META_KEY, EmptyResult

from api import mcp_sdk

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# The level of a module's `log()` line.
MODULE_LINE_LEVEL = "info"
MAX_QUEUED = 256
_SSE = b"event: message\r\ndata: "
_END = b"\r\n\r\n"
SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


def sse_event(payload: bytes) -> bytes:
    """One JSON-RPC message (its JSON) as an SSE `message` event."""
    return _SSE + payload + _END


def sends_lines(level: str | None) -> bool:
    """Whether a client that asked for `level` gets a module's lines (level `info`)."""
    return level in LEVELS and LEVELS.index(level) <= LEVELS.index(MODULE_LINE_LEVEL)


def progress_token(params: Mapping[str, Any]) -> str | int | None:
    meta = params.get("_meta")
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    return token if isinstance(token, (str, int)) and not isinstance(token, bool) else None


def request_level(params: Mapping[str, Any]) -> str | None:
    """The 2026-07-28 request's own log level (`_meta`), if it asks for one."""
    meta = params.get("_meta")
    level = meta.get(LOG_LEVEL_META_KEY) if isinstance(meta, dict) else None
    return level if level in LEVELS else None


class SessionLevels:
    """The level each handshake-era session asked for with `logging/setLevel`, forgotten with the
    session."""

    def __init__(self) -> None:
        self._levels: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._levels)

    def level(self, session_id: str | None) -> str | None:
        return self._levels.get(session_id) if session_id is not None else None

    async def set_level(self, ctx: Any, params: Any) -> EmptyResult:
        connection = mcp_sdk.connection_of(ctx.session)
        session_id = getattr(connection, "session_id", None)
        if session_id is not None:
            if session_id not in self._levels:
                stack = getattr(connection, "exit_stack", None)
                if stack is not None:
                    stack.callback(self._levels.pop, session_id, None)
            self._levels[session_id] = params.level
        return EmptyResult()


class CallNotifications:
    """One call's notifications, as SSE events in a bounded queue. `events` is the call's listener
    (`CallContext.events`): called on the event loop (an awaited call) or from a worker thread."""

    def __init__(self, token: str | int | None, level: str | None, tool: str) -> None:
        self.token = token
        self.lines = sends_lines(level)
        self.tool = tool
        self.dropped = 0
        self.lines_sent = 0
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self.sender, self.receiver = anyio.create_memory_object_stream[bytes](MAX_QUEUED)

    @property
    def wanted(self) -> bool:
        return self.token is not None or self.lines

    def events(self, kind: str, payload: Any) -> None:
        if kind == "progress":
            if self.token is None:
                return
            done, total, message = payload
            params: dict[str, Any] = {"progressToken": self.token, "progress": done}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            frame = self._frame("notifications/progress", params)
        elif kind == "log":
            if not self.lines:
                return
            self.lines_sent += 1
            frame = self._frame("notifications/message", {"level": MODULE_LINE_LEVEL, "logger": self.tool, "data": payload})
        else:
            return
        if threading.get_ident() == self._thread:
            self._put(frame)
        else:
            try:
                self._loop.call_soon_threadsafe(self._put, frame)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                pass

    def lines_after(self, logs: Any) -> None:
        """The call's log lines its sandbox did not tell while it ran (a `toolsmith sandbox` from
        before its events stream, `sandbox.wire`): sent now, before the answer. Called on the loop, after the call."""
        if not self.lines or not isinstance(logs, list):
            return
        for line in logs[self.lines_sent:]:
            self._put(self._frame("notifications/message", {"level": MODULE_LINE_LEVEL, "logger": self.tool, "data": line}))

    def _frame(self, method: str, params: dict[str, Any]) -> bytes:
        return sse_event(orjson.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    def _put(self, frame: bytes) -> None:
        try:
            self.sender.send_nowait(frame)
        except anyio.WouldBlock:
            self.dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
