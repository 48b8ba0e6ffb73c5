"""`http.fetch` for sandboxed JavaScript (DESIGN §5, §6): the allow-list, the SSRF defences and the
request itself.

JavaScript hands one JSON string to a host function and gets one JSON string back (`FETCH_JS` is
the JS side). `Fetcher.fetch` never raises. The host is checked twice: by name and port against
the allow-list before anything is sent, and again where the socket is made — the name is resolved
here, every address is judged, and the socket connects to the judged address, so a second DNS
answer (rebinding) never reaches a socket. TLS still verifies the certificate against the name.
Every redirect goes through the same checks. Proxies are never used: the request goes straight
through `httpcore`, which reads no environment.
"""

from __future__ import annotations

import codecs
import ipaddress
import json
import math
import re
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Any

import httpcore
import httpx
import idna

Address = IPv4Address | IPv6Address
Resolve = Callable[[str, int], list[str]]


class FetchError(Exception):
    """Why a fetch failed; the message is what the JavaScript `Error` says."""


# -- hosts and addresses --------------------------------------------------------------------------

_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_CANONICAL_IPV4 = re.compile(r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}")

METADATA_NAMES = frozenset({"metadata", "metadata.google.internal"})
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "169.254.170.23", "100.100.100.200", "fd00:ec2::254", "fd00:ec2::23")
)

