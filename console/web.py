"""Mounts the console on the API's application: its static files, its routers, `/` to the
console, and `/docs` served from the local bundle (the app's edge adds `console.security.secure`'s headers)."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware

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
    for router in (*ROUTERS, *routers):
        app.include_router(router)

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

