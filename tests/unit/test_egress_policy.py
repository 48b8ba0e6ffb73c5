"""The egress policies (`infrastructure/egress/policy.py`) that the `http.fetch` suites do not
already cover: the declared origin of external MCP tools (the origin the admin declared, compared
as the allow-list compares hosts, and nothing else), and API URL tools' `ApiPolicy` with its
allow-list `TOOLSMITH_EGRESS_ALLOW`."""

from __future__ import annotations

import ipaddress

import pytest

from infrastructure.egress.policy import (
    AllowList, AllowListPolicy, ApiPolicy, DeclaredOrigin, EgressAllow, EgressError, checked_url, port_of,
)
from infrastructure.settings import Settings


def test_the_declared_origin_is_reachable_at_any_address_it_resolves_to() -> None:
    origin = DeclaredOrigin.of("http://Sidecar.Local:8080/mcp")
    assert str(origin) == "http://sidecar.local:8080"
    origin.check("http", "sidecar.local", 8080)
    # trusted as declared: loopback, private and link-local answers alike
    for address in ("127.0.0.1", "10.0.0.7", "fe80::1"):
        origin.check_address("sidecar.local", 8080, ipaddress.ip_address(address))


@pytest.mark.parametrize(("url", "message"), [
    ("http://169.254.169.254/mcp", "metadata address refused: 169.254.169.254"),
    ("http://[fd00:ec2::254]:8080/mcp", "metadata address refused: fd00:ec2::254"),
    ("http://[::ffff:169.254.169.254]/mcp", "metadata address refused: ::ffff:a9fe:a9fe"),
    ("http://Metadata.Google.Internal/mcp", "metadata address refused: metadata.google.internal"),
])  # fmt: skip
def test_a_declared_metadata_address_is_refused_all_the_same(url: str, message: str) -> None:
    origin = DeclaredOrigin.of(url)
    with pytest.raises(EgressError) as refused:
        origin.check("http", origin.host, origin.port)
    assert str(refused.value) == message


def test_a_declared_name_resolving_to_a_metadata_address_is_refused() -> None:
    origin = DeclaredOrigin.of("http://sidecar.local:8080/mcp")
    for address in ("169.254.169.254", "fd00:ec2::254", "::ffff:169.254.170.2"):
        with pytest.raises(EgressError) as refused:
            origin.check_address("sidecar.local", 8080, ipaddress.ip_address(address))
        assert str(refused.value) == f"metadata address refused: sidecar.local resolves to {ipaddress.ip_address(address)}"


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


# -- API URL tools: TOOLSMITH_EGRESS_ALLOW and ApiPolicy ------------------------------------------------


def test_egress_allow_reads_hosts_with_ports_and_cidrs() -> None:
    allow = EgressAllow.parse(" API.Internal:8443, [0:0::1]:9000,127.0.0.1:8080 , 10.0.0.0/8, ::1/128, 127.0.0.1/32,,")
    assert allow.exact == {("api.internal", 8443), ("::1", 9000), ("127.0.0.1", 8080)}
    assert [str(network) for network in allow.networks] == ["10.0.0.0/8", "::1/128", "127.0.0.1/32"]
    assert allow.names_exactly("api.internal", 8443) and not allow.names_exactly("api.internal", 443)
    assert allow.covers(ipaddress.ip_address("10.1.2.3")) and not allow.covers(ipaddress.ip_address("11.0.0.1"))
    assert allow.covers(ipaddress.ip_address("::1")) and not allow.covers(ipaddress.ip_address("::ffff:10.0.0.1"))
    assert EgressAllow.parse("") == EgressAllow()


