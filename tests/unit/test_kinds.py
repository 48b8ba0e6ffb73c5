"""The registry of kinds (application/kinds/base.py): R2 asks the kinds in R15's order, a kind may
leave itself out, and two kinds cannot share a call type."""

from __future__ import annotations

from typing import Any

import pytest

from application.kinds.base import KindDeps, Ranked, ToolKind, ToolKinds
from domain.catalog import ToolEntry
from entrypoints.kinds import DEFAULT_KINDS


def kind(call_type: str, label: str, names: set[str]) -> type[ToolKind]:
    class Named(ToolKind):
        def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
            return [ToolEntry(name=n, description="", call_type=call_type) for n in sorted(names)]

        def holds(self, tenant: str, name: str) -> bool:
            return name in names

        def call(self, *args: Any) -> Any:
            raise NotImplementedError

    Named.call_type, Named.label = call_type, label
    return Named


def registry(*kinds: type[ToolKind]) -> ToolKinds:
    names = ToolKinds()
    deps = KindDeps(store=None, execution=None, commands=None, names=names)  # type: ignore[arg-type]
    names.install(k(deps) for k in kinds)
    return names


def test_r2_names_the_first_kind_in_r15_order_that_holds_the_name() -> None:
    kinds = registry(kind("A", "a tool", {"x"}), kind("B", "b tool", {"x", "y"}))
    assert kinds.order == ("A", "B")
    assert [kinds.holder_of("t", n) for n in ("x", "y", "z")] == ["a tool", "b tool", None]
    # a kind asking about its own tool leaves itself out
    assert kinds.holder_of("t", "x", besides="a tool") == "b tool"
    assert kinds.holder_of("t", "y", besides="b tool") is None


def test_two_kinds_cannot_share_a_call_type() -> None:
    with pytest.raises(ValueError, match="call type 'A'"):
        registry(kind("A", "a tool", set()), kind("A", "another", set()))


def test_the_default_registry_orders_r15_as_design_says() -> None:
    # MCP, native, plan, then the rest (docs/kinds/index.md): code modules, API URL tools, File Search tools;
    # then the published kinds that are not tools but hold their names (R2): prompts and resources
    assert tuple(p.call_type for p in DEFAULT_KINDS) == ("MCP", "LOCAL", "PLAN", "CODE", "API_URL", "FILE_SEARCH", "PROMPT", "RESOURCE")
    assert [p.kind.label for p in DEFAULT_KINDS] == ["MCP tool", "native tool", "plan", "module", "API URL tool", "File Search tool",
                                                     "prompt", "resource"]
