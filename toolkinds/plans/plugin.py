"""The plans kind as the service mounts it: its tool kind, REST routes and the console's plan run. Its
other console pages are the caller records' (`console/routes/callers.py`), which plans share with
agents, servers and profiles."""

from __future__ import annotations

from api.kinds import KindPlugin
from toolkinds.plans import pages, routes
from toolkinds.plans.kind import PlanKind

PLUGIN = KindPlugin(PlanKind, routers=(routes.router,), console=(pages.router,), page="/console/plans/{}")