@pytest.mark.parametrize(("entry", "why"), [
    ("api.internal", "expected host:port ([IPv6]:port) or a CIDR such as 10.0.0.0/8"),
    ("10.0.0.1", "expected host:port ([IPv6]:port) or a CIDR such as 10.0.0.0/8"),
    ("::1:8080", "IPv6 addresses need brackets: [::1]:8080"),
    ("api.internal:0", "bad port '0'"),
    ("api.internal:http", "bad port 'http'"),
    ("10.0.0.1/8", "10.0.0.1/8 has host bits set"),
    ("10.0.0.0/33", "'10.0.0.0/33' does not appear to be an IPv4 or IPv6 network"),
    ("0x7f.0.0.1:80", "IPv4 address in non-standard form: 0x7f.0.0.1"),
    ("169.254.169.254:80", "metadata addresses are never reachable"),
    ("metadata.google.internal:80", "metadata addresses are never reachable"),
    ("[fe80::1%eth0]/128", "IPv6 zone identifiers are not allowed"),
])  # fmt: skip
def test_a_bad_egress_allow_entry_is_named(entry: str, why: str) -> None:
    with pytest.raises(ValueError) as refused:
        EgressAllow.parse(f"127.0.0.1:8080, {entry}")
    assert str(refused.value) == f"bad TOOLSMITH_EGRESS_ALLOW entry {entry!r}: {why}"


def test_a_bad_egress_allow_setting_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSMITH_EGRESS_ALLOW", "127.0.0.1:8080, 10.0.0.1/8")
    with pytest.raises(ValueError, match=r"bad TOOLSMITH_EGRESS_ALLOW entry '10.0.0.1/8'"):
        Settings()
    monkeypatch.setenv("TOOLSMITH_EGRESS_ALLOW", "127.0.0.1:8080, 10.0.0.0/8")
    assert Settings().api_policy() == ApiPolicy(EgressAllow.parse("127.0.0.1:8080,10.0.0.0/8"))


def judged(allow: str, url: str, *addresses: str) -> None:
    """The checks a request to `url` goes through, its host resolving to `addresses`."""
    parsed = checked_url(url, ApiPolicy(EgressAllow.parse(allow)))
    hop = ApiPolicy(EgressAllow.parse(allow)).for_scheme(parsed.scheme)
    for address in addresses:
        hop.check_address(parsed.host, port_of(parsed), ipaddress.ip_address(address))


def test_public_https_needs_no_entry() -> None:
    judged("", "https://api.example/v1", "93.184.216.34", "2606:2800:220:1::1")


@pytest.mark.parametrize(("allow", "url", "addresses"), [
    ("127.0.0.1:8080", "http://127.0.0.1:8080/", ()),
    ("localhost:8080", "http://localhost:8080/", ("127.0.0.1", "::1")),
    ("10.0.0.0/8", "https://db.internal/", ("10.0.0.5", "10.9.9.9")),
    ("93.184.216.0/24", "http://api.example/", ("93.184.216.34",)),
    ("[::1]:9000", "https://[::1]:9000/", ()),
    ("169.254.0.0/16", "http://169.254.1.1/", ()),
    ("::ffff:0:0/96", "https://mapped.example/", ("::ffff:127.0.0.1",)),
])  # fmt: skip
def test_an_entry_lets_http_and_non_public_addresses_through(allow: str, url: str, addresses: tuple[str, ...]) -> None:
    judged(allow, url, *addresses)


