"""Admins' resources as the service mounts them: their REST routes, console pages and navigation entry."""

from pathlib import Path

from api.kinds import KindPlugin, Nav
from toolkinds.resources import pages, routes
from toolkinds.resources.kind import ResourceKind

PLUGIN = KindPlugin(ResourceKind, routers=(routes.router,), console=(pages.router,), page="/console/resources/{}",
                    templates=Path(__file__).parent / "templates", navigation=Nav("/console/resources", "Resources", 46))
