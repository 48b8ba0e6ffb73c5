"""Which methods each path of the application answers, for a 405's `Allow` (api.problems) and for
api.edge, which lets a method the path does not answer through to that 405 before reading a body.

The router names the methods of the first route that matches a path only; a path is often several
routes (a collection's GET and POST), and every method of every one of them is allowed.

Finding them runs every route's pattern over the path; api.edge asks on every request that may
carry a body, so the answer is kept per path (issue 30: a call costs what its work costs). The
routes never change once the first request is in, so a kept answer is never stale; the paths kept
are the most recently asked few thousand, so a client sending random paths cannot grow the memory
(it only gets the scan every path got before).
"""

from __future__ import annotations

import re
from functools import lru_cache

from fastapi.routing import iter_route_contexts
from starlette.routing import Mount, compile_path
from starlette.types import ASGIApp

# The order `Allow` lists methods in: reads, then writes.
_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# How many paths' answers are kept: every route of the service many times over (ids differ per path).
PATHS_KEPT = 4096


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
                methods |= {"HEAD"}  # the edge answers it as GET (entrypoints.web.Edge)
            self.routes.append((pattern, methods))
        # Per table (per app), least recently asked paths dropped first; thread-safe.
        self.allowed = lru_cache(maxsize=PATHS_KEPT)(self._scan)

    def _scan(self, path: str) -> frozenset[str] | None:
        found: set[str] = set()
        for pattern, methods in self.routes:
            if pattern.match(path):
                if methods is None:
                    return None
                found |= methods
        return frozenset(found) if found else None


def _table(app: ASGIApp) -> _MethodsByPath:
    state = app.state  # type: ignore[attr-defined]
    table = getattr(state, "methods_by_path", None)
    if table is None:
        table = state.methods_by_path = _MethodsByPath(app)  # once: every route is there before the first request
    return table


def methods_of(app: ASGIApp, path: str) -> frozenset[str] | None:
    """The methods the routes of `path` answer; None when no route of `app` matches it, or one
    that takes any method does."""
    return _table(app).allowed(path)


def allowed_methods(app: ASGIApp, path: str) -> list[str] | None:
    """`methods_of`, in the usual order (a 405's `Allow`)."""
    allowed = methods_of(app, path)
    if allowed is None:
        return None
    return sorted(allowed, key=lambda m: (_METHOD_ORDER.index(m) if m in _METHOD_ORDER else len(_METHOD_ORDER), m))
