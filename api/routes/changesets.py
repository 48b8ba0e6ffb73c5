"""Changesets (docs/rules.md B6): what each published, who, when, and the publisher's message.

A changeset is recorded as the `Published` events of its modules, each naming it; these routes read
them from the event store (the audit's source), not from a read model.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.deps import Reader, ServicesDep
from api.problems import documented
from api.schemas import ChangesetOut
from api.paths import ADMIN_API
from domain.errors import UnknownRecord

router = APIRouter(prefix=f"{ADMIN_API}/changesets", tags=["changesets"])


@router.get("", response_model=list[ChangesetOut], responses=documented())
def list_changesets(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
    """Every changeset of the tenant, newest first."""
    return services.history.changesets(principal.tenant)


@router.get("/{id}", response_model=ChangesetOut, responses=documented(404))
def get_changeset(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """One changeset: the modules it published with their versions, who, when, and its message."""
    found = next((c for c in services.history.changesets(principal.tenant) if c["id"] == id), None)
    if found is None:
        raise UnknownRecord("changeset", id)
    return found
