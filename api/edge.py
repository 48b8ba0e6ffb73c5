"""Checks every HTTP request passes before any route, FastAPI or the MCP SDK reads it.

`RequestChecks` refuses, as problem details:

- two or more `Authorization` headers (which one is meant is not for the service to guess);
- a path or query string that, percent-decoded, holds NUL or bytes that are not UTF-8;
- a JSON body nested deeper than `domain.values.MAX_DEPTH` (Python's JSON reader, pydantic and
  the encoders all recurse), or holding a lone UTF-16 surrogate (`"\\ud800"`, which no UTF-8
  store can write), named by its path in the body.

The body checks are cheap on the common path: the depth is only scanned when the body holds more
than `MAX_DEPTH` brackets, and the body is only parsed when it holds something that may be a
surrogate. Neither check recurses.

`HeadAsGet` answers `HEAD` on every route that answers `GET`: the same status and headers, no body.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote_to_bytes

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import problems
from domain.values import MAX_DEPTH, lone_surrogate_at

_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_OPENING = frozenset(b"[{")
# What may decode to a surrogate: an escape \uD800-\uDFFF, or its three UTF-8 bytes (which
# Python's JSON reader decodes with `surrogatepass`).
_MAY_HOLD_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def nested_deeper_than(body: bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text `body` nests objects and arrays more than `limit` levels; never parses
    or recurses (a malformed body is measured as it stands: the parser refuses it later)."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    # Outside strings only: drop escaped backslashes, then escaped quotes, then every other piece
    # between quotes; then every byte but a bracket.
    outside = b"".join(body.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])
    depth = 0
    for byte in outside.translate(None, _NOT_BRACKETS):
        if byte in _OPENING:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def body_problem(body: bytes) -> Response | None:
    """The 400 problem a JSON request body gets before anything parses it, or None."""
    if nested_deeper_than(body):
        return problems.problem(
            400, "body-too-deep",
            f"the body nests objects and arrays more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH}",
            errors=[{"field": "body", "rule": "max-depth", "message": f"nested more than {MAX_DEPTH} levels deep"}],
        )
    if (b"\\u" not in body and b"\xed" not in body) or _MAY_HOLD_SURROGATE.search(body) is None:
        return None
    try:
        value = json.loads(body)  # within MAX_DEPTH now, so the reader's recursion is bounded
    except ValueError:
        return None  # malformed: the route's parser says so
    where = lone_surrogate_at(value)
    if where is None:
        return None
    message = "holds a lone UTF-16 surrogate (U+D800 to U+DFFF outside a pair), which is not text"
    return problems.problem(400, "lone-surrogate", f"{where}: {message}",
                            errors=[{"field": where, "rule": "lone-surrogate", "message": message}])


def _is_json(scope: Scope) -> bool:
    """Whether FastAPI would read the body as JSON: no Content-Type, `application/json` or `…+json`."""
    content_type = next((v for k, v in scope.get("headers") or [] if k == b"content-type"), None)
    if content_type is None:
        return True
    media = content_type.split(b";")[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def _url_problem(scope: Scope) -> Response | None:
    raw_path = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogatepass")
    for part, raw in (("path", raw_path), ("query string", scope.get("query_string") or b"")):
        decoded = unquote_to_bytes(raw.replace(b"+", b" ") if part == "query string" else raw)
        if b"\x00" in decoded:
            return problems.problem(400, "invalid-url", f"the {part} holds a NUL character (%00)")
        try:
            decoded.decode("utf-8")
        except UnicodeDecodeError:
            return problems.problem(400, "invalid-url", f"the {part}, percent-decoded, is not UTF-8 "
                                    "(a lone surrogate such as %ED%A0%80, or a broken sequence)")
    return None


def _authorization_problem(scope: Scope) -> Response | None:
    count = sum(1 for k, _ in scope.get("headers") or [] if k == b"authorization")
    if count > 1:
        return problems.problem(400, "duplicate-authorization",
                                f"the request has {count} Authorization headers; send exactly one")
    return None


class RequestChecks:
    """Refuses what no route may see (see the module's docstring), before routing."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = _authorization_problem(scope) or _url_problem(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD", "OPTIONS") or not _is_json(scope):
            await self.app(scope, receive, send)
            return
        # The whole body (BodyLimit, outside, bounds it), then replayed to the app as one message.
        chunks: list[bytes] = []
        ending: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                ending = message
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if ending is None and body:
            refusal = body_problem(body)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}] if ending is None else [ending]

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        await self.app(scope, replay, send)


class HeadAsGet:
    """`HEAD` is served as `GET` with the body left out (FastAPI routes declare `GET` only). The
    response ends as soon as its head is sent, so a streaming `GET` does not keep a `HEAD` open;
    the server then tells the app the client is gone."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def without_body(message: Message) -> None:
            nonlocal ended
            if ended:
                return
            if message["type"] == "http.response.start":
                await send(message)
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                ended = True
            elif message["type"] != "http.response.body":
                await send(message)

        async def receive_until_ended() -> Message:
            return {"type": "http.disconnect"} if ended else await receive()

        await self.app({**scope, "method": "GET"}, receive_until_ended, without_body)
