"""The egress path of API URL tools (issue 16, docs/kinds/api-url-tools.md), against local HTTP servers on
127.0.0.1 that each test allow-lists through `TOOLSMITH_EGRESS_ALLOW`'s entries.

Every case of `tests/ssrf_cases.py` is refused before any connection, by `ApiPolicy` and by
`http.fetch`'s `AllowListPolicy`; a network backend that records each connection attempt shows that
none was made (for a redirect case: none but the one to the allowed server that answered it).
Names resolve through a resolver the test controls. Then what the allow-list lets through, what a
redirect keeps and drops, and the caps on bytes and time.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpcore
import httpx
import pytest

from infrastructure.egress.exchange import Egress, Request, Response
from infrastructure.egress.policy import AllowList, AllowListPolicy, ApiPolicy, EgressAllow, EgressError, EgressTimeout, Policy
from infrastructure.settings import Settings
from tests.ssrf_cases import CASES, PUBLIC, SsrfCase

BIG = 50 * 1024 * 1024
CHUNK = 64 * 1024  # what httpcore reads at a time


# -- local servers -----------------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    """`/redirect?to=` redirects (302), `/headers` and `/redirect` record the request's headers,
    `/big` streams 50 MB, `/slow?seconds=` answers late; anything else is "hello"."""

    server: Local

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path, query = urlsplit(self.path).path, parse_qs(urlsplit(self.path).query)
        self.server.headers_seen.append({name.lower(): value for name, value in self.headers.items()})
        if path == "/redirect":
            self.reply(302, b"", [("Location", query["to"][0])])
        elif path == "/big":
            self.stream_big()
        elif path == "/slow":
            self.server.release.wait(float(query["seconds"][0]))
            try:
                self.reply(200, b"late")
            except OSError:
                pass  # the client gave up waiting: what it was meant to do
        else:
            self.reply(200, b"hello")

    def stream_big(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(BIG))
        self.end_headers()
        chunk = b"x" * CHUNK
        try:
            while self.server.written < BIG:
                self.wfile.write(chunk)
                self.server.written += len(chunk)
        except OSError:
            pass  # the client went away: what it was meant to do
        finally:
            self.server.big_ended.set()

    def reply(self, status: int, body: bytes, headers: list[tuple[str, str]] | None = None) -> None:
        self.send_response(status)
        for name, value in headers or []:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Local(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.port = self.server_address[1]
        self.headers_seen: list[dict[str, str]] = []
        self.written = 0  # bytes of /big sent
        self.big_ended = threading.Event()
        self.release = threading.Event()  # ends /slow's wait at teardown


def serving(server: Local) -> Iterator[Local]:
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def local() -> Iterator[Local]:
    yield from serving(Local())


@pytest.fixture
def other() -> Iterator[Local]:
    yield from serving(Local())


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Local, ssl.SSLContext]]:
    """An https server for `secure.test` (resolved to 127.0.0.1 by the tests' resolver), and a
    client context that trusts its certificate."""
    assert shutil.which("openssl"), "this test makes its certificate with the openssl command: install openssl"
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=secure.test",
         "-addext", "subjectAltName=DNS:secure.test", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server = Local()
    server.socket = context.wrap_socket(server.socket, server_side=True)
    for running in serving(server):
        yield running, ssl.create_default_context(cafile=str(Path(cert)))


# -- what the tests control: DNS and the TCP connection ----------------------------------------------


class Resolver:
    """A DNS stub: each lookup of a name gets its next answer (the last one repeats)."""

    def __init__(self, answers: Mapping[str, list[list[str]]]) -> None:
        self.answers = answers
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        asked = self.calls.count(host)
        self.calls.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.answers[host][min(asked, len(self.answers[host]) - 1)]


def resolver(answers: Mapping[str, list[str]]) -> Resolver:
    return Resolver({name: [found] for name, found in answers.items()})


class Connections(httpcore.NetworkBackend):
    """Records every TCP connection asked for, then makes it (`real`) or fails it; counts the
    bytes read from the connections it made, and whether they were closed."""

    def __init__(self, *, real: bool) -> None:
        self.real, self.inner = real, httpcore.SyncBackend()
        self.attempts: list[tuple[str, int]] = []
        self.bytes_read = 0
        self.closed = 0

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        self.attempts.append((host, port))
        if not self.real:
            raise httpcore.ConnectError("recorded, not connected")
        return _Counted(self.inner.connect_tcp(host, port, timeout, local_address, socket_options), self)


class _Counted(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, owner: Connections) -> None:
        self._inner, self._owner = inner, owner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, timeout)
        self._owner.bytes_read += len(data)
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, timeout)

    def close(self) -> None:
        self._owner.closed += 1
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        return _Counted(self._inner.start_tls(ssl_context, server_hostname, timeout), self._owner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def api(allow: str = "", **options: Any) -> Egress:
    return Egress(ApiPolicy(EgressAllow.parse(allow)), **options)


def get(egress: Egress, url: str, seconds: float = 2.0, headers: dict[str, str] | None = None,
        sensitive: frozenset[str] = frozenset(), connect_seconds: float | None = None) -> Response:
    request = Request(egress.url(url), "GET", dict(headers or {}), None, sensitive)
    return egress.send(request, seconds, connect_seconds)


def refusal(egress: Egress, url: str) -> EgressError:
    """Why the request to `url` was refused: a refusal, not a failed connection or a timeout."""
    with pytest.raises(EgressError) as refused:
        get(egress, url)
    assert type(refused.value) is EgressError, f"{url} failed ({refused.value!r}) instead of being refused"
    return refused.value


# -- every SSRF case, refused before any connection -----------------------------------------------------

DIRECT = [case for case in CASES if not case.redirect]
REDIRECTS = [case for case in CASES if case.redirect]


def fetch_policy(*cases: SsrfCase, extra: str = "") -> AllowListPolicy:
    """`http.fetch`'s policy with a bare entry for each case's host (when it can be written as
    one), so that what refuses the case is the address rule, not the allow-list."""
    entries = [extra] if extra else []
    for case in cases:
        try:
            host = httpx.URL(case.url).raw_host.decode("ascii")
            entry = f"[{host}]" if ":" in host else host
            AllowList.parse(entry)
        except (httpx.InvalidURL, ValueError):
            continue  # refused by the URL parser or the host's form, before the allow-list
        entries.append(entry)
    return AllowListPolicy(AllowList.parse(", ".join(entries)))


def policies_for(case: SsrfCase, allowed: str = "") -> list[Policy]:
    """The policies that must refuse `case`; `allowed` is the entry naming the redirecting server."""
    api_policy: Policy = ApiPolicy(EgressAllow.parse(allowed))
    return [api_policy] if case.api_only else [api_policy, fetch_policy(case, extra=allowed)]


@pytest.mark.parametrize("case", DIRECT, ids=str)
def test_each_ssrf_case_is_refused_before_any_connection(case: SsrfCase) -> None:
    for policy in policies_for(case):
        connections = Connections(real=False)
        egress = Egress(policy, resolve=resolver(case.answers), network_backend=connections)
        why = refusal(egress, case.url)
        assert connections.attempts == [], f"{case.what}: a connection was attempted under {type(policy).__name__}"
        assert "domain not allowed" not in str(why), f"{case.what}: refused by the allow-list, not the address rule"


@pytest.mark.parametrize("case", REDIRECTS, ids=str)
def test_each_redirect_case_is_refused_before_connecting_to_its_target(case: SsrfCase, secure: tuple[Local, ssl.SSLContext]) -> None:
    server, trusted = secure
    first = f"https://secure.test:{server.port}/redirect?to={quote(case.url, safe='')}"
    for policy in policies_for(case, allowed=f"secure.test:{server.port}"):
        connections = Connections(real=True)
        dns = resolver({"secure.test": ["127.0.0.1"], **case.answers})
        egress = Egress(policy, resolve=dns, ssl_context=trusted, network_backend=connections)
        why = refusal(egress, first)
        # the allowed server was reached and answered the redirect; its target never was
        assert connections.attempts == [("127.0.0.1", server.port)], f"{case.what} under {type(policy).__name__}"
        assert "domain not allowed" not in str(why)


def test_there_are_at_least_thirty_named_cases() -> None:
    assert len(CASES) >= 30
    assert len({case.name for case in CASES}) == len(CASES)


# -- DNS: every answer judged, one lookup, the checked address connected to --------------------------------


def test_a_name_resolving_to_a_public_and_a_private_address_is_refused() -> None:
    connections = Connections(real=False)
    egress = api(resolve=resolver({"mixed.example": [PUBLIC, "10.0.0.1"]}), network_backend=connections)
    why = refusal(egress, "https://mixed.example/")
    assert str(why) == ("address not allowed: mixed.example resolves to 10.0.0.1 (private); "
                        "it needs an entry in TOOLSMITH_EGRESS_ALLOW")
    assert connections.attempts == []


def test_a_dns_answer_that_changes_after_the_check_never_reaches_a_socket() -> None:
    # the first answer is public and passes; a second lookup would say loopback
    dns = Resolver({"api.example": [[PUBLIC], ["127.0.0.1"]]})
    connections = Connections(real=False)
    with pytest.raises(EgressError, match="recorded, not connected"):
        get(api(resolve=dns, network_backend=connections), "https://api.example/v1")
    assert connections.attempts == [(PUBLIC, 443)]
    assert dns.calls == ["api.example"]


def test_a_redirect_to_the_same_name_reuses_the_checked_addresses(local: Local) -> None:
    # HTTP/1.0: the redirect opens a second connection; a second lookup would get metadata
    dns = Resolver({"api.test": [["127.0.0.1"], ["169.254.169.254"]]})
    response = get(api("127.0.0.0/8", resolve=dns), f"http://api.test:{local.port}/redirect?to=/hello")
    assert (response.status, response.body) == (200, b"hello")
    assert dns.calls == ["api.test"]


# -- what the allow-list lets through ---------------------------------------------------------------------


def test_an_allowed_host_and_port_reaches_a_local_server(local: Local) -> None:
    egress = Egress(Settings(egress_allow=f"127.0.0.1:{local.port}").api_policy())
    response = get(egress, f"http://127.0.0.1:{local.port}/hello")
    assert (response.status, response.body, response.bytes_read) == (200, b"hello", 5)
    assert str(response.url) == f"http://127.0.0.1:{local.port}/hello"
    # another port of the same address is not named
    assert "http needs an entry" in str(refusal(egress, f"http://127.0.0.1:{local.port + 1}/hello"))


def test_an_allowed_cidr_reaches_a_local_server_under_any_name_that_resolves_into_it(local: Local) -> None:
    egress = api("127.0.0.0/8", resolve=resolver({"service.internal": ["127.0.0.1"], "db.internal": ["10.0.0.9"]}))
    response = get(egress, f"http://service.internal:{local.port}/redirect?to=/hello")
    assert (response.status, response.body) == (200, b"hello")
    assert str(response.url) == f"http://service.internal:{local.port}/hello"
    why = refusal(egress, "http://db.internal:5432/")
    assert str(why) == "address not allowed: db.internal resolves to 10.0.0.9 (private); it needs an entry in TOOLSMITH_EGRESS_ALLOW"


def test_https_to_a_public_address_needs_no_entry_and_http_does() -> None:
    dns = resolver({"public.example": [PUBLIC]})
    connections = Connections(real=False)
    # https: checked and let through, so the (stubbed) connection is attempted
    with pytest.raises(EgressError, match="recorded, not connected"):
        get(api(resolve=dns, network_backend=connections), "https://public.example/")
    assert connections.attempts == [(PUBLIC, 443)]
    # http: refused before resolving, with no entry that could let it through
    why = refusal(api(resolve=dns, network_backend=connections), "http://public.example/")
    assert str(why) == "http needs an entry in TOOLSMITH_EGRESS_ALLOW: public.example:80"
    # http with a CIDR that holds some other network: resolved, judged, refused
    why = refusal(api("10.0.0.0/8", resolve=dns, network_backend=connections), "http://public.example/")
    assert str(why) == f"http needs an entry in TOOLSMITH_EGRESS_ALLOW: public.example:80 (public.example resolves to {PUBLIC})"
    # http with a CIDR holding its address: let through
    with pytest.raises(EgressError, match="recorded, not connected"):
        get(api("93.184.216.0/24", resolve=dns, network_backend=connections), "http://public.example/")
    assert connections.attempts == [(PUBLIC, 443), (PUBLIC, 80)]


def test_metadata_is_refused_even_when_a_cidr_covers_it() -> None:
    connections = Connections(real=False)
    egress = api("169.254.0.0/16", resolve=resolver({"meta.example": ["169.254.169.254"]}), network_backend=connections)
    assert str(refusal(egress, "http://169.254.169.254/latest/meta-data/")) == "metadata address refused: 169.254.169.254"
    assert str(refusal(egress, "http://meta.example/")) == "metadata address refused: meta.example resolves to 169.254.169.254"
    assert connections.attempts == []
    # the rest of the network is reachable: the entry works, metadata is the exception
    with pytest.raises(EgressError, match="recorded, not connected"):
        get(egress, "http://169.254.1.1/")
    assert connections.attempts == [("169.254.1.1", 80)]


# -- redirects keep and drop headers ------------------------------------------------------------------------

SECRETS = {"x-api-key": "key-123", "authorization": "Bearer token-456", "x-trace": "trace-789"}


def test_a_sensitive_header_is_dropped_when_a_redirect_changes_the_origin(local: Local, other: Local) -> None:
    egress = api(f"127.0.0.1:{local.port}, 127.0.0.1:{other.port}")
    target = quote(f"http://127.0.0.1:{other.port}/headers", safe="")
    response = get(egress, f"http://127.0.0.1:{local.port}/redirect?to={target}", headers=SECRETS, sensitive=frozenset({"x-api-key"}))
    assert response.status == 200
    assert local.headers_seen[0]["x-api-key"] == "key-123"  # the origin it was meant for saw it
    [seen] = other.headers_seen
    assert "x-api-key" not in seen and "authorization" not in seen
    assert seen["x-trace"] == "trace-789"  # not sensitive: kept


def test_a_sensitive_header_is_kept_on_a_same_origin_redirect(local: Local) -> None:
    egress = api(f"127.0.0.1:{local.port}")
    get(egress, f"http://127.0.0.1:{local.port}/redirect?to=/headers", headers=SECRETS, sensitive=frozenset({"x-api-key"}))
    first, second = local.headers_seen
    assert second["x-api-key"] == first["x-api-key"] == "key-123"
    assert second["authorization"] == "Bearer token-456"


@pytest.mark.parametrize(("headers", "message"), [
    ({"x-api-key": "key\r\nHost: evil.example"}, "header x-api-key has a line break"),
    ({"x-api-key": "key\nX-Injected: 1"}, "header x-api-key has a line break"),
    ({"x-api-key": "key\0"}, "header x-api-key has a NUL byte"),
    ({"x api key": "key"}, "invalid header name 'x api key'"),
    ({"x-api-key:": "key"}, "invalid header name 'x-api-key:'"),
])  # fmt: skip
def test_a_bad_header_is_refused_before_resolving_or_connecting(headers: dict[str, str], message: str) -> None:
    dns, connections = resolver({"public.example": [PUBLIC]}), Connections(real=False)
    egress = api(resolve=dns, network_backend=connections)
    with pytest.raises(EgressError) as refused:
        get(egress, "https://public.example/", headers=headers)
    assert str(refused.value) == message
    assert (dns.calls, connections.attempts) == ([], [])


# -- caps on bytes and time -----------------------------------------------------------------------------------


def test_a_50_mb_answer_stops_at_the_cap_and_closes_the_connection(local: Local) -> None:
    connections = Connections(real=True)
    egress = api(f"127.0.0.1:{local.port}", max_response_bytes=1_048_576, network_backend=connections)
    started = time.monotonic()
    with pytest.raises(EgressError, match="^response body larger than 1048576 bytes$"):
        get(egress, f"http://127.0.0.1:{local.port}/big", seconds=10)
    assert time.monotonic() - started < 10 / 2  # stopped by the cap, not by the deadline
    # read up to the cap and one more chunk (plus the status line and headers), not the rest
    assert connections.bytes_read <= 1_048_576 + CHUNK + 1024
    assert connections.closed == 1
    # the server, whose writes fail once the connection is closed, never got to send it all
    assert local.big_ended.wait(5)
    assert local.written < BIG


def test_a_slow_server_is_stopped_by_the_deadline(local: Local) -> None:
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        get(api(f"127.0.0.1:{local.port}"), f"http://127.0.0.1:{local.port}/slow?seconds=5", seconds=0.5)
    assert time.monotonic() - started < 5 / 2  # by the deadline, long before the server's answer


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A port on 127.0.0.1 whose accept queue is full: a new connection hangs in SYN-SENT."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    fillers = [socket.socket() for _ in range(4)]
    for filler in fillers:
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
    time.sleep(0.1)
    yield port
    for s in [*fillers, listener]:
        s.close()


def test_connecting_has_its_own_shorter_bound(blackhole: int) -> None:
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        get(api(f"127.0.0.1:{blackhole}"), f"http://127.0.0.1:{blackhole}/", seconds=5, connect_seconds=0.3)
    assert time.monotonic() - started < 5 / 2  # by the connect bound, long before the whole request's


def test_the_connect_bound_covers_resolving() -> None:
    def slow(host: str, port: int) -> list[str]:
        time.sleep(4)
        return [PUBLIC]

    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        get(api(resolve=slow), "https://slow-dns.example/", seconds=5, connect_seconds=0.3)
    assert time.monotonic() - started < 4 / 2  # by the connect bound, long before the resolver answers


def test_the_connect_bound_does_not_cut_a_slow_answer(local: Local) -> None:
    # connected at once; the answer takes longer than the connect bound, within the deadline
    response = get(api(f"127.0.0.1:{local.port}"), f"http://127.0.0.1:{local.port}/slow?seconds=0.5", seconds=2, connect_seconds=0.2)
    assert (response.status, response.body) == (200, b"late")
