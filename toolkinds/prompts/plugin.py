"""Prompts as the service mounts them."""

from pathlib import Path

from api.kinds import KindPlugin
from toolkinds.prompts import routes
from toolkinds.prompts.kind import PromptKind

PLUGIN = KindPlugin(PromptKind, routers=(routes.router,), templates=Path(__file__).parent / "templates")
