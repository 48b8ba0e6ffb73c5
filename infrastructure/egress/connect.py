"""Sockets to checked addresses only, for `httpcore` (the synchronous egress of `exchange.py`).

Before each request of an exchange (the first and every redirect hop), `PinnedBackend.check`
judges the addresses of the request's host with the policy for the request's scheme: the name is
resolved once per backend (one exchange) and its answers pinned, so a later hop to the same host
goes to the same addresses without asking DNS again. `httpcore` then asks for a connection to that
host and port, and gets one to a judged address, or none. TLS still verifies the certificate
against the name. Every step, reads and writes included, is bounded by one deadline; connecting
(resolving, TCP and TLS) may have a shorter one of its own.
"""

from __future__ import annotations

import ssl
import threading
import time
from typing import Any

import httpcore

from infrastructure.egress.policy import EgressError, Policy, netloc
from infrastructure.egress.resolve import Resolve, judged, resolve_addresses, resolve_before


def _left(deadline: float, timeout: type[httpcore.TimeoutException]) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise timeout("deadline passed")
    return remaining


class _Exchange:
    """One exchange's state: its deadlines, what DNS said, what each hop may connect to."""

    def __init__(self, deadline: float, connect_seconds: float | None) -> None:
        self.deadline = self.connect_deadline = deadline
        self.connect_seconds = connect_seconds
        self.answers: dict[tuple[str, int], list[str]] = {}  # what DNS said, once per host and port
        self.judged: dict[tuple[str, int], list[str]] = {}  # what the request being sent may connect to


class PinnedBackend(httpcore.NetworkBackend):
    """Connects only to addresses `check` has judged, and bounds every step by one deadline.

    A backend made for one exchange (`deadline` given) serves that exchange alone. A shared
    backend (no `deadline`: the one under a pool that keeps connections alive) serves many, each
    thread's own started by `begin`; a connection kept alive was made to an address judged by the
    same policy, and its reads and writes are bounded by the deadline of whichever exchange uses it."""

    def __init__(self, deadline: float | None = None, *, resolve: Resolve = resolve_addresses, connect_seconds: float | None = None,
                 inner: httpcore.NetworkBackend | None = None) -> None:
        # `inner` (tests only) makes the TCP connection to an address already judged.
        self._resolve = resolve
        self._inner = inner or httpcore.SyncBackend()
        self._local = threading.local()
        self._only = _Exchange(deadline, connect_seconds) if deadline is not None else None

    def begin(self, deadline: float, connect_seconds: float | None = None) -> None:
        """Starts this thread's exchange on a shared backend."""
        self._local.exchange = _Exchange(deadline, connect_seconds)

    @property
    def exchange(self) -> _Exchange:
        if self._only is not None:
            return self._only
        exchange = getattr(self._local, "exchange", None)
        if exchange is None:
            raise EgressError("no exchange was started on this thread")
        return exchange

    def check(self, policy: Policy, host: str, port: int) -> list[str]:
        """Before each request: the addresses `policy` (the request's, for its scheme) lets it
        connect to for `host`, resolved on first use and pinned from then on; else EgressError
        (EgressTimeout when time ran out). The time to connect starts now."""
        exchange = self.exchange
        if exchange.connect_seconds is not None:
            exchange.connect_deadline = min(exchange.deadline, time.monotonic() + exchange.connect_seconds)
        key = (host, port)
        literal = policy.check_name(host, port)
        if literal is not None:
            exchange.judged[key] = [str(literal)]
        else:
            if key not in exchange.answers:
                exchange.answers[key] = resolve_before(self._resolve, host, port, exchange.connect_deadline)
            exchange.judged[key] = judged(policy, host, port, exchange.answers[key])
        return exchange.judged[key]

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        exchange = self.exchange
        addresses = exchange.judged.get((host, port))
        if addresses is None:  # a connection nobody checked: never made
            raise EgressError(f"{netloc(host, port)} was not checked")
        connect_deadline = exchange.connect_deadline
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(address, port, timeout=_left(connect_deadline, httpcore.ConnectTimeout), socket_options=socket_options)
                return _DeadlineStream(stream, self)
            except httpcore.ConnectError as e:
                failure = e
        raise failure or httpcore.ConnectError(f"no address for {host}")

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        raise EgressError("unix sockets are not allowed")

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self.exchange.deadline - time.monotonic())))


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every step is bounded by the deadline of the exchange using it."""

    def __init__(self, inner: httpcore.NetworkStream, backend: PinnedBackend) -> None:
        self._inner, self._backend = inner, backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(self._backend.exchange.deadline, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(self._backend.exchange.deadline, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        # the TLS handshake is part of connecting
        remaining = _left(self._backend.exchange.connect_deadline, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, remaining), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
