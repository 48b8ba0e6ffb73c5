"""A configured kind of tool (docs/kinds/index.md): live configuration, CRUD, history, `asOf`, enable/disable.

An API URL tool and a File Search tool are configured, not written: no draft, no publish; a save
(POST creates, PUT replaces, with `If-Match` its version) is live at once. Each tool is one
aggregate (`domain.configured.Configured`) through all its lives, so its events are its history
and `asOf`. What both kinds do alike is here, once:

- the queries: the tenant's live tools by name (`tools`, from the tool index, a projection of the
  tools' lifecycle events), one tool (`find`, `get`), its events (`events`);
- the commands: `save` (R1 and the kind's rules on the configuration, R2 across every kind for
  each name the tool `holds`, the tenant's tool quota, then `Created`, `Recreated` or `Changed`,
  under the tenant's lock), `set_enabled`, and `delete`, refused (R12) while a plan or an agent
  names the tool or any name it holds;
- the catalog: `entries`, `entry`, `touched`, `holds`, and `tenant_of` for the audit export.

A kind says what it is (its aggregate, as `ConfiguredKind[ApiTool]`; its `label`, `index_name`), what its configuration must be
(`normalise`, `violations`, `check_references`), the names one tool holds (`names_of`: an API URL
tool its own, a File Search tool one per capability), its catalog entries (`entries_of`), which tool
a name belongs to (`owner_of`), and what a delete leaves to clean up (`deleting`, `deleted`).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.commands import Change
from application.kinds.base import KindDeps, Ranked, ToolKind
from application.projected import Index, loaded
from domain.catalog import ToolEntry
from domain.configured import Config, Configured
from domain.errors import IdTaken, InUse, InvalidDefinition, UnknownRecord, Violation
from domain.rules import id_violations
from domain.tenants import TOOLS

T = TypeVar("T", bound=Configured)


class ConfiguredKind(ToolKind, Generic[T]):
    """What a configured kind's tools have in common; a kind gives the class attributes and the
    hooks below."""

    aggregate: type[T]  # the `T` a kind subclasses `ConfiguredKind[T]` with
    index_name: str  # its tool index's name (`/healthz` reports it under it)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is ConfiguredKind and "aggregate" not in cls.__dict__:
                (cls.aggregate,) = typing.get_args(base)

    def __init__(self, deps: KindDeps) -> None:
        super().__init__(deps)
        self.index = Index(deps.store, self.aggregate, "tool_id", name=self.index_name)

    # -- what a kind says ----------------------------------------------------------------------

    def normalise(self, given: dict[str, Any]) -> Config:
        """The configuration with every default filled in (what is stored and shown back)."""
        raise NotImplementedError

    def violations(self, name: str, given: dict[str, Any], config: Config) -> list[Violation]:
        """Every rule of the kind the name, the given body or the configuration breaks (R1 is checked)."""
        raise NotImplementedError

    def check_references(self, tenant: str, config: Config) -> None:
        """What only the store can say of a configuration (under the tenant's lock); nothing here."""

    def names_of(self, name: str) -> Sequence[str]:
        """The catalog names the tool `name` registers under (R2 holds these and its own)."""
        return (name,)

    def owner_of(self, name: str) -> str | None:
        """The name of the tool a catalog name belongs to, if it may be one of this kind's."""
        return name

    def entries_of(self, tool: T) -> list[ToolEntry]:
        """The tool's catalog entries."""
        raise NotImplementedError

    def deleting(self, tool: T) -> Any:
        """Called as the tool is deleted (under the tenant's lock): what `deleted` will clean up."""
        return None

    def deleted(self, tenant: str, name: str, left: Any) -> None:
        """Called once the delete is recorded, with what `deleting` answered."""

    # -- queries -------------------------------------------------------------------------------

    def aggregate_id(self, tenant: str, name: str) -> UUID:
        return _aggregate_id(self.aggregate, tenant, name)

    def _all(self) -> Iterator[T]:
        """Every live tool of this kind of every tenant, once each (the tool index says which)."""
        for aggregate_id in self.index.everywhere():
            tool = self._load(aggregate_id)
            if tool is not None and not tool.deleted:
                yield tool

    def tools(self, tenant: str) -> list[T]:
        """Every live tool of this kind of `tenant`, by name: the tool index (a projection of the
        tools' lifecycle events, `application/projected.py`) says which, each loaded as the store has it."""
        return loaded(self._load, self.index.live(tenant))

    def projections(self) -> Sequence[Any]:
        return (self.index.follower,)

    def find(self, tenant: str, name: str) -> T | None:
        """The live tool `name` of `tenant`, or None."""
        if not isinstance(name, str) or id_violations(name):
            return None
        tool = self._load(self.aggregate_id(tenant, name))
        return tool if tool is not None and not tool.deleted else None

    def get(self, tenant: str, name: str) -> T:
        tool = self.find(tenant, name)
        if tool is None:
            raise UnknownRecord(self.label, name)
        return tool

    def events(self, tenant: str, name: str) -> list[Any]:
        """Every event of the tool through all its lives (history, `asOf`); empty when it never existed."""
        if not isinstance(name, str) or id_violations(name):
            return []
        return self.deps.store.stored_events(self.aggregate_id(tenant, name))

    def _load(self, aggregate_id: UUID, *, for_update: bool = False) -> T | None:
        try:
            return self.deps.store.repository.get(aggregate_id, deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return None

    def _held(self, name: str) -> list[str]:
        """Every name R2 holds for the tool `name`: its own, then its catalog names."""
        return list(dict.fromkeys((name, *self.names_of(name))))

    # -- commands ------------------------------------------------------------------------------

    def save(self, tenant: str, name: str, given: dict[str, Any], *, by: str, create: bool,
             expected: int | None = None) -> tuple[T, int | None]:
        """POST (create) or PUT (replace) a tool's configuration; every change is live at once.
        Answers the tool and the log position to wait for (None when nothing changed)."""
        config = self.normalise(given)
        found = id_violations(name) + self.violations(name, given, config)
        if found:
            raise InvalidDefinition(found)
        aggregate_id = self.aggregate_id(tenant, name)

        def attempt() -> Change[T]:
            # Under the tenant's lock, as a secret's delete is: what the configuration refers to
            # cannot go between this check and the save.
            self.check_references(tenant, config)
            existing = self._load(aggregate_id, for_update=True)
            live = existing is not None and not existing.deleted
            if create:
                if live:
                    raise IdTaken(name, self.label)
                for held in self._held(name):  # R2 across every kind, each name the tool holds
                    holder = self.deps.names.holder_of(tenant, held, besides=self.label)
                    if holder is not None:
                        raise IdTaken(held, holder)
                if self.deps.quotas is not None:  # under the tenant's lock, as docs/tenants.md asks
                    self.deps.quotas.check(tenant, TOOLS)
                if existing is None:
                    tool = self.aggregate(tenant=tenant, tool_id=name, config=config, by=by)
                else:
                    tool = existing
                    tool.recreate(config, by)
                return Change(tool, save=[tool], subject=self.deps.commands.subject(tool, name))
            if not live:
                raise UnknownRecord(self.label, name)
            assert existing is not None
            subject = self.deps.commands.subject(existing, name, expected)
            changed = existing.change(config, by)
            return Change(existing, save=[existing] if changed else [], subject=subject)

        return self.deps.commands.run(attempt, name=name, lock=tenant)

    def set_enabled(self, tenant: str, name: str, enabled: bool, *, by: str) -> tuple[T, int | None]:
        tool = self.get(tenant, name)
        return self.save(tenant, name, {**tool.config, "enabled": enabled}, by=by, create=False)

    def delete(self, tenant: str, name: str, *, by: str) -> int | None:
        """Deletes the tool; refused (R12) while a plan or an agent names it or a name it holds."""
        left: list[Any] = [None]

        def attempt() -> Change[None]:
            tool = self._load(self.aggregate_id(tenant, name), for_update=True)
            if tool is None or tool.deleted:
                raise UnknownRecord(self.label, name)
            registry = self.deps.store.registry(tenant)
            users: dict[str, list[str]] = {}
            for held in self._held(name):
                for kind, names in registry.users_of(held).items():
                    users.setdefault(kind, []).extend(n for n in names if n not in users.get(kind, []))
            if any(users.values()):
                raise InUse(name, users)
            left[0] = self.deleting(tool)
            tool.delete(by)
            return Change(None, save=[tool], subject=self.deps.commands.subject(tool, name))

        _, position = self.deps.commands.run(attempt, name=name, lock=tenant)
        self.deleted(tenant, name, left[0])
        return position

    # -- the catalog and R2 --------------------------------------------------------------------

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        return [entry for tool in self.tools(tenant) for entry in self.entries_of(tool)]

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        owner = self.owner_of(name)
        tool = self.find(tenant, owner) if owner is not None else None
        if tool is None:
            return None
        return next((e for e in self.entries_of(tool) if e.name == name), None)

    def touched(self, event: Any) -> Collection[str] | None:
        return self.names_of(event.tool_id) if isinstance(event, self.aggregate.Event) else None

    def holds(self, tenant: str, name: str) -> bool:
        if self.find(tenant, name) is not None:
            return True
        owner = self.owner_of(name)
        return owner is not None and owner != name and self.find(tenant, owner) is not None

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None:
        tenant, name = state.get("tenant"), state.get("tool_id")
        if isinstance(tenant, str) and isinstance(name, str) and self.aggregate_id(tenant, name) == aggregate_id:
            return tenant
        return None


@functools.lru_cache(maxsize=8_192)
def _aggregate_id(aggregate: type[Configured], tenant: str, name: str) -> UUID:
    """A tool's aggregate id, derived once (the catalog asks for the same few names again and again)."""
    return aggregate.create_id(tenant, name)
