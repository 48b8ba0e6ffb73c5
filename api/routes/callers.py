"""Plans, agents, MCP servers and usage profiles (docs/rest-api.md, docs/mcp.md; docs/kinds/index.md and docs/kinds/code-modules.md): records that
name tools. One router per kind, all built alike: list, get, create, replace, delete."""


from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from api.deps import Admin, Reader, ServicesDep
from api.presenters import execution_out
from api.problems import documented
from api.queries import call_context, reaches
from api.schemas import (
    AgentFields,
    AgentIn,
    AgentPublic,
    PlanRunOut,
    McpServerFields,
    McpServerIn,
    McpServerPublic,
    PlanFields,
    PlanIn,
    PlanPublic,
    RunRequest,
    UsageProfileFields,
    UsageProfileIn,
    UsageProfilePublic,
)
from toolkinds.plans.kind import PlanKind
from domain.callers import AGENT, PLAN, PROFILE, SERVER
from api.services import Services


def _presented(services: Services, tenant: str, kind: str, record: dict[str, Any]) -> dict[str, Any]:
    if kind == AGENT:
        return {**record, "tools": reaches(services, tenant, record["allowedTools"], record["allowedTags"])}
    if kind == SERVER:
        return {**record, "url": f"/mcp/{record['id']}"}
    return record


def _records_router(kind: str, prefix: str, tag: str, create: type[BaseModel], fields: type[BaseModel], public: type[BaseModel]) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=[tag])

    @router.get("", response_model=list[public], responses=documented(), summary=f"List the {tag}")  # type: ignore[valid-type]
    def list_records(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
        return [_presented(services, principal.tenant, kind, r) for r in services.records.list(principal.tenant, kind)]

    @router.get("/{id}", response_model=public, responses=documented(404), summary=f"One {kind}")
    def get_record(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
        return _presented(services, principal.tenant, kind, services.records.get(principal.tenant, kind, id))

    @router.post("", status_code=201, response_model=public, responses=documented(400, 409), summary=f"Create a {kind}")
    def create_record(body: create, services: ServicesDep, principal: Admin) -> dict[str, Any]:  # type: ignore[valid-type]
        record, _ = services.records.save(principal.tenant, kind, body.model_dump(), by=principal.name, create=True)  # type: ignore[attr-defined]
        return _presented(services, principal.tenant, kind, record)

    @router.put("/{id}", response_model=public, responses=documented(400, 404, 409), summary=f"Replace a {kind}")
    def replace_record(id: str, body: fields, services: ServicesDep, principal: Admin) -> dict[str, Any]:  # type: ignore[valid-type]
        record, _ = services.records.save(principal.tenant, kind, {"id": id, **body.model_dump()}, by=principal.name, create=False)  # type: ignore[attr-defined]
        return _presented(services, principal.tenant, kind, record)

    @router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404, 409), summary=f"Delete a {kind}")
    def delete_record(id: str, services: ServicesDep, principal: Admin) -> Response:
        services.records.delete(principal.tenant, kind, id, by=principal.name)
        return Response(status_code=204)

    return router


plans = _records_router(PLAN, "/api/v1/admin/plans", "plans", PlanIn, PlanFields, PlanPublic)
agents = _records_router(AGENT, "/api/v1/admin/agents", "agents", AgentIn, AgentFields, AgentPublic)
servers = _records_router(SERVER, "/api/v1/admin/mcp-servers", "MCP servers", McpServerIn, McpServerFields, McpServerPublic)
profiles = _records_router(PROFILE, "/api/v1/admin/usage-profiles", "usage profiles", UsageProfileIn, UsageProfileFields, UsageProfilePublic)


@plans.post("/{id}/run", response_model=PlanRunOut, responses=documented(400, 404, 429, 503))
async def run_plan(id: str, body: RunRequest, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Run a plan's DIRECT_TOOL nodes in order, each output the next input; no LLM."""
    result = await run_in_threadpool(
        services.toolbox.kind(PlanKind).run, principal.tenant, id, body.input, context=call_context(principal), tools=services.toolbox
    )
    return {**execution_out(result), "nodes": list(result.steps)}


@servers.put("/{id}/tools/{name}", response_model=McpServerPublic, responses=documented(404))
def attach_tool(id: str, name: str, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Attach a tool to the server; a tool may be attached to many servers."""
    record, _ = services.records.attach(principal.tenant, id, name, by=principal.name)
    return _presented(services, principal.tenant, SERVER, record)


@servers.delete("/{id}/tools/{name}", response_model=McpServerPublic, responses=documented(404))
def detach_tool(id: str, name: str, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Detach a tool from this server only; the tool and its other servers are untouched."""
    record, _ = services.records.detach(principal.tenant, id, name, by=principal.name)
    return _presented(services, principal.tenant, SERVER, record)
