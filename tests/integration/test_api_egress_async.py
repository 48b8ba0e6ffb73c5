"""The egress path awaited (`Egress.asend`, `ApiOutbound.asend`: an API URL tool's call on the event
loop, issue 30) keeps every check of the synchronous one (`test_api_egress.py`,
`test_api_keep_alive.py`): each case of `tests/ssrf_cases.py` refused before any connection, every
redirect hop checked again, one DNS lookup whose checked answer is the only address connected to,
the byte cap, the deadline, and kept-alive connections that let nothing through and are dropped
once broken. A network backend that records each connection attempt shows what was connected to.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import anyio
import httpcore
import pytest

from domain.ports import OutboundError, OutboundRequest
from infrastructure.egress.exchange import Egress, Request, Response
from infrastructure.egress.outbound import ApiOutbound
from infrastructure.egress.policy import ApiPolicy, EgressAllow, EgressError, EgressTimeout
from tests.integration.test_api_egress import (BIG, DIRECT, PUBLIC, REDIRECTS, Local, Resolver, local, policies_for, resolver,  # noqa: F401 - fixtures
                                               secure)
from tests.upstream import Upstream, running


class AsyncConnections(httpcore.AsyncNetworkBackend):
    """Records every TCP connection asked for, then makes it (`real`) or fails it; counts the
    bytes read from the connections it made."""

    def __init__(self, *, real: bool) -> None:
        self.real, self.inner = real, httpcore.AnyIOBackend()
        self.attempts: list[tuple[str, int]] = []
        self.bytes_read = 0

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        self.attempts.append((host, port))
        if not self.real:
            raise httpcore.ConnectError("recorded, not connected")
        return _Counted(await self.inner.connect_tcp(host, port, timeout, local_address, socket_options), self)


class _Counted(httpcore.AsyncNetworkStream):
    def __init__(self, inner: httpcore.AsyncNetworkStream, owner: AsyncConnections) -> None:
        self._inner, self._owner = inner, owner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        self._owner.bytes_read += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return _Counted(await self._inner.start_tls(ssl_context, server_hostname, timeout), self._owner)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


def api(allow: str = "", **options: Any) -> Egress:
    return Egress(ApiPolicy(EgressAllow.parse(allow)), **options)


def get(egress: Egress, url: str, seconds: float = 2.0, connect_seconds: float | None = None,
        headers: dict[str, str] | None = None, sensitive: frozenset[str] = frozenset()) -> Response:
    request = Request(egress.url(url), "GET", dict(headers or {}), None, sensitive)

    async def send() -> Response:
        return await egress.asend(request, seconds, connect_seconds)
    return anyio.run(send)


def refusal(egress: Egress, url: str) -> EgressError:
    with pytest.raises(EgressError) as refused:
        get(egress, url)
    assert type(refused.value) is EgressError, f"{url} failed ({refused.value!r}) instead of being refused"
    return refused.value


@pytest.mark.parametrize("case", DIRECT, ids=str)
def test_each_ssrf_case_is_refused_before_any_connection(case: Any) -> None:
    for policy in policies_for(case):
        connections = AsyncConnections(real=False)
        egress = Egress(policy, resolve=resolver(case.answers), async_network_backend=connections)
        why = refusal(egress, case.url)
        assert connections.attempts == [], f"{case.what}: a connection was attempted under {type(policy).__name__}"
        assert "domain not allowed" not in str(why), f"{case.what}: refused by the allow-list, not the address rule"


@pytest.mark.parametrize("case", REDIRECTS, ids=str)
def test_each_redirect_case_is_refused_before_connecting_to_its_target(case: Any, secure: tuple[Local, ssl.SSLContext]) -> None:
    server, trusted = secure
    first = f"https://secure.test:{server.port}/redirect?to={quote(case.url, safe='')}"
    for policy in policies_for(case, allowed=f"secure.test:{server.port}"):
        connections = AsyncConnections(real=True)
        dns = resolver({"secure.test": ["127.0.0.1"], **case.answers})
        egress = Egress(policy, resolve=dns, ssl_context=trusted, async_network_backend=connections)
        why = refusal(egress, first)
        # the allowed server was reached (over TLS, its certificate checked) and answered the redirect; its target never was
        assert connections.attempts == [("127.0.0.1", server.port)], f"{case.what} under {type(policy).__name__}"
        assert "domain not allowed" not in str(why)


def test_a_dns_answer_that_changes_after_the_check_never_reaches_a_socket() -> None:
    dns = Resolver({"api.example": [[PUBLIC], ["127.0.0.1"]]})
    connections = AsyncConnections(real=False)
    with pytest.raises(EgressError, match="recorded, not connected"):
        get(api(resolve=dns, async_network_backend=connections), "https://api.example/v1")
    assert connections.attempts == [(PUBLIC, 443)]
    assert dns.calls == ["api.example"]


def test_a_name_resolving_to_a_public_and_a_private_address_is_refused() -> None:
    connections = AsyncConnections(real=False)
    why = refusal(api(resolve=resolver({"mixed.example": [PUBLIC, "10.0.0.1"]}), async_network_backend=connections), "https://mixed.example/")
    assert str(why) == ("address not allowed: mixed.example resolves to 10.0.0.1 (private); "
                        "it needs an entry in TOOLSMITH_EGRESS_ALLOW")
    assert connections.attempts == []


def test_a_name_that_does_not_resolve_is_refused() -> None:
    assert str(refusal(api(resolve=resolver({})), "https://nowhere.example/")) == "could not resolve nowhere.example"


def test_the_connect_bound_covers_resolving() -> None:
    def slow(host: str, port: int) -> list[str]:
        time.sleep(1.0)
        raise socket.gaierror(socket.EAI_AGAIN, "too late")
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        get(api(resolve=slow), "https://slow.example/", seconds=5.0, connect_seconds=0.2)
    assert time.monotonic() - started < 0.9


def test_a_sensitive_header_is_dropped_when_a_redirect_changes_the_origin(local: Local) -> None:
    from tests.integration.test_api_egress import serving
    for other in serving(Local()):
        allow = f"127.0.0.1:{local.port}, 127.0.0.1:{other.port}"
        url = f"http://127.0.0.1:{local.port}/redirect?to={quote(f'http://127.0.0.1:{other.port}/headers', safe='')}"
        answer = get(api(allow), url, headers={"Authorization": "Bearer s3cret", "X-Api-Key": "k3y", "X-Other": "kept"},
                     sensitive=frozenset({"x-api-key"}))
        assert answer.status == 200
        seen = other.headers_seen[-1]
        assert "authorization" not in seen and "x-api-key" not in seen and seen["x-other"] == "kept"


def test_a_50_mb_answer_stops_at_the_cap(local: Local) -> None:
    connections = AsyncConnections(real=True)
    egress = api(f"127.0.0.1:{local.port}", max_response_bytes=1_048_576, async_network_backend=connections)
    with pytest.raises(EgressError, match="response body larger than 1048576 bytes"):
        get(egress, f"http://127.0.0.1:{local.port}/big", seconds=10.0)
    assert connections.bytes_read < 4 * 1_048_576 < BIG


def test_a_slow_server_is_stopped_by_the_deadline(local: Local) -> None:
    started = time.monotonic()
    with pytest.raises(EgressTimeout):
        get(api(f"127.0.0.1:{local.port}"), f"http://127.0.0.1:{local.port}/slow?seconds=5", seconds=0.3)
    assert time.monotonic() - started < 2.0


# -- kept alive, as `send`'s connections are ----------------------------------------------------------------


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


def _status_of(out: ApiOutbound, upstream: Upstream) -> Any:
    async def status(path: str, seconds: float = 5.0, max_bytes: int = 1_048_576) -> int | str:
        try:
            answer = await out.asend(OutboundRequest("GET", upstream.url + path), seconds=seconds, connect_seconds=seconds,
                                     max_bytes=max_bytes, max_redirects=0)
        except OutboundError as failed:
            return failed.kind
        return answer.status
    return status


def test_awaited_calls_share_kept_connections_and_let_no_refused_url_through(upstream: Upstream) -> None:
    connections = AsyncConnections(real=True)
    out = ApiOutbound(ApiPolicy(EgressAllow.parse(upstream.allow)), async_network_backend=connections)
    status = _status_of(out, upstream)

    async def calls() -> None:
        assert [await status(f"/v1/weather/c{i}") for i in range(5)] == [200] * 5
        assert connections.attempts == [("127.0.0.1", upstream.port)]
        found: list[int | str] = []
        async with anyio.create_task_group() as tasks:
            for i in range(4):
                tasks.start_soon(_append, found, status(f"/v1/weather/t{i}"))
        assert found == [200] * 4
        assert len(connections.attempts) <= 4
        kept = len(connections.attempts)
        for url in (f"http://127.0.0.1:{upstream.port + 1}/v1", "http://localhost/v1", "http://169.254.169.254/"):
            with pytest.raises(OutboundError) as refused:
                await out.asend(OutboundRequest("GET", url), seconds=1, connect_seconds=1, max_bytes=100, max_redirects=0)
            assert refused.value.kind == "refused"
        assert len(connections.attempts) == kept
        assert len(upstream.seen) == 9

    try:
        anyio.run(calls)
    finally:
        out.close()


def test_an_awaited_call_never_reuses_a_broken_connection(upstream: Upstream) -> None:
    connections = AsyncConnections(real=True)
    out = ApiOutbound(ApiPolicy(EgressAllow.parse(upstream.allow)), async_network_backend=connections)
    status = _status_of(out, upstream)

    async def calls() -> list[int | str]:
        # a body over the cap, then a timeout on a kept connection (bounded by this call's
        # deadline, not the first call's): neither connection is handed to the next call
        return [await status("/v1/weather/x"), await status("/big", max_bytes=100_000), await status("/v1/weather/y"),
                await status("/slow?seconds=2", seconds=0.4), await status("/v1/weather/z")]

    try:
        assert anyio.run(calls) == [200, "response", 200, "timeout", 200]
        assert len(connections.attempts) == 3
    finally:
        out.close()


async def _append(found: list[Any], awaited: Any) -> None:
    found.append(await awaited)
