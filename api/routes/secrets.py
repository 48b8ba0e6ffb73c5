"""Secrets (docs/kinds/index.md): admins create, rotate, describe and delete them; admins and auditors list
them and read their history. No answer ever holds a value."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from api.deps import Admin, Reader, ServicesDep
from api.problems import documented
from api.schemas import HistoryOut, SecretFields, SecretIn, SecretPublic
from api.paths import ADMIN_API
from application.secrets import SECRET
from domain import history
from domain.errors import UnknownRecord

router = APIRouter(prefix=f"{ADMIN_API}/secrets", tags=["secrets"])


@router.get("", response_model=list[SecretPublic], responses=documented())
def list_secrets(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
    """The tenant's secrets, without values, each with the tools that use it."""
    return services.secrets.list(principal.tenant)


@router.post("", status_code=201, response_model=SecretPublic, responses=documented(400, 409))
def create_secret(body: SecretIn, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Create a secret; the answer holds its fingerprint, never its value."""
    return services.secrets.create(principal.tenant, body.id, body.value.get_secret_value(), body.description,
                                   by=principal.name)


@router.get("/{id}", response_model=SecretPublic, responses=documented(404))
def get_secret(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """One secret, without its value."""
    return services.secrets.get(principal.tenant, id)


@router.put("/{id}", response_model=SecretPublic, responses=documented(400, 404))
def update_secret(id: str, body: SecretFields, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Rotate the value and (or) change the description, in place."""
    value = body.value.get_secret_value() if body.value is not None else None
    return services.secrets.update(principal.tenant, id, value=value, description=body.description, by=principal.name)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404, 409))
def delete_secret(id: str, services: ServicesDep, principal: Admin) -> Response:
    """Delete a secret; refused (409, `usedBy`) while a tool refers to it."""
    services.secrets.delete(principal.tenant, id, by=principal.name)
    return Response(status_code=204)


@router.get("/{id}/history", response_model=HistoryOut, responses=documented(404))
def secret_history(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """Every event of the secret, through all its lives: type, time, author, fingerprint."""
    events = services.secrets.history(principal.tenant, id)
    if not events:
        raise UnknownRecord(SECRET, id)
    return {"id": id, "events": [history.entry(e) for e in events]}
