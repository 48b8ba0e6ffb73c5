"""Resolving a name once, within the request's time, into addresses the policy has judged.

The addresses returned here are the only ones a socket of the egress module connects to
(`connect.py`): a second DNS answer (rebinding) never reaches a socket.

Names are resolved by the system resolver, or, when `TOOLSMITH_EGRESS_NAMESERVER` names a DNS
server (`ip:port`: tests and operators), by asking that server for the name's A and AAAA records,
with no search domains, no hosts file and no cache of its own: what it answers is what is judged.

An answer is reused for a while (`KeptAnswers`): for its TTL when a DNS server gave one (a TTL of 0
is not reused), `SYSTEM_ANSWER_SECONDS` for the system resolver's (which gives none), so that a
call to a named API does not pay a lookup and a thread each time (issue 30). A reused answer is
judged again by every exchange, and only its judged addresses are connected to: reuse never lets
an address through that a lookup now would not, and a name that rebinds keeps its older, judged
answer until the reuse ends. A failed lookup is never kept.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from infrastructure.egress.policy import EgressError, EgressTimeout, Policy, ip

Resolve = Callable[[str, int], list[str]]

NAMESERVER_ENV = "TOOLSMITH_EGRESS_NAMESERVER"
_NAMESERVER_SECONDS = 5.0  # one question's limit; the request's deadline still bounds the whole lookup
SYSTEM_ANSWER_SECONDS = 5.0  # how long the system resolver's answer is reused (it says no TTL)
KEPT_NAMES = 1_024


class KeptAnswers:
    """What lookups answered, by name, port and the resolver asked, each until its time is up;
    the least recently used dropped beyond `KEPT_NAMES`."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, int, str], tuple[float, list[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int, str]) -> list[str] | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            if time.monotonic() >= found[0]:
                del self._kept[key]
                return None
            self._kept.move_to_end(key)
            return list(found[1])

    def put(self, key: tuple[str, int, str], answers: list[str], seconds: float) -> None:
        if seconds <= 0 or not answers:
            return
        with self._lock:
            self._kept[key] = (time.monotonic() + seconds, list(answers))
            self._kept.move_to_end(key)
            while len(self._kept) > KEPT_NAMES:
                self._kept.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


KEPT = KeptAnswers()


def resolve_addresses(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (the default `resolve`): the system resolver's answers,
    or those of the DNS server `TOOLSMITH_EGRESS_NAMESERVER` names, reused while `KEPT` keeps
    them. Raises socket.gaierror (an OSError) when the name has no address."""
    nameserver = os.environ.get(NAMESERVER_ENV, "").strip()
    kept = KEPT.get((host, port, nameserver))
    if kept is not None:
        return kept
    if nameserver:
        found, seconds = _asked(parse_nameserver(nameserver), host)
    else:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        found, seconds = list(dict.fromkeys(str(info[4][0]) for info in infos)), SYSTEM_ANSWER_SECONDS
    KEPT.put((host, port, nameserver), found, seconds)
    return found


def kept_addresses(host: str, port: int) -> list[str] | None:
    """`resolve_addresses`' answer while it is kept, without a lookup; else None."""
    return KEPT.get((host, port, os.environ.get(NAMESERVER_ENV, "").strip()))


@functools.lru_cache(maxsize=4)
def parse_nameserver(text: str) -> tuple[str, int]:
    """`ip:port` (`[::1]:5353` for IPv6) as (address, port); ValueError saying what is wrong."""
    address, colon, port = text.strip().rpartition(":")
    bracketed = address.startswith("[") and address.endswith("]")
    address = address[1:-1] if bracketed else address
    if not colon or ip(address) is None or ":" in address and not bracketed or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{NAMESERVER_ENV} must be an IP address and a port (127.0.0.1:5353, [::1]:5353), not {text!r}")
    return str(ip(address)), int(port)


def _asked(nameserver: tuple[str, int], host: str) -> tuple[list[str], float]:
    """The A and AAAA answers of one DNS server for `host`, in that order, and the shortest TTL
    among them (seconds they may be reused)."""
    import dns.exception
    import dns.resolver

    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers, resolver.port = [nameserver[0]], nameserver[1]
    resolver.lifetime = resolver.timeout = _NAMESERVER_SECONDS
    found: list[str] = []
    ttls: list[float] = []
    for kind in ("A", "AAAA"):
        try:
            answer = resolver.resolve(host.rstrip(".") + ".", kind, search=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer, dns.resolver.NoNameservers):
            continue
        except dns.exception.DNSException as e:
            raise socket.gaierror(socket.EAI_AGAIN, f"{nameserver[0]} did not answer for {host}: {type(e).__name__}") from None
        found += [record.to_text() for record in answer]
        ttls.append(answer.rrset.ttl if answer.rrset is not None else 0)
    if not found:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return list(dict.fromkeys(found)), float(min(ttls, default=0))


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
    if resolve is resolve_addresses:
        kept = kept_addresses(host, port)
        if kept is not None:  # no lookup, so no thread: judged by the caller as any answer is
            return kept
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
