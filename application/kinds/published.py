"""A published kind (docs/kinds/prompts.md): items written as a draft, tested, published in numbered
versions, with a code module's lifecycle, that are not tools (a prompt; admin resources next).

Each item is one aggregate (`domain.published.Versioned`) through all its lives. What every such
kind does is here, once:

- the queries: the tenant's live items by id (`items`, from the kind's index, a projection of the
  lifecycle events), one item (`find`, `get`), its events (`events`: history and `asOf`), its
  published versions (`versions`);
- the commands, each through the `CommandRunner` (B7's `If-Match` as `expected`): `create` (R1,
  the kind's rules, R2 across every kind under the tenant's lock), `update` (the draft), `publish`
  (the kind's checks on the draft against what it refers to, then the next version), a changeset
  of several (`publish_changeset`, all or nothing), `revert`, `discard_draft`, `delete`;
- R2 (`holds`: an item holds its id from its create, published or not, as a module does) and the
  audit export's `tenant_of`. It lists no catalog entries: its items are not tools.

A kind says what it is (`ItemKind[Prompt]`, its `label`, `index_name`), what a definition must be
(`normalise`, `violations`) and what a publish checks beyond them (`check_publish`: a published
module it names exists).
"""

from __future__ import annotations

import typing
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Generic, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.commands import Change
from application.kinds.base import KindDeps, Ranked, ToolKind
from application.projected import Index, loaded
from domain.catalog import ToolEntry
from domain.errors import IdTaken, InvalidDefinition, InvalidInput, UnknownRecord, UnknownVersion, Violation
from domain.published import Definition, Versioned, version_of
from domain.rules import id_violations

T = TypeVar("T", bound=Versioned)

MAX_CHANGESET = 100


