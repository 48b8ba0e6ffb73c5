"""The code kind as the service mounts it: its tool kind, REST routes and console pages, and what the
core asks of it (its quota and navigation entry). Its aggregates (the module, the tenant's import
graph) are the product's core, in `domain/`, which the store snapshots itself."""

from __future__ import annotations

from pathlib import Path

from api.kinds import KindPlugin, Nav, New
from application.kinds.base import Counted
from domain.model import CodeModule
from domain.tenants import MODULES
from toolkinds.code import editor, history_routes, lifecycle, pages, routes
from toolkinds.code.kind import CodeKind

TEMPLATES = Path(__file__).parent / "templates"
# The list first: `/console/modules/new` and `/availability` before the editor's `/{id}`.
PLUGIN = KindPlugin(CodeKind, routers=(routes.router, history_routes.router),
                    console=(pages.router, editor.router, lifecycle.router), page="/console/modules/{}", templates=TEMPLATES,
                    navigation=Nav("/console/modules", "Code modules", 10), quotas=(Counted(CodeModule, MODULES),),
                    words="code module",
                    new=New("/console/modules/new", "Add deterministic logic you write in JavaScript: formatters, calculators, "
                            "validators. The same input always gives the same answer."))
