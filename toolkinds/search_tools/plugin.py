"""The search tools kind as the service mounts it: its tool kind, REST routes and console pages."""

from __future__ import annotations

from pathlib import Path

from api.kinds import KindPlugin
from toolkinds.search_tools import pages, routes
from toolkinds.search_tools.kind import SearchToolKind

TEMPLATES = Path(__file__).parent / "templates"
PLUGIN = KindPlugin(SearchToolKind, routers=(routes.router,), console=(pages.router,), page="/console/search-tools/{}",
                    templates=TEMPLATES)
