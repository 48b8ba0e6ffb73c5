"""The egress path for the MCP SDK's asynchronous `httpx2` client (external MCP tools).

`declared_origin_client` is the `httpx2.AsyncClient` an external MCP tool hands the SDK's
streamable-HTTP client. Its transport:

- lets a request go only to the origin the admin declared (scheme, host and port): the SDK follows
  redirects only within the origin, and this refuses any other request should it try;
- resolves the declared host once per client (one tool call) and pins the answer: every connection
  of the call (handshake, call, the session's DELETE) goes to those addresses, with no second DNS
  lookup. The addresses are trusted as declared: the admin chose them (a sidecar on localhost);
- uses no proxy from the environment (`trust_env=False`, and a transport of its own, which `httpx2`
  never wraps in an environment proxy). The CA bundle named by `SSL_CERT_FILE` or `SSL_CERT_DIR`
  is still trusted, as before: that chooses whom to trust, not where to send;
- bounds every connect, read and write by the call's deadline, and a response body by a cap.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio
import httpcore2
import httpx2

from infrastructure.egress.policy import DeclaredOrigin, EgressError, EgressTimeout, Policy
from infrastructure.egress.resolve import Resolve, judged, resolve_addresses

MAX_RESPONSE_BYTES = 16 * 1_048_576
_DEFAULT_PORTS = {"http": 80, "https": 443}


def declared_origin_client(
    url: str,
    *,
    seconds: float,
    headers: Mapping[str, str] | None = None,
    event_hooks: Mapping[str, list[Callable[..., Any]]] | None = None,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
    resolve: Resolve = resolve_addresses,
    ssl_context: ssl.SSLContext | None = None,
) -> httpx2.AsyncClient:
    """A client for one call to the MCP server at `url` (as declared), within `seconds`.
    Raises EgressError when `url`'s host cannot be compared (it is refused, not guessed at)."""
    try:
        origin = DeclaredOrigin.of(url)
    except (ValueError, httpx2.InvalidURL) as e:
        raise EgressError(f"declared URL cannot be used: {e}") from None
    transport = PinnedTransport(origin, deadline=time.monotonic() + seconds, max_response_bytes=max_response_bytes,
                                resolve=resolve, ssl_context=ssl_context)
    return httpx2.AsyncClient(headers=dict(headers or {}), timeout=httpx2.Timeout(seconds), transport=transport,
                              trust_env=False, event_hooks=dict(event_hooks or {}))


class PinnedTransport(httpx2.AsyncHTTPTransport):
    """`httpx2`'s own transport, with its connection pool over `AsyncPinnedBackend`."""

    def __init__(self, origin: DeclaredOrigin, *, deadline: float, max_response_bytes: int = MAX_RESPONSE_BYTES,
                 resolve: Resolve = resolve_addresses, ssl_context: ssl.SSLContext | None = None,
                 network_backend: httpcore2.AsyncNetworkBackend | None = None) -> None:
        context = ssl_context or httpx2.create_ssl_context()
        super().__init__(verify=context, trust_env=False)
        self.origin = origin
        self.max_response_bytes = max_response_bytes
        self.backend = AsyncPinnedBackend(origin, deadline, resolve=resolve, inner=network_backend)
        # The pool `AsyncHTTPTransport` sends through (its only state), made again over the pinned
        # backend: `AsyncHTTPTransport` takes no network backend of its own. (Should `httpx2` rename
        # it, the pinning test in tests/integration/test_egress.py fails: its name resolves nowhere else.)
        limits = httpx2.Limits()  # httpx2's defaults, as its own pool would have
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=context, network_backend=self.backend, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        self.origin.check(url.scheme, url.raw_host.decode("ascii"), url.port or _DEFAULT_PORTS.get(url.scheme, 0))
        response = await super().handle_async_request(request)
        response.stream = _Capped(response.stream, self.max_response_bytes)  # type: ignore[arg-type]
        return response


class _Capped(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, cap: int) -> None:
        self._inner, self._cap = inner, cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._cap:
                raise EgressError(f"response body larger than {self._cap} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class AsyncPinnedBackend(httpcore2.AsyncNetworkBackend):
    """Connects only to addresses the policy judged for a host, resolved once and pinned, each
    step bounded by one deadline. Refusals raise EgressError; a name that does not resolve and an
    address that does not answer are `httpcore2.ConnectError`s, as for any client."""

    def __init__(self, policy: Policy, deadline: float, *, resolve: Resolve = resolve_addresses,
                 inner: httpcore2.AsyncNetworkBackend | None = None) -> None:
        self._policy, self._deadline, self._resolve = policy, deadline, resolve
        self._inner = inner or httpcore2.AnyIOBackend()
        self._pinned: dict[tuple[str, int], list[str]] = {}
        self._lock = anyio.Lock()

    async def addresses(self, host: str, port: int) -> list[str]:
        async with self._lock:  # two connections opened at once still share one lookup
            if (host, port) not in self._pinned:
                self._pinned[(host, port)] = await self._lookup(host, port)
            return self._pinned[(host, port)]

    async def _lookup(self, host: str, port: int) -> list[str]:
        literal = self._policy.check_name(host, port)
        if literal is not None:
            return [str(literal)]
        try:
            with anyio.fail_after(self._left(httpcore2.ConnectTimeout)):
                answers = await anyio.to_thread.run_sync(self._resolve, host, port, abandon_on_cancel=True)
        except TimeoutError:
            raise httpcore2.ConnectTimeout(f"resolving {host} timed out") from None
        except OSError as e:
            raise httpcore2.ConnectError(f"could not resolve {host}: {e.strerror or e}") from None
        if not answers:
            raise httpcore2.ConnectError(f"could not resolve {host}")
        return judged(self._policy, host, port, list(answers))

    def _left(self, timeout: type[httpcore2.TimeoutException]) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise timeout("deadline passed")
        return remaining

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await self.addresses(host, port)
        except EgressTimeout as e:
            raise httpcore2.ConnectTimeout(str(e)) from None
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = await self._inner.connect_tcp(address, port, timeout=self._bounded(timeout, httpcore2.ConnectTimeout),
                                                       socket_options=socket_options)
                return _AsyncDeadlineStream(stream, self)
            except httpcore2.ConnectError as e:
                failure = e
        raise failure or httpcore2.ConnectError(f"no address for {host}")

    def _bounded(self, timeout: float | None, kind: type[httpcore2.TimeoutException]) -> float:
        remaining = self._left(kind)
        return remaining if timeout is None else min(timeout, remaining)

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> httpcore2.AsyncNetworkStream:
        raise EgressError("unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, min(seconds, self._deadline - time.monotonic())))


class _AsyncDeadlineStream(httpcore2.AsyncNetworkStream):
    def __init__(self, inner: httpcore2.AsyncNetworkStream, backend: AsyncPinnedBackend) -> None:
        self._inner, self._backend = inner, backend

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, self._backend._bounded(timeout, httpcore2.ReadTimeout))

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, self._backend._bounded(timeout, httpcore2.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore2.AsyncNetworkStream:
        bounded = self._backend._bounded(timeout, httpcore2.ConnectTimeout)
        return _AsyncDeadlineStream(await self._inner.start_tls(ssl_context, server_hostname, bounded), self._backend)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)
