"""One outbound HTTP exchange, synchronous: a request and the redirects it leads to, within a
policy and caps on bytes and time. `http.fetch` sends its requests through it.

The request goes straight through an `httpcore` pool over `PinnedBackend`: there is no HTTP client
that could read proxy variables or a `.netrc` from the environment. Header names and values are
checked before anything is resolved. Every redirect hop is checked as the first URL was, scheme
included, and credentials (and the headers a request marks sensitive) are dropped when the origin
changes. The body is read (and decoded from gzip or deflate) without ever holding more than the
cap: at the cap the connection is closed, not drained.
"""

from __future__ import annotations

import contextlib
import re
import ssl
import threading
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

import httpcore
import httpx
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from infrastructure.egress.connect import PinnedBackend
from infrastructure.egress.policy import EgressConnectError, EgressError, EgressTimeout, Policy, check_url, checked_url, port_of
from infrastructure.egress.resolve import Resolve, resolve_addresses

REDIRECTS = frozenset({301, 302, 303, 307, 308})
CREDENTIALS = frozenset({"authorization", "cookie"})  # dropped when a redirect changes the origin
NetworkBackend = httpcore.NetworkBackend  # what makes a TCP connection to a judged address (tests pass a stub)

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 field name
_NOT_PRINTABLE = re.compile(r"[^\t\x20-\x7e]")


@dataclass
class Request:
    url: httpx.URL
    method: str
    headers: dict[str, str]
    body: bytes | None
    # Lower-case names of headers whose values are secrets (an API key): dropped, as
    # `CREDENTIALS` are, when a redirect leaves the origin they were meant for.
    sensitive: frozenset[str] = frozenset()


@dataclass
class Response:
    url: httpx.URL  # the last hop's
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes  # decoded from gzip or deflate
    bytes_read: int = 0  # the body's bytes as they came off the network (before decoding)


