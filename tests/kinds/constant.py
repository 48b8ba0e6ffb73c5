"""An example kind of tool that exists only in the tests (issue 13): a "constant" answers a fixed
value. It is what a new admin-managed kind needs, in one file standing for the four a product kind
would have (its aggregate in `domain/`, its kind in `application/kinds/`, its routes in `api/routes/`,
one line in `entrypoints/kinds.py`): the service takes it with `bootstrap(..., kinds=WITH_CONSTANTS)`,
and nothing else of the product knows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import event
from eventsourcing.utils import get_topic
from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from api.deps import Admin, Reader, ServicesDep
from api.kinds import KindPlugin
from application.commands import Change
from application.kinds.base import Ranked, ToolKind, Tools, tagged, validated
from domain.catalog import ToolEntry
from domain.chain import Chained
from domain.errors import IdTaken, InvalidDefinition, UnknownRecord
from domain.ports import ExecutionResult
from domain.rules import description_violations, id_violations
from entrypoints.kinds import DEFAULT_KINDS

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/tests/constants")
CONSTANT = "CONSTANT"
CONSTANT_TAG = "constant"


def constant_aggregate_id(tenant: str, name: str) -> UUID:
    return uuid5(_NAMESPACE, f"constant/{tenant}/{name}")


# -- the aggregate (a product kind's `domain/` file) ------------------------------------------------

class Constant(Chained):
    """A named value of one tenant; deleted and created again on the same aggregate."""

    @staticmethod
    def create_id(tenant: str, name: str) -> UUID:  # type: ignore[override]
        return constant_aggregate_id(tenant, name)

    @event("Created")
    def __init__(self, tenant: str, name: str, description: str, value: Any, expose_in_chat: bool, by: str,
                 previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.tenant = tenant
        self.name = name
        self.description = description
        self.value = value
        self.expose_in_chat = expose_in_chat
        self.deleted = False

    def delete(self, by: str) -> None:
        self._deleted(tenant=self.tenant, name=self.name, by=by)

    def recreate(self, description: str, value: Any, expose_in_chat: bool, by: str) -> None:
        self._recreated(tenant=self.tenant, name=self.name, description=description, value=value, expose_in_chat=expose_in_chat, by=by)

    @event("Deleted")
    def _deleted(self, tenant: str, name: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.deleted = True

    @event("Recreated")
    def _recreated(self, tenant: str, name: str, description: str, value: Any, expose_in_chat: bool, by: str,
                   previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.description, self.value, self.expose_in_chat, self.deleted = description, value, expose_in_chat, False


# -- the kind (a product kind's `application/kinds/` file) ------------------------------------------

class ConstantKind(ToolKind):
    call_type = CONSTANT
    label = "constant"

    # queries

    def constants(self, tenant: str) -> list[Constant]:
        """Every live constant of `tenant`, by name (the log's `Created` events say which exist)."""
        store = self.deps.store
        created = store.recorder.select_notifications(1, 1_000_000, topics=[get_topic(Constant.Created)])
        found = {}
        for notification in created:
            constant = self._load(notification.originator_id)
            if constant is not None and constant.tenant == tenant and not constant.deleted:
                found[constant.name] = constant
        return [found[name] for name in sorted(found)]

    def _load(self, aggregate_id: UUID) -> Constant | None:
        try:
            return self.deps.store.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None

    # commands

    def create(self, tenant: str, name: str, description: str, value: Any, expose_in_chat: bool, *, by: str) -> Constant:
        found = id_violations(name) + description_violations(description, "description")
        if found:
            raise InvalidDefinition(found)

        def attempt() -> Change[Constant]:
            holder = self.deps.names.holder_of(tenant, name, besides=self.label)  # R2 across every kind
            if holder is not None:
                raise IdTaken(name, holder)
            existing = self._load(constant_aggregate_id(tenant, name))
            if existing is not None and not existing.deleted:
                raise IdTaken(name, self.label)
            if existing is None:
                constant = Constant(tenant=tenant, name=name, description=description, value=value,
                                    expose_in_chat=expose_in_chat, by=by)
            else:
                constant = existing
                constant.recreate(description, value, expose_in_chat, by)
            return Change(constant, save=[constant], subject=self.deps.commands.subject(constant, name))

        # The command runner, as every product command: under the tenant's lock, since a name changes hands.
        constant, _ = self.deps.commands.run(attempt, name=name, lock=tenant)
        return constant

    def delete(self, tenant: str, name: str, *, by: str) -> None:
        def attempt() -> Change[None]:
            constant = self._load(constant_aggregate_id(tenant, name))
            if constant is None or constant.deleted:
                raise UnknownRecord(self.label, name)
            constant.delete(by)
            return Change(None, save=[constant], subject=self.deps.commands.subject(constant, name))

        self.deps.commands.run(attempt, name=name, lock=tenant)

    # the interface

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        return [
            ToolEntry(name=c.name, description=c.description, call_type=CONSTANT, input_schema={"type": "object", "properties": {}},
                      tags=tagged([], CONSTANT_TAG), expose_in_chat=c.expose_in_chat)
            for c in self.constants(tenant)
        ]

    def holds(self, tenant: str, name: str) -> bool:
        if id_violations(name):
            return False
        constant = self._load(constant_aggregate_id(tenant, name))
        return constant is not None and not constant.deleted

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: dict[str, Any], tools: Tools, depth: int) -> ExecutionResult:
        validated(entry.input_schema, arguments)
        constant = self._load(constant_aggregate_id(tenant, entry.name))
        return ExecutionResult(output=None if constant is None else constant.value)

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None:
        tenant, name = state.get("tenant"), state.get("name")
        if isinstance(tenant, str) and isinstance(name, str) and constant_aggregate_id(tenant, name) == aggregate_id:
            return tenant
        return None


# -- its REST routes (a product kind's `api/routes/` file) ------------------------------------------

class ConstantIn(BaseModel):
    id: str = Field(max_length=200)
    description: str = Field(max_length=4_000)
    value: Any = None
    exposeInChat: bool = False


router = APIRouter(prefix="/api/v1/admin/constants", tags=["constants"])


def _public(constant: Constant) -> dict[str, Any]:
    return {"id": constant.name, "description": constant.description, "value": constant.value, "exposeInChat": constant.expose_in_chat}


@router.post("", status_code=201, responses={400: {}, 409: {}})
def create_constant(body: ConstantIn, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Create a constant."""
    kind = services.toolbox.kind(ConstantKind)
    return _public(kind.create(principal.tenant, body.id, body.description, body.value, body.exposeInChat, by=principal.name))


@router.get("")
def list_constants(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
    """List the constants."""
    return [_public(c) for c in services.toolbox.kind(ConstantKind).constants(principal.tenant)]


@router.delete("/{id}", status_code=204, response_class=Response, responses={404: {}})
def delete_constant(id: str, services: ServicesDep, principal: Admin) -> Response:
    """Delete a constant."""
    services.toolbox.kind(ConstantKind).delete(principal.tenant, id, by=principal.name)
    return Response(status_code=204)


# -- the registry, plus this kind (a product kind's one line in `entrypoints/kinds.py`) -------------

WITH_CONSTANTS = (*DEFAULT_KINDS, KindPlugin(ConstantKind, routers=(router,)))
