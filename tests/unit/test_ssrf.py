"""SSRF defences of `http.fetch` (docs/javascript.md): the allow-list, the address checks, the request checks.

No I/O: names resolve through a stub, and the TCP connection goes to a recorder that fails the
connection, so a refused case can show that no socket was ever attempted.
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

import httpcore
import pytest

from sandbox.net import AllowList, Fetcher

DNS = {
    "public.example": ["93.184.216.34"],
    "rebind.example": ["127.0.0.1"],
    "mixed.example": ["93.184.216.34", "10.0.0.1"],
    "mapped.example": ["::ffff:10.0.0.1"],
    "meta.example": ["169.254.169.254"],
    "v6meta.example": ["fd00:ec2::254"],
    "internal.example": ["10.0.0.5"],
}

# Bare entries (ports 80 and 443) for every host below, so that what refuses them is the
# address check, not the allow-list.
ALLOW = ", ".join(
    [
        "public.example", "rebind.example", "mixed.example", "mapped.example", "meta.example", "v6meta.example",
        "internal.example:8080", "localhost",
        "127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.1.1", "100.64.0.1", "[fc00::1]", "[::1]",
        "169.254.1.1", "[fe80::1]", "0.0.0.0", "[::]", "224.0.0.1", "255.255.255.255", "240.0.0.1",
        "[::ffff:127.0.0.1]", "[::127.0.0.1]", "[2002:7f00:1::]", "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
        "[64:ff9b::127.0.0.1]", "[::ffff:169.254.169.254]",
        "169.254.169.254", "169.254.169.254:80", "169.254.170.2", "[fd00:ec2::254]", "100.100.100.200",
        "metadata.google.internal", "metadata.google.internal:80", "metadata", "meta.example:80",
    ]
)  # fmt: skip


class ConnectRecorder(httpcore.NetworkBackend):
    """Records where a socket would go, and fails the connection."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        self.calls.append((host, port))
        raise httpcore.ConnectError("recorded")


class StubResolver:
    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers = DNS if answers is None else answers
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host]


@pytest.fixture
def connects() -> ConnectRecorder:
    return ConnectRecorder()


@pytest.fixture
def resolver() -> StubResolver:
    return StubResolver()


def fetcher(connects: ConnectRecorder, resolver: Callable[[str, int], list[str]], allow: str = ALLOW, **caps: Any) -> Fetcher:
    return Fetcher(AllowList.parse(allow), resolve=resolver, network_backend=connects, ssl_context=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT), **caps)


def fetch(f: Fetcher, url: str, remaining: float = 5.0, **request: Any) -> dict[str, Any]:
    return json.loads(f.fetch(json.dumps({"url": url, **request}), remaining))


# -- refused before any socket --------------------------------------------------------------------

