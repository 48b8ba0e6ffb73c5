"""External MCP tools (callType MCP): a tool of another MCP server, called over streamable HTTP.

Each call opens a client session with the official SDK, makes the `initialize` handshake (legacy
mode: what every server deployed today speaks, in one round trip), calls `tools/call` and closes the
session, all within the tool's timeout. Every request goes through the egress module
(`infrastructure/egress/mcp_client.py`): to the declared origin only, to the addresses its name
resolved to when the call began, without proxies. `call` is synchronous: the API calls it from
worker threads, never from inside an event loop, so each call runs its own loop. The headers carry
secrets (`Authorization`): they never reach a log, an error message, an output or a `repr` (a
careless or hostile server that quotes them back, in any encoding, gets them redacted).
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import urlsplit

import anyio

from domain.catalog import DeclaredTool, ToolEntry
from domain.ports import ExecutionError, ExecutionResult
from domain.redaction import Redactor

log = logging.getLogger("toolsmith.tools.mcp")

CLIENT_NAME = "toolsmith"


class McpTool(DeclaredTool):
    def __init__(self, entry: ToolEntry, url: str, remote_name: str, headers: dict[str, str],
                 timeout_millis: int, secrets: tuple[str, ...] = ()) -> None:
        self.entry = entry
        self.url = url
        self.remote_name = remote_name
        self.timeout_millis = timeout_millis
        self._headers = dict(headers)
        # The expanded values of environment variables: replaced, in every form they could be quoted
        # back in (raw, percent-encoded, base64, JSON-escaped), in any text that leaves this class.
        self._secrets = tuple(s for s in secrets if s)
        self._redactor = Redactor(self._secrets)
        self.host = urlsplit(url).netloc

    def __repr__(self) -> str:
        return (f"McpTool(name={self.entry.name!r}, url={self.url!r}, remote_name={self.remote_name!r}, "
                f"headers={sorted(self._headers)!r})")

    def call(self, arguments: dict[str, Any], context: dict[str, Any]) -> ExecutionResult:
        started = time.perf_counter()
        statuses: list[int] = []
        try:
            answer = anyio.run(self._call, arguments, statuses)
            output, error = _mapped(answer)
            output = self._redactor.value(output)
        except Exception as e:
            error = ExecutionError("mcp", self._masked(" ".join(self._failure(e, statuses).split())))
            log.warning("MCP tool %s failed: %s", self.entry.name, error.message,
                        extra={"tool": self.entry.name, "host": self.host})
            output = None
        else:
            if error is not None:
                error = ExecutionError(error.type, self._masked(error.message))
        return ExecutionResult(output=output, error=error, duration_millis=(time.perf_counter() - started) * 1000)

    async def _call(self, arguments: dict[str, Any], statuses: list[int]) -> Any:
        # Imported here: the SDK is large, and a start without MCP tools should not pay for it.
        import httpx2
        from mcp_types import Implementation

        from infrastructure.egress.mcp_client import mcp_client

        async def note_status(response: httpx2.Response) -> None:
            if response.status_code >= 400:
                statuses.append(response.status_code)

        seconds = self.timeout_millis / 1000
        # One deadline over the whole exchange: connect, handshake, call and the session's DELETE.
        # Through the egress module: to the declared origin only, its addresses resolved once and
        # pinned for the call, no proxy from the environment, the body capped.
        with anyio.fail_after(seconds):
            client = mcp_client(self.url, seconds=seconds, headers=self._headers, event_hooks={"response": [note_status]},
                                mode="legacy", read_timeout_seconds=seconds, cache=None,
                                client_info=Implementation(name=CLIENT_NAME, version="1"))
            async with client:
                return await client.call_tool(self.remote_name, arguments)

    def _failure(self, error: BaseException, statuses: list[int]) -> str:
        """What went wrong, in one line, without the request's headers."""
        import httpx2
        from mcp.shared.exceptions import MCPError

        from infrastructure.egress.policy import EgressError

        cause = _first_leaf(error)
        if isinstance(cause, EgressError):
            return f"{self.host} refused by egress: {cause}"
        if isinstance(cause, (TimeoutError, httpx2.TimeoutException)):
            return f"{self.host} unreachable: no answer within {self.timeout_millis} ms"
        if isinstance(cause, (httpx2.TransportError, OSError)):
            return f"{self.host} unreachable: {cause or type(cause).__name__}"
        if statuses:
            # The SDK reports a refused request (401, 403, 404) as a bare JSON-RPC error.
            return f"{self.host} answered HTTP {statuses[-1]} to {self.url}"
        if isinstance(cause, MCPError):
            return f"{self.host} refused the call: {cause}"
        log.warning("MCP tool %s: unexpected failure", self.entry.name, exc_info=(type(cause), cause, cause.__traceback__),
                    extra={"tool": self.entry.name, "host": self.host})
        return f"{self.host}: {type(cause).__name__}: {cause}"

    def _masked(self, text: str) -> str:
        return self._redactor.text(text)


def _first_leaf(error: BaseException) -> BaseException:
    """The first exception inside (nested) task-group exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _mapped(answer: Any) -> tuple[Any, ExecutionError | None]:
    """A `CallToolResult` as an output or an error. Structured content when the tool gives it; else
    the text contents, joined by newlines and kept as text (a tool that means JSON says so with
    structured content, and parsing would make the output's type depend on what the text reads)."""
    texts = [block.text for block in answer.content if getattr(block, "type", None) == "text"]
    if answer.is_error:
        return None, ExecutionError("mcp", "\n".join(texts) or "the tool reported an error without a message")
    if answer.structured_content is not None:
        return answer.structured_content, None
    if texts or not answer.content:
        return ("\n".join(texts) if texts else None), None
    # Only images, audio or resources: their JSON form, rather than nothing.
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in answer.content], None
