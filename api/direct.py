"""The hottest routes, served as soon as a request reaches the router, without the router's search
and FastAPI's per-route machinery (issue 30: a call costs what its work costs).

A tool call (`POST /api/v1/tools/{name}/call`) and the probe (`GET /healthz`) are most of what a
busy service answers. Through FastAPI each pays for the routes tried before it, the per-route
context FastAPI looks up, the dependency solving of its path parameter and the wrapper that runs
the endpoint: about a third of a tool call's CPU in the API process, measured in process
(bench/request_path.py shows the whole path). Their endpoints take what FastAPI would solve for
them themselves (the caller, the body: `api.routes.tools.call_tool`), so nothing is lost by calling
them directly.

`Direct` sits where the router's own middleware stack was (`router.middleware_stack`), inside the
app's exception handling (`ExceptionMiddleware`: a refusal's problem+json is the same) and the
edge's checks (`entrypoints.web.Edge`): a request it does not take (another method, another path)
goes to the router as before, so a `GET` of the call's path still gets the router's 405 with its
`Allow`. The routes stay declared on the app: the OpenAPI document is FastAPI's, unchanged. Where
FastAPI's native telemetry is on, the request's span gets its route's template as FastAPI would
name it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response
from starlette._utils import get_route_path
from starlette.routing import request_response
from starlette.types import ASGIApp, Receive, Scope, Send

try:  # FastAPI's own naming of a request's span by its route (private; absent, spans keep their name)
    from fastapi.routing import _route_selected
except ImportError:  # pragma: no cover - a FastAPI without native telemetry
    _route_selected = None


@dataclass(frozen=True)
class HotRoute:
    """A route `Direct` serves: `path` is the route's template, with at most one parameter, a whole
    path segment (`/api/v1/tools/{name}/call`); `endpoint` is awaited with the request (its path
    parameter in `request.path_params`, as FastAPI would put it) and answers a response."""

    method: str
    path: str
    endpoint: Callable[[Request], Awaitable[Response]]


class _Matcher:
    """One route's path, matched by its text: a prefix, then one segment (the parameter), then a suffix."""

    def __init__(self, template: str) -> None:
        opening = template.find("{")
        if opening < 0:
            self.prefix, self.parameter, self.suffix = template, None, ""
            return
        closing = template.index("}", opening)
        self.prefix, self.parameter, self.suffix = template[:opening], template[opening + 1:closing], template[closing + 1:]
        if "{" in self.suffix or not self.prefix.endswith("/") or (self.suffix and not self.suffix.startswith("/")):
            raise ValueError(f"a hot route takes one parameter, a whole path segment: {template!r}")

    def match(self, path: str) -> dict[str, str] | None:
        if self.parameter is None:
            return {} if path == self.prefix else None
        if not (path.startswith(self.prefix) and path.endswith(self.suffix)):
            return None
        value = path[len(self.prefix):len(path) - len(self.suffix)]
        # Starlette's `{name}` is `[^/]+`: one segment, not empty
        return {self.parameter: value} if value and "/" not in value else None


# The scope's key of the route template a hot route was served by (the request's span names it).
ROUTE_TEMPLATE = "toolsmith.route"


class Direct:
    def __init__(self, app: ASGIApp, router: Any, routes: Sequence[HotRoute]) -> None:
        """`app` is what the router ran (its middleware stack), `router` the app's router."""
        self.app = app
        self.router = router
        self.routes = tuple((route.method, _Matcher(route.path), route.path, request_response(route.endpoint)) for route in routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            method = scope["method"]
            path = get_route_path(scope)
            for wanted, matcher, template, handler in self.routes:
                if method != wanted:
                    continue
                parameters = matcher.match(path)
                if parameters is None:
                    continue
                scope.setdefault("router", self.router)
                scope["path_params"] = parameters
                scope[ROUTE_TEMPLATE] = template
                if _route_selected is not None and "fastapi.telemetry" in scope:
                    _route_selected(scope=scope, path=template)
                await handler(scope, receive, send)
                return
        await self.app(scope, receive, send)


def serve_directly(app: Any, routes: Sequence[HotRoute]) -> None:
    """Puts `Direct` in front of `app`'s router, for `routes`: each one the app declares too (same
    method, same path), so that the document and what is served agree (tests/api/test_direct.py)."""
    router = app.router
    router.middleware_stack = Direct(router.middleware_stack, router, routes)
