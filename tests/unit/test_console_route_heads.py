"""console.web: the console's routes are tried first and only for their own heads, and none is hidden by it.

A console request used to be tried against every API route before its own (FastAPI tries an included
router's routes one by one), 0.5-0.8 ms of a save; now the console's routes come first behind one test
of the path, each head's routes ("/console/servers") in one router of their own. These tests check
that every console route is still reached by its own path and method, in the order its router gave it,
that an API path is never taken by the console, and that a request is tried against the routes of its
head only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.routing import Match

from console.web import CONSOLE, Under, head, heads_of
from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure.settings import Settings


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    return create_app(bootstrap(Settings(data_dir=Path(tmp_path_factory.mktemp("routes")) / "data")))


def _scope(app, method: str, path: str) -> dict:  # noqa: ANN001
    return {"type": "http", "method": method, "path": path, "root_path": "", "headers": [], "query_string": b"", "app": app}


def _first_full(app, method: str, path: str):  # noqa: ANN001, ANN202
    """The top-level route a request is handed to, as the app's router picks it (its first FULL match)."""
    scope = _scope(app, method, path)
    for index, route in enumerate(app.router.routes):
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return index, route
    return None, None


def _console_routes(app) -> list[tuple[str, str]]:  # noqa: ANN001
    group = app.router.routes[0].original_router
    assert isinstance(group, Under) and group.under == CONSOLE
    found = []
    for included in group.routes:
        for route in included.original_router.routes:
            for method in sorted(getattr(route, "methods", None) or {"GET"}):
                found.append((method, route.path))
    return found


def test_heads() -> None:
    assert head("/console/modules/dates/history") == "/console/modules" and head("/console") == "/console"
    from fastapi import APIRouter

    router = APIRouter(prefix="/console/servers")
    router.add_api_route("/{name}", lambda: None)
    router.add_api_route("", lambda: None)
    assert heads_of(router) == frozenset({"/console/servers"})
    loose = APIRouter(prefix="/console")
    loose.add_api_route("/{anything}", lambda: None)
    assert heads_of(loose) is None  # a parameter in the head: it is tried for every console path


def test_every_console_route_is_reached_by_its_own_path_and_method_first(app) -> None:  # noqa: ANN001
    routes = _console_routes(app)
    assert len(routes) > 60
    for method, template in routes:
        path = re.sub(r"\{[^}]+\}", "x1", template)
        index, _ = _first_full(app, method, path)
        assert index == 0, f"{method} {path} went to route {index}, not the console's"


def test_each_heads_routes_keep_the_order_of_their_routers(app) -> None:  # noqa: ANN001
    """Within a head, a route is tried where its router put it (`/console/modules/new` before
    `/console/modules/{module_id}`), the routers in the order they are given to `mount`."""
    from console.routes import ROUTERS

    routers = (*ROUTERS, *(router for plugin in app.state.services.plugins for router in plugin.console))
    group = app.router.routes[0].original_router
    assert group.routes, "the console has its heads"
    for included in group.routes:
        own = included.original_router
        (wanted,) = own.heads
        expected = [route for router in routers for route in router.routes if head(route.path.rstrip("/") or "/") == wanted]
        assert own.routes == expected, wanted
    paths = [route.path for route in next(i.original_router for i in group.routes if i.original_router.heads == {"/console/modules"}).routes]
    assert paths.index("/console/modules/new") < paths.index("/console/modules/{module_id}")


def test_an_api_path_is_never_taken_by_the_console(app) -> None:  # noqa: ANN001
    group = app.router.routes[0]
    for method, path in (("PUT", "/api/v1/admin/code-modules/dates"), ("POST", "/api/v1/tools/dates/call"), ("GET", "/healthz"),
                         ("GET", "/consoles"), ("GET", "/docs"), ("POST", "/mcp")):
        assert group.matches(_scope(app, method, path))[0] == Match.NONE, path
    index, route = _first_full(app, "PUT", "/api/v1/admin/code-modules/dates")
    assert index is not None and index > 0


def test_a_console_request_is_tried_against_the_routers_of_its_head_only(app) -> None:  # noqa: ANN001
    group = app.router.routes[0].original_router
    scope = _scope(app, "POST", "/console/modules/dates")
    tried = [inc.original_router.heads for inc in group.routes
             if inc.original_router.heads is None or "/console/modules" in inc.original_router.heads]
    assert all(heads is None or heads == frozenset({"/console/modules"}) for heads in tried)
    assert len(tried) < len(group.routes) / 3, "most routers are passed over for a module's page"
    assert app.router.routes[0].matches(scope)[0] == Match.FULL
