"""The declared-origin policy of external MCP tools (`infrastructure/egress/policy.py`): the origin
the admin declared, compared as the allow-list compares hosts, and nothing else."""

from __future__ import annotations

import ipaddress

import pytest

from infrastructure.egress.policy import DeclaredOrigin, EgressError


def test_the_declared_origin_is_reachable_at_any_address_it_resolves_to() -> None:
    origin = DeclaredOrigin.of("http://Sidecar.Local:8080/mcp")
    assert str(origin) == "http://sidecar.local:8080"
    origin.check("http", "sidecar.local", 8080)
    # trusted as declared: loopback, private and link-local answers alike
    for address in ("127.0.0.1", "10.0.0.7", "fe80::1"):
        origin.check_address("sidecar.local", 8080, ipaddress.ip_address(address))


def test_default_ports_and_ipv6_are_compared_in_their_normal_form() -> None:
    DeclaredOrigin.of("https://mcp.example/mcp").check("https", "MCP.example", 443)
    assert DeclaredOrigin.of("http://[0:0::1]:9000/mcp").check_name("::1", 9000) == ipaddress.ip_address("::1")


@pytest.mark.parametrize(("scheme", "host", "port", "message"), [
    ("http", "sidecar.local", 8081, "sidecar.local:8081 is not the declared origin http://sidecar.local:8080"),
    ("http", "other.local", 8080, "other.local:8080 is not the declared origin http://sidecar.local:8080"),
    ("https", "sidecar.local", 8080, "https://sidecar.local:8080 is not the declared origin http://sidecar.local:8080"),
    ("http", "169.254.169.254", 80, "169.254.169.254:80 is not the declared origin http://sidecar.local:8080"),
    ("http", "2130706433", 8080, "IPv4 address in non-standard form: 2130706433"),
])  # fmt: skip
def test_anything_else_is_refused(scheme: str, host: str, port: int, message: str) -> None:
    with pytest.raises(EgressError) as refused:
        DeclaredOrigin.of("http://sidecar.local:8080/mcp").check(scheme, host, port)
    assert str(refused.value) == message


def test_a_declared_host_in_a_numeric_disguise_cannot_be_compared() -> None:
    with pytest.raises(ValueError, match="IPv4 address in non-standard form: 0x7f.1"):
        DeclaredOrigin.of("http://0x7f.1:8080/mcp")
