"""`http.fetch` for sandboxed JavaScript (docs/javascript.md, docs/sandbox.md): the shapes of its request and answer.

JavaScript hands one JSON string to a host function and gets one JSON string back (`FETCH_JS` is
the JS side). `Fetcher.fetch` never raises. What may be reached and how is the egress module's
(`infrastructure/egress`): the host is checked by name and port against the allow-list before
anything is sent, resolved once, every address judged, and the socket connects to the judged
address; every redirect goes through the same checks; no proxy is used; the body and the time are
capped. What is left here is what only `http.fetch` has: the methods and headers a tool may send,
and the answer as JavaScript sees it.
"""

from __future__ import annotations

import codecs
import json
import math
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from infrastructure.egress.exchange import Egress, NetworkBackend, Request, Response, decoded
from infrastructure.egress.policy import AllowList, AllowListPolicy, EgressConnectError, EgressError, EgressTimeout, port_of
from infrastructure.egress.resolve import Resolve, resolve_addresses

__all__ = ["FETCH_JS", "AllowList", "FetchError", "Fetcher"]


class FetchError(EgressError):
    """Why a fetch failed; the message is what the JavaScript `Error` says."""


METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
REFUSED_HEADERS = frozenset(
    {
        "host", "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
        "te", "trailer", "transfer-encoding", "upgrade", "content-length", "expect",
    }
)  # fmt: skip
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")
_BAD_VALUE = re.compile(r"[^\t\x20-\x7e]")  # printable ASCII and tab: no CR, LF or NUL
_MAX_HEADERS = 100
_MAX_HEADER_VALUE = 8192


class Fetcher:
    """Performs `http.fetch` requests for JavaScript, within the allow-list and the caps."""

    def __init__(
        self,
        allow: AllowList,
        *,
        max_response_bytes: int = 1_048_576,
        max_request_bytes: int = 1_048_576,
        max_redirects: int = 5,
        max_seconds: float = 10.0,
        resolve: Resolve = resolve_addresses,
        ssl_context: ssl.SSLContext | None = None,
        network_backend: NetworkBackend | None = None,
    ) -> None:
        self.allow = allow
        self.last: list[Any] | None = None  # the last request's method, host, port and status (None: refused before)
        self.max_request_bytes = max_request_bytes
        self.max_seconds = max_seconds
        # `ssl_context` may trust a private CA; `network_backend` (tests only) makes the TCP
        # connection to an address already judged.
        self._egress = Egress(AllowListPolicy(allow), max_response_bytes=max_response_bytes, max_redirects=max_redirects,
                              resolve=resolve, ssl_context=ssl_context, network_backend=network_backend)

    @property
    def max_response_bytes(self) -> int:
        return self._egress.max_response_bytes

    @property
    def max_redirects(self) -> int:
        return self._egress.max_redirects

    def host_function(self, deadline: float) -> Callable[[str], str]:
        """The `call` to give `FETCH_JS`: each request bounded by `deadline` (time.monotonic())."""
        return lambda request: self.fetch(request, deadline - time.monotonic())

    def fetch(self, request: str, remaining_seconds: float) -> str:
        """`{"url", "method", "headers", "body"}` in; `{"status", "headers", "text", "url"}` or
        `{"error": message}` out, both JSON. Never raises."""
        budget = min(remaining_seconds, self.max_seconds) if isinstance(remaining_seconds, (int, float)) else 0.0
        budget = budget if math.isfinite(budget) and budget > 0 else 0.0
        self.last = None
        try:
            read = self._read(request)
            # What a trace may say of this request (docs/observability.md): method, host, port, status; never its path or query.
            self.last = [read.method, read.url.host, port_of(read.url), None]
            answer = self._egress.send(read, budget)
            self.last[3] = answer.status
            return json.dumps(self._answer(answer))
        except EgressTimeout:
            return json.dumps({"error": f"timed out after {budget:.3g} s"})
        except EgressConnectError as e:
            return json.dumps({"error": f"could not connect: {e}"})
        except EgressError as e:
            return json.dumps({"error": str(e)})
        except Exception as e:  # the engine must never see an exception
            return json.dumps({"error": f"request failed: {type(e).__name__}: {e}"})

    # -- reading the request --

    def _read(self, text: object) -> Request:
        if not isinstance(text, str) or len(text) > 6 * self.max_request_bytes + 65536:
            raise FetchError("request too large or not a string")
        try:
            given = json.loads(text)
        except ValueError:
            raise FetchError("request is not JSON") from None
        if not isinstance(given, dict) or not isinstance(given.get("url"), str):
            raise FetchError("url must be a string")
        method = given.get("method") or "GET"
        if not isinstance(method, str) or method.upper() not in METHODS:
            raise FetchError(f"method not allowed: {str(method)[:20]}; allowed: {', '.join(sorted(METHODS))}")
        method = method.upper()
        body = given.get("body")
        if body is not None and not isinstance(body, str):
            raise FetchError("body must be a string")
        encoded = None if body is None else body.encode("utf-8", "replace")
        if encoded is not None and len(encoded) > self.max_request_bytes:
            raise FetchError(f"request body larger than {self.max_request_bytes} bytes")
        if encoded is not None and method in ("GET", "HEAD"):
            raise FetchError(f"a {method} request cannot have a body")
        headers = self._headers(given.get("headers"))
        if encoded is not None and "content-type" not in headers:
            headers["content-type"] = "text/plain;charset=UTF-8"
        return Request(self._egress.url(given["url"]), method, headers, encoded)

    def _headers(self, given: object) -> dict[str, str]:
        headers = {"accept": "*/*", "accept-encoding": "gzip, deflate", "user-agent": "toolsmith-http-fetch"}
        if given is None:
            return headers
        if not isinstance(given, dict) or len(given) > _MAX_HEADERS:
            raise FetchError(f"headers must be an object of at most {_MAX_HEADERS} names")
        seen: set[str] = set()
        for name, value in given.items():
            if not _TOKEN.fullmatch(name):
                raise FetchError(f"bad header name: {name[:40]!r}")
            if not isinstance(value, str) or len(value) > _MAX_HEADER_VALUE or _BAD_VALUE.search(value):
                raise FetchError(f"bad value for header {name}")
            lower = name.lower()
            if lower in REFUSED_HEADERS:
                raise FetchError(f"header not allowed: {lower}")
            if lower in seen:
                raise FetchError(f"header given twice: {lower}")
            seen.add(lower)
            headers[lower] = value
        return headers

    # -- the answer --

    def _answer(self, response: Response) -> dict[str, Any]:
        headers: dict[str, str] = {}
        for name, value in decoded(response.headers):
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        text = response.body.decode(_charset(headers.get("content-type", "")), "replace")
        return {"status": response.status, "headers": headers, "text": text, "url": str(response.url)}


