"""Plans over REST (docs/rest-api.md, docs/kinds/index.md): records of the caller registry, listed,
read, created, replaced and deleted as the other records are (`api/routes/callers.py`), and run."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool

from api.deps import Admin, ServicesDep
from api.paths import ADMIN_API
from api.presenters import execution_out
from api.problems import documented
from application.context import REST
from application.queries import call_context
from api.routes.callers import records_router
from api.schemas import PlanFields, PlanIn, PlanPublic, PlanRunOut, RunRequest
from domain.callers import PLAN
from toolkinds.plans.kind import PlanKind

router = records_router(PLAN, f"{ADMIN_API}/plans", "plans", PlanIn, PlanFields, PlanPublic)


@router.post("/{id}/run", response_model=PlanRunOut, responses=documented(400, 404, 429, 503))
async def run_plan(id: str, body: RunRequest, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Run a plan's DIRECT_TOOL nodes in order, each output the next input; no LLM."""
    result = await run_in_threadpool(
        services.toolbox.kind(PlanKind).run, principal.tenant, id, body.input, context=call_context(principal, REST), tools=services.toolbox
    )
    return {**execution_out(result), "nodes": list(result.steps)}
