"""The `Outbound` port of the application layer (API URL tools and their OAuth token requests) over
this package's `Egress`, with `ApiPolicy`: public `https` hosts, and `http` or private addresses
only through `TOOLSMITH_EGRESS_ALLOW`; metadata never (docs/kinds/api-url-tools.md)."""

from __future__ import annotations

import ssl

import httpcore
import httpx

from domain.ports import Outbound, OutboundError, OutboundRequest, OutboundResponse
from infrastructure.egress.exchange import Egress, NetworkBackend, Request, decoded
from infrastructure.egress.policy import ApiPolicy, EgressConnectError, EgressError, EgressTimeout
from infrastructure.egress.resolve import Resolve, resolve_addresses


class ApiOutbound(Outbound):
    """Every request through one `Egress` under one policy, with the caps of the tool that sends
    it. Connections are kept alive between calls (`KEEP_ALIVE` idle ones at most): each was made to
    an address this policy judged, and every request still checks its URL and addresses first."""

    KEEP_ALIVE = 32

    def __init__(self, policy: ApiPolicy, *, resolve: Resolve = resolve_addresses,
                 network_backend: NetworkBackend | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        self.policy = policy
        # `network_backend` (tests only) makes the TCP connection to a judged address. One TLS
        # context for every call: making one loads the CA bundle (tens of milliseconds).
        self._egress = Egress(policy, resolve=resolve, network_backend=network_backend, ssl_context=ssl_context,
                              keep_alive=self.KEEP_ALIVE)

    def send(self, request: OutboundRequest, *, seconds: float, connect_seconds: float, max_bytes: int,
             max_redirects: int) -> OutboundResponse:
        try:
            url = httpx.URL(request.url)  # checked by `send`, as every redirect hop is
        except (httpx.InvalidURL, ValueError) as e:
            raise OutboundError(f"invalid URL: {e}") from None
        try:
            answer = self._egress.send(Request(url, request.method, dict(request.headers), request.body, request.sensitive),
                                       seconds, connect_seconds=min(connect_seconds, seconds),
                                       max_bytes=max_bytes, max_redirects=max_redirects)
        except EgressTimeout as e:
            raise OutboundError(f"timed out: {e}", "timeout") from None
        except EgressConnectError as e:
            raise OutboundError(f"could not connect: {e}", "connect") from None
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as e:
            raise OutboundError(f"the connection failed: {e or type(e).__name__}", "connect") from None
        except EgressError as e:
            kind = "response" if str(e).startswith(("response body larger", "could not decode", "unsupported content")) else "refused"
            raise OutboundError(str(e), kind) from None
        return OutboundResponse(status=answer.status, headers=decoded(answer.headers), body=answer.body, url=str(answer.url),
                                bytes_read=answer.bytes_read)

    def close(self) -> None:
        self._egress.close()
