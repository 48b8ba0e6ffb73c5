"""The plans kind as the service mounts it: its tool kind, REST routes and console pages."""

from __future__ import annotations

from api.kinds import KindPlugin
from api.routes import callers
from toolkinds.plans.kind import PlanKind

PLUGIN = KindPlugin(PlanKind, routers=(callers.plans,), page="/console/plans/{}")
