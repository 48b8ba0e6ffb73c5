"""The context a call carries (docs/security.md, docs/kinds/code-modules.md): who calls, in which
tenant, through which way in (REST, MCP or the console), under which request, and within which
plan run. Presenters make one for each call (`application.queries.call_context`); the application
and the kinds hand it on as it is; what a tool's code sees of it (`ai.context()`, a native tool's
`context`) is `for_code`, which never holds a token (V2).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from application.principals import Principal

# The ways in: what a presenter says it is.
REST = "rest"
MCP = "mcp"
CONSOLE = "console"
WAYS_IN = (REST, MCP, CONSOLE)


@dataclass(frozen=True)
class PlanStep:
    """Which node of which plan a call is (docs/kinds/index.md, plans)."""

    plan: str
    node: int
    tool_name: str


@dataclass(frozen=True)
class CallContext:
    principal: Principal
    way_in: str
    # The request the call answers, when the way in names one (an MCP request's id); never shown to code.
    trace: str | None = None
    plan_step: PlanStep | None = None
    # Told of the call's log lines and progress reports while it runs (`domain.ports.Execution.events`):
    # an MCP request that asked for notifications. Never shown to code, never compared.
    events: Callable[[str, Any], None] | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.way_in not in WAYS_IN:
            raise ValueError(f"a call comes in by {', '.join(WAYS_IN)}, not {self.way_in!r}")

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    def in_plan(self, plan: str, node: int, tool_name: str) -> CallContext:
        """The context of one node of a plan run this call makes."""
        return dataclasses.replace(self, plan_step=PlanStep(plan, node, tool_name))

    def for_code(self) -> dict[str, Any]:
        """What `ai.context()` returns to the code, and a native tool is handed: never a token (V2)."""
        step = self.plan_step
        return {
            "user": user_for_code(self.principal),
            "tenant": self.principal.tenant,
            "provider": None,
            "usageProfile": self.principal.usage_profile,
            "conversation": None,
            "request": None,
            "planRun": None if step is None else {"plan": step.plan, "node": step.node, "toolName": step.tool_name},
        }


def user_for_code(principal: Principal) -> dict[str, Any]:
    """`ai.context().user`: the person when one calls (their id, display name, email, locale and
    how they came: docs/users.md), else the token's name as the id, in English."""
    person = principal.user
    if person is None:
        return {"id": principal.name, "roles": [principal.role], "locale": "en"}
    return {"id": person.id, "name": person.name, "email": person.email, "roles": [principal.role],
            "locale": person.locale, "via": principal.via}


def for_code(context: CallContext | None) -> dict[str, Any]:
    """`context.for_code()`; empty for a run no caller asked for (a publish's checks without one)."""
    return context.for_code() if context is not None else {}
