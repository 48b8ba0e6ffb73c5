"""THE registry of the kinds of tool (docs/kinds/index.md; issue 13): one line per kind, in R15's order
(when two tools share a name, the kind listed first is the one called). Nothing else names them: the
catalog, R2, MCP registration, admission, plans and the audit export ask the kinds listed here (their
`ToolKind`), and the web app mounts their routes; the store's snapshots, the quotas, the read models,
the CLI's rebuild, the problems' statuses, the OpenAPI path rules, the upload limits and the console's
navigation read what each declares on its `KindPlugin` (api/kinds.py). A new kind is its own package
(`toolkinds/<kind>/`) plus one line here; tests/unit/test_kind_packages.py fails when anything else
imports or names one.
"""

from __future__ import annotations

from api.kinds import KindPlugin
from toolkinds.api_tools.plugin import PLUGIN as API_TOOLS
from toolkinds.code.plugin import PLUGIN as CODE
from toolkinds.declared.plugin import EXTERNAL_MCP, NATIVE
from toolkinds.plans.plugin import PLUGIN as PLANS
from toolkinds.prompts.plugin import PLUGIN as PROMPTS
from toolkinds.resources.plugin import PLUGIN as RESOURCES
from toolkinds.search_tools.plugin import PLUGIN as SEARCH_TOOLS

DEFAULT_KINDS: tuple[KindPlugin, ...] = (EXTERNAL_MCP, NATIVE, PLANS, CODE, API_TOOLS, SEARCH_TOOLS, PROMPTS, RESOURCES)