class ItemKind(ToolKind, Generic[T]):
    """What every published kind's items have in common; a kind gives the class attributes and hooks."""

    aggregate: type[T]
    index_name: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in getattr(cls, "__orig_bases__", ()):
            if typing.get_origin(base) is ItemKind and "aggregate" not in cls.__dict__:
                (cls.aggregate,) = typing.get_args(base)

    def __init__(self, deps: KindDeps) -> None:
        super().__init__(deps)
        self.index = Index(deps.store, self.aggregate, "item_id", name=self.index_name)
        self._ids: dict[tuple[str, str], UUID] = {}

    # -- what a kind says ----------------------------------------------------------------------

    def normalise(self, given: Mapping[str, Any]) -> Definition:
        """The definition as it is stored, from the request's fields (defaults filled in)."""
        raise NotImplementedError

    def violations(self, definition: Definition) -> list[Violation]:
        """What is wrong with a definition on its own, each naming its field."""
        return []

    def check_publish(self, tenant: str, definition: Definition) -> None:
        """Raises when the draft cannot be published (what it names is not there)."""

    # -- queries -------------------------------------------------------------------------------

    def aggregate_id(self, tenant: str, item_id: str) -> UUID:
        key = (tenant, item_id)
        found = self._ids.get(key)
        if found is None:
            found = self.aggregate.create_id(tenant, item_id)
            if len(self._ids) < 65_536:
                self._ids[key] = found
        return found

    def _load(self, aggregate_id: UUID, *, for_update: bool = False) -> T | None:
        try:
            return self.deps.store.repository.get(aggregate_id, deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return None

    def items(self, tenant: str) -> list[T]:
        """Every live item of `tenant`, by id."""
        return loaded(self._load, self.index.live(tenant))

    def find(self, tenant: str, item_id: str, *, for_update: bool = False) -> T | None:
        if not isinstance(item_id, str) or id_violations(item_id):
            return None
        item = self._load(self.aggregate_id(tenant, item_id), for_update=for_update)
        return item if item is not None and not item.deleted else None

    def get(self, tenant: str, item_id: str, *, for_update: bool = False) -> T:
        item = self.find(tenant, item_id, for_update=for_update)
        if item is None:
            raise UnknownRecord(self.label, item_id)
        return item

    def events(self, tenant: str, item_id: str) -> list[Any]:
        if not isinstance(item_id, str) or id_violations(item_id):
            return []
        return self.deps.store.stored_events(self.aggregate_id(tenant, item_id))

    def versions(self, tenant: str, item_id: str) -> list[dict[str, Any]]:
        """Every published version, oldest first (numbers go on across a delete and a recreate)."""
        return [version_of(e) for e in self.events(tenant, item_id) if isinstance(e, self.aggregate.Published)]

    def projections(self) -> Sequence[Any]:
        return (self.index.follower,)

    # -- commands ------------------------------------------------------------------------------

    def _checked(self, given: Mapping[str, Any], item_id: str | None = None) -> Definition:
        definition = self.normalise(given)
        found = (id_violations(item_id) if item_id is not None else []) + self.violations(definition)
        if found:
            raise InvalidDefinition(found)
        return definition

    def create(self, tenant: str, item_id: str, given: Mapping[str, Any], *, by: str) -> tuple[T, int | None]:
        """A new UNPUBLISHED item (or a deleted id's next life)."""
        definition = self._checked(given, item_id)

        def attempt() -> Change[T]:
            holder = self.deps.names.holder_of(tenant, item_id, besides=self.label)  # R2 across every kind
            if holder is not None:
                raise IdTaken(item_id, holder)
            existing = self._load(self.aggregate_id(tenant, item_id), for_update=True)
            if existing is not None and not existing.deleted:
                raise IdTaken(item_id, self.label)
            if existing is None:
                item = self.aggregate(tenant=tenant, item_id=item_id, definition=definition, by=by)
            else:
                item = existing
                item.recreate(definition, by)
            return Change(item, save=[item], subject=self.deps.commands.subject(item, item_id))

        return self.deps.commands.run(attempt, name=item_id, lock=tenant)

    def update(self, tenant: str, item_id: str, given: Mapping[str, Any], *, by: str,
               expected: int | None = None) -> tuple[T, int | None]:
        """The draft changed: the fields `given` names replace the current definition's."""

        def attempt() -> Change[T]:
            item = self.get(tenant, item_id, for_update=True)
            subject = self.deps.commands.subject(item, item_id, expected)
            definition = self._checked({**item.current, **given})
            changed = item.change_draft(definition, by)
            return Change(item, save=[item] if changed else [], subject=subject)

        return self.deps.commands.run(attempt, name=item_id)

    def publish(self, tenant: str, item_id: str, *, by: str, expected: int | None = None,
                message: str | None = None) -> tuple[T, int | None]:
        def attempt() -> Change[T]:
            item = self.get(tenant, item_id, for_update=True)
            subject = self.deps.commands.subject(item, item_id, expected)
            if item.draft is not None:
                self.check_publish(tenant, item.draft)
            item.publish(by, message=message)
            return Change(item, save=[item], subject=subject)

        return self.deps.commands.run(attempt, name=item_id, lock=tenant)

    def publish_changeset(self, tenant: str, ids: Sequence[str], *, by: str, message: str | None = None,
                          expected: Mapping[str, int] | None = None) -> tuple[str, list[T], int | None]:
        """Several drafts published in one transaction, each `Published` naming the changeset: all or nothing."""
        found: list[Violation] = []
        if not isinstance(ids, (list, tuple)) or not ids:
            found.append(Violation("ids", "B6", f"name at least one {self.label} to publish"))
        elif len(ids) > MAX_CHANGESET:
            found.append(Violation("ids", "B6", f"at most {MAX_CHANGESET} in one changeset, got {len(ids)}"))
        else:
            for i, item_id in enumerate(ids):
                found += id_violations(item_id, f"ids[{i}]")
                if item_id in ids[:i]:
                    found.append(Violation(f"ids[{i}]", "B6", f"{item_id!r} is named twice"))
        if found:
            raise InvalidInput(found)
        changeset = f"cs_{uuid.uuid4().hex[:20]}"

        def attempt() -> Change[list[T]]:
            items = [self.get(tenant, item_id, for_update=True) for item_id in ids]
            subjects = [self.deps.commands.subject(i, i.item_id, (expected or {}).get(i.item_id)) for i in items]
            for item in items:
                if item.draft is not None:
                    self.check_publish(tenant, item.draft)
                item.publish(by, changeset=changeset, message=message)
            return Change(items, save=items, subjects=subjects)

        items, position = self.deps.commands.run(attempt, name=", ".join(ids), lock=tenant)
        return changeset, items, position

    def revert(self, tenant: str, item_id: str, version: Any, *, by: str, expected: int | None = None) -> tuple[T, int | None]:
        """B1: published version `version` becomes the draft again (checked as any draft is)."""
        old = next((e.definition for e in self.events(tenant, item_id)
                    if isinstance(e, self.aggregate.Published) and e.version == version), None)
        if old is None:
            self.get(tenant, item_id)
            raise UnknownVersion(item_id, version)

        def attempt() -> Change[T]:
            item = self.get(tenant, item_id, for_update=True)
            subject = self.deps.commands.subject(item, item_id, expected)
            changed = item.revert(version, self._checked(old), by)
            return Change(item, save=[item] if changed else [], subject=subject)

        return self.deps.commands.run(attempt, name=item_id)

    def discard_draft(self, tenant: str, item_id: str, *, by: str, expected: int | None = None) -> tuple[T, int | None]:
        def attempt() -> Change[T]:
            item = self.get(tenant, item_id, for_update=True)
            subject = self.deps.commands.subject(item, item_id, expected)
            item.discard_draft(by)
            return Change(item, save=[item], subject=subject)

        return self.deps.commands.run(attempt, name=item_id)

    def delete(self, tenant: str, item_id: str, *, by: str, expected: int | None = None) -> int | None:
        def attempt() -> Change[None]:
            item = self.get(tenant, item_id, for_update=True)
            subject = self.deps.commands.subject(item, item_id, expected)
            item.delete(by)
            return Change(None, save=[item], subject=subject)

        _, position = self.deps.commands.run(attempt, name=item_id, lock=tenant)
        return position

    # -- the interface: not tools, but names (R2) and the audit --------------------------------

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        return []

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        return None

    def touched(self, event: Any) -> Collection[str] | None:
        return () if isinstance(event, self.aggregate.Event) else None

    def holds(self, tenant: str, name: str) -> bool:
        return self.find(tenant, name) is not None

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: Any, tools: Any, depth: int) -> Any:
        raise UnknownRecord("tool", entry.name)

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None:
        tenant, name = state.get("tenant"), state.get("item_id")
        if isinstance(tenant, str) and isinstance(name, str) and self.aggregate_id(tenant, name) == aggregate_id:
            return tenant
        return None
