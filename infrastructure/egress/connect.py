"""Sockets to checked addresses only, for `httpcore` (the synchronous egress of `exchange.py`).

`httpcore` asks its network backend for a connection to a host and port; `PinnedBackend` answers
with a connection to an address `resolve.checked_addresses` judged for that host, resolved once per
backend (one exchange: the request and its redirects) and pinned: a later connection to the same
host goes to the same addresses, without asking DNS again. TLS still verifies the certificate
against the name. Every step, reads and writes included, is bounded by one deadline.
"""

from __future__ import annotations

import ssl
import time
from typing import Any

import httpcore

from infrastructure.egress.policy import EgressError, EgressTimeout, Policy
from infrastructure.egress.resolve import Resolve, checked_addresses, resolve_addresses


def _left(deadline: float, timeout: type[httpcore.TimeoutException]) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise timeout("deadline passed")
    return remaining


class PinnedBackend(httpcore.NetworkBackend):
    """Connects only to addresses the policy has judged, and bounds every step by one deadline."""

    def __init__(self, policy: Policy, deadline: float, *, resolve: Resolve = resolve_addresses,
                 inner: httpcore.NetworkBackend | None = None) -> None:
        # `inner` (tests only) makes the TCP connection to an address already judged.
        self._policy, self._deadline, self._resolve = policy, deadline, resolve
        self._inner = inner or httpcore.SyncBackend()
        self._pinned: dict[tuple[str, int], list[str]] = {}

    def addresses(self, host: str, port: int) -> list[str]:
        """The judged addresses for `host`, resolved on first use and pinned from then on."""
        key = (host, port)
        if key not in self._pinned:
            try:
                self._pinned[key] = checked_addresses(self._policy, host, port, self._deadline, self._resolve)
            except EgressTimeout as e:
                raise httpcore.ConnectTimeout(str(e)) from None
        return self._pinned[key]

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        addresses = self.addresses(host, port)
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(address, port, timeout=_left(self._deadline, httpcore.ConnectTimeout), socket_options=socket_options)
                return _DeadlineStream(stream, self._deadline)
            except httpcore.ConnectError as e:
                failure = e
        raise failure or httpcore.ConnectError(f"no address for {host}")

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> httpcore.NetworkStream:
        raise EgressError("unix sockets are not allowed")

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, min(seconds, self._deadline - time.monotonic())))


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(self._deadline, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(self._deadline, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        remaining = _left(self._deadline, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, remaining), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
