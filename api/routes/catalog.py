"""The tool catalog (DESIGN §3): every kind of tool in one list, with R15's resolution shown."""

# No `from __future__ import annotations`: the route's `callType` annotation names this call's
# `call_types`, which FastAPI could not resolve from a string.
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Query

from api import queries
from api.deps import Reader, ServicesDep
from api.problems import documented
from api.schemas import ToolOut
from domain.catalog import ToolEntry


def tool_out(entry: ToolEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "description": entry.description,
        "callType": entry.call_type,
        "tags": list(entry.tags),
        "inputSchema": entry.input_schema,
        "exposeInChat": entry.expose_in_chat,
        "enabled": entry.enabled,
        "shadowedBy": entry.shadowed_by,
        # Invoker's rights: a plan reaches only the tools its caller may use (application.kinds.plans).
        "runsWith": entry.runs_with,
    }


def router_for(call_types: Sequence[str]) -> APIRouter:
    """The catalog's router; `callType` accepts the call types of the service's kinds."""
    router = APIRouter(prefix="/api/v1/admin/tools", tags=["tool catalog"])

    @router.get("", response_model=list[ToolOut], responses=documented(400))
    def list_tools(
        services: ServicesDep,
        principal: Reader,
        callType: Annotated[str | None, Query(pattern="^(" + "|".join(call_types) + ")$")] = None,
        tag: str | None = None,
    ) -> list[dict[str, Any]]:
        """Every tool of every kind (code modules, plans, native and external MCP tools, …), by name."""
        return [tool_out(entry) for entry in queries.tools(services, principal.tenant, call_type=callType, tag=tag)]

    return router
