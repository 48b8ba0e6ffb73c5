"""Checks every HTTP request passes before any route, FastAPI or the MCP SDK reads it.

`RequestChecks` refuses, as problem details:

- two or more `Authorization` headers (which one is meant is not for the service to guess);
- a path or query string that, percent-decoded, holds NUL or bytes that are not UTF-8;
- a JSON body nested deeper than `domain.values.MAX_DEPTH` (Python's JSON reader, pydantic and
  the encoders all recurse), or holding a lone UTF-16 surrogate (`"\\ud800"`, which no UTF-8
  store can write), named by its path in the body;
- a body that is not JSON as RFC 8259 reads it, though Python's reader takes it: not UTF-8 (UTF-16
  guessed from the bytes), a byte order mark, NaN or Infinity, a number that overflows a double,
  or a key twice in one object (400; readers disagree on which one wins);
- a body declared as another media type than JSON (415): every route reads JSON.

The depth is scanned without parsing, and only when the body holds more than `MAX_DEPTH` brackets,
so the strict parse that follows never goes deeper than that. Nothing here recurses.

A request whose method its path does not answer goes on to the router untouched, whatever its
body: the answer is 405, whose `Allow` lists every method of every route of that path
(`api.methods`), not a complaint about a body no route would read.

`HeadAsGet` answers `HEAD` on every route that answers `GET`: the same status and headers, no body.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from urllib.parse import unquote_to_bytes

from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import problems
from api.methods import allowed_methods
from domain.values import MAX_DEPTH, lone_surrogate_at

CONSOLE_PREFIX = "/console/"
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


class _NotJson(ValueError):
    """What Python's JSON reader accepts and RFC 8259 does not; `code` names the problem."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        shown = json.dumps(key)  # escaped: a key may hold anything
        raise _NotJson("duplicate-key", f"the key {shown} appears twice in one object; which one is meant is not for the service to guess")
    return value


def _no_constant(name: str) -> float:
    raise _NotJson("malformed-json", f"the body is not valid JSON: {name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise _NotJson("malformed-json", f"the body is not valid JSON: the number {text[:40]} is too large for a double")
    return number


def body_problem(body: bytes) -> Response | None:
    """The 400 problem a JSON request body gets before anything parses it, or None.

    The body is read here as strictly as RFC 8259 reads it, which Python's own reader (and so
    FastAPI's) does not: UTF-8 only (no UTF-16 or UTF-32 guessed from the bytes, no byte order
    mark), no NaN or Infinity, no number that overflows a double, no key twice in one object, and
    no lone surrogate in a string or key. A body that passes means the same to every reader."""
    if not body:
        return None
    if nested_deeper_than(body):
        return problems.problem(
            400, "body-too-deep",
            f"the body nests objects and arrays more than {MAX_DEPTH} levels deep; the limit is {MAX_DEPTH}",
            errors=[{"field": "body", "rule": "max-depth", "message": f"nested more than {MAX_DEPTH} levels deep"}],
        )
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        try:
            text = body.decode("utf-8", "surrogatepass")  # a surrogate's own three bytes: named below
        except UnicodeDecodeError as e:
            return problems.problem(400, "malformed-json", f"the body is not UTF-8, which JSON requires (RFC 8259 §8.1): byte {e.start} is not")
    if text.startswith("\ufeff"):
        return problems.problem(400, "malformed-json", "the body starts with a byte order mark, which JSON forbids (RFC 8259 §8.1)")
    try:
        value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite)
    except _NotJson as e:
        return problems.problem(400, e.code, str(e))
    except ValueError as e:  # also an integer too long to read (more than 4,300 digits)
        return problems.problem(400, "malformed-json", f"the body is not valid JSON: {e}")
    where = lone_surrogate_at(value) if _MAY_HOLD_SURROGATE.search(body) else None
    if where is None:
        return None
    message = "holds a lone UTF-16 surrogate (U+D800 to U+DFFF outside a pair), which is not text"
    return problems.problem(400, "lone-surrogate", f"{where}: {message}",
                            errors=[{"field": where, "rule": "lone-surrogate", "message": message}])