# Judged in order, most specific first; anything else that is not global is "reserved".
_SPECIAL: tuple[tuple[IPv4Network | IPv6Network, str], ...] = tuple(
    (ipaddress.ip_network(net), why)
    for net, why in (
        ("0.0.0.0/32", "unspecified"),
        ("0.0.0.0/8", "unspecified"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private"),
        ("172.16.0.0/12", "private"),
        ("192.168.0.0/16", "private"),
        ("100.64.0.0/10", "private (CGNAT)"),
        ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fc00::/7", "private"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
        ("64:ff9b:1::/48", "private"),
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIIT = ipaddress.ip_network("::ffff:0:0:0/96")


def _embedded_ipv4(address: IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, 6to4, Teredo, NAT64, SIIT)."""
    if address.ipv4_mapped:
        return [address.ipv4_mapped]
    if address.sixtofour:
        return [address.sixtofour]
    if address.teredo:
        return list(address.teredo)
    low = IPv4Address(int(address) & 0xFFFFFFFF)
    if int(address) >> 32 == 0 and int(address) > 1 or address in _NAT64 or address in _SIIT:
        return [low]
    return []


def judge(address: Address) -> tuple[str, bool] | None:
    """None for a public address; else (why, always): `always` for metadata, refused even when
    the allow-list names the host exactly."""
    if isinstance(address, IPv6Address) and address.scope_id:
        address = IPv6Address(int(address))  # `fe80::1%eth0` is fe80::1 wherever it points
    if address in METADATA_ADDRESSES:
        return "metadata address", True
    if isinstance(address, IPv6Address):
        embedded = _embedded_ipv4(address)
        for inner in embedded:
            verdict = judge(inner)
            if verdict:
                return f"{verdict[0]} IPv4 {inner} embedded in IPv6", verdict[1]
        if embedded:
            return None
    for network, why in _SPECIAL:
        if address.version == network.version and address in network:
            return why, False
    if not address.is_global or address.is_multicast or address.is_reserved:
        return "reserved", False
    return None


def normal_host(text: str) -> str:
    """The host as compared: IPs in compressed form, names lower-case ASCII (IDNA, as httpx
    encodes them). Raises ValueError for anything else, and for the numeric spellings of IPv4
    that resolvers accept (`2130706433`, `0177.0.0.1`, `0x7f.0.0.1`, `127.1`)."""
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
        if ":" not in text:
            raise ValueError("brackets are for IPv6 addresses")
    if ":" in text:
        address = IPv6Address(text)
        if address.scope_id:
            raise ValueError("IPv6 zone identifiers are not allowed")
        return str(address)
    name = text.lower() if text.isascii() else idna.encode(text.lower()).decode("ascii")
    labels = name.split(".")
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        if not _CANONICAL_IPV4.fullmatch(name):
            raise ValueError(f"IPv4 address in non-standard form: {text}")
        return name
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError(f"not a host name: {text}")
    return name


def _ip(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


# -- the allow-list --------------------------------------------------------------------------------


@dataclass(frozen=True)
class AllowList:
    """Hosts `http.fetch` may reach (`CODESANDBOX_ALLOWED_DOMAINS`).

    Entries are comma-separated `host` or `host:port`; IPv6 addresses in brackets (`[::1]:8080`).
    A bare `host` allows ports 80 and 443 only; `host:port` allows that port only, and is the only
    form that "names a host exactly": a private or loopback address is reached only through an
    entry that names its host and port. Hosts are case-insensitive and IDNA-normalised.
    """

    bare: frozenset[str] = frozenset()
    exact: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, text: str) -> AllowList:
        bare: set[str] = set()
        exact: set[tuple[str, int]] = set()
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            try:
                host, port = _split_entry(entry)
                host = normal_host(host)
            except ValueError as e:
                raise ValueError(f"bad allowed-domains entry {entry!r}: {e}") from None
            if port is None:
                bare.add(host)
            else:
                exact.add((host, port))
        return cls(frozenset(bare), frozenset(exact))

    def allows(self, host: str, port: int) -> bool:
        key = _key(host)
        return key is not None and ((key in self.bare and port in (80, 443)) or (key, port) in self.exact)

    def names_exactly(self, host: str, port: int) -> bool:
        key = _key(host)
        return key is not None and (key, port) in self.exact


def _split_entry(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):
        host, bracket, rest = entry.partition("]")
        host += bracket
        if rest and not rest.startswith(":"):
            raise ValueError("expected [IPv6] or [IPv6]:port")
        port_text = rest[1:] if rest else None
    elif entry.count(":") > 1:
        raise ValueError("IPv6 addresses need brackets: [::1]:8080")
    else:
        host, colon, port_text = entry.partition(":")
        port_text = port_text if colon else None
    if port_text is None:
        return host, None
    if not re.fullmatch(r"[0-9]{1,5}", port_text) or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"bad port {port_text!r}")
    return host, int(port_text)


def _key(host: str) -> str | None:
    try:
        return normal_host(host)
    except ValueError:
        return None


# -- the request ----------------------------------------------------------------------------------

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
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def resolve_addresses(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (the default `resolve`)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass
class _Request:
    url: httpx.URL
    method: str
    headers: dict[str, str]
    body: bytes | None


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
        network_backend: httpcore.NetworkBackend | None = None,
    ) -> None:
        self.allow = allow
        self.max_response_bytes = max_response_bytes
        self.max_request_bytes = max_request_bytes
        self.max_redirects = max_redirects
        self.max_seconds = max_seconds
        self._resolve = resolve
        # `ssl_context` may trust a private CA; `network_backend` (tests only) makes the TCP
        # connection to an address already judged.
        self._network = network_backend or httpcore.SyncBackend()
        self._ssl = ssl_context  # None: httpx's default (certifi), made on first use

    def host_function(self, deadline: float) -> Callable[[str], str]:
        """The `call` to give `FETCH_JS`: each request bounded by `deadline` (time.monotonic())."""
        return lambda request: self.fetch(request, deadline - time.monotonic())

    def fetch(self, request: str, remaining_seconds: float) -> str:
        """`{"url", "method", "headers", "body"}` in; `{"status", "headers", "text", "url"}` or
        `{"error": message}` out, both JSON. Never raises."""
        budget = min(remaining_seconds, self.max_seconds) if isinstance(remaining_seconds, (int, float)) else 0.0
        budget = budget if math.isfinite(budget) and budget > 0 else 0.0
        try:
            return json.dumps(self._fetch(self._read(request), budget))
        except FetchError as e:
            return json.dumps({"error": str(e)})
        except httpcore.TimeoutException:
            return json.dumps({"error": f"timed out after {budget:.3g} s"})
        except httpcore.ConnectError as e:
            return json.dumps({"error": f"could not connect: {e}"})
        except Exception as e:  # the engine must never see an exception
            return json.dumps({"error": f"request failed: {type(e).__name__}: {e}"})

    # -- reading the request --

    def _read(self, text: object) -> _Request:
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
        return _Request(self._url(given["url"]), method, headers, encoded)

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

    def _url(self, text: str) -> httpx.URL:
        try:
            url = httpx.URL(text)
        except (httpx.InvalidURL, ValueError) as e:
            raise FetchError(f"invalid URL: {e}") from None
        if url.scheme not in ("http", "https"):
            raise FetchError("only http and https URLs are allowed")
        if url.userinfo:
            raise FetchError("URLs with user info (user@host) are not allowed")
        self._check_name(url.raw_host.decode("ascii"), _port(url))
        return url

    # -- the checks --

    def _check_name(self, host: str, port: int) -> Address | None:
        """Everything that can be judged before resolving; the address if `host` is one."""
        if not host:
            raise FetchError("URL has no host")
        if not 1 <= port <= 65535:
            raise FetchError(f"bad port {port}")
        if host.endswith("."):
            raise FetchError(f"host must not end with a dot: {host}")
        try:
            key = normal_host(host)
        except ValueError as e:
            raise FetchError(str(e)) from None
        if key in METADATA_NAMES:
            raise FetchError(f"metadata address refused: {host}")
        address = _ip(key)
        verdict = judge(address) if address is not None else None
        if verdict is not None and verdict[1]:
            raise FetchError(f"metadata address refused: {host}")
        if not self.allow.allows(key, port):
            raise FetchError(f"domain not allowed: {_netloc(host, port)}")
        if address is not None:
            self._judge(host, port, address)
        return address

    def _judge(self, host: str, port: int, address: Address) -> None:
        verdict = judge(address)
        if verdict is None:
            return
        why, always = verdict
        where = host if _ip(host) == address else f"{host} resolves to {address}"
        if always:
            raise FetchError(f"metadata address refused: {where}")
        if not self.allow.names_exactly(host, port):
            raise FetchError(f"address not allowed: {where} ({why})")

    def checked_addresses(self, host: str, port: int, deadline: float) -> list[str]:
        """The addresses a socket may connect to for `host`: all of them judged, else FetchError."""
        literal = self._check_name(host, port)
        if literal is not None:
            return [str(literal)]
        answers = self._resolve_before(host, port, deadline)
        if not answers:
            raise FetchError(f"could not resolve {host}")
        judged = []
        for answer in answers:
            address = _ip(answer)
            if address is None:
                raise FetchError(f"address not allowed: {host} resolves to {answer}")
            self._judge(host, port, address)
            judged.append(str(address))  # the socket gets exactly what was judged
        return judged

    def _resolve_before(self, host: str, port: int, deadline: float) -> list[str]:
        box: list[Any] = []

        def work() -> None:
            try:
                box.append(list(self._resolve(host, port)))
            except Exception as e:  # reported below, in the caller's thread
                box.append(e)

        left = _left(deadline, httpcore.ConnectTimeout)
        worker = threading.Thread(target=work, name="http.fetch-resolve", daemon=True)
        worker.start()
        worker.join(left)
        if not box:
            raise httpcore.ConnectTimeout("resolving timed out")
        if isinstance(box[0], Exception):
            raise FetchError(f"could not resolve {host}")
        return box[0]

    # -- the exchange --

    def _fetch(self, request: _Request, budget: float) -> dict[str, Any]:
        deadline = time.monotonic() + budget
        _left(deadline, httpcore.ConnectTimeout)
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        backend = _GuardedBackend(self, self._network, deadline)
        timeouts = {"connect": budget, "read": budget, "write": budget, "pool": budget}
        with httpcore.ConnectionPool(ssl_context=self._ssl, network_backend=backend, max_connections=4) as pool:
            redirects = 0
            while True:
                built = httpx.Request(request.method, request.url, headers=request.headers, content=request.body)
                target = httpcore.URL(scheme=request.url.raw_scheme, host=request.url.raw_host, port=request.url.port, target=request.url.raw_path)
                with pool.stream(request.method, target, headers=built.headers.raw, content=request.body, extensions={"timeout": timeouts}) as response:
                    location = _header(response.headers, "location")
                    if response.status not in _REDIRECTS or location is None:
                        return self._answer(request, response)
                if redirects == self.max_redirects:
                    raise FetchError(f"too many redirects (more than {self.max_redirects})")
                redirects += 1
                request = self._redirected(request, response.status, location)

    def _redirected(self, request: _Request, status: int, location: str) -> _Request:
        try:
            url = request.url.join(location)
        except (httpx.InvalidURL, ValueError) as e:
            raise FetchError(f"invalid redirect location: {e}") from None
        url = self._url(str(url))  # every hop is checked as the first request was
        method, body, headers = request.method, request.body, dict(request.headers)
        if status == 303 and method != "HEAD" or status in (301, 302) and method == "POST":
            method, body = "GET", None
            headers.pop("content-type", None)
        if (url.scheme, url.raw_host, _port(url)) != (request.url.scheme, request.url.raw_host, _port(request.url)):
            headers.pop("authorization", None)
            headers.pop("cookie", None)
        return _Request(url, method, headers, body)

    def _answer(self, request: _Request, response: httpcore.Response) -> dict[str, Any]:
        headers: dict[str, str] = {}
        for raw_name, raw_value in response.headers:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        body = b"" if request.method == "HEAD" else self._body(response, headers.get("content-encoding", ""))
        text = body.decode(_charset(headers.get("content-type", "")), "replace")
        return {"status": response.status, "headers": headers, "text": text, "url": str(request.url)}

    def _body(self, response: httpcore.Response, encoding: str) -> bytes:
        """The body, decoded from gzip or deflate without ever holding more than the cap."""
        encoding = encoding.strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            raise FetchError(f"unsupported content-encoding: {encoding[:40]}")
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding not in ("", "identity") else None
        cap, chunks, size = self.max_response_bytes, [], 0
        try:
            for chunk in response.iter_stream():
                if inflate is not None:
                    chunk = inflate.decompress(chunk, cap - size + 1)
                size += len(chunk)
                if size > cap:
                    raise FetchError(f"response body larger than {cap} bytes")
                chunks.append(chunk)
        except zlib.error:
            raise FetchError(f"could not decode the {encoding} response body") from None
        return b"".join(chunks)


def _port(url: httpx.URL) -> int:
    return url.port if url.port is not None else (443 if url.scheme == "https" else 80)


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _header(headers: list[tuple[bytes, bytes]], name: str) -> str | None:
    for raw_name, raw_value in headers:
        if raw_name.decode("latin-1").lower() == name:
            return raw_value.decode("latin-1")
    return None


def _charset(content_type: str) -> str:
    for parameter in content_type.split(";")[1:]:
        key, _, value = parameter.partition("=")
        if key.strip().lower() == "charset":
            try:
                return codecs.lookup(value.strip().strip("\"'")).name
            except LookupError:
                break
    return "utf-8"


def _left(deadline: float, timeout: type[httpcore.TimeoutException]) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise timeout("deadline passed")
    return left


# -- the socket -----------------------------------------------------------------------------------


class _GuardedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the fetcher has judged, and bounds every step by one deadline."""

    def __init__(self, fetcher: Fetcher, inner: httpcore.NetworkBackend, deadline: float) -> None:
        self._fetcher, self._inner, self._deadline = fetcher, inner, deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        addresses = self._fetcher.checked_addresses(host, port, self._deadline)
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(address, port, timeout=_left(self._deadline, httpcore.ConnectTimeout), socket_options=socket_options)
                return _DeadlineStream(stream, self._deadline)
            except httpcore.ConnectError as e:
                failure = e
        raise failure or httpcore.ConnectError(f"no address for {host}")

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        raise FetchError("unix sockets are not allowed")

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self._deadline - time.monotonic())))


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(self._deadline, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(self._deadline, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        left = _left(self._deadline, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, left), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


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
