"""`GET /metrics` on the service's port (docs/observability.md): the process's metrics in Prometheus'
text format, for the operator's token or `TOOLSMITH_METRICS_TOKEN`; 401 without a token that is
one, 403 for any other (a tenant's admin included). Not a tenant's API: it is left out of the
OpenAPI document. `TOOLSMITH_METRICS_ADDRESS` serves the same without a token on a listener of its own
(`infrastructure.metrics.Metrics.listen`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio.to_thread
from fastapi import HTTPException, Request
from starlette.responses import Response

from api.admission import client_address
from api.deps import bearer_token
from api.services import Services
from application.principals import OPERATOR
from infrastructure.metrics import CONTENT_TYPE

FORBIDDEN = "the metrics are the operator's: send the operator's token or TOOLSMITH_METRICS_TOKEN"


def metrics_endpoint(services: Services) -> Callable[[Request], Awaitable[Response]]:
    metrics = services.metrics

    async def serve(request: Request) -> Response:
        token = bearer_token(request.headers.get("authorization"))
        if not metrics.token_matches(token):
            # 401 (and the failed-authentication count of the address) for a token that is none.
            principal = services.admission.admit(token, client_address(request))
            if principal.role != OPERATOR:
                raise HTTPException(403, FORBIDDEN)
        # Some sources read a database (the read model's lag on PostgreSQL): off the event loop.
        body = await anyio.to_thread.run_sync(metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE)

    return serve
