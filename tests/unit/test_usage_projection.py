"""The usage counts the quotas check are a projection of the log (issue 29, 3): what each kind's
aggregates count (`Counted`, declared by the kinds) is kept by tenant from their lifecycle events,
exact as of the question."""

from __future__ import annotations

from domain.model import CodeModule
from domain.tenants import MODULES, TOOLS
from tests.unit.test_list_projections import DEFINITION, api_tool, popo
from toolkinds.api_tools.model import ApiTool


def test_usage_counts_come_from_the_projection() -> None:
    from application.kinds.base import Counted
    from application.usage import Usage

    store = popo()
    store.save(CodeModule(tenant="t", module_id="m", definition=DEFINITION, by="t"), api_tool("t", "a"), api_tool("u", "b"))
    usage = Usage(store, secrets=None, counted=[Counted(CodeModule, MODULES), Counted(ApiTool, TOOLS)])  # type: ignore[arg-type]
    assert usage.count("t", (MODULES, TOOLS)) == {MODULES: 1, TOOLS: 1}
    tool = store.repository.get(ApiTool.create_id("t", "a"))
    tool.delete("t")
    store.save(tool)
    assert usage.count("t", (MODULES, TOOLS)) == {MODULES: 1, TOOLS: 0}
    assert [follower.name for follower in usage.projections()] == ["usage"]
