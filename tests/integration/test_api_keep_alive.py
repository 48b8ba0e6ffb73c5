"""API URL tools keep connections alive between calls (issue 16's benchmark), and lose nothing of
the egress checks for it: each request's URL and addresses are checked before the pool is used, a
kept connection is bounded by the deadline of the call using it, and one that broke (a body over
the cap, a timeout) is never handed to the next call."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from domain.ports import OutboundError, OutboundRequest
from infrastructure.egress.outbound import ApiOutbound
from infrastructure.egress.policy import ApiPolicy, EgressAllow
from tests.integration.test_api_egress import Connections
from tests.upstream import Upstream, running


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


def outbound(upstream: Upstream, connections: Connections) -> ApiOutbound:
    return ApiOutbound(ApiPolicy(EgressAllow.parse(upstream.allow)), network_backend=connections)


def get(out: ApiOutbound, url: str, seconds: float = 5.0, max_bytes: int = 1_048_576) -> int:
    return out.send(OutboundRequest("GET", url), seconds=seconds, connect_seconds=seconds, max_bytes=max_bytes, max_redirects=0).status


def test_calls_to_one_origin_share_a_connection(upstream: Upstream) -> None:
    connections = Connections(real=True)
    out = outbound(upstream, connections)
    try:
        assert [get(out, f"{upstream.url}/v1/weather/c{i}") for i in range(5)] == [200] * 5
        assert connections.attempts == [("127.0.0.1", upstream.port)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            assert list(pool.map(lambda i: get(out, f"{upstream.url}/v1/weather/t{i}"), range(20))) == [200] * 20
        assert len(connections.attempts) <= 4
        assert len(upstream.seen) == 25
    finally:
        out.close()


def test_a_kept_connection_does_not_let_a_refused_url_through(upstream: Upstream) -> None:
    connections = Connections(real=True)
    out = outbound(upstream, connections)
    try:
        assert get(out, f"{upstream.url}/v1/weather/x") == 200
        # the same address under another port, or plain http to a name: refused before the pool
        for url in (f"http://127.0.0.1:{upstream.port + 1}/v1/weather/x", "http://localhost/v1", "http://169.254.169.254/"):
            with pytest.raises(OutboundError) as refused:
                get(out, url)
            assert refused.value.kind == "refused"
        assert connections.attempts == [("127.0.0.1", upstream.port)]
        assert len(upstream.seen) == 1
    finally:
        out.close()


def test_a_broken_connection_is_not_reused(upstream: Upstream) -> None:
    connections = Connections(real=True)
    out = outbound(upstream, connections)
    try:
        assert get(out, f"{upstream.url}/v1/weather/x") == 200
        with pytest.raises(OutboundError) as capped:
            get(out, f"{upstream.url}/big", max_bytes=100_000)
        assert capped.value.kind == "response"
        assert get(out, f"{upstream.url}/v1/weather/y") == 200
        # the kept connection's reads are bounded by this call's deadline, not the first call's
        with pytest.raises(OutboundError) as slow:
            get(out, f"{upstream.url}/slow?seconds=2", seconds=0.4)
        assert slow.value.kind == "timeout"
        assert get(out, f"{upstream.url}/v1/weather/z") == 200
        # one connection before the cap, a new one after it, another after the timeout
        assert len(connections.attempts) == 3
    finally:
        out.close()