@pytest.mark.parametrize(("allow", "url", "addresses", "message"), [
    ("", "http://api.example/", (), "http needs an entry in TOOLSMITH_EGRESS_ALLOW: api.example:80"),
    ("10.0.0.0/8", "http://api.example/", ("93.184.216.34",),
     "http needs an entry in TOOLSMITH_EGRESS_ALLOW: api.example:80 (api.example resolves to 93.184.216.34)"),
    ("127.0.0.1:8080", "http://127.0.0.1:8081/", (), "http needs an entry in TOOLSMITH_EGRESS_ALLOW: 127.0.0.1:8081"),
    ("127.0.0.1:8080", "https://127.0.0.1/", (),
     "address not allowed: 127.0.0.1 (loopback); it needs an entry in TOOLSMITH_EGRESS_ALLOW"),
    ("10.0.0.0/8", "https://db.internal/", ("10.0.0.5", "192.168.0.5"),
     "address not allowed: db.internal resolves to 192.168.0.5 (private); it needs an entry in TOOLSMITH_EGRESS_ALLOW"),
    ("127.0.0.0/8", "https://[::ffff:127.0.0.1]/", (),
     "address not allowed: ::ffff:127.0.0.1 (loopback IPv4 127.0.0.1 embedded in IPv6); it needs an entry in TOOLSMITH_EGRESS_ALLOW"),
    ("169.254.0.0/16", "http://169.254.169.254/", (), "metadata address refused: 169.254.169.254"),
    ("0.0.0.0/0", "http://api.example/", ("169.254.170.2",), "metadata address refused: api.example resolves to 169.254.170.2"),
    ("0.0.0.0/0, ::/0", "http://metadata/", (), "metadata address refused: metadata"),
    ("", "ftp://api.example/", (), "only http and https URLs are allowed"),
    ("", "https://2130706433/", (), "IPv4 address in non-standard form: 2130706433"),
    ("", "https://api.example./", (), "host must not end with a dot: api.example."),
])  # fmt: skip
def test_api_policy_refuses(allow: str, url: str, addresses: tuple[str, ...], message: str) -> None:
    with pytest.raises(EgressError) as refused:
        judged(allow, url, *addresses)
    assert str(refused.value) == message


def test_an_api_policy_with_no_scheme_given_judges_as_strictly_as_http() -> None:
    with pytest.raises(EgressError, match="http needs an entry"):
        ApiPolicy(EgressAllow()).check_address("api.example", 443, ipaddress.ip_address("93.184.216.34"))


def test_every_policy_is_told_the_scheme() -> None:
    assert AllowListPolicy(AllowList()).for_scheme("http") == AllowListPolicy(AllowList())
    origin = DeclaredOrigin.of("http://sidecar.local:8080/mcp")
    assert origin.for_scheme("http") is origin
    with pytest.raises(EgressError, match="https is not the scheme of the declared origin http://sidecar.local:8080"):
        origin.for_scheme("https")


def test_a_kept_verdict_is_the_verdict_of_its_own_policy_scheme_and_port() -> None:
    # `ApiPolicy` keeps what it judged (issue 30): what one allow-list, scheme or port let through
    # never lets another through, in any order, and a refusal is a refusal every time.
    loopback = ipaddress.ip_address("127.0.0.1")
    allowing, empty = ApiPolicy(EgressAllow.parse("127.0.0.1:8080")), ApiPolicy(EgressAllow())
    for _ in range(2):
        assert allowing.for_scheme("http").check_name("127.0.0.1", 8080) == loopback
        for policy, scheme, port, message in (
            (empty, "http", 8080, "http needs an entry in TOOLSMITH_EGRESS_ALLOW: 127.0.0.1:8080"),
            (empty, "https", 8080, "address not allowed: 127.0.0.1 (loopback); it needs an entry in TOOLSMITH_EGRESS_ALLOW"),
            (allowing, "http", 8081, "http needs an entry in TOOLSMITH_EGRESS_ALLOW: 127.0.0.1:8081"),
            (allowing, "https", 443, "address not allowed: 127.0.0.1 (loopback); it needs an entry in TOOLSMITH_EGRESS_ALLOW"),
        ):
            with pytest.raises(EgressError) as refused:
                policy.for_scheme(scheme).check_name("127.0.0.1", port)
            assert str(refused.value) == message
        # an address a name resolved to: judged for the name, port and policy it came with
        allowing.for_scheme("https").check_address("api.example", 443, ipaddress.ip_address("93.184.216.34"))
        for port in (80, 443):
            with pytest.raises(EgressError, match="http needs an entry"):
                allowing.for_scheme("http").check_address("api.example", port, ipaddress.ip_address("93.184.216.34"))
        with pytest.raises(EgressError, match="address not allowed: api.example resolves to 127.0.0.1"):
            allowing.for_scheme("https").check_address("api.example", 8080, loopback)
        assert allowing.for_scheme("http").check_address("127.0.0.1", 8080, loopback) is None
    assert allowing.for_scheme("https").for_scheme("http") == allowing