REFUSED = [
    # private, loopback, link-local, unspecified, multicast, broadcast, reserved: allow-listed by
    # bare host, so without the exact host and port they stay refused
    ("http://127.0.0.1/", "address not allowed: 127.0.0.1 (loopback)"),
    ("http://10.0.0.1/", "address not allowed: 10.0.0.1 (private)"),
    ("http://172.16.0.1/", "address not allowed: 172.16.0.1 (private)"),
    ("http://192.168.1.1/", "address not allowed: 192.168.1.1 (private)"),
    ("http://100.64.0.1/", "address not allowed: 100.64.0.1 (private (CGNAT))"),
    ("http://[fc00::1]/", "address not allowed: fc00::1 (private)"),
    ("http://[::1]/", "address not allowed: ::1 (loopback)"),
    ("http://169.254.1.1/", "address not allowed: 169.254.1.1 (link-local)"),
    ("http://[fe80::1]/", "address not allowed: fe80::1 (link-local)"),
    ("http://0.0.0.0/", "address not allowed: 0.0.0.0 (unspecified)"),
    ("http://[::]/", "address not allowed: :: (unspecified)"),
    ("http://224.0.0.1/", "address not allowed: 224.0.0.1 (multicast)"),
    ("http://255.255.255.255/", "address not allowed: 255.255.255.255 (broadcast)"),
    ("http://240.0.0.1/", "address not allowed: 240.0.0.1 (reserved)"),
    # IPv6 forms that carry an IPv4 address are judged by that address
    ("http://[::ffff:127.0.0.1]/", "address not allowed: ::ffff:127.0.0.1 (loopback IPv4 127.0.0.1 embedded in IPv6)"),
    ("http://[::127.0.0.1]/", "address not allowed: ::127.0.0.1 (loopback IPv4 127.0.0.1 embedded in IPv6)"),
    ("http://[2002:7f00:1::]/", "address not allowed: 2002:7f00:1:: (loopback IPv4 127.0.0.1 embedded in IPv6)"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "address not allowed: 2001:0:4136:e378:8000:63bf:80ff:fffe (loopback IPv4 127.0.0.1 embedded in IPv6)"),
    ("http://[64:ff9b::127.0.0.1]/", "address not allowed: 64:ff9b::127.0.0.1 (loopback IPv4 127.0.0.1 embedded in IPv6)"),
    # the spellings of IPv4 that resolvers accept
    ("http://2130706433/", "IPv4 address in non-standard form: 2130706433"),
    ("http://0177.0.0.1/", "invalid URL: Invalid IPv4 address: '0177.0.0.1'"),
    ("http://0x7f.0.0.1/", "IPv4 address in non-standard form: 0x7f.0.0.1"),
    ("http://0x7f000001/", "IPv4 address in non-standard form: 0x7f000001"),
    ("http://127.1/", "IPv4 address in non-standard form: 127.1"),
    ("http://0177.1/", "IPv4 address in non-standard form: 0177.1"),
    ("http://%31%32%37.0.0.1/", "IPv4 address in non-standard form: %31%32%37.0.0.1"),
    ("http://%6cocalhost/", "not a host name: %6cocalhost"),
    # metadata, always, even when listed by exact host and port
    ("http://169.254.169.254/latest/meta-data/", "metadata address refused: 169.254.169.254"),
    ("http://169.254.170.2/", "metadata address refused: 169.254.170.2"),
    ("http://[fd00:ec2::254]/", "metadata address refused: fd00:ec2::254"),
    ("http://100.100.100.200/", "metadata address refused: 100.100.100.200"),
    ("http://[::ffff:169.254.169.254]/", "metadata address refused: ::ffff:169.254.169.254"),
    ("http://metadata.google.internal/computeMetadata/v1/", "metadata address refused: metadata.google.internal"),
    ("http://metadata/", "metadata address refused: metadata"),
    ("http://METADATA.Google.Internal/", "metadata address refused: metadata.google.internal"),
    # names, judged by every address they resolve to
    ("http://rebind.example/", "address not allowed: rebind.example resolves to 127.0.0.1 (loopback)"),
    ("http://mixed.example/", "address not allowed: mixed.example resolves to 10.0.0.1 (private)"),
    ("http://mapped.example/", "address not allowed: mapped.example resolves to ::ffff:a00:1 (private IPv4 10.0.0.1 embedded in IPv6)"),
    ("http://meta.example/", "metadata address refused: meta.example resolves to 169.254.169.254"),
    ("http://v6meta.example/", "metadata address refused: v6meta.example resolves to fd00:ec2::254"),
    ("http://localhost/", "could not resolve localhost"),
    # the allow-list, by name and port
    ("http://evil.example/", "domain not allowed: evil.example:80"),
    ("http://public.example:8080/", "domain not allowed: public.example:8080"),
    ("http://internal.example/", "domain not allowed: internal.example:80"),
    ("http://127.0.0.2/", "domain not allowed: 127.0.0.2:80"),
    # URL shapes
    ("http://public.example@127.0.0.1/", "URLs with user info (user@host) are not allowed"),
    ("http://user:pw@public.example/", "URLs with user info (user@host) are not allowed"),
    ("file:///etc/passwd", "only http and https URLs are allowed"),
    ("ftp://public.example/", "only http and https URLs are allowed"),
    ("gopher://public.example:70/", "only http and https URLs are allowed"),
    ("http:///path", "URL has no host"),
    ("http://public.example:0/", "bad port 0"),
    ("http://public.example./", "host must not end with a dot: public.example."),
    ("http://[fe80::1%25eth0]/", "IPv6 zone identifiers are not allowed"),
]


@pytest.mark.parametrize(("url", "message"), REFUSED)
def test_refused_without_connecting(connects: ConnectRecorder, resolver: StubResolver, url: str, message: str) -> None:
    assert fetch(fetcher(connects, resolver), url) == {"error": message}
    assert connects.calls == []


def test_localhost_refused_even_when_it_resolves_to_loopback(connects: ConnectRecorder) -> None:
    resolver = StubResolver({"localhost": ["127.0.0.1", "::1"]})
    assert fetch(fetcher(connects, resolver), "http://localhost/") == {"error": "address not allowed: localhost resolves to 127.0.0.1 (loopback)"}
    assert connects.calls == []


def test_every_address_of_a_name_is_judged_not_only_the_first(connects: ConnectRecorder) -> None:
    resolver = StubResolver({"public.example": ["93.184.216.34", "2606:2800:220:1::1", "fe80::1"]})
    assert fetch(fetcher(connects, resolver), "https://public.example/") == {"error": "address not allowed: public.example resolves to fe80::1 (link-local)"}
    assert connects.calls == []


