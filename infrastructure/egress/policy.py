"""What an outbound request may reach (docs/kinds/api-url-tools.md, "One egress path"): hosts, ports and addresses.

Three policies. `AllowListPolicy` is `http.fetch`'s: the host must be on the allow-list
(`CODESANDBOX_ALLOWED_DOMAINS`), and every address it resolves to must be public unless the entry
names the host and port exactly; metadata addresses never. `DeclaredOrigin` is an external MCP
tool's: the admin declared the URL in the tools file, so its addresses are trusted as declared (a
sidecar on localhost is fine), metadata addresses excepted, and nothing else is reachable: no other
host, port or scheme.
`ApiPolicy` is an API URL tool's: any public `https` host; `http`, and any address that is not
public, only through an entry of `TOOLSMITH_EGRESS_ALLOW` (`EgressAllow`); metadata never.

The checks here are pure: resolving and connecting are `resolve.py` and `connect.py`.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass, replace
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from typing import Protocol

import httpx
import idna

Address = IPv4Address | IPv6Address


class EgressError(Exception):
    """Why an outbound request was refused or failed; the message is said to whoever asked (the
    JavaScript `Error` of `http.fetch`, the error of an MCP tool call): it names no header."""


class EgressTimeout(EgressError):
    """The request's time ran out (resolving, connecting, sending or reading)."""


class EgressConnectError(EgressError):
    """No connection could be made to a checked address (refused, unreachable, TLS failed)."""


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


def is_metadata(address: Address) -> bool:
    """A cloud metadata address, in any form: refused whatever an allow-list says."""
    verdict = judge(address)
    return verdict is not None and verdict[1]


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


def ip(host: str) -> Address | None:
    """`host` as an address, or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def port_of(url: httpx.URL) -> int:
    return url.port if url.port is not None else (443 if url.scheme == "https" else 80)


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


@dataclass(frozen=True)
class EgressAllow:
    """What API URL tools may reach beyond public `https` hosts (`TOOLSMITH_EGRESS_ALLOW`).

    Comma-separated entries, each `host:port` (IPv6 in brackets: `[::1]:8080`) or a CIDR
    (`10.0.0.0/8`, `127.0.0.1/32`, `::1/128`). `host:port` lets that host and port be reached over
    `http` or `https` at whatever it resolves to; a CIDR lets any host and port be reached when
    every address it resolves to is inside. Neither lets a metadata address through, so an entry
    naming one is refused when read, as are a bare host (no port: which one?) and a network written
    with host bits set (`10.0.0.1/8`: a typo for a host or for a network?).
    """

    exact: frozenset[tuple[str, int]] = frozenset()
    networks: tuple[IPv4Network | IPv6Network, ...] = ()

    @classmethod
    def parse(cls, text: str) -> EgressAllow:
        """The setting's entries; ValueError naming the first bad one."""
        exact: set[tuple[str, int]] = set()
        networks: list[IPv4Network | IPv6Network] = []
        for raw in text.split(","):
            entry = raw.strip()
            if not entry:
                continue
            try:
                if "/" in entry:
                    networks.append(_network(entry))
                else:
                    exact.add(_host_and_port(entry))
            except ValueError as e:
                raise ValueError(f"bad TOOLSMITH_EGRESS_ALLOW entry {entry!r}: {e}") from None
        return cls(frozenset(exact), tuple(dict.fromkeys(networks)))

    def names_exactly(self, host: str, port: int) -> bool:
        key = _key(host)
        return key is not None and (key, port) in self.exact

    def covers(self, address: Address) -> bool:
        if isinstance(address, IPv6Address) and address.scope_id:
            address = IPv6Address(int(address))
        return any(address.version == network.version and address in network for network in self.networks)


def _network(entry: str) -> IPv4Network | IPv6Network:
    if "%" in entry:
        raise ValueError("IPv6 zone identifiers are not allowed")
    return ipaddress.ip_network(entry, strict=True)


def _host_and_port(entry: str) -> tuple[str, int]:
    host, port = _split_entry(entry)
    if port is None:
        raise ValueError("expected host:port ([IPv6]:port) or a CIDR such as 10.0.0.0/8")
    key = normal_host(host)
    address = ip(key)
    if key in METADATA_NAMES or address is not None and is_metadata(address):
        raise ValueError("metadata addresses are never reachable")
    return key, port


