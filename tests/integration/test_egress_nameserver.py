"""`TOOLSMITH_EGRESS_NAMESERVER` (infrastructure/egress/resolve.py): outbound names resolved by one
DNS server, here the tests' own (tests/dns_server.py), instead of the system resolver."""

from __future__ import annotations

import socket
import time

import pytest
from pydantic import ValidationError

from infrastructure.egress import resolve
from infrastructure.egress.resolve import NAMESERVER_ENV, parse_nameserver, resolve_addresses
from infrastructure.settings import Settings
from sandbox.embedded import worker_environment
from tests.dns_server import DnsServer


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> DnsServer:
    server = DnsServer({"both.test": [["10.0.0.7", "fd00::7"]], "v6.test": [["::1"]], "turns.test": [["127.0.0.2"], ["127.0.0.3"]]})
    monkeypatch.setenv(NAMESERVER_ENV, server.address)
    yield server  # type: ignore[misc]
    server.close()


def test_names_resolve_by_the_named_server_a_then_aaaa(dns: DnsServer) -> None:
    assert resolve_addresses("both.test", 443) == ["10.0.0.7", "fd00::7"]
    assert resolve_addresses("v6.test", 80) == ["::1"]
    assert dns.asked[:2] == [("both.test", "A"), ("both.test", "AAAA")]


def test_every_lookup_asks_again_nothing_is_cached(dns: DnsServer) -> None:
    assert [resolve_addresses("turns.test", 80) for _ in range(3)] == [["127.0.0.2"], ["127.0.0.3"], ["127.0.0.2"]]


def test_a_name_the_server_does_not_know_does_not_resolve(dns: DnsServer) -> None:
    with pytest.raises(socket.gaierror):
        resolve_addresses("unknown.test", 80)
    # no search domain is appended, no hosts file read: `localhost` is the server's to answer too
    with pytest.raises(socket.gaierror):
        resolve_addresses("localhost", 80)


def test_a_server_that_does_not_answer_is_a_resolution_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    silent.bind(("127.0.0.1", 0))
    monkeypatch.setenv(NAMESERVER_ENV, f"127.0.0.1:{silent.getsockname()[1]}")
    monkeypatch.setattr(resolve, "_NAMESERVER_SECONDS", 0.2)
    try:
        with pytest.raises(socket.gaierror, match="did not answer"):
            resolve_addresses("anything.test", 80)
    finally:
        silent.close()


@pytest.mark.parametrize(("text", "expected"), [("127.0.0.1:5353", ("127.0.0.1", 5353)), (" [::1]:53 ", ("::1", 53))])
def test_the_setting_is_an_address_and_a_port(text: str, expected: tuple[str, int]) -> None:
    assert parse_nameserver(text) == expected


@pytest.mark.parametrize("text", ["127.0.0.1", "dns.example:53", "127.0.0.1:0", "127.0.0.1:99999", "::1:53", "127.0.0.1:x"])
def test_a_bad_value_stops_the_start_naming_the_setting(text: str) -> None:
    with pytest.raises(ValidationError, match=NAMESERVER_ENV):
        Settings(egress_nameserver=text)


def test_the_sandbox_workers_get_the_setting_and_nothing_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    env = worker_environment(3, {NAMESERVER_ENV: "127.0.0.1:5353", "TOOLSMITH_ADMIN_TOKEN": "tsa_x", "PATH": "/bin"})
    assert env[NAMESERVER_ENV] == "127.0.0.1:5353" and "TOOLSMITH_ADMIN_TOKEN" not in env


# -- an answer reused for its TTL (issue 30) -----------------------------------------------------------------


def test_an_answer_is_reused_for_its_ttl_and_asked_again_after(monkeypatch: pytest.MonkeyPatch) -> None:
    server = DnsServer({"kept.test": [["127.0.0.2"], ["127.0.0.3"]]}, ttl=2)
    monkeypatch.setenv(NAMESERVER_ENV, server.address)
    resolve.KEPT.clear()
    try:
        assert [resolve_addresses("kept.test", 80) for _ in range(3)] == [["127.0.0.2"]] * 3
        assert server.lookups("kept.test") == 1
        assert resolve.kept_addresses("kept.test", 80) == ["127.0.0.2"]
        assert resolve.kept_addresses("kept.test", 443) is None  # kept by name and port
        now = time.monotonic()
        monkeypatch.setattr(resolve.time, "monotonic", lambda: now + 2.5)  # the TTL is up
        assert resolve.kept_addresses("kept.test", 80) is None
        assert resolve_addresses("kept.test", 80) == ["127.0.0.3"]
        assert server.lookups("kept.test") == 2
    finally:
        resolve.KEPT.clear()
        server.close()


def test_a_reused_answer_is_judged_by_every_exchange_and_only_it_is_connected_to(monkeypatch: pytest.MonkeyPatch) -> None:
    # a name whose answer is kept, judged under two policies: the kept answer never lets through
    # what the policy refuses, and the socket goes to the kept, judged address only
    from infrastructure.egress.exchange import Egress, Request
    from infrastructure.egress.policy import ApiPolicy, EgressAllow, EgressError
    from tests.integration.test_api_egress import Connections

    server = DnsServer({"kept.test": [["127.0.0.2"], ["169.254.169.254"]]}, ttl=60)
    monkeypatch.setenv(NAMESERVER_ENV, server.address)
    resolve.KEPT.clear()
    try:
        for _ in range(2):
            connections = Connections(real=False)
            allowing = Egress(ApiPolicy(EgressAllow.parse("127.0.0.0/8")), network_backend=connections)
            with pytest.raises(EgressError, match="recorded, not connected"):
                allowing.send(Request(allowing.url("http://kept.test:8080/"), "GET", {}, None), 2.0)
            assert connections.attempts == [("127.0.0.2", 8080)]
            strict = Egress(ApiPolicy(EgressAllow()), network_backend=Connections(real=False))
            with pytest.raises(EgressError, match="address not allowed: kept.test resolves to 127.0.0.2"):
                strict.send(Request(strict.url("https://kept.test:8080/"), "GET", {}, None), 2.0)
        assert server.lookups("kept.test") == 1  # the rebinding second answer was never asked for
    finally:
        resolve.KEPT.clear()
        server.close()


def test_a_failed_lookup_is_not_kept(dns: DnsServer) -> None:
    resolve.KEPT.clear()
    for _ in range(2):
        with pytest.raises(socket.gaierror):
            resolve_addresses("unknown.test", 80)
    assert resolve.kept_addresses("unknown.test", 80) is None