def as_json_rpc_error(refusal: Response) -> Response:
    """An MCP body's refusal, spelled as JSON-RPC: clients (the official SDK's among them) show a
    JSON-RPC error's message to the model, where a problem body would reach it as "Server
    returned an error response". Its id is null: the request's own could not be read safely."""
    problem = json.loads(refusal.body)
    code = -32700 if problem["code"] == "malformed-json" else -32600  # parse error; invalid request
    error = {"code": code, "message": f"{problem['code']}: {problem['detail']}", "data": problem}
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=refusal.status_code)


def _media_problem(scope: Scope) -> Response | None:
    """415 for a body not declared as JSON: every route reads JSON, and FastAPI (strict about the
    content type) hands a route any other body, or one with no Content-Type, as raw bytes."""
    content_type = next((v for k, v in scope.get("headers") or [] if k == b"content-type"), None)
    if content_type is not None and _is_json(scope):
        return None
    shown = "a body without a Content-Type" if content_type is None else content_type.decode("latin-1")[:80]
    return problems.problem(415, "unsupported-media-type", f"the body must be JSON (Content-Type: application/json), not {shown}")


def _is_json(scope: Scope) -> bool:
    """Whether the body is declared as JSON: `application/json` or `application/…+json`."""
    content_type = next((v for k, v in scope.get("headers") or [] if k == b"content-type"), None)
    if content_type is None:
        return False
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


class Uploads:
    """The routes that take uploads, over REST and from the console, as the kinds declare them
    (`KindPlugin.uploads`, regular expressions of whole paths): multipart, streamed to the route
    (never held whole here: a 25 MB upload must not cost the API process 25 MB), with their own cap."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        paths = tuple(paths)
        self._pattern = re.compile("|".join(f"(?:{path})" for path in paths) + r"\Z") if paths else None

    def __call__(self, scope: Scope) -> bool:
        return (self._pattern is not None and scope.get("method") == "POST"
                and self._pattern.match(scope.get("path", "")) is not None)


def _upload_problem(scope: Scope) -> Response | None:
    content_type = next((v for k, v in scope.get("headers") or [] if k == b"content-type"), b"")
    if content_type.split(b";", 1)[0].strip().lower() == b"multipart/form-data":
        return None
    shown = content_type.decode("latin-1")[:80] or "a body without a Content-Type"
    return problems.problem(415, "unsupported-media-type",
                            f"an upload is multipart/form-data with its files in the field `files`, not {shown}")


def _method_not_answered(scope: Scope) -> bool:
    """Whether the path's routes answer other methods only (the router's 405 follows)."""
    app = scope.get("app")
    allowed = allowed_methods(app, scope["path"]) if app is not None else None
    return allowed is not None and scope["method"] not in allowed


class RequestChecks:
    """Refuses what no route may see (see the module's docstring), before routing; `uploads` are
    the routes whose bodies are streamed to them, checked for their media type only."""

    def __init__(self, app: ASGIApp, uploads: Uploads | None = None) -> None:
        self.app = app
        self.is_upload = uploads or Uploads()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = _authorization_problem(scope) or _url_problem(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD", "OPTIONS") or _method_not_answered(scope):
            await self.app(scope, receive, send)
            return
        if self.is_upload(scope):
            refusal = _upload_problem(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
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
        # The console's forms post `application/x-www-form-urlencoded` (console/: its own checks).
        if ending is None and body and not scope["path"].startswith(CONSOLE_PREFIX):
            refusal = _media_problem(scope) or body_problem(body)
            if refusal is not None:
                if scope["path"] == "/mcp" or scope["path"].startswith("/mcp/"):
                    refusal = as_json_rpc_error(refusal)
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
