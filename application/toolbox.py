"""The tool catalog and every way a tool is called (DESIGN §2 R2, R14–R16; §3 catalog; §4 MCP).

The catalog of a tenant is computed from the event store (published tool modules, plans exposed as
tools) and the tools file (native and external MCP tools), then resolved by R15. It is kept per
tenant for as long as the event store's position does not move, so MCP's `tools/list` and the
change watch that sends `list_changed` cost one position query while nothing changes.

A call resolves the name (R15), checks the caller's permissions (R14), validates the arguments
before anything runs (V1 for code tools, the declared JSON Schema for the others), and dispatches:
a code module to the sandbox, a native or external MCP tool to its `DeclaredTool`, a plan to its
DIRECT_TOOL nodes in order, each output the next node's input, with no LLM in the loop.

A plan runs with its CALLER's permissions (invoker's rights): before any node runs, every node's
tool, in nested plans too, is checked against the caller's R14 permissions, and a node the caller
may not use refuses the whole call, naming the node, as calling that tool directly would.

Every result, whatever kind of tool produced it, passes `answered` before anyone sees it: a value
nested deeper than `MAX_DEPTH` becomes a `result` error, and lone surrogates become U+FFFD.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterable
from typing import Any

from jsonschema import Draft202012Validator

from application.toolbox_sources import ToolboxSources as ModuleRepository
from domain import callers
from domain.callers import CallerRegistry
from domain.catalog import CODE, CODE_TAG, LOCAL, MCP, PLAN, EVERYTHING, KIND_NAMES, NOTHING, DeclaredTool, Permissions, ToolEntry, resolve
from domain.errors import InvalidInput, ToolNotCallable, UnknownRecord, Violation
from domain.model import CodeModule
from domain.ports import ExecutionError, ExecutionResult, ToolNames
from domain.rules import input_schema
from domain.values import TOO_DEEP_RESULT, lone_surrogate_at, too_deep, well_formed

PLAN_TAG = "plan"
# Plans may call plans exposed as tools; cycles are refused at save, and this bounds the rest.
MAX_PLAN_DEPTH = 8

ADMIN = "admin"
CALLER = "caller"


class DeclaredNames(ToolNames):
    """R2 for modules: the names the tools file gives native and external MCP tools."""

    def __init__(self, declared: Iterable[DeclaredTool]) -> None:
        self._holders: dict[str, str] = {}
        for tool in declared:
            self._holders.setdefault(tool.entry.name, KIND_NAMES[tool.entry.call_type])

    def holder_of(self, tenant: str, name: str) -> str | None:
        return self._holders.get(name)


class _Catalog:
    """One tenant's resolved entries at one position, indexed for the call path."""

    __slots__ = ("position", "entries", "winners", "names")

    def __init__(self, position: int, entries: list[ToolEntry]) -> None:
        self.position = position
        self.entries = entries
        self.winners = {e.name: e for e in entries if e.shadowed_by is None}
        self.names = frozenset(e.name for e in entries)


