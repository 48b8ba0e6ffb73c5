"""`TOOLSMITH_EGRESS_NAMESERVER` (infrastructure/egress/resolve.py): outbound names resolved by one
DNS server, here the tests' own (tests/dns_server.py), instead of the system resolver."""

from __future__ import annotations

import socket

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
