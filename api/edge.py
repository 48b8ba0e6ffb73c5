"""Checks every HTTP request passes before any route, FastAPI or the MCP SDK reads it.

The edge of the application (`entrypoints.web.Edge`, one layer for the checks, the body's size,
the security headers and HEAD, so that a request pays for one wrapper of its messages rather than
one per concern) refuses with these, as problem details:

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

The edge answers `HEAD` on every route that answers `GET` (`HEAD` is served as `GET` with the body
left out): the same status and headers, no body.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from urllib.parse import unquote_to_bytes

from starlette.responses import JSONResponse, Response
from starlette.types import Scope

from api import problems
from api.methods import methods_of
from domain.values import MAX_DEPTH, lone_surrogate_at

CONSOLE_PREFIX = "/console/"
# OAuth's token and revocation endpoints take forms (RFC 6749 §3.2, RFC 7009 §2.1): api/oauth/routes.py.
OAUTH_FORMS = frozenset({"/oauth/token", "/oauth/revoke"})
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


_PATH_SCAN_CHARS = 65_536  # a refused body's place is looked for in its first characters only
_PATH_PARTS = 4


def too_deep_at(body: bytes, limit: int = MAX_DEPTH) -> str | None:
    """Where a body `nested_deeper_than(limit)` starts to nest: its first keys and indexes on the
    way down (`tool.inputSchema.properties.a`), or None when they are not found in its first
    `_PATH_SCAN_CHARS` characters or hold no key. Only for a refusal's message: it walks the text."""
    text = body[:_PATH_SCAN_CHARS].decode("utf-8", "replace")
    stack: list[list[object]] = []  # [kind, key or index]
    i, end = 0, len(text)
    while i < end:
        c = text[i]
        if c == '"':
            try:
                value, i = json.decoder.scanstring(text, i + 1)
            except ValueError:
                return None
            j = i
            while j < end and text[j] in " \t\r\n":
                j += 1
            if stack and stack[-1][0] == "{" and j < end and text[j] == ":":
                stack[-1][1] = value
            continue
        if c in "{[":
            stack.append([c, None if c == "{" else 0])
            if len(stack) > limit:
                parts = []
                for kind, at in stack[:-1][:_PATH_PARTS]:
                    if kind == "{" and isinstance(at, str):
                        parts.append(("." if parts else "") + at)
                    elif kind == "[":
                        parts.append(f"[{at}]")
                    else:
                        break
                return "".join(parts) or None
        elif c in "}]":
            if stack:
                stack.pop()
        elif c == "," and stack and stack[-1][0] == "[":
            stack[-1][1] = int(stack[-1][1]) + 1  # type: ignore[call-overload]
        i += 1
    return None


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


# The strict reader, made once (json.loads with these arguments makes a decoder and its scanner per body).
_STRICT = json.JSONDecoder(object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite)


