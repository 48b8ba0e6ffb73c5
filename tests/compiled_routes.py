"""One compilation of each route for all the apps a test process builds.

FastAPI compiles an included route (its dependencies, its body and response models) on the first
request an app gets: about 150 ms for Toolsmith's 175 routes. A test that builds its own app (most
of the API and console tests do, on an empty store of its own) paid that every time. The compiled
form depends only on the route and how it was included, never on the app (no test overrides a
dependency), so the tests keep it per route object: `share()` wraps FastAPI's compiler with a cache.

A route made per app (the catalog's, whose body depends on the kinds wired) is a new object each
time and is compiled as before. If FastAPI's internals move, `share()` does nothing and the tests
only get slower."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from fastapi import routing

# Least recently used first; the routes made per app pass through and fall out.
_compiled: OrderedDict[tuple[Any, ...], tuple[Any, Any]] = OrderedDict()
_KEPT = 1_000


def _key(route: Any, context: Any) -> tuple[Any, ...]:
    return (id(route), context.path_for(route), tuple(id(dependency.dependency) for dependency in context.dependencies),
            tuple(context.tags), context.include_in_schema, context.max_body_size, id(context.default_response_class))


def share() -> bool:
    """Install the cache; False when this FastAPI compiles routes some other way."""
    effective = getattr(routing, "_EffectiveRouteContext", None)
    compile_route = getattr(effective, "from_api_route", None)
    if compile_route is None or getattr(compile_route, "shared", False):
        return compile_route is not None

    def from_api_route(*, original_route: Any, include_context: Any) -> Any:
        key = _key(original_route, include_context)
        hit = _compiled.get(key)
        # The route itself is kept with its compiled form, so its id is never another route's.
        if hit is not None and hit[0] is original_route:
            _compiled.move_to_end(key)
            return hit[1]
        compiled = compile_route(original_route=original_route, include_context=include_context)
        _compiled[key] = (original_route, compiled)
        if len(_compiled) > _KEPT:
            _compiled.popitem(last=False)
        return compiled

    from_api_route.shared = True  # type: ignore[attr-defined]
    effective.from_api_route = from_api_route
    return True