# -- policies --------------------------------------------------------------------------------------


class Policy(Protocol):
    """What a request may reach. Every check raises `EgressError` saying why not."""

    def for_scheme(self, scheme: str) -> Policy:
        """The policy for one request (a URL or a redirect hop) with this scheme: what judges its
        host and addresses, since a policy may let `https` reach what `http` may not."""

    def check_name(self, host: str, port: int) -> Address | None:
        """Everything that can be judged before resolving; the address if `host` is one."""

    def check_address(self, host: str, port: int, address: Address) -> None:
        """One address `host` resolved to: a socket may connect to it, or EgressError."""


def checked_url(text: str, policy: Policy) -> httpx.URL:
    """`text` as a URL the policy lets a request go to: the first request and every redirect hop."""
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError) as e:
        raise EgressError(f"invalid URL: {e}") from None
    return check_url(url, policy)


def check_url(url: httpx.URL, policy: Policy) -> httpx.URL:
    """`checked_url` of a URL already parsed."""
    if url.scheme not in ("http", "https"):
        raise EgressError("only http and https URLs are allowed")
    if url.userinfo:
        raise EgressError("URLs with user info (user@host) are not allowed")
    policy.for_scheme(url.scheme).check_name(url.raw_host.decode("ascii"), port_of(url))
    return url


def _common_name_checks(host: str, port: int) -> str:
    """The checks every policy makes first; the normal form of `host`."""
    if not host:
        raise EgressError("URL has no host")
    if not 1 <= port <= 65535:
        raise EgressError(f"bad port {port}")
    if host.endswith("."):
        raise EgressError(f"host must not end with a dot: {host}")
    try:
        return normal_host(host)
    except ValueError as e:
        raise EgressError(str(e)) from None


@dataclass(frozen=True)
class AllowListPolicy:
    """`http.fetch`'s: allow-listed hosts only, public addresses only unless the allow-list names
    the host and port exactly, metadata never."""

    allow: AllowList

    def for_scheme(self, scheme: str) -> AllowListPolicy:
        if scheme not in ("http", "https"):
            raise EgressError("only http and https URLs are allowed")
        return self

    def check_name(self, host: str, port: int) -> Address | None:
        key = _common_name_checks(host, port)
        if key in METADATA_NAMES:
            raise EgressError(f"metadata address refused: {host}")
        address = ip(key)
        verdict = judge(address) if address is not None else None
        if verdict is not None and verdict[1]:
            raise EgressError(f"metadata address refused: {host}")
        if not self.allow.allows(key, port):
            raise EgressError(f"domain not allowed: {netloc(host, port)}")
        if address is not None:
            self.check_address(host, port, address)
        return address

    def check_address(self, host: str, port: int, address: Address) -> None:
        verdict = judge(address)
        if verdict is None:
            return
        why, always = verdict
        where = host if ip(host) == address else f"{host} resolves to {address}"
        if always:
            raise EgressError(f"metadata address refused: {where}")
        if not self.allow.names_exactly(host, port):
            raise EgressError(f"address not allowed: {where} ({why})")


@dataclass(frozen=True)
class DeclaredOrigin:
    """An external MCP tool's: the scheme, host and port of the URL the admin declared, and
    nothing else. Its addresses are trusted as declared (private and loopback included): the admin
    chose them, not the model or the remote server. A cloud metadata name or address never, as for
    every other request (docs/kinds/api-url-tools.md): the credentials it hands out are the machine's, and a name
    that resolves there, or rebinds there between calls, is no more declared than the address."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> DeclaredOrigin:
        parsed = httpx.URL(url)
        return cls(parsed.scheme, normal_host(parsed.raw_host.decode("ascii")), port_of(parsed))

    def __str__(self) -> str:
        return f"{self.scheme}://{netloc(self.host, self.port)}"

    def check(self, scheme: str, host: str, port: int) -> None:
        """A request's URL (the first one and any redirect the client follows): on the origin."""
        self.check_name(host, port)
        if scheme != self.scheme:
            raise EgressError(f"{scheme}://{netloc(host, port)} is not the declared origin {self}")

    def for_scheme(self, scheme: str) -> DeclaredOrigin:
        if scheme != self.scheme:
            raise EgressError(f"{scheme} is not the scheme of the declared origin {self}")
        return self

    def check_name(self, host: str, port: int) -> Address | None:
        key = _common_name_checks(host, port)
        if (key, port) != (self.host, self.port):
            raise EgressError(f"{netloc(host, port)} is not the declared origin {self}")
        address = ip(key)
        if key in METADATA_NAMES or address is not None and is_metadata(address):
            raise EgressError(f"metadata address refused: {host}")
        return address

    def check_address(self, host: str, port: int, address: Address) -> None:
        if is_metadata(address):
            where = host if ip(host) == address else f"{host} resolves to {address}"
            raise EgressError(f"metadata address refused: {where}")


