"""Native tools (callType LOCAL) and external MCP tools (callType MCP): declared in the tools file,
not in the event store (`infrastructure/declared_tools.py` reads the file and builds each tool).

Each is its own kind, with its own place in R15's order and its own R2 label; both take the tools
of their call type from the tools file and call them in their `DeclaredTool`, after checking the
arguments against the declared JSON Schema.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from application.context import CallContext
from application.kinds.base import KindDeps, Ranked, ToolKind, Tools, validated
from domain.catalog import LOCAL, MCP, ToolEntry
from domain.ports import ExecutionResult


class DeclaredKind(ToolKind):
    """The tools file's tools of one call type."""

    def __init__(self, deps: KindDeps) -> None:
        super().__init__(deps)
        self._tools = {tool.entry.name: tool for tool in deps.declared if tool.entry.call_type == self.call_type}

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        return [tool.entry for tool in self._tools.values()]

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        tool = self._tools.get(name)
        return tool.entry if tool is not None else None

    def touched(self, event: Any) -> Collection[str] | None:
        """The tools file is read once, at start: no event changes its tools."""
        return None

    def holds(self, tenant: str, name: str) -> bool:
        return name in self._tools

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        arguments = validated(entry.input_schema, arguments)
        return self._tools[entry.name].call(arguments, context.for_code())

    def close(self) -> None:
        for tool in self._tools.values():
            tool.close()


class ExternalMcpKind(DeclaredKind):
    call_type = MCP
    label = "MCP tool"


class NativeKind(DeclaredKind):
    call_type = LOCAL
    label = "native tool"
