"""Plans exposed as tools (callType PLAN; docs/kinds/index.md; docs/rules.md R14): DIRECT_TOOL nodes in
order, each output the next node's input, with no LLM in the loop.

A plan takes what its first node takes: its schema is that tool's, by R15 among the other kinds
(so its entries are built after theirs). A plan runs with its CALLER's permissions (invoker's
rights): before any node runs, every node's tool, in nested plans too, is checked against the
caller's R14 permissions, and a node the caller may not use refuses the whole call, naming the
node, as calling that tool directly would. A plan is admitted when every node's tool is: a plan
that calls code waits on the JavaScript pool as the code would, one of native tools never does.
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

from application.context import CallContext
from application.kinds.base import Ranked, ToolKind, Tools, tagged, validated
from domain import annotations as tool_hints
from domain import callers
from domain.catalog import Permissions, ToolEntry
from domain.errors import InvalidInput, ToolNotCallable, UnknownRecord
from domain.ports import ExecutionError, ExecutionResult

PLAN = "PLAN"
PLAN_TAG = "plan"
# Plans may call plans exposed as tools; cycles are refused at save, and this bounds the rest.
MAX_PLAN_DEPTH = 8


class PlanKind(ToolKind):
    call_type = PLAN
    label = callers.PLAN  # the caller registry's own word for the record
    derived = True

    def _registry(self, tenant: str) -> callers.CallerRegistry:
        """The tenant's plans (the one call of this kind into the event store)."""
        return self.deps.store.registry(tenant)

    def _exposed(self, tenant: str, name: str) -> dict[str, Any] | None:
        return self._registry(tenant).exposed_plan(name)

    # -- the catalog and R2 --------------------------------------------------------------------

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        plans = {p["id"]: p for p in self._registry(tenant).all(callers.PLAN) if p["exposeAsTool"]}
        schemas: dict[str, dict[str, Any]] = {}

        def schema_of(plan_id: str, seen: frozenset[str]) -> dict[str, Any]:
            if plan_id in schemas:
                return schemas[plan_id]
            first = plans[plan_id]["nodes"][0]["toolName"]
            winner = others.get(first)
            if winner is not None and others.outranks(winner.call_type, PLAN):
                schema = winner.input_schema
            elif first in plans:
                schema = {"type": "object"} if first in seen | {plan_id} else schema_of(first, seen | {plan_id})
            elif winner is not None:
                schema = winner.input_schema
            else:
                schema = {"type": "object"}
            schemas[plan_id] = schema
            return schema

        hints: dict[str, dict[str, Any] | None] = {}

        def hints_of(plan_id: str, seen: frozenset[str]) -> dict[str, Any] | None:
            """R17: what its nodes' tools are, combined (a nested plan's in turn; a cycle: unknown)."""
            if plan_id in hints:
                return hints[plan_id]
            steps: list[Any] = []
            for node in plans[plan_id]["nodes"]:
                name = node["toolName"]
                winner = others.get(name)
                if name in plans and not (winner is not None and others.outranks(winner.call_type, PLAN)):
                    steps.append(None if name in seen | {plan_id} else hints_of(name, seen | {plan_id}))
                elif winner is not None:
                    steps.append(winner.annotations if winner.annotations is not None
                                 else (tool_hints.READS_ITS_OWN.derived if winner.read_only else None))
                else:
                    steps.append(None)
            hints[plan_id] = tool_hints.combined(steps)
            return hints[plan_id]

        return [
            ToolEntry(
                name=plan["id"],
                description=plan["description"],
                call_type=PLAN,
                input_schema=schema_of(plan["id"], frozenset()),
                tags=tagged(plan["tags"], PLAN_TAG),
                expose_in_chat=plan["exposeInChat"],
                runs_with="caller",
                annotations=hints_of(plan["id"], frozenset()),
            )
            for plan in plans.values()
        ]

    def touched(self, event: Any) -> Collection[str] | None:
        """A plan's record. (The catalog reads a derived kind's entries again whenever anything of
        its tenant changed, since a plan's schema follows its first node's tool.)"""
        if isinstance(event, (callers.CallerRegistry.RecordSaved, callers.CallerRegistry.RecordDeleted)) and event.kind == callers.PLAN:
            return (event.record_id,)
        return None

    def holds(self, tenant: str, name: str) -> bool:
        return self._exposed(tenant, name) is not None

    # -- calls ---------------------------------------------------------------------------------

    def admit(self, tenant: str, entry: ToolEntry, tools: Tools, depth: int) -> None:
        plan = self._exposed(tenant, entry.name)
        if plan is None or depth + 1 >= MAX_PLAN_DEPTH:
            return
        for node in plan["nodes"]:
            target = tools.entry(tenant, node["toolName"])
            if target is not None:
                tools.admit_entry(tenant, target, depth + 1)

    def check_permissions(self, tenant: str, entry: ToolEntry, permissions: Permissions, tools: Tools) -> None:
        plan = self._exposed(tenant, entry.name)
        if plan is not None:
            self._check_nodes(tenant, entry.name, plan, permissions, tools)

    def _check_nodes(self, tenant: str, name: str, plan: dict[str, Any], permissions: Permissions, tools: Tools,
                     within: str = "", depth: int = 0) -> None:
        """Invoker's rights (R14): every node's tool, through nested plans, is one the caller may use."""
        for index, node in enumerate(plan["nodes"]):
            here = f"{within}node {index + 1} ({node['toolName']})"
            target = tools.entry(tenant, node["toolName"])
            if target is None:
                continue  # the run says so, as it does for an admin
            if not permissions.allow(target):
                raise ToolNotCallable(name, f"{here} is not allowed for this caller (R14); a plan runs with its caller's permissions")
            if target.call_type == PLAN and depth + 1 < MAX_PLAN_DEPTH:
                nested = self._exposed(tenant, target.name)
                if nested is not None:
                    self._check_nodes(tenant, name, nested, permissions, tools, f"{here} > ", depth + 1)

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        arguments = validated(entry.input_schema, arguments)
        plan = self._exposed(tenant, entry.name)
        if plan is None:
            raise ToolNotCallable(entry.name, "the plan is no longer exposed as a tool")
        return self._run(tenant, plan, arguments, context, tools, depth)

    def run(self, tenant: str, plan_id: str, arguments: Any, *, context: CallContext, tools: Tools) -> ExecutionResult:
        """POST /api/v1/admin/plans/{id}/run: any plan, exposed as a tool or not (an admin's call)."""
        plan = self._registry(tenant).get(callers.PLAN, plan_id)
        if plan is None:
            raise UnknownRecord(callers.PLAN, plan_id)
        return tools.answer(self._run(tenant, plan, arguments, context, tools, depth=0))

    def _run(self, tenant: str, plan: dict[str, Any], arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        """Each DIRECT_TOOL node in order, each output the next node's input; the first failure ends
        the run. The caller's permissions were checked for every node before this runs."""
        started = time.perf_counter()
        plan_id = plan["id"]
        value, logs, steps = arguments, [], []
        for index, node in enumerate(plan["nodes"]):
            label = f"node {index + 1} ({node['toolName']})"
            failure = None
            result = None
            target = tools.entry(tenant, node["toolName"])
            node_context = context.in_plan(plan_id, index + 1, node["toolName"])
            if target is None:
                failure = ExecutionError("plan", f"{label}: no tool named {node['toolName']!r} any more")
            elif target.call_type == PLAN and depth + 1 >= MAX_PLAN_DEPTH:
                failure = ExecutionError("plan", f"{label}: plans nest deeper than {MAX_PLAN_DEPTH}")
            else:
                try:
                    result = tools.call_entry(tenant, target, value, node_context, depth + 1)
                except (InvalidInput, ToolNotCallable) as refused:
                    if index == 0:
                        raise
                    failure = ExecutionError("plan", f"{label}: {refused.detail}")
                else:
                    logs.extend(f"[{label}] {line}" for line in result.logs)
                    if result.error is not None:
                        failure = ExecutionError(result.error.type, f"{label}: {result.error.message}")
                    value = result.output
            steps.append({
                "node": index + 1, "toolName": node["toolName"],
                "output": result.output if result is not None and failure is None else None,
                "error": failure.as_dict() if failure is not None else None,
                "logs": list(result.logs) if result is not None else [],
                "durationMillis": result.duration_millis if result is not None else 0.0,
            })
            if failure is not None:
                return ExecutionResult(error=failure, logs=tuple(logs), duration_millis=_since(started), steps=tuple(steps))
        return ExecutionResult(output=value, logs=tuple(logs), duration_millis=_since(started), steps=tuple(steps))


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