@dataclass(frozen=True)
class ApiPolicy:
    """An API URL tool's (docs/kinds/api-url-tools.md): any public `https` host. `http` (any host), and any
    address that is not public, only through `allow`: an entry naming the URL's host and port
    exactly, or CIDRs holding every address the host resolves to. Metadata names and addresses
    never, whatever `allow` says.

    `scheme` is the request's, set by `for_scheme` (through which `checked_url` and every redirect
    hop pass); left unset, addresses are judged as strictly as for `http`."""

    allow: EgressAllow
    scheme: str = "http"

    # Every verdict of this policy depends on the policy (immutable: the settings'), the scheme,
    # and the name, port and address judged, nothing else; so each verdict that lets a request
    # through is kept (`_checked_name`, `_checked_address`, bounded): a call judges its URL's name
    # twice (the URL, then the hop) and the same few names and addresses come back call after
    # call (issue 30: ~45 µs a call). A refusal is not kept: it is judged again and raised each
    # time. What a name resolves to is never kept here: each exchange resolves it and has its
    # answers judged, and connects to those alone (`connect.py`).

    def for_scheme(self, scheme: str) -> ApiPolicy:
        if scheme not in ("http", "https"):
            raise EgressError("only http and https URLs are allowed")
        return self if scheme == self.scheme else _with_scheme(self, scheme)

    def check_name(self, host: str, port: int) -> Address | None:
        return _checked_name(self, host, port)

    def check_address(self, host: str, port: int, address: Address) -> None:
        _checked_address(self, host, port, address)

    def _check_name(self, host: str, port: int) -> Address | None:
        key = _common_name_checks(host, port)
        address = ip(key)
        if key in METADATA_NAMES or address is not None and is_metadata(address):
            raise EgressError(f"metadata address refused: {host}")
        if self.scheme != "https" and not self.allow.names_exactly(key, port) and not self.allow.networks:
            # no entry could let it through, whatever the name resolves to: refused before resolving
            raise EgressError(f"http needs an entry in TOOLSMITH_EGRESS_ALLOW: {netloc(host, port)}")
        if address is not None:
            self.check_address(host, port, address)
        return address

    def _check_address(self, host: str, port: int, address: Address) -> None:
        verdict = judge(address)
        where = host if ip(host) == address else f"{host} resolves to {address}"
        if verdict is not None and verdict[1]:
            raise EgressError(f"metadata address refused: {where}")
        if self.allow.names_exactly(host, port) or self.allow.covers(address):
            return
        if verdict is not None:
            raise EgressError(f"address not allowed: {where} ({verdict[0]}); it needs an entry in TOOLSMITH_EGRESS_ALLOW")
        if self.scheme != "https":
            resolved = "" if ip(host) == address else f" ({host} resolves to {address})"
            raise EgressError(f"http needs an entry in TOOLSMITH_EGRESS_ALLOW: {netloc(host, port)}{resolved}")


# -- `ApiPolicy`'s verdicts, kept ------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _with_scheme(policy: ApiPolicy, scheme: str) -> ApiPolicy:
    return replace(policy, scheme=scheme)


@functools.lru_cache(maxsize=4_096)
def _checked_name(policy: ApiPolicy, host: str, port: int) -> Address | None:
    return policy._check_name(host, port)


@functools.lru_cache(maxsize=4_096)
def _checked_address(policy: ApiPolicy, host: str, port: int, address: Address) -> None:
    policy._check_address(host, port, address)
