"""The queries the REST API, MCP and the console share: the module list with its facets,
availability, used-by (with the event store's answer while the read model is down), the module as
of an instant, a publish preview as data, the tool catalog's pages, a tenant with what it holds,
and the context a call from a person carries. Presenters call these; no presenter composes the
read model and the event store itself, and the console never calls a REST route to get them.

They take the services as the composition root built them (`api.services.Services`), seen here as
`Sources`: only what the queries read.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from application.context import CallContext
from application.history import History
from application.modules import Modules
from application.principals import Principal
from application.records import CallerRecords
from application.store import Store
from application.tenants import Tenants
from application.toolbox import Toolbox
from application.usage import Usage
from domain import history
from domain.callers import AGENT, PLAN, tool_names
from domain.catalog import Permissions, ToolEntry
from domain.errors import UnknownModule
from domain.model import CodeModule
from domain.ports import ListQuery, Page, ReadModelUnavailable
from domain.rules import id_violations, is_valid_id


class ModuleReads(Protocol):
    """What the queries ask the read model (`projections.interface.ModuleReadModel`)."""

    def list(self, tenant: str, query: ListQuery) -> Page: ...

    def used_by(self, tenant: str, module_id: str) -> list[str]: ...

    def used_by_counts(self, tenant: str, module_ids: list[str]) -> dict[str, int]: ...

    def is_taken(self, tenant: str, module_id: str) -> bool: ...


class Sources(Protocol):
    """The services the queries read (`api.services.Services` has them all)."""

    @property
    def store(self) -> Store: ...

    @property
    def read_model(self) -> ModuleReads: ...

    @property
    def history(self) -> History: ...

    @property
    def modules(self) -> Modules: ...

    @property
    def records(self) -> CallerRecords: ...

    @property
    def toolbox(self) -> Toolbox: ...

    @property
    def tenants(self) -> Tenants: ...

    @property
    def usage(self) -> Usage: ...


def used_by(services: Sources, tenant: str, module_id: str) -> list[str]:
    """The read model's used-by list; while it is unavailable, the import graph's (the event
    store's) answer, so that writes and single-module reads keep working."""
    try:
        return services.read_model.used_by(tenant, module_id)
    except ReadModelUnavailable:
        return services.store.graph(tenant).importers_of(module_id)


def used_by_counts(services: Sources, tenant: str, module_ids: list[str]) -> dict[str, int]:
    """How many modules use each of `module_ids` (one read-model query for a whole page); while
    the read model is unavailable, the import graph's answer."""
    try:
        return services.read_model.used_by_counts(tenant, module_ids)
    except ReadModelUnavailable:
        graph = services.store.graph(tenant)
        return {module_id: len(graph.importers_of(module_id)) for module_id in module_ids}


def named_by_callers(services: Sources, tenant: str, caller: str | None) -> tuple[str, ...]:
    """`usedBy` may name a plan or an agent: the tools its nodes or its allowed tools name."""
    if caller is None:
        return ()
    registry = services.store.registry(tenant)
    found = [tool_names(kind, r) for kind in (PLAN, AGENT) if (r := registry.get(kind, caller)) is not None]
    return tuple(sorted({name for names in found for name in names}))


def list_modules(services: Sources, tenant: str, *, search: str | None = None, state: str | None = None,
                 tool: bool | None = None, used_by: str | None = None, tags: tuple[str, ...] = (),
                 offset: int = 0, limit: int = 20, order_by: str = "id", ascending: bool = True,
                 count_users: bool = False) -> Page:
    """A page of module summaries with the facets of the whole result; with `count_users`, each
    summary also has `usedByCount` (how many modules import it, draft or published)."""
    query = ListQuery(
        search=search or None, state=state, tool=tool, used_by=used_by or None,
        also_used=named_by_callers(services, tenant, used_by or None), tags=tags,
        offset=offset, limit=limit, order_by=order_by, ascending=ascending,
    )
    page = services.read_model.list(tenant, query)
    if count_users and page.collection:
        counts = used_by_counts(services, tenant, [m["id"] for m in page.collection])
        page.collection = [{**m, "usedByCount": counts.get(m["id"], 0)} for m in page.collection]
    return page


def is_available(services: Sources, tenant: str, module_id: str) -> bool:
    """Whether an id is valid (R1) and free (R2) among every kind of tool."""
    return (
        is_valid_id(module_id)
        and services.store.tool_holding(tenant, module_id) is None
        and not services.read_model.is_taken(tenant, module_id)
    )


def unavailable_because(services: Sources, tenant: str, module_id: str) -> str | None:
    """Why an id cannot name a new module (the R1 rule it breaks, or R2: who holds it); None when it
    is free. The console's live name check says this where `is_available` says only yes or no."""
    broken = id_violations(module_id)
    if broken:
        return f"{broken[0].message} (R1)"
    holder = services.store.tool_holding(tenant, module_id)
    if holder is not None:
        return f"already used by a {holder} (R2)"
    if services.read_model.is_taken(tenant, module_id):
        return "already used by another module (R2)"
    return None


def importable(services: Sources, tenant: str, module_id: str | None = None) -> list[str]:
    """The modules a draft may import (R5: the published ones, never itself), sorted."""
    return sorted(name for name in services.store.graph(tenant).published_edges() if name != module_id)


@dataclass(frozen=True)
class ModuleView:
    module: CodeModule
    used_by: list[str]


def module_view(services: Sources, tenant: str, module_id: str, as_of: datetime | None = None) -> ModuleView:
    """The module now with its importers, or as it stood at `as_of` (B2)."""
    if as_of is None:
        return ModuleView(services.store.module(tenant, module_id), used_by(services, tenant, module_id))
    at = as_of if as_of.tzinfo is not None else as_of.replace(tzinfo=timezone.utc)
    past = history.module_as_of(services.history.module_events(tenant, module_id), at)
    if past is None:
        raise UnknownModule(module_id)
    return ModuleView(past, history.importers_as_of(services.history.graph_events(tenant), module_id, at))


def usage(services: Sources, tenant: str, module_id: str) -> dict[str, list[str]]:
    """The modules, plans and agents that use the module (R12's list)."""
    services.store.module(tenant, module_id)
    return {"modules": used_by(services, tenant, module_id), **services.records.users_of(tenant, module_id),
            **services.store.users_of(tenant, module_id)}


def publish_preview(services: Sources, context: CallContext, module_id: str) -> dict[str, Any]:
    """B3: what publishing would do, each dependent's check (run as `context`'s caller); publishes nothing."""
    module, checks = services.modules.preview_publish(context.tenant, module_id, context=context)
    return {
        "id": module_id,
        "version": module.published_version + 1,
        "wouldPublish": all(result.error is None for _, result in checks),
        "checks": [
            {"module": name, "ok": result.error is None, "error": result.error.as_dict() if result.error else None}
            for name, result in checks
        ],
    }


def call_context(principal: Principal, way_in: str, trace: str | None = None) -> CallContext:
    """The context of a call by `principal` that came in by `way_in` (`application.context.REST`, `MCP`
    or `CONSOLE`); what its code sees of it is `CallContext.for_code` (never a token, V2)."""
    return CallContext(principal, way_in, trace)


def tools(services: Sources, tenant: str, *, call_type: str | None = None, tag: str | None = None,
          search: str | None = None, after: str | None = None, limit: int = 100) -> tuple[list[ToolEntry], bool]:
    """A page of the tool catalog (every kind, shadowed entries included) by name: up to `limit`
    entries named after `after`, filtered by call type, tag and a case-insensitive search of the
    name and description; and whether more follow."""
    needle = (search or "").strip().casefold()

    def accept(entry: ToolEntry) -> bool:
        return (
            (call_type is None or entry.call_type == call_type)
            and (tag is None or tag in entry.tags)
            and (not needle or needle in entry.name.casefold() or needle in entry.description.casefold())
        )

    return services.toolbox.page(tenant, after=after, limit=limit, accept=accept)


def cursor_after(name: str) -> str:
    """The opaque cursor of the page of tools that follows the tool `name` (REST and MCP alike)."""
    return base64.urlsafe_b64encode(name.encode()).decode()


def after_cursor(cursor: str | None) -> str | None:
    """The tool name a cursor stands for; None for none. Raises ValueError for a cursor this
    service did not give."""
    if not cursor:
        return None
    try:
        return base64.b64decode(cursor.encode("ascii"), altchars=b"-_", validate=True).decode()
    except (ValueError, UnicodeError):
        raise ValueError(f"invalid cursor {cursor[:64]!r}: use the one the previous page gave") from None


def reaches(services: Sources, tenant: str, allowed_tools: list[str], allowed_tags: list[str]) -> list[str]:
    """The tools an agent or a usage profile reaches now (R14): those it names and those with an
    allowed tag, among the catalog's winners (R15)."""
    allowed = Permissions(tools=frozenset(allowed_tools), tags=frozenset(allowed_tags))
    return [e.name for e in services.toolbox.entries(tenant) if e.shadowed_by is None and allowed.allow(e)]


def tenant_view(services: Sources, tenant_id: str, tenant: dict[str, Any] | None = None) -> dict[str, Any]:
    """One tenant (docs/tenants.md), with what it holds now against its quotas; `tenant` is its record
    as a command just answered it (read from the store otherwise)."""
    record = tenant if tenant is not None else services.tenants.get(tenant_id)
    return {**record, "usage": services.usage.of(tenant_id).as_quotas()}
