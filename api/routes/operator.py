"""The operator's tenants (docs/tenants.md): create, list, read, rename, suspend or resume, set quotas,
delete when empty. The operator's token opens these routes and no other; a tenant's tokens never
open these."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from api.deps import Operator, ServicesDep
from api.presenters import tenant_created
from api.problems import documented
from api.schemas import TenantChange, TenantCreated, TenantIn, TenantPublic
from application.queries import tenant_view
from api.paths import OPERATOR_API

router = APIRouter(prefix=f"{OPERATOR_API}/tenants", tags=["operator"])


@router.get("", response_model=list[TenantPublic], responses=documented())
def list_tenants(services: ServicesDep, principal: Operator) -> list[dict[str, Any]]:
    """Every tenant, by id (the deployment's own, `TOOLSMITH_TENANT`, among them)."""
    return services.tenants.list()


@router.post("", status_code=201, response_model=TenantCreated, responses=documented(400, 409))
def create_tenant(body: TenantIn, services: ServicesDep, principal: Operator) -> dict[str, Any]:
    """A new tenant; the answer holds its first admin token, which is never shown again."""
    tenant, token, secret = services.tenants.create(body.id, body.name, body.quotas, by=principal.name)
    return tenant_created(tenant, token, secret)


@router.get("/{id}", response_model=TenantPublic, responses=documented(404))
def get_tenant(id: str, services: ServicesDep, principal: Operator) -> dict[str, Any]:
    """One tenant, with what it holds now."""
    return tenant_view(services, id)


@router.put("/{id}", response_model=TenantPublic, responses=documented(400, 404))
def change_tenant(id: str, body: TenantChange, services: ServicesDep, principal: Operator) -> dict[str, Any]:
    """Rename, suspend or resume, set quotas: each field given changes, the others stay."""
    tenant = services.tenants.update(id, body.model_dump(exclude_unset=True, exclude_none=False), by=principal.name)
    return tenant_view(services, id, tenant)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404, 409))
def delete_tenant(id: str, services: ServicesDep, principal: Operator) -> Response:
    """Delete a tenant that holds nothing (409 names what it holds); its tokens stop working."""
    services.tenants.delete(id, by=principal.name)
    return Response(status_code=204)
