"""Prompts as the service mounts them: their REST routes, console pages and navigation entry."""

from pathlib import Path

from api.kinds import KindPlugin, Nav
from toolkinds.prompts import pages, routes
from toolkinds.prompts.kind import PromptKind

PLUGIN = KindPlugin(PromptKind, routers=(routes.router,), console=(pages.router,), page="/console/prompts/{}",
                    templates=Path(__file__).parent / "templates", navigation=Nav("/console/prompts", "Prompts", 45))
