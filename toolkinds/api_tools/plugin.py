"""The api tools kind as the service mounts it: its tool kind, REST routes and console pages."""

from __future__ import annotations

from pathlib import Path

from api.kinds import KindPlugin
from toolkinds.api_tools import pages, routes
from toolkinds.api_tools.kind import ApiToolKind

TEMPLATES = Path(__file__).parent / "templates"
PLUGIN = KindPlugin(ApiToolKind, routers=(routes.router,), console=(pages.router,), page="/console/api-tools/{}",
                    templates=TEMPLATES)