class Toolbox:
    def __init__(self, modules: ModuleRepository, declared: Iterable[DeclaredTool] = (), *, code_enabled: bool = True) -> None:
        self._modules = modules
        self._declared = {tool.entry.name: tool for tool in declared}
        self._code_enabled = code_enabled
        self._cache: dict[str, _Catalog] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        for tool in self._declared.values():
            tool.close()

    # -- the catalog -------------------------------------------------------------------------

    def generation(self) -> int:
        """Changes whenever what the catalog or any MCP server shows may have changed."""
        return self._modules.position()

    def entries(self, tenant: str) -> list[ToolEntry]:
        """Every tool of the tenant, sorted by name; those that lose R15 carry `shadowed_by`."""
        return self._catalog(tenant).entries

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        """The tool a call of `name` reaches (R15), or None."""
        return self._catalog(tenant).winners.get(name)

    def names(self, tenant: str) -> frozenset[str]:
        return self._catalog(tenant).names

    def _catalog(self, tenant: str) -> _Catalog:
        """The tenant's catalog as of the event store's position, built once per position."""
        position = self.generation()
        with self._lock:
            cached = self._cache.get(tenant)
        if cached is not None and cached.position == position:
            return cached
        built = _Catalog(position, resolve(self._build(tenant)))
        with self._lock:
            self._cache[tenant] = built
        return built

    def offered(self, tenant: str, permissions: Permissions, server_id: str | None = None) -> list[ToolEntry]:
        """MCP registration (DESIGN §4): the chat-exposed, enabled, configured tools the caller may
        use; on a named server, only those attached to it. Code tools only while code can run."""
        attached: set[str] | None = None
        if server_id is not None:
            server = self._modules.registry(tenant).get(callers.SERVER, server_id)
            if server is None:
                raise UnknownRecord(callers.SERVER, server_id)
            attached = set(server["tools"])
        if permissions.none:
            return []
        return [
            entry
            for entry in self.entries(tenant)
            if entry.offered_in_chat
            and (attached is None or entry.name in attached)
            and (self._code_enabled or entry.call_type != CODE)
            and permissions.allow(entry)
        ]

    def permissions(self, tenant: str, role: str, usage_profile: str | None) -> Permissions:
        """R14: an admin may use every tool; a caller what its usage profile allows; others none."""
        if role == ADMIN:
            return EVERYTHING
        if role != CALLER or usage_profile is None:
            return NOTHING
        profile = self._modules.registry(tenant).get(callers.PROFILE, usage_profile)
        if profile is None:
            return NOTHING
        return Permissions(tools=frozenset(profile["allowedTools"]), tags=frozenset(profile["allowedTags"]))

    # -- calls -------------------------------------------------------------------------------

    def call(self, tenant: str, name: str, arguments: Any, *, permissions: Permissions, context: dict[str, Any]) -> ExecutionResult:
        """Runs the tool `name` resolves to; refuses before anything runs when it may not."""
        entry = self.entry(tenant, name)
        if entry is None or not permissions.allow(entry):
            if permissions.everything and self._modules.is_module(tenant, name):
                # The module's own reason: not published, a library, disabled.
                return answered(self._modules.call_tool(tenant, name, arguments, context=context))
            raise ToolNotCallable(name, "no such tool" if permissions.everything or entry is None else "not allowed for this caller (R14)")
        if entry.call_type == PLAN and not permissions.everything:
            plan = self._modules.registry(tenant).exposed_plan(entry.name)
            if plan is not None:
                self._check_nodes(tenant, entry.name, plan, permissions)
        return self._call(tenant, entry, arguments, context, depth=0)

    def _check_nodes(self, tenant: str, name: str, plan: dict[str, Any], permissions: Permissions, within: str = "", depth: int = 0) -> None:
        """Invoker's rights (R14): every node's tool, through nested plans, is one the caller may use."""
        for index, node in enumerate(plan["nodes"]):
            here = f"{within}node {index + 1} ({node['toolName']})"
            target = self.entry(tenant, node["toolName"])
            if target is None:
                continue  # the run says so, as it does for an admin
            if not permissions.allow(target):
                raise ToolNotCallable(name, f"{here} is not allowed for this caller (R14); a plan runs with its caller's permissions")
            if target.call_type == PLAN and depth + 1 < MAX_PLAN_DEPTH:
                nested = self._modules.registry(tenant).exposed_plan(target.name)
                if nested is not None:
                    self._check_nodes(tenant, name, nested, permissions, f"{here} > ", depth + 1)

    def _call(self, tenant: str, entry: ToolEntry, arguments: Any, context: dict[str, Any], depth: int) -> ExecutionResult:
        """Dispatches to the tool's kind; whatever it answers passes `answered`."""
        if not entry.enabled:
            raise ToolNotCallable(entry.name, "the tool is disabled")
        if entry.call_type == CODE:
            return answered(self._modules.call_tool(tenant, entry.name, arguments, context=context))
        arguments = _validated(entry.input_schema, arguments)
        if entry.call_type == PLAN:
            plan = self._modules.registry(tenant).exposed_plan(entry.name)
            if plan is None:
                raise ToolNotCallable(entry.name, "the plan is no longer exposed as a tool")
            return answered(self._run_plan(tenant, plan, arguments, context, depth))
        return answered(self._declared[entry.name].call(arguments, context))

    def run_plan(self, tenant: str, plan_id: str, arguments: Any, *, context: dict[str, Any]) -> ExecutionResult:
        """POST /api/v1/admin/plans/{id}/run: any plan, exposed as a tool or not (an admin's call)."""
        plan = self._modules.registry(tenant).get(callers.PLAN, plan_id)
        if plan is None:
            raise UnknownRecord(callers.PLAN, plan_id)
        return answered(self._run_plan(tenant, plan, arguments, context, depth=0))

    def _run_plan(self, tenant: str, plan: dict[str, Any], arguments: Any, context: dict[str, Any], depth: int) -> ExecutionResult:
        """Each DIRECT_TOOL node in order, each output the next node's input; the first failure ends
        the run. The caller's permissions were checked for every node before this runs."""
        started = time.perf_counter()
        plan_id = plan["id"]
        value, logs = arguments, []
        for index, node in enumerate(plan["nodes"]):
            label = f"node {index + 1} ({node['toolName']})"
            failure = None
            target = self.entry(tenant, node["toolName"])
            node_context = {**context, "planRun": {"plan": plan_id, "node": index + 1, "toolName": node["toolName"]}}
            if target is None:
                failure = ExecutionError("plan", f"{label}: no tool named {node['toolName']!r} any more")
            elif target.call_type == PLAN and depth + 1 >= MAX_PLAN_DEPTH:
                failure = ExecutionError("plan", f"{label}: plans nest deeper than {MAX_PLAN_DEPTH}")
            else:
                try:
                    result = self._call(tenant, target, value, node_context, depth + 1)
                except (InvalidInput, ToolNotCallable) as refused:
                    if index == 0:
                        raise
                    failure = ExecutionError("plan", f"{label}: {refused.detail}")
                else:
                    logs.extend(f"[{label}] {line}" for line in result.logs)
                    if result.error is not None:
                        failure = ExecutionError(result.error.type, f"{label}: {result.error.message}")
                    value = result.output
            if failure is not None:
                return ExecutionResult(error=failure, logs=tuple(logs), duration_millis=_since(started))
        return ExecutionResult(output=value, logs=tuple(logs), duration_millis=_since(started))

    # -- building ----------------------------------------------------------------------------

    def _build(self, tenant: str) -> list[ToolEntry]:
        entries = [tool.entry for tool in self._declared.values()]
        entries += [code_entry(module) for module in self._modules.published_tools(tenant)]
        registry = self._modules.registry(tenant)
        entries += self._plan_entries(registry, {e.name: e for e in resolve(entries) if e.shadowed_by is None})
        return entries

    def _plan_entries(self, registry: CallerRegistry, others: dict[str, ToolEntry]) -> list[ToolEntry]:
        """A plan takes what its first node takes: its schema is that tool's (R15 among the rest)."""
        plans = {p["id"]: p for p in registry.all(callers.PLAN) if p["exposeAsTool"]}
        schemas: dict[str, dict[str, Any]] = {}

        def schema_of(plan_id: str, seen: frozenset[str]) -> dict[str, Any]:
            if plan_id in schemas:
                return schemas[plan_id]
            first = plans[plan_id]["nodes"][0]["toolName"]
            winner = others.get(first)
            if winner is not None and winner.call_type in (MCP, LOCAL):
                schema = winner.input_schema
            elif first in plans:
                schema = {"type": "object"} if first in seen | {plan_id} else schema_of(first, seen | {plan_id})
            elif winner is not None:
                schema = winner.input_schema
            else:
                schema = {"type": "object"}
            schemas[plan_id] = schema
            return schema

        return [
            ToolEntry(
                name=plan["id"],
                description=plan["description"],
                call_type=PLAN,
                input_schema=schema_of(plan["id"], frozenset()),
                tags=_tags(plan["tags"], PLAN_TAG),
                expose_in_chat=plan["exposeInChat"],
            )
            for plan in plans.values()
        ]