def test_metadata_answer_with_a_zone_still_metadata(connects: ConnectRecorder) -> None:
    resolver = StubResolver({"internal.example": ["fd00:ec2::254%eth0"]})
    assert fetch(fetcher(connects, resolver), "http://internal.example:8080/") == {"error": "metadata address refused: internal.example resolves to fd00:ec2::254%eth0"}
    assert connects.calls == []


def test_unparseable_resolver_answer_refused(connects: ConnectRecorder) -> None:
    resolver = StubResolver({"public.example": ["not-an-address"]})
    assert fetch(fetcher(connects, resolver), "http://public.example/") == {"error": "address not allowed: public.example resolves to not-an-address"}
    assert connects.calls == []


# -- allowed: the socket goes to the judged address -----------------------------------------------


def test_socket_connects_to_the_checked_address_not_the_name(connects: ConnectRecorder, resolver: StubResolver) -> None:
    assert fetch(fetcher(connects, resolver), "https://public.example/") == {"error": "could not connect: recorded"}
    # resolved once, by the fetcher; the connection is to the address it judged
    assert resolver.calls == ["public.example"]
    assert connects.calls == [("93.184.216.34", 443)]


def test_private_address_reached_when_host_and_port_named_exactly(connects: ConnectRecorder, resolver: StubResolver) -> None:
    assert fetch(fetcher(connects, resolver), "http://internal.example:8080/") == {"error": "could not connect: recorded"}
    assert connects.calls == [("10.0.0.5", 8080)]


def test_loopback_literal_reached_when_named_exactly(connects: ConnectRecorder, resolver: StubResolver) -> None:
    f = fetcher(connects, resolver, "127.0.0.1:5000, [::1]:5000")
    assert fetch(f, "http://127.0.0.1:5000/")["error"] == "could not connect: recorded"
    assert fetch(f, "http://[::1]:5000/")["error"] == "could not connect: recorded"
    assert connects.calls == [("127.0.0.1", 5000), ("::1", 5000)]


def test_metadata_refused_even_when_named_exactly(connects: ConnectRecorder, resolver: StubResolver) -> None:
    f = fetcher(connects, resolver, "169.254.169.254:80, metadata.google.internal:80, meta.example:80, [fd00:ec2::254]:80")
    assert fetch(f, "http://169.254.169.254/") == {"error": "metadata address refused: 169.254.169.254"}
    assert fetch(f, "http://metadata.google.internal/") == {"error": "metadata address refused: metadata.google.internal"}
    assert fetch(f, "http://meta.example/") == {"error": "metadata address refused: meta.example resolves to 169.254.169.254"}
    assert fetch(f, "http://[fd00:ec2::254]/") == {"error": "metadata address refused: fd00:ec2::254"}
    assert connects.calls == []


def test_public_ipv4_in_ipv6_judged_by_the_ipv4(connects: ConnectRecorder, resolver: StubResolver) -> None:
    f = fetcher(connects, resolver, "[::ffff:93.184.216.34]")
    assert fetch(f, "http://[::ffff:93.184.216.34]/") == {"error": "could not connect: recorded"}
    assert connects.calls == [("::ffff:5db8:d822", 80)]  # the same address, as Python writes it


# -- the request ----------------------------------------------------------------------------------

BAD_REQUESTS = [
    ({"method": "TRACE"}, "method not allowed: TRACE; allowed: DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"),
    ({"method": "CONNECT"}, "method not allowed: CONNECT; allowed: DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"),
    ({"method": 5}, "method not allowed: 5; allowed: DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"),
    ({"headers": {"X-A": "1\r\nX-Injected: 1"}}, "bad value for header X-A"),
    ({"headers": {"X-A": "1\n"}}, "bad value for header X-A"),
    ({"headers": {"X-A": "\x00"}}, "bad value for header X-A"),
    ({"headers": {"X-A\r\nX-B": "1"}}, "bad header name: 'X-A\\r\\nX-B'"),
    ({"headers": {"": "1"}}, "bad header name: ''"),
    ({"headers": {"X-A": 5}}, "bad value for header X-A"),
    ({"headers": {"Host": "127.0.0.1"}}, "header not allowed: host"),
    ({"headers": {"Transfer-Encoding": "chunked"}}, "header not allowed: transfer-encoding"),
    ({"headers": {"Connection": "upgrade"}}, "header not allowed: connection"),
    ({"headers": {"Upgrade": "websocket"}}, "header not allowed: upgrade"),
    ({"headers": {"Proxy-Authorization": "x"}}, "header not allowed: proxy-authorization"),
    ({"headers": {"Content-Length": "5"}}, "header not allowed: content-length"),
    ({"headers": {"X-A": "1", "x-a": "2"}}, "header given twice: x-a"),
    ({"headers": ["X-A", "1"]}, "headers must be an object of at most 100 names"),
    ({"body": "x"}, "a GET request cannot have a body"),
    ({"method": "POST", "body": {"a": 1}}, "body must be a string"),
    ({"method": "POST", "body": "x" * 1001}, "request body larger than 1000 bytes"),
    ({"method": "POST", "body": "é" * 501}, "request body larger than 1000 bytes"),
]


