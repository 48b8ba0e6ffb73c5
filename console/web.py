"""Mounts the console on the API's application: its static files, its routers, `/` to the
console, and `/docs` served from the local bundle (the app's edge adds `console.security.secure`'s headers).
The console's routes are the app's first, behind one test of the path (`Under`): a console request is not
tried against every API route first, and an API request passes them over at the cost of that test."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette._utils import get_route_path
from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import Match
from starlette.types import Scope

from api.kinds import Nav
from console.pages import STATIC, STATIC_URL, TEMPLATES, Pages
from console.routes import ROUTERS
from console.security import VersionedAssets
from console.session import Sessions, session_key

DOCS = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} — API docs</title>
<link rel="icon" href="{icon}" type="image/svg+xml">
<link rel="stylesheet" href="{css}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{bundle}"></script>
<script src="{init}"></script>
</body>
</html>
"""


CONSOLE = "/console"


def head(path: str) -> str:
    """A path's first two segments: "/console/modules" for "/console/modules/dates/history"."""
    return "/".join(path.split("/", 3)[:3])


class Under(APIRouter):
    """Routes whose paths all start with one of a few fixed heads (`head`: "/console/servers"), or all
    lie under one path (`under`): a request elsewhere is not tried against them (None: no such test)."""

    def __init__(self, heads: frozenset[str] | None, *, under: str | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.under = under

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if scope["type"] == "http":
            path = get_route_path(scope)
            if self.under is not None and path != self.under and not path.startswith(self.under + "/"):
                return Match.NONE, {}
            if self.heads is not None and head(path.rstrip("/") or "/") not in self.heads:
                return Match.NONE, {}
        return super().matches(scope)


def heads_of(router: APIRouter) -> frozenset[str] | None:
    """The heads of a router's routes, or None when one has a parameter in its head."""
    paths = [getattr(route, "path", None) for route in router.routes]
    if not paths or any(not isinstance(path, str) or "{" in head(path) for path in paths):
        return None
    return frozenset(head(path.rstrip("/") or "/") for path in paths)


def mount(app: FastAPI, routers: tuple = (), templates: tuple[Path, ...] = (),  # noqa: ANN401 - routers: APIRouters
          navigation: tuple[Nav, ...] = ()) -> None:
    """Adds the console to `app` (whose `state.services` is set); `routers` are the kinds' own pages,
    `templates` the folders of their templates, `navigation` their entries in the navigation."""
    services = app.state.services
    settings = services.settings
    key = session_key(settings.data_dir, settings.session_key.get_secret_value() if settings.session_key else None)
    app.state.console_sessions = Sessions(key, settings.session_hours * 3600)
    pages = Pages(templates=(TEMPLATES, *templates), navigation=navigation)
    app.state.console_pages = pages
    # Compressed for browsers that ask (the editor bundle is a third of its size gzipped); kept by
    # browsers for a year under a URL that names the file's hash (console.security.VersionedAssets).
    files = GZipMiddleware(StaticFiles(directory=STATIC, check_dir=False), minimum_size=1024)
    app.mount(STATIC_URL, VersionedAssets(files, STATIC_URL, pages.static_names, pages.version), name="console-static")
    # Every console route sits under /console: one test of the path puts them all aside for any other
    # request, and they come first, so that a console request is not tried against every API route
    # before its own (FastAPI tries an included router's routes one by one, some microseconds each:
    # 0.5-0.8 ms a console request paid, a tenth of a save); inside, each router is tried only for
    # the heads of its own paths (/console/servers, /console/modules). Any other path goes on to the
    # API's routes as before, after one test.
    #
    # Each head's routes sit in one router of their own, in the order of the routers and of their routes
    # (a head's routes are tried in the order they were before), not each router included in another:
    # FastAPI matches a request again at every level of included routers on its way down, and the
    # level saved was a third of the routing calls of a console request (counted with cProfile).
    console_routes = Under(None, under=CONSOLE)
    by_head: dict[str, Under] = {}
    for router in (*ROUTERS, *routers):
        heads = heads_of(router)
        if heads is not None and all(h == CONSOLE or h.startswith(CONSOLE + "/") for h in heads):
            for route in router.routes:
                path_head = head(getattr(route, "path").rstrip("/") or "/")
                by_head.setdefault(path_head, Under(frozenset({path_head}))).routes.append(route)
        else:
            app.include_router(router)
    for own in by_head.values():
        console_routes.include_router(own)
    app.include_router(console_routes)
    app.router.routes.insert(0, app.router.routes.pop())

    @app.get("/", include_in_schema=False)
    def root() -> RedirectResponse:
        return RedirectResponse("/console/", status_code=307)

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        """Swagger UI from the console's own bundle: no CDN, no inline script (the CSP holds)."""
        return HTMLResponse(DOCS.format(
            title=app.title, css=pages.asset("dist/swagger-ui.css"), bundle=pages.asset("dist/swagger-ui-bundle.js"),
            init=pages.asset("docs.js"), icon=pages.asset("favicon.svg"),
        ))

