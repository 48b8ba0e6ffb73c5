"""Resolving a name once, within the request's time, into addresses the policy has judged.

The addresses returned here are the only ones a socket of the egress module connects to
(`connect.py`): a second DNS answer (rebinding) never reaches a socket.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from infrastructure.egress.policy import EgressError, EgressTimeout, Policy, ip

Resolve = Callable[[str, int], list[str]]


def resolve_addresses(host: str, port: int) -> list[str]:
    """Every address the system resolver gives for `host` (the default `resolve`)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


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
