"""Resolving a name once, within the request's time, into addresses the policy has judged.

The addresses returned here are the only ones a socket of the egress module connects to
(`connect.py`): a second DNS answer (rebinding) never reaches a socket.

Names are resolved by the system resolver, or, when `TOOLSMITH_EGRESS_NAMESERVER` names a DNS
server (`ip:port`: tests and operators), by asking that server for the name's A and AAAA records,
with no search domains, no hosts file and no cache: what it answers is what is judged.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from infrastructure.egress.policy import EgressError, EgressTimeout, Policy, ip

Resolve = Callable[[str, int], list[str]]

NAMESERVER_ENV = "TOOLSMITH_EGRESS_NAMESERVER"
_NAMESERVER_SECONDS = 5.0  # one question's limit; the request's deadline still bounds the whole lookup


def resolve_addresses(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the default `resolve`): the system resolver's answers,
    or those of the DNS server `TOOLSMITH_EGRESS_NAMESERVER` names. Raises socket.gaierror (an
    OSError) when the name has no address."""
    nameserver = os.environ.get(NAMESERVER_ENV, "").strip()
    if nameserver:
        return _asked(parse_nameserver(nameserver), host)
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@functools.lru_cache(maxsize=4)
def parse_nameserver(text: str) -> tuple[str, int]:
    """`ip:port` (`[::1]:5353` for IPv6) as (address, port); ValueError saying what is wrong."""
    address, colon, port = text.strip().rpartition(":")
    bracketed = address.startswith("[") and address.endswith("]")
    address = address[1:-1] if bracketed else address
    if not colon or ip(address) is None or ":" in address and not bracketed or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{NAMESERVER_ENV} must be an IP address and a port (127.0.0.1:5353, [::1]:5353), not {text!r}")
    return str(ip(address)), int(port)


def _asked(nameserver: tuple[str, int], host: str) -> list[str]:
    """The A and AAAA answers of one DNS server for `host`, in that order."""
    import dns.exception
    import dns.resolver

    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers, resolver.port = [nameserver[0]], nameserver[1]
    resolver.lifetime = resolver.timeout = _NAMESERVER_SECONDS
    found: list[str] = []
    for kind in ("A", "AAAA"):
        try:
            answer = resolver.resolve(host.rstrip(".") + ".", kind, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer, dns.resolver.NoNameservers):
            continue
        except dns.exception.DNSException as e:
            raise socket.gaierror(socket.EAI_AGAIN, f"{nameserver[0]} did not answer for {host}: {type(e).__name__}") from None
        found += [record.to_text() for record in answer]
    if not found:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return list(dict.fromkeys(found))


def left(deadline: float) -> float:
    """Seconds until `deadline` (time.monotonic()), or EgressTimeout once it has passed."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise EgressTimeout("deadline passed")
    return remaining


def judged(policy: Policy, host: str, port: int, answers: list[str]) -> list[str]:
    """The resolver's answers for `host`, every one judged, in its order; else EgressError."""
    if not answers:
        raise EgressError(f"could not resolve {host}")
    found = []
    for answer in answers:
        address = ip(answer)
        if address is None:
            raise EgressError(f"address not allowed: {host} resolves to {answer}")
        policy.check_address(host, port, address)
        found.append(str(address))  # the socket gets exactly what was judged
    return found


def resolve_before(resolve: Resolve, host: str, port: int, deadline: float) -> list[str]:
    """`resolve(host, port)`'s answers, unjudged; EgressTimeout at `deadline`, EgressError when
    the name does not resolve."""
    # The system resolver cannot be interrupted: it runs in a thread left behind at the deadline.
    box: list[Any] = []

    def work() -> None:
        try:
            box.append(list(resolve(host, port)))
        except Exception as e:  # reported below, in the caller's thread
            box.append(e)

    remaining = left(deadline)
    worker = threading.Thread(target=work, name="egress-resolve", daemon=True)
    worker.start()
    worker.join(remaining)
    if not box:
        raise EgressTimeout("resolving timed out")
    if isinstance(box[0], Exception):
        raise EgressError(f"could not resolve {host}")
    return box[0]
