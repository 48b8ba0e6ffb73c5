"""What the toolbox reads and runs, under the names it has always called them: the store's queries
of modules, registries and position, and the execution service's call of a code tool.

A bridge while tool kinds become plug-ins (issue 13, point 1): each kind will be handed the
`Store` and the `Execution` it needs, and this goes.
"""

from __future__ import annotations

from typing import Any

from application.execution import Execution
from application.store import Store
from domain.callers import CallerRegistry
from domain.model import CodeModule
from domain.ports import ExecutionResult


class ToolboxSources:
    def __init__(self, store: Store, execution: Execution) -> None:
        self._store = store
        self._execution = execution

    def position(self) -> int:
        return self._store.position()

    def registry(self, tenant: str, *, for_update: bool = False) -> CallerRegistry:
        return self._store.registry(tenant, for_update=for_update)

    def is_module(self, tenant: str, name: str) -> bool:
        return self._store.is_module(tenant, name)

    def published_tools(self, tenant: str) -> list[CodeModule]:
        return self._store.published_tools(tenant)

    def tool_holding(self, tenant: str, name: str) -> str | None:
        return self._store.tool_holding(tenant, name)

    def call_tool(self, tenant: str, name: str, input: Any, *, context: dict[str, Any]) -> ExecutionResult:
        return self._execution.call_tool(tenant, name, input, context=context)
