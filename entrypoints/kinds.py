"""THE registry of the kinds of tool (docs/kinds/index.md; issue 13): one line per kind, in R15's order
(when two tools share a name, the kind listed first is the one called). Nothing else names them: the
catalog, R2, MCP registration, admission, plans and the audit export ask the kinds listed here, and
the web app mounts their routes. A new kind is its own files plus one line here.
"""

from __future__ import annotations

from api.kinds import KindPlugin
from api.routes import api_tools, callers, module_history, modules, search_tools
from application.kinds.api_tools import ApiToolKind
from application.kinds.code import CodeKind
from application.kinds.declared import ExternalMcpKind, NativeKind
from application.kinds.plans import PlanKind
from application.kinds.search_tools import SearchToolKind
from console.routes import api_tools as api_tool_pages
from console.routes import search_tools as search_tool_pages
from console.routes import editor, lifecycle
from console.routes import modules as module_pages

DEFAULT_KINDS: tuple[KindPlugin, ...] = (
    KindPlugin(ExternalMcpKind),
    KindPlugin(NativeKind),
    KindPlugin(PlanKind, routers=(callers.plans,), page="/console/plans/{}"),
    # The list first: `/console/modules/new` and `/availability` before the editor's `/{id}`.
    KindPlugin(CodeKind, routers=(modules.router, module_history.router),
               console=(module_pages.router, editor.router, lifecycle.router), page="/console/modules/{}"),
    KindPlugin(ApiToolKind, routers=(api_tools.router,), console=(api_tool_pages.router,), page="/console/api-tools/{}"),
    KindPlugin(SearchToolKind, routers=(search_tools.router,), console=(search_tool_pages.router,),
               page="/console/search-tools/{}"),
)
