"""Which methods each path of the application answers, for a 405's `Allow` (api.problems) and for
api.edge, which lets a method the path does not answer through to that 405 before reading a body.

The router names the methods of the first route that matches a path only; a path is often several
routes (a collection's GET and POST), and every method of every one of them is allowed.
"""

from __future__ import annotations

import re

from fastapi.routing import iter_route_contexts
from starlette.routing import Mount, compile_path
from starlette.types import ASGIApp

# The order `Allow` lists methods in: reads, then writes.
_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


class _MethodsByPath:
    """Each route's path pattern and the methods it answers: `None` for a route that takes any
    method (a mount, the MCP endpoint), which is then the route's own business."""

    def __init__(self, app: ASGIApp) -> None:
        self.routes: list[tuple[re.Pattern[str], frozenset[str] | None]] = []
        for route in iter_route_contexts(getattr(app, "routes", [])):
            path = route.path
            if path is None:
                continue
            mounted = isinstance(route.original_route, Mount)
            pattern = compile_path(path.rstrip("/") + "/{path:path}" if mounted else path)[0]
            methods = None if mounted or route.methods is None else frozenset(route.methods)
            if methods is not None and "GET" in methods:
                methods |= {"HEAD"}  # HeadAsGet answers it
            self.routes.append((pattern, methods))

    def allowed(self, path: str) -> frozenset[str] | None:
        found: set[str] = set()
        for pattern, methods in self.routes:
            if pattern.match(path):
                if methods is None:
                    return None
                found |= methods
        return frozenset(found) if found else None


def allowed_methods(app: ASGIApp, path: str) -> list[str] | None:
    """The methods the routes of `path` answer, in the usual order; None when no route of `app`
    matches it, or one that takes any method does."""
    state = app.state  # type: ignore[attr-defined]
    table = getattr(state, "methods_by_path", None)
    if table is None:
        table = state.methods_by_path = _MethodsByPath(app)  # once: every route is there before the first request
    allowed = table.allowed(path)
    if allowed is None:
        return None
    return sorted(allowed, key=lambda m: (_METHOD_ORDER.index(m) if m in _METHOD_ORDER else len(_METHOD_ORDER), m))