def body_problem(body: bytes) -> Response | None:
    """The 400 problem a JSON request body gets before anything parses it, or None.

    The body is read here as strictly as RFC 8259 reads it, which Python's own reader (and so
    FastAPI's) does not: UTF-8 only (no UTF-16 or UTF-32 guessed from the bytes, no byte order
    mark), no NaN or Infinity, no number that overflows a double, no key twice in one object, and
    no lone surrogate in a string or key. A body that passes means the same to every reader."""
    if not body:
        return None
    if nested_deeper_than(body):
        # The field it happens in, when the body's first keys say it (a 10,000-deep inputSchema: `tool.inputSchema…`).
        at = too_deep_at(body)
        where = f" (at {at}…)" if at else ""
        return problems.problem(
            400, "body-too-deep",
            f"the body nests objects and arrays more than {MAX_DEPTH} levels deep{where}; the limit is {MAX_DEPTH}",
            errors=[{"field": at or "body", "rule": "max-depth", "message": f"nested more than {MAX_DEPTH} levels deep"}],
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
        value = _STRICT.decode(text)
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


def _media_problem(content_type: bytes | None) -> Response | None:
    """415 for a body not declared as JSON: every route reads JSON, and FastAPI (strict about the
    content type) hands a route any other body, or one with no Content-Type, as raw bytes."""
    if content_type is not None and _is_json(content_type):
        return None
    shown = "a body without a Content-Type" if content_type is None else content_type.decode("latin-1")[:80]
    return problems.problem(415, "unsupported-media-type", f"the body must be JSON (Content-Type: application/json), not {shown}")


def _is_json(content_type: bytes) -> bool:
    """Whether the body is declared as JSON: `application/json` or `application/…+json`."""
    media = content_type.split(b";")[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/") and media.endswith(b"+json"))


def _url_problem(scope: Scope) -> Response | None:
    raw_path = scope.get("raw_path") or scope.get("path", "").encode("utf-8", "surrogatepass")
    for part, raw in (("path", raw_path), ("query string", scope.get("query_string") or b"")):
        # Without a `%` the bytes are what they decode to (a `+`, a space in a query, is neither NUL nor
        # outside UTF-8): most URLs are checked without decoding them.
        decoded = raw if b"%" not in raw else unquote_to_bytes(raw.replace(b"+", b" ") if part == "query string" else raw)
        if b"\x00" in decoded:
            return problems.problem(400, "invalid-url", f"the {part} holds a NUL character (%00)")
        if decoded.isascii():
            continue
        try:
            decoded.decode("utf-8")
        except UnicodeDecodeError:
            return problems.problem(400, "invalid-url", f"the {part}, percent-decoded, is not UTF-8 "
                                    "(a lone surrogate such as %ED%A0%80, or a broken sequence)")
    return None


class RequestHead:
    """What the checks read of a request's headers, in one pass over them: its first
    `Content-Type`, its `Content-Length` (the last, as a dict of the headers has it) and how many
    `Authorization` headers it has."""

    __slots__ = ("content_type", "content_length", "authorizations")

    def __init__(self, scope: Scope) -> None:
        content_type: bytes | None = None
        content_length: bytes | None = None
        authorizations = 0
        for name, value in scope.get("headers") or ():
            if name == b"content-type":
                if content_type is None:
                    content_type = value
            elif name == b"content-length":
                content_length = value
            elif name == b"authorization":
                authorizations += 1
        self.content_type = content_type
        self.content_length = content_length
        self.authorizations = authorizations

    def declared_length(self) -> int | None:
        """The body's length as the client declares it, when it does as a number."""
        length = self.content_length
        return int(length) if length is not None and length.isdigit() else None


def _authorization_problem(head: RequestHead) -> Response | None:
    if head.authorizations > 1:
        return problems.problem(400, "duplicate-authorization",
                                f"the request has {head.authorizations} Authorization headers; send exactly one")
    return None


def refusal_before_body(scope: Scope, head: RequestHead) -> Response | None:
    """What a request gets before its body is read: two `Authorization` headers, a URL that is not text."""
    return _authorization_problem(head) or _url_problem(scope)


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


def upload_refusal(head: RequestHead) -> Response | None:
    """415 for an upload that is not multipart/form-data."""
    content_type = head.content_type or b""
    if content_type.split(b";", 1)[0].strip().lower() == b"multipart/form-data":
        return None
    shown = content_type.decode("latin-1")[:80] or "a body without a Content-Type"
    return problems.problem(415, "unsupported-media-type",
                            f"an upload is multipart/form-data with its files in the field `files`, not {shown}")


def _method_not_answered(scope: Scope) -> bool:
    """Whether the path's routes answer other methods only (the router's 405 follows)."""
    app = scope.get("app")
    allowed = methods_of(app, scope["path"]) if app is not None else None
    return allowed is not None and scope["method"] not in allowed


def body_is_checked(scope: Scope) -> bool:
    """Whether the body is read whole and checked before the app sees it: not for a method that
    has none (GET, HEAD, OPTIONS), nor one the path does not answer (its 405 is the answer,
    whatever the body)."""
    return scope["method"] not in ("GET", "HEAD", "OPTIONS") and not _method_not_answered(scope)


def body_refusal(scope: Scope, head: RequestHead, body: bytes) -> Response | None:
    """What a whole body gets before the app reads it (see the module's docstring); an MCP
    request's refusal is spelled as JSON-RPC. The console's forms post
    `application/x-www-form-urlencoded` (console/: its own checks)."""
    path = scope["path"]
    if not body or path.startswith(CONSOLE_PREFIX) or path in OAUTH_FORMS:
        return None
    refusal = _media_problem(head.content_type) or body_problem(body)
    if refusal is not None and (path == "/mcp" or path.startswith("/mcp/")):
        return as_json_rpc_error(refusal)
    return refusal