class Egress:
    """Sends requests where `policy` allows, with caps on the response body, redirects and time."""

    def __init__(
        self,
        policy: Policy,
        *,
        max_response_bytes: int = 1_048_576,
        max_redirects: int = 5,
        resolve: Resolve = resolve_addresses,
        ssl_context: ssl.SSLContext | None = None,
        network_backend: NetworkBackend | None = None,
        keep_alive: int = 0,
    ) -> None:
        self.policy = policy
        self.max_response_bytes = max_response_bytes
        self.max_redirects = max_redirects
        self._resolve = resolve
        # `ssl_context` may trust a private CA; `network_backend` (tests only) makes the TCP
        # connection to an address already judged.
        self._network = network_backend
        self._ssl = ssl_context  # None: httpx's default (certifi), made on first use
        # `keep_alive` > 0: one pool for every exchange, keeping that many idle connections (each
        # made to an address this policy judged) for the next exchange to the same origin. Every
        # exchange still checks each hop's URL and addresses first; 0: a pool per exchange.
        self._keep_alive = keep_alive
        self._shared: tuple[PinnedBackend, httpcore.ConnectionPool] | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """Closes the connections kept alive."""
        if self._shared is not None:
            self._shared[1].close()
            self._shared = None

    def url(self, text: str) -> httpx.URL:
        """`text` as a URL the policy allows (scheme, user info, host and port); else EgressError."""
        return checked_url(text, self.policy)

    def send(self, request: Request, seconds: float, connect_seconds: float | None = None, *,
             max_bytes: int | None = None, max_redirects: int | None = None) -> Response:
        """The answer to `request` (its URL from `url`), following redirects, all within `seconds`;
        each connection (resolving, TCP and TLS) within `connect_seconds` too, when given.
        Raises EgressError: EgressTimeout when time runs out, EgressConnectError when no checked
        address takes the connection. Bad headers and a URL the policy refuses are refused
        before anything is resolved or connected. `max_bytes` and `max_redirects` override the
        instance's caps for this exchange."""
        check_headers(request.headers)
        check_url(request.url, self.policy)
        caps = (self.max_response_bytes if max_bytes is None else max_bytes,
                self.max_redirects if max_redirects is None else max_redirects)
        try:
            return self._send(request, seconds, connect_seconds, caps)
        except httpcore.TimeoutException as e:
            raise EgressTimeout(str(e)) from e
        except httpcore.ConnectError as e:
            raise EgressConnectError(str(e)) from e

    def _pool(self, deadline: float, connect_seconds: float | None) -> tuple[PinnedBackend, httpcore.ConnectionPool, bool]:
        """The backend and pool of this exchange, and whether they are its own (closed after it)."""
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        if not self._keep_alive:
            backend = PinnedBackend(deadline, resolve=self._resolve, connect_seconds=connect_seconds, inner=self._network)
            return backend, httpcore.ConnectionPool(ssl_context=self._ssl, network_backend=backend, max_connections=4), True
        with self._lock:
            if self._shared is None:
                backend = PinnedBackend(resolve=self._resolve, inner=self._network)
                pool = httpcore.ConnectionPool(ssl_context=self._ssl, network_backend=backend, max_connections=None,
                                               max_keepalive_connections=self._keep_alive, keepalive_expiry=15.0)
                self._shared = (backend, pool)
        backend, pool = self._shared
        backend.begin(deadline, connect_seconds)
        return backend, pool, False

    def _send(self, request: Request, seconds: float, connect_seconds: float | None, caps: tuple[int, int]) -> Response:
        deadline = time.monotonic() + seconds
        if seconds <= 0:
            raise httpcore.ConnectTimeout("deadline passed")
        max_bytes, max_redirects = caps
        backend, pool, own = self._pool(deadline, connect_seconds)
        timeouts = {"connect": seconds, "read": seconds, "write": seconds, "pool": seconds}
        with pool if own else contextlib.nullcontext(pool):
            redirects = 0
            while True:
                # this hop's addresses, judged for its scheme, before the pool may connect
                backend.check(self.policy.for_scheme(request.url.scheme), request.url.raw_host.decode("ascii"), port_of(request.url))
                built = httpx.Request(request.method, request.url, headers=request.headers, content=request.body)
                target = httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port, target=request.url.raw_path)
                # Its span, inside a recording one (traces on: docs/observability.md): host, port, method, status only.
                span = _client_span(request) if trace.get_current_span().is_recording() else None
                try:
                    with pool.stream(request.method, target, headers=built.headers.raw, content=request.body,
                                     extensions={"timeout": timeouts}) as response:
                        if span is not None:
                            span.set_attribute("http.response.status_code", response.status)
                        location = header(response.headers, "location")
                        if response.status not in REDIRECTS or location is None:
                            body, read = (b"", 0) if request.method == "HEAD" else self._body(response, max_bytes)
                            return Response(request.url, response.status, response.headers, body, read)
                except BaseException as e:
                    if span is not None:
                        span.set_attribute("error.type", type(e).__qualname__)
                        span.set_status(StatusCode.ERROR)
                    raise
                finally:
                    if span is not None:
                        span.end()
                if redirects == max_redirects:
                    raise EgressError(f"too many redirects (more than {max_redirects})")
                redirects += 1
                request = self._redirected(request, response.status, location)

    def _redirected(self, request: Request, status: int, location: str) -> Request:
        try:
            url = request.url.join(location)
        except (httpx.InvalidURL, ValueError) as e:
            raise EgressError(f"invalid redirect location: {e}") from None
        url = self.url(str(url))  # every hop is checked as the first request was
        method, body, headers = request.method, request.body, dict(request.headers)
        if status == 303 and method != "HEAD" or status in (301, 302) and method == "POST":
            method, body = "GET", None
            headers.pop("content-type", None)
        if (url.scheme, url.raw_host, port_of(url)) != (request.url.scheme, request.url.raw_host, port_of(request.url)):
            dropped = CREDENTIALS | request.sensitive
            headers = {name: value for name, value in headers.items() if name.lower() not in dropped}
        return Request(url, method, headers, body, request.sensitive)

    def _body(self, response: httpcore.Response, cap: int) -> tuple[bytes, int]:
        """The body, decoded from gzip or deflate without ever holding more than the cap, and the
        number of bytes read for it. Past the cap it stops reading: the caller's `with` closes the
        connection with the rest unread."""
        encoding = ", ".join(value for name, value in decoded(response.headers) if name == "content-encoding").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise EgressError(f"unsupported content-encoding: {encoding[:40]}")
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding not in ("", "identity") else None
        chunks, size, read = [], 0, 0
        try:
            for chunk in response.iter_stream():
                read += len(chunk)
                if inflate is not None:
                    chunk = inflate.decompress(chunk, cap - size + 1)
                size += len(chunk)
                if size > cap:
                    raise EgressError(f"response body larger than {cap} bytes")
                chunks.append(chunk)
        except zlib.error:
            raise EgressError(f"could not decode the {encoding} response body") from None
        return b"".join(chunks), read


_TRACER = trace.get_tracer("toolsmith")


def _client_span(request: Request) -> Span:
    """The span of one request sent (a redirect's hop is one more): never its path, query, headers or body."""
    url = request.url
    return _TRACER.start_span(f"HTTP {request.method}", kind=SpanKind.CLIENT, attributes={
        "http.request.method": request.method, "server.address": url.host, "server.port": port_of(url),
        "url.scheme": url.scheme,
    })


def check_headers(headers: Mapping[str, str]) -> None:
    """Every name a field name and every value one line of printable ASCII (tab allowed); else
    EgressError naming the header (never its value, which may be a secret)."""
    for name, value in headers.items():
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise EgressError(f"invalid header name {str(name)[:40]!r}")
        if not isinstance(value, str):
            raise EgressError(f"header {name} is not text")
        if "\r" in value or "\n" in value:
            raise EgressError(f"header {name} has a line break")
        if "\0" in value:
            raise EgressError(f"header {name} has a NUL byte")
        if _NOT_PRINTABLE.search(value):
            raise EgressError(f"header {name} has a character that is not printable ASCII")


def decoded(headers: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """Each header as (lower-case name, value), in order."""
    return [(raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")) for raw_name, raw_value in headers]


def header(headers: list[tuple[bytes, bytes]], name: str) -> str | None:
    """The first value of header `name` (lower case), or None."""
    return next((value for key, value in decoded(headers) if key == name), None)
