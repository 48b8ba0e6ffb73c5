"""Code modules as tools (callType CODE; docs/rules.md–docs/javascript.md): published tool modules, run in the sandbox.

The event store keeps the modules and the execution service runs them; this kind shows their
published tools to the catalog and calls them, each call into either made in one place here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any
from uuid import UUID

import anyio.to_thread

from application.context import CallContext
from application.kinds.base import OPAQUE, Ranked, ToolKind, Tools, tagged
from domain.catalog import ToolEntry
from domain.errors import SandboxBusy
from domain import annotations as tool_hints
from domain.annotations import uses_http
from domain.graph import bundle_order, transitive_importers
from domain.model import CodeModule, graph_aggregate_id, module_aggregate_id
from domain.ports import ExecutionResult
from domain.rules import tool_input_schema

CODE = "CODE"
CODE_TAG = "code"


class CodeKind(ToolKind):
    call_type = CODE
    label = "module"

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        return [code_entry(module, self.fetching(tenant, module)) for module in self.deps.store.published_tools(tenant)]

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        module = self.deps.store.find(tenant, name)
        if module is None or module.deleted or module.published is None or module.published["tool"] is None:
            return None
        return code_entry(module, self.fetching(tenant, module))

    def fetching(self, tenant: str, module: CodeModule) -> str | None:
        """R17: "" when the module's published code uses `http.fetch`, else the first module of its
        bundle (what it imports, published, transitively) whose code does; None when none does."""
        published = module.published
        if published is None or uses_http(published["content"]):
            return ""
        if not published["imports"]:
            return None
        store = self.deps.store
        for needed in bundle_order(store.graph(tenant).published_edges(), module.module_id):
            if needed == module.module_id:
                continue
            imported = store.find(tenant, needed)
            if imported is not None and imported.published is not None and uses_http(imported.published["content"]):
                return needed
        return None

    def touched(self, event: Any) -> Collection[str] | None:
        """A module's event touches that module's tool; its publication touches its importers' too
        (whether their bundle uses `http.fetch`, R17, may have changed)."""
        if not isinstance(event, CodeModule.Event):
            return None
        if type(event).__name__ == "Published":
            try:
                graph = self.deps.store.graph(event.tenant)
                importers = transitive_importers(graph.published_importers(), graph.published_edges(), event.module_id)
            except Exception:  # noqa: BLE001 - unknown: read the kind again in full
                return OPAQUE
            return (event.module_id, *importers)
        return (event.module_id,)

    def holds(self, tenant: str, name: str) -> bool:
        """R2: any module that is not deleted, published or not, tool or library."""
        return self.deps.store.is_module(tenant, name)

    @property
    def available(self) -> bool:
        return self.deps.sandbox is not None

    def saturated(self) -> bool:
        sandbox = self.deps.sandbox
        return sandbox is not None and sandbox.busy()

    def admit(self, tenant: str, entry: ToolEntry, tools: Tools, depth: int) -> None:
        # When every session is taken the answer is 429 at once: a burst beyond the cap must not
        # queue behind itself. The sandbox itself still has the last word.
        sandbox = self.deps.sandbox
        if sandbox is not None and sandbox.busy():
            raise SandboxBusy(sandbox.max_active_sessions)

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        return self._run(tenant, entry.name, arguments, context)

    async def acall(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        """`call`, awaited (issue 30: a call costs what its work costs). When every read the call
        makes — the tenant's import graph, the module and each module its bundle imports — is in
        the store's cache and asks no database first (`_in_memory`), the call is checked and bundled
        on the event loop and its run awaited (`Sandbox.arun`: no thread for the embedded sandbox).
        Otherwise `call` in a worker thread, as the route always did."""
        if self._in_memory(tenant, entry.name):
            return await self.deps.execution.acall_tool(tenant, entry.name, arguments, context=context)
        return await anyio.to_thread.run_sync(self.call, tenant, entry, arguments, context, tools, depth)

    def _in_memory(self, tenant: str, name: str) -> bool:
        """Whether reading what a call of `name` runs blocks on nothing: the store's cache holds the
        graph and every module of the bundle, and does not ask the database for newer events first
        (it does with PostgreSQL, where other replicas write)."""
        store = self.deps.store
        if not store.owns_its_writes:
            return False
        cache = store.repository.cache
        try:
            cache.get(graph_aggregate_id(tenant))
            for needed in bundle_order(store.graph(tenant).published_edges(), name):
                cache.get(module_aggregate_id(tenant, needed))
        except KeyError:
            return False
        return True

    def call_unlisted(self, tenant: str, name: str, arguments: Any, context: CallContext) -> ExecutionResult | None:
        # The module's own reason: not published, a library, disabled.
        return self._run(tenant, name, arguments, context) if self.holds(tenant, name) else None

    def _run(self, tenant: str, name: str, arguments: Any, context: CallContext) -> ExecutionResult:
        # V1 is the module's own check (`validate_input`), made by the execution service before any JavaScript
        # runs; a module that is not a callable tool is refused there with its reason.
        return self.deps.execution.call_tool(tenant, name, arguments, context=context)

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None:
        tenant, module_id = state.get("tenant"), state.get("module_id")
        if isinstance(tenant, str) and isinstance(module_id, str) and module_aggregate_id(tenant, module_id) == aggregate_id:
            return tenant
        return None


def code_entry(module: CodeModule, fetching: str | None = "") -> ToolEntry:
    """The module's tool; `fetching` as `CodeKind.fetching` answers (by default: as if it fetched)."""
    published = module.published
    assert published is not None and published["tool"] is not None
    tool = published["tool"]
    return ToolEntry(
        annotations=tool_hints.annotations(tool.get("annotations"), tool_hints.module_facts(fetching)),
        icons=tool_hints.icons(tool.get("icons")),
        name=module.module_id,
        description=published["description"],
        call_type=CODE,
        input_schema=tool_input_schema(tool),
        output_schema=tool.get("outputSchema"),
        tags=tagged(tool["tags"], CODE_TAG),
        expose_in_chat=tool["exposeInChat"],
        enabled=tool["enabled"],
        configured=bool(published["content"].strip()),
        version=module.published_version,
    )
