"""Agents, MCP servers and usage profiles (docs/rest-api.md, docs/mcp.md; docs/kinds/index.md and docs/kinds/code-modules.md): records that
name tools. One router per kind of record, all built alike (`records_router`): list, get, create, replace, delete. Plans are
records too, and a kind of tool: their router is the plans kind's own, built the same way."""


from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel

from api.deps import Admin, Reader, ServicesDep
from api.problems import documented
from application.queries import reaches
from api.schemas import (
    AgentFields,
    AgentIn,
    AgentPublic,
    McpServerFields,
    McpServerIn,
    McpServerPublic,
    UsageProfileFields,
    UsageProfileIn,
    UsageProfilePublic,
)
from domain.callers import AGENT, PROFILE, SERVER
from api.services import Services
from api.paths import ADMIN_API


def _presented(services: Services, tenant: str, kind: str, record: dict[str, Any]) -> dict[str, Any]:
    if kind == AGENT:
        return {**record, "tools": reaches(services, tenant, record["allowedTools"], record["allowedTags"])}
    if kind == SERVER:
        return {**record, "url": f"/mcp/{record['id']}"}
    return record


def records_router(kind: str, prefix: str, tag: str, create: type[BaseModel], fields: type[BaseModel], public: type[BaseModel]) -> APIRouter:
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


agents = records_router(AGENT, f"{ADMIN_API}/agents", "agents", AgentIn, AgentFields, AgentPublic)
servers = records_router(SERVER, f"{ADMIN_API}/mcp-servers", "MCP servers", McpServerIn, McpServerFields, McpServerPublic)
profiles = records_router(PROFILE, f"{ADMIN_API}/usage-profiles", "usage profiles", UsageProfileIn, UsageProfileFields, UsageProfilePublic)


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
