"""A plan's run in the console (docs/console.md): the input given on the plan's page, run by the plans
kind's `run` as the REST plan run route does (toolkinds/plans/routes.py), answered with the plan's page
and what each node did. The plan's list, page and form are the caller records' (console/routes/callers.py)."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from api.presenters import execution_out
from application.context import CONSOLE
from application.queries import call_context
from console.routes.callers import PLANS, node_runs, render_detail
from console.routing import ConsoleRoute
from console.security import Writer
from domain import errors
from domain.callers import PLAN
from toolkinds.plans.kind import PlanKind

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


@router.post("/plans/{record_id}/run")
async def run_plan_page(record_id: str, request: Request, visitor: Writer) -> Response:
    """Runs the plan with the input given, as the REST plan run route does: by the plans kind's `run`."""
    form = await request.form()
    services = request.app.state.services
    record = services.records.get(visitor.principal.tenant, PLAN, record_id)
    text = str(form.get("input", ""))
    try:
        value = json.loads(text) if text.strip() else None
    except json.JSONDecodeError as error:
        return render_detail(request, PLANS, record, run_input=text,
                             run_error=f"The input is not JSON: {error.msg} (line {error.lineno}, column {error.colno}).")
    try:
        ran = await run_in_threadpool(services.toolbox.kind(PlanKind).run, visitor.principal.tenant, record_id, value,
                                      context=call_context(visitor.principal, CONSOLE), tools=services.toolbox)
        result = {**execution_out(ran), "nodes": list(ran.steps)}
    except (errors.InvalidInput, errors.ToolNotCallable) as error:
        result = {"output": None, "error": {"type": error.code, "message": error.detail}, "logs": [], "durationMillis": 0, "nodes": []}
    result = {**result, "nodes": node_runs(record, result)}
    return render_detail(request, PLANS, record, run=result, run_input=text)
