"""The api tools kind as the service mounts it: its tool kind, REST routes and console pages, and what
the core asks of it (its quotas and navigation entry)."""

from __future__ import annotations

import re
from pathlib import Path

from api.kinds import KindPlugin, Nav, New
from api.paths import ADMIN_API
from api.schemas import IDENTIFIER
from application.kinds.base import Counted
from domain.tenants import TOOLS
from toolkinds.api_tools import pages, routes
from toolkinds.api_tools.kind import ApiToolKind
from toolkinds.api_tools.model import ApiTool

TEMPLATES = Path(__file__).parent / "templates"
PLUGIN = KindPlugin(ApiToolKind, routers=(routes.router,), console=(pages.router,), page="/console/api-tools/{}",
                    templates=TEMPLATES, navigation=Nav("/console/api-tools", "API URL tools", 30),
                    words="API URL tool",
                    new=New("/console/api-tools/new", "Let the AI call an HTTP API on your behalf: you set the URL, its "
                            "parameters and its secrets; the AI only fills in the values."),
                    quotas=(Counted(ApiTool, TOOLS),),
                    path_rules=((re.compile(re.escape(ADMIN_API) + r"/api-tools/\{id\}"), "id", IDENTIFIER),))
