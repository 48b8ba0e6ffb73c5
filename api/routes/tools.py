"""Calling published tools directly: the DIRECT_TOOL path of plans (DESIGN §3)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body

from api.deps import ServicesDep, ToolCaller
from api.problems import documented
from api.presenters import execution_out
from api.routes.modules import call_context
from api.schemas import ExecutionOut

router = APIRouter(prefix="/api/v1/tools", tags=["tools"])


@router.post("/{name}/call", response_model=ExecutionOut, responses=documented(400, 404, 413, 429, 503))
def call_tool(
    name: str,
    services: ServicesDep,
    principal: ToolCaller,
    arguments: Any = Body(None, description="the tool's arguments, as a JSON object"),
) -> dict[str, Any]:
    """Run the published version of a tool with the given arguments."""
    result = services.modules.call_tool(principal.tenant, name, arguments, context=call_context(principal))
    return execution_out(result)