def answered(result: ExecutionResult) -> ExecutionResult:
    """The one check every tool result passes before it is answered, over REST and MCP alike: an
    output nested deeper than `MAX_DEPTH` is a `result` error (no encoder has to recurse into it),
    and a lone surrogate in the output, the logs or the error's message becomes U+FFFD."""
    if result.error is None and too_deep(result.output):
        error = ExecutionError("result", TOO_DEEP_RESULT)
        result = dataclasses.replace(result, output=None, error=error)
    message = result.error.message if result.error is not None else None
    if lone_surrogate_at([result.output, list(result.logs), message]) is None:
        return result
    return dataclasses.replace(
        result,
        output=well_formed(result.output),
        logs=tuple(well_formed(list(result.logs))),
        error=None if result.error is None else ExecutionError(result.error.type, well_formed(result.error.message)),
    )


def code_entry(module: CodeModule) -> ToolEntry:
    published = module.published
    assert published is not None and published["tool"] is not None
    tool = published["tool"]
    return ToolEntry(
        name=module.module_id,
        description=published["description"],
        call_type=CODE,
        input_schema=input_schema(tool["inputParameters"]),
        tags=_tags(tool["tags"], CODE_TAG),
        expose_in_chat=tool["exposeInChat"],
        enabled=tool["enabled"],
        configured=bool(published["content"].strip()),
    )


def _tags(tags: Iterable[str], kind_tag: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*tags, kind_tag]))


def _validated(schema: dict[str, Any], arguments: Any) -> Any:
    """The declared JSON Schema, checked before the tool runs; every problem named by its path."""
    if arguments is None:
        arguments = {}
    errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidInput([Violation(_path(e), "V1", e.message) for e in errors])
    return arguments


def _path(error: Any) -> str:
    path = "input" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    if error.validator == "required":
        # "'amount' is a required property": name the missing argument itself.
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else ""
        return f"{path}.{missing}" if missing else path
    return path


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