@pytest.mark.parametrize(("request_fields", "message"), BAD_REQUESTS)
def test_bad_request_refused_without_connecting(connects: ConnectRecorder, resolver: StubResolver, request_fields: dict[str, Any], message: str) -> None:
    f = fetcher(connects, resolver, max_request_bytes=1000)
    assert fetch(f, "http://public.example/", **request_fields) == {"error": message}
    assert connects.calls == []


@pytest.mark.parametrize(
    ("request_text", "message"),
    [("not json", "request is not JSON"), ("[]", "url must be a string"), ('{"url": 5}', "url must be a string"), (None, "request too large or not a string")],
)
def test_malformed_request_answered_not_raised(connects: ConnectRecorder, resolver: StubResolver, request_text: Any, message: str) -> None:
    assert json.loads(fetcher(connects, resolver).fetch(request_text, 5.0)) == {"error": message}


def test_no_time_left_refused_before_connecting(connects: ConnectRecorder, resolver: StubResolver) -> None:
    f = fetcher(connects, resolver)
    assert fetch(f, "http://public.example/", remaining=0) == {"error": "timed out after 0 s"}
    assert fetch(f, "http://public.example/", remaining=float("nan")) == {"error": "timed out after 0 s"}
    assert connects.calls == []


def test_slow_resolver_bounded_by_the_remaining_time(connects: ConnectRecorder) -> None:
    release = threading.Event()

    hang = 5.0

    def hanging(host: str, port: int) -> list[str]:
        release.wait(hang)
        return ["93.184.216.34"]

    f = fetcher(connects, hanging, "public.example")
    started = time.monotonic()
    assert fetch(f, "http://public.example/", remaining=0.2) == {"error": "timed out after 0.2 s"}
    assert time.monotonic() - started < hang / 2  # by its own bound, long before the resolver answers
    release.set()
    assert connects.calls == []


# -- the allow-list --------------------------------------------------------------------------------


def test_allow_list_parses_hosts_ports_and_ipv6() -> None:
    allow = AllowList.parse(" api.example , Other.Example:8443,[::1]:8080, 127.0.0.1:5000, BÜCHER.example, [2001:db8::1],")
    # a bare host: ports 80 and 443 only
    assert allow.allows("api.example", 80) and allow.allows("api.example", 443)
    assert not allow.allows("api.example", 8080)
    assert not allow.names_exactly("api.example", 443)
    # host:port: that port only, and it names the host exactly
    assert allow.allows("other.example", 8443) and allow.names_exactly("OTHER.example", 8443)
    assert not allow.allows("other.example", 443)
    assert allow.allows("::1", 8080) and allow.allows("[::1]", 8080) and allow.names_exactly("0:0:0:0:0:0:0:1", 8080)
    assert allow.allows("127.0.0.1", 5000) and not allow.allows("localhost", 5000)
    # IDNA: the Unicode and the ASCII spelling are one host
    assert allow.allows("xn--bcher-kva.example", 443) and allow.allows("bücher.example", 443)
    assert allow.allows("2001:db8::1", 443)
    assert not allow.allows("sub.api.example", 443)
    assert not allow.allows("2130706433", 80)


def test_empty_allow_list_allows_nothing() -> None:
    allow = AllowList.parse("  ")
    assert not allow.allows("example.com", 443)
    assert allow == AllowList()


@pytest.mark.parametrize(
    "entry",
    [
        "http://api.example",
        "api.example/path",
        "*.example.com",
        "api.example:0",
        "api.example:65536",
        "api.example:http",
        "api.example:",
        "api.example:８０",
        "::1",
        "[::1",
        "[::1]8080",
        "[api.example]",
        "[fe80::1%eth0]:80",
        "0177.0.0.1",
        "2130706433",
        "127.1",
        "0x7f.0.0.1",
        "1.2.3.4.5",
        "api..example",
        "-api.example",
        "api example",
        "user@api.example",
        "api.example.",
    ],
)
def test_bad_allow_list_entry_named_in_the_error(entry: str) -> None:
    with pytest.raises(ValueError) as raised:
        AllowList.parse(f"good.example, {entry}")
    assert repr(entry) in str(raised.value)
