"""The code kind as the service mounts it: its tool kind, REST routes and console pages."""

from __future__ import annotations

from pathlib import Path

from api.kinds import KindPlugin
from toolkinds.code import editor, history_routes, lifecycle, pages, routes
from toolkinds.code.kind import CodeKind

TEMPLATES = Path(__file__).parent / "templates"
# The list first: `/console/modules/new` and `/availability` before the editor's `/{id}`.
PLUGIN = KindPlugin(CodeKind, routers=(routes.router, history_routes.router),
                    console=(pages.router, editor.router, lifecycle.router), page="/console/modules/{}", templates=TEMPLATES)
