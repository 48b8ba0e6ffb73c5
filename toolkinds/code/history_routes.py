"""A module's history, published versions and past states (docs/rules.md B2), for admins and auditors."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from api.paths import ADMIN_API
from api.deps import Reader, ServicesDep
from api.problems import documented
from api.schemas import HistoryOut, VersionOut, VersionSummary
from domain import history
from domain.errors import UnknownModule, UnknownVersion

router = APIRouter(prefix=f"{ADMIN_API}/code-modules", tags=["code modules: history"])


@router.get("/{id}/history", response_model=HistoryOut, responses=documented(404))
def module_history(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """Every event of the module, through all its lives: type, version, time, author, data."""
    events = services.history.module_events(principal.tenant, id)
    if not events:
        raise UnknownModule(id)
    return {"id": id, "events": [history.entry(e) for e in events]}


@router.get("/{id}/versions", response_model=list[VersionSummary], responses=documented(404))
def module_versions(id: str, services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
    """Every published version, oldest first, with who published it and when."""
    events = services.history.module_events(principal.tenant, id)
    if not events:
        raise UnknownModule(id)
    return history.versions(events)


@router.get("/{id}/versions/{version}", response_model=VersionOut, responses=documented(400, 404))
def module_version(id: str, version: int, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """Published version `version`'s whole definition."""
    events = services.history.module_events(principal.tenant, id)
    if not events:
        raise UnknownModule(id)
    for found in history.versions(events):
        if found["version"] == version:
            return found
    raise UnknownVersion(id, version)
