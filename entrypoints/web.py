"""The FastAPI application factory: routes, problem handlers, body limits and the service lifecycle."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import mcp, problems
from api.edge import HeadAsGet, RequestChecks, Uploads
from api.routes import audit, callers, catalog, changesets, operator, secrets, tokens, tools
from api.schemas import openapi_with_rules
from console import web as console
from console.security import SecurityHeaders
from entrypoints.compose import Services
from projections.runner import health


# What multipart framing adds to the files of an upload (boundaries, part headers).
MULTIPART_ALLOWANCE = 256 * 1024


class BodyLimit:
    """Refuses bodies over `limit` bytes with 413, by Content-Length or while streaming; the limit
    of an upload (to a route of `uploads`) is `upload_limit` (`TOOLSMITH_MAX_UPLOAD_MB`) instead."""

    def __init__(self, app: ASGIApp, limit: int, upload_limit: int | None = None, uploads: Uploads | None = None) -> None:
        self.app = app
        self.default_limit = limit
        self.upload_limit = upload_limit
        self.is_upload = uploads or Uploads()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = self.upload_limit is not None and self.is_upload(scope)
        limit = self.upload_limit + MULTIPART_ALLOWANCE if upload and self.upload_limit is not None else self.default_limit
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._refuse(scope, receive, send, limit, upload)
            return
        received = 0
        started = False
        refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    # Answer 413 now; the app sees a client that went away, and what it sends is dropped.
                    if not started and not refused:
                        refused = True
                        await self._refuse(scope, receive, send, limit, upload)
                    return {"type": "http.disconnect"}
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counting_receive, tracking_send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, limit: int, upload: bool) -> None:
        if upload and self.upload_limit is not None:
            response = problems.problem(413, "upload-too-large", f"the upload is larger than {self.upload_limit // 1_048_576} MB "
                                        "(TOOLSMITH_MAX_UPLOAD_MB)")
        else:
            response = problems.problem(413, "body-too-large", f"the request body is larger than {limit} bytes")
        await response(scope, receive, send)


def create_app(services: Services) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        services.start()
        try:
            # MCP's sessions end before the services they call are closed.
            async with mcp_endpoint.running():
                yield
        finally:
            services.close()

    app = FastAPI(
        title="Toolsmith",
        version="0.1.0",
        summary="A self-hosted, event-sourced repository of JavaScript tools for AI agents",
        lifespan=lifespan,
        # /docs is the console's (Swagger UI from the local bundle, under the CSP); no ReDoc (a CDN).
        docs_url=None,
        redoc_url=None,
    )
    app.state.services = services
    problems.install(app)
    # Each kind of tool's own routes (a module's, a plan's), then the routes every kind shares.
    for plugin in services.plugins:
        for router in plugin.routers:
            app.include_router(router)
    app.include_router(tools.router)
    app.include_router(changesets.router)
    app.include_router(catalog.router_for(services.toolbox.call_types))
    for router in (callers.agents, callers.servers, callers.profiles):
        app.include_router(router)
    app.include_router(tokens.router)
    app.include_router(secrets.router)
    app.include_router(audit.router)
    app.include_router(operator.router)
    mcp_endpoint = mcp.mount(app, services)
    # The admin console (docs/console.md), with each kind's own pages.
    console.mount(app, routers=tuple(router for plugin in services.plugins for router in plugin.console),
                  templates=tuple(plugin.templates for plugin in services.plugins if plugin.templates is not None),
                  navigation=tuple(plugin.navigation for plugin in services.plugins if plugin.navigation is not None))

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, Any]:
        """Liveness and read-model progress; needs no token."""
        read_side = health(services.store, services.runner, max_lag_seconds=services.settings.read_model_max_lag_seconds)
        return {
            **read_side,
            "sandbox": services.settings.sandbox_url or "off",
            # MCP sessions and listen streams told of tool list changes (ended ones are forgotten).
            "mcp": {"watchers": len(mcp_endpoint.watch)},
        }

    # Outermost last: HEAD as GET, the body's size, then what no route may see (api.edge).
    uploads = Uploads(path for plugin in services.plugins for path in plugin.uploads)
    app.add_middleware(RequestChecks, uploads=uploads)
    app.add_middleware(BodyLimit, limit=services.settings.max_body_bytes,
                       upload_limit=services.settings.max_upload_mb * 1_048_576, uploads=uploads)
    app.add_middleware(HeadAsGet)
    app.add_middleware(SecurityHeaders)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = problems.openapi_with_problems(openapi_with_rules(
                get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes),
                rules=tuple(rule for plugin in services.plugins for rule in plugin.path_rules),
            ))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