def _charset(content_type: str) -> str:
    for parameter in content_type.split(";")[1:]:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            try:
                return codecs.lookup(value.strip().strip("\"'")).name
            except LookupError:
                break
    return "utf-8"


# -- the JavaScript side --------------------------------------------------------------------------

# One function expression, given the host function; builtins are captured so that a tool that
# replaces JSON or Promise breaks only itself. Compiled on every fresh context: keep it short.
FETCH_JS = r"""(function (call) {
  "use strict";
  var parse = JSON.parse, stringify = JSON.stringify, freeze = Object.freeze, keys = Object.keys,
      P = Promise, S = String, E = Error, TE = TypeError;
  function fetch(url, options) {
    return new P(function (resolve, reject) {
      var o = options === undefined || options === null ? {} : options;
      if (typeof o !== "object") throw new TE("http.fetch: options must be an object");
      var h = {}, given = o.headers, body = o.body;
      if (given !== undefined && given !== null) {
        if (typeof given !== "object") throw new TE("http.fetch: headers must be an object");
        var names = keys(given);
        for (var i = 0; i < names.length; i++) h[names[i]] = S(given[names[i]]);
      }
      if (body !== undefined && body !== null && typeof body !== "string") throw new TE("http.fetch: body must be a string");
      var out = parse(call(stringify({url: S(url), method: o.method === undefined || o.method === null ? "GET" : S(o.method),
                                      headers: h, body: body === undefined ? null : body})));
      if (typeof out.error === "string") { reject(new E(out.error)); return; }
      var text = out.text;
      resolve(freeze({status: out.status, ok: out.status >= 200 && out.status < 300, headers: freeze(out.headers),
                      text: text, url: out.url, json: function () { return parse(text); }}));
    });
  }
  return freeze({fetch: fetch});
})"""
