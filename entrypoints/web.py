"""The FastAPI application factory: routes, problem handlers, the edge (body limits, checks, security
headers, the access log) and the service lifecycle."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from time import perf_counter, time_ns
from typing import Any

import anyio.to_thread
import orjson
from fastapi import FastAPI, Request
from fastapi.openapi.utils import get_openapi
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.propagators.textmap import Getter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import mcp, oauth, problems
from api.direct import ROUTE_TEMPLATE, HotRoute, serve_directly
from api.edge import RequestHead, Uploads, body_is_checked, body_refusal, refusal_before_body, upload_refusal
from api.metrics import metrics_endpoint
from api.routes import audit, callers, calls, catalog, changesets, operator, secrets, tokens, tools
from api.routes import users as people
from api.schemas import openapi_with_rules
from console import web as console
from console.security import secure
from entrypoints.compose import Services
from infrastructure import logs, tracing
from infrastructure.metrics import UNMATCHED, Metrics
from projections.runner import health


class _AsgiHeaders(Getter[list[tuple[bytes, bytes]]]):
    """The W3C trace context's headers (`traceparent`, `tracestate`) of an ASGI scope's."""

    def get(self, carrier: list[tuple[bytes, bytes]], key: str) -> list[str] | None:
        wanted = key.encode("latin-1")
        found = [value.decode("latin-1") for name, value in carrier if name == wanted]
        return found or None

    def keys(self, carrier: list[tuple[bytes, bytes]]) -> list[str]:
        return [name.decode("latin-1") for name, _ in carrier]


_HEADERS = _AsgiHeaders()
_TRACER = trace.get_tracer("toolsmith")


def _meta_context(body: bytes) -> Any:
    """The trace context of a JSON-RPC request's `params._meta` (`traceparent`, `tracestate`: the
    MCP 2026-07-28 spec's place), or None: the body is parsed only when it names a `traceparent`."""
    if b'"traceparent"' not in body:
        return None
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    params = request.get("params") if isinstance(request, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or not isinstance(meta.get("traceparent"), str):
        return None
    carrier = {key: meta[key] for key in ("traceparent", "tracestate") if isinstance(meta.get(key), str)}
    context = propagate.extract(carrier)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


# What multipart framing adds to the files of an upload (boundaries, part headers).
MULTIPART_ALLOWANCE = 256 * 1024


class Edge:
    """What every HTTP request passes before the app, and every response after it, in one layer
    (issue 30: one wrapper of a request's `receive` and `send` rather than one per concern), in
    the order separate middlewares had: outermost first,

    - every response gets the security headers (`console.security.secure`, docs/security.md), and
      one access-log line (`infrastructure.logs.log_access`, when its level is on), written once
      the answer is on its way, so that no client waits for it;
    - `HEAD` is served as `GET` with the body left out (FastAPI routes declare `GET` only): the
      response ends as soon as its head is sent, so a streaming `GET` does not keep a `HEAD` open;
      the app is then told the client is gone;
    - a body over `limit` bytes is refused with 413, by Content-Length or while streaming; an
      upload's (to a route of `uploads`) limit is `upload_limit` (`TOOLSMITH_MAX_UPLOAD_MB`) instead;
    - what no route may see is refused (`api.edge`): a JSON body is read whole, checked, and handed
      to the app as one message; an upload is streamed to its route, checked for its media type only;
    - each request is counted in `metrics` (docs/observability.md), by its route's template, once it ends."""

    def __init__(self, app: ASGIApp, limit: int, upload_limit: int | None = None, uploads: Uploads | None = None,
                 metrics: Metrics | None = None) -> None:
        self.app = app
        self.metrics = metrics
        self.default_limit = limit
        self.upload_limit = upload_limit
        self.is_upload = uploads or Uploads()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if tracing.ON:
            await self._traced(scope, receive, send)
            return
        await self._served(scope, receive, send)

    async def _traced(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The request in its span (docs/observability.md), continuing the trace of its
        `traceparent` header, or else, for an MCP request, of its `params._meta` (the span then
        begins once the edge has read the body, dated from the request's arrival): the access-log
        line, written inside it, carries the trace id the MCP request's own span continues."""
        method = scope["method"]
        root = scope.get("root_path", "")
        parent = propagate.extract(scope["headers"], getter=_HEADERS)
        began = time_ns()
        span: Any = None
        token: Any = None
        status = 0

        def begin(context: Any) -> None:
            nonlocal span, token
            span = _TRACER.start_span(f"HTTP {method}", context=context, kind=SpanKind.SERVER, start_time=began, attributes={
                "http.request.method": method, "url.path": scope["path"], "url.scheme": scope.get("scheme", "http"),
                "network.protocol.version": scope.get("http_version", "1.1")})
            token = otel_context.attach(trace.set_span_in_context(span))

        source = receive
        path = scope["path"]
        if method == "POST" and (path == "/mcp" or path.startswith("/mcp/")) and not trace.get_current_span(parent).get_span_context().is_valid:
            async def source() -> Message:  # the edge reads an MCP body whole, in this task, before the app
                message = await receive()
                if span is None:
                    begin(_meta_context(message.get("body", b"")) if message["type"] == "http.request" else None)
                return message
        else:
            begin(parent)

        async def sending(message: Message) -> None:
            nonlocal status
            if span is None:
                begin(parent)
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        failed: BaseException | None = None
        try:
            await self._served(scope, source, sending)
        except BaseException as error:
            failed = error
            raise
        finally:
            if span is None:
                begin(parent)
            if failed is not None:
                span.set_attribute("error.type", type(failed).__qualname__)
                span.set_status(StatusCode.ERROR)
            # The route's template as the metrics label it (a mount's prefix included), else the route's own.
            template: str | None = self.metrics.route_label(scope, root) if self.metrics is not None else None
            if template is None or template == UNMATCHED:
                template = getattr(scope.get("route"), "path", None) or scope.get(ROUTE_TEMPLATE)
            if template is not None:
                span.update_name(f"HTTP {method} {template}")
                span.set_attribute("http.route", template)
            if status:
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(StatusCode.ERROR)
            otel_context.detach(token)
            span.end()

    async def _served(self, scope: Scope, receive: Receive, send: Send) -> None:
        began = perf_counter()
        asked = scope
        root = scope.get("root_path", "")  # the route's template is read after the app, its mounts' prefix past this
        head_only = scope["method"] == "HEAD"
        if head_only:
            scope = {**scope, "method": "GET"}
        # The access-log line is written once the answer is on its way (after the body's first
        # message is sent: the whole body, or a stream's first part), so the client does not wait
        # for it; its duration is to the response's head.
        logging_on = logs.ACCESS.isEnabledFor(logging.INFO)
        status = 0
        took = 0.0
        answered = False
        logged = False
        ended = False  # a HEAD's head is sent: the rest is dropped, and the app told the client is gone

        async def respond(message: Message) -> None:
            nonlocal answered, ended, status, took, logged
            if message["type"] == "http.response.start":
                secure(message)
                answered = True
                status, took = message["status"], perf_counter() - began
                if head_only:
                    if not ended:
                        await send(message)
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                        ended = True
                        if logging_on and not logged:
                            logged = True
                            logs.log_access(asked, status, took)
                    return
            elif head_only and (ended or message["type"] == "http.response.body"):
                return
            await send(message)
            if logging_on and answered and not logged and message["type"] == "http.response.body":
                logged = True
                logs.log_access(asked, status, took)

        source = receive
        if head_only:
            async def source() -> Message:
                return {"type": "http.disconnect"} if ended else await receive()

        try:
            await self._checked(scope, receive, source, respond)
        except Exception:
            # The app failed before it answered: ServerErrorMiddleware, outside, answers 500.
            if logging_on and not answered:
                logged = True
                logs.log_access(asked, 500, perf_counter() - began)
            raise
        finally:
            if logging_on and answered and not logged:  # a head with no body sent after it (the client left)
                logs.log_access(asked, status, took)
            metrics = self.metrics
            if metrics is not None and metrics.on:
                metrics.request_done(metrics.route_label(scope, root), asked["method"], status if answered else 500,
                                     took if answered else perf_counter() - began)

    async def _checked(self, scope: Scope, receive: Receive, source: Receive, respond: Send) -> None:
        """The body's size and the checks; then the app (`source` is the client's messages, as the app may see them)."""
        head = RequestHead(scope)
        upload = self.upload_limit is not None and self.is_upload(scope)
        limit = self.upload_limit + MULTIPART_ALLOWANCE if upload and self.upload_limit is not None else self.default_limit
        declared = head.declared_length()
        if declared is not None and declared > limit:
            await self._refuse(scope, receive, respond, limit, upload)
            return
        refusal = refusal_before_body(scope, head)
        if refusal is not None:
            await refusal(scope, receive, respond)
            return
        checked = body_is_checked(scope)
        if upload or not checked:
            if checked:  # an upload, to a path that takes it
                refusal = upload_refusal(head)
                if refusal is not None:
                    await refusal(scope, receive, respond)
                    return
            await self._streamed(scope, source, respond, limit, upload)
            return
        # The whole body, bounded, then replayed to the app as one message.
        chunks: list[bytes] = []
        received = 0
        ending: Message | None = None
        while True:
            message = await source()
            if message["type"] != "http.request":
                ending = message
                break
            chunk = message.get("body", b"")
            received += len(chunk)
            if received > limit:
                await self._refuse(scope, receive, respond, limit, upload)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if ending is None:
            refusal = body_refusal(scope, head, body)
            if refusal is not None:
                await refusal(scope, receive, respond)
                return
        pending: Message | None = {"type": "http.request", "body": body, "more_body": False} if ending is None else ending

        async def replay() -> Message:
            nonlocal pending
            if pending is None:
                return await source()
            message, pending = pending, None
            return message

        await self.app(scope, replay, respond)

    async def _streamed(self, scope: Scope, receive: Receive, send: Send, limit: int, upload: bool) -> None:
        """The app reads the body itself (an upload, a GET's): counted as it comes."""
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
    tracing.configure()  # on only when the OTEL_* settings ask for it (docs/observability.md)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        services.start()
        try:
            # MCP's sessions end before the services they call are closed.
            async with mcp_endpoint.running():
                yield
        finally:
            services.close()
            tracing.shutdown()  # the spans still batched are sent

    app = FastAPI(
        title="Toolsmith",
        version="0.1.0",
        summary="A self-hosted, event-sourced repository of JavaScript tools for AI agents",
        lifespan=lifespan,
        # /docs is the console's (Swagger UI from the local bundle, under the CSP); no ReDoc (a CDN).
        docs_url=None,
        redoc_url=None,
        # FastAPI's own telemetry would trace a request with its query string and log a refused
        # body's values once a tracer provider is set: the request's span is the edge's instead.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.state.services = services
    problems.install(app)
    sandbox = services.settings.sandbox_url or "off"

    # First of the routes: a probe's request is matched before the 175 others are tried (issue 30).
    # Its answer is JSON made here, as FastAPI would make it from the dict (the document still says
    # so), without validating a dict against `dict[str, Any]` on the way.
    # What it reads is local (SQLite in this process, read models in memory) with the embedded
    # defaults: then it is answered on the event loop, as a tool call is (`Toolbox.acall`), without
    # a hop to a worker thread; a read of PostgreSQL or OpenSearch goes to a worker thread.
    read_locally = services.store.owns_its_writes and services.settings.opensearch_url is None

    def read_side() -> dict[str, Any]:
        return health(services.store, services.runner, max_lag_seconds=services.settings.read_model_max_lag_seconds)

    @app.get("/healthz", tags=["health"], response_model=dict[str, Any])
    async def healthz() -> Response:
        """Liveness and read-model progress; needs no token."""
        read = read_side() if read_locally else await anyio.to_thread.run_sync(read_side)
        return JSONResponse({
            **read,
            "sandbox": sandbox,
            # MCP sessions and listen streams told of tool list changes (ended ones are forgotten),
            # and those of them that hear of resources (listed, subscribed) and of prompts.
            "mcp": {"watchers": len(mcp_endpoint.watch), "resourceWatchers": len(mcp_endpoint.resource_watch),
                    "promptWatchers": len(mcp_endpoint.prompt_watch)},
            # The call log (docs/calls.md): records written, and those lost to a full queue or a failing store.
            "callLog": services.toolbox.call_log.health(),
        })

    # Then the tool call, the request clients make most: the router tries the routes in order, and
    # this one was behind some forty others (no other route's path starts with /api/v1/tools/).
    # Both are served without the router's search (`api.direct`, below); their routes are their document.
    app.include_router(tools.router)
    # Each kind of tool's own routes (a module's, a plan's), then the routes every kind shares.
    for plugin in services.plugins:
        for router in plugin.routers:
            app.include_router(router)
    app.include_router(changesets.router)
    app.include_router(catalog.router_for(services.toolbox.call_types))
    for router in (callers.agents, callers.servers, callers.profiles):
        app.include_router(router)
    app.include_router(tokens.router)
    app.include_router(secrets.router)
    app.include_router(people.router)
    app.include_router(audit.router)
    app.include_router(calls.router)
    app.include_router(operator.router)
    app.add_api_route("/metrics", metrics_endpoint(services), methods=["GET"], include_in_schema=False)
    services.metrics.routes = lambda: app.routes  # the requests' route templates (docs/observability.md)
    mcp_endpoint = mcp.mount(app, services)
    oauth.mount(app, services)  # the MCP endpoint's OAuth: metadata, the built-in authorization server (docs/oauth.md)
    # The admin console (docs/console.md), with each kind's own pages.
    console.mount(app, routers=tuple(router for plugin in services.plugins for router in plugin.console),
                  templates=tuple(plugin.templates for plugin in services.plugins if plugin.templates is not None),
                  navigation=tuple(plugin.navigation for plugin in services.plugins if plugin.navigation is not None))

    async def probe(_: Request) -> Response:
        return await healthz()

    serve_directly(app, (HotRoute("GET", "/healthz", probe), tools.HOT))

    # The security headers, the access log, HEAD as GET, the body's size, then what no route may see (api.edge).
    app.add_middleware(Edge, limit=services.settings.max_body_bytes, upload_limit=services.settings.max_upload_mb * 1_048_576,
                       uploads=Uploads(path for plugin in services.plugins for path in plugin.uploads), metrics=services.metrics)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = problems.openapi_with_problems(openapi_with_rules(
                get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes),
                rules=tuple(rule for plugin in services.plugins for rule in plugin.path_rules),
            ))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
