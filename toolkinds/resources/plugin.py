"""Admins' resources as the service mounts them: their REST routes."""

from api.kinds import KindPlugin
from toolkinds.resources import routes
from toolkinds.resources.kind import ResourceKind

PLUGIN = KindPlugin(ResourceKind, routers=(routes.router,))
