"""Calling published tools directly: the DIRECT_TOOL path of plans (DESIGN §3)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body
from starlette.concurrency import run_in_threadpool

from api.deps import ServicesDep, ToolCaller
from api.problems import documented
from api.presenters import execution_out
from api.routes.modules import call_context
from api.schemas import ExecutionOut
from domain.errors import SandboxBusy

router = APIRouter(prefix="/api/v1/tools", tags=["tools"])


@router.post("/{name}/call", response_model=ExecutionOut, responses=documented(400, 404, 413, 429, 503))
async def call_tool(
    name: str,
    services: ServicesDep,
    principal: ToolCaller,
    arguments: Any = Body(None, description="the tool's arguments, as a JSON object"),
) -> dict[str, Any]:
    """Run the published version of a tool with the given arguments."""
    # When every session is taken the answer is 429 at once, without a trip to a thread: a burst
    # beyond the cap must not queue behind itself. The sandbox itself still has the last word.
    sandbox = services.sandbox
    if sandbox is not None and sandbox.busy():
        raise SandboxBusy(sandbox.max_active_sessions)
    result = await run_in_threadpool(
        services.modules.call_tool, principal.tenant, name, arguments, context=call_context(principal)
    )
    return execution_out(result)
