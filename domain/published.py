"""The aggregate of a published kind (docs/kinds/prompts.md): a draft, published versions, no tool call.

A published item (a prompt; admin resources next) is written and published as a code module is:
edits change its draft, a publish makes the draft the next numbered version, a revert makes an
older version the draft again, a discard drops the draft, a delete ends its life (its history
stays) and a create of the same id starts the next life on the same aggregate (`Recreated`),
versions going on. Only the published version is served (MCP); the draft is the admin's.

`Versioned` declares the lifecycle once, as `domain.configured.Configured` does for live
configuration: its events are nested classes, defined again by eventsourcing on every subclass
(`Prompt.Published` is stored under the prompt's own topic), and the commands trigger the
subclass's classes (`self.Published`). A subclass gives `create_id(tenant, item_id)`.

A definition is a plain dict in the API's camelCase, so that the history an auditor reads is the
shape of the API. Every event here is version 1 (`class_version`); a change of shape follows
`domain/versions.py`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventsourcing.domain import event

from domain.chain import Chained
from domain.errors import CannotDiscard, NothingToPublish, UnknownRecord

Definition = dict[str, Any]

UNPUBLISHED = "UNPUBLISHED"
DRAFT = "DRAFT"
PUBLISHED = "PUBLISHED"


class Versioned(Chained):
    """One tenant's published item through all its lives: `draft` (None when there is none),
    `published` (None before its first publish), `published_version` and who published it when."""

    label = "item"  # what a 404 or a 409 calls one (a subclass says: "prompt")

    @event("Created")
    def __init__(self, tenant: str, item_id: str, definition: Definition, by: str, previous_hash: str = "",
                 timestamp: datetime | None = None) -> None:
        self.tenant = tenant
        self.item_id = item_id
        self.draft: Definition | None = definition
        self.published: Definition | None = None
        self.published_version = 0
        self.published_at: datetime | None = None
        self.published_by: str | None = None
        self.published_changeset: str | None = None
        self.published_message: str | None = None
        self.deleted = False
        self.created_by = self.updated_by = by
        self.updated_at = timestamp

    # -- queries -------------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self.published is None:
            return UNPUBLISHED
        return DRAFT if self.draft is not None else PUBLISHED

    @property
    def current(self) -> Definition:
        """What an editor starts from: the draft if there is one, else the published version."""
        return self.draft if self.draft is not None else self.published  # type: ignore[return-value]

    # -- commands ------------------------------------------------------------------------------

    def change_draft(self, definition: Definition, by: str) -> bool:
        """Makes `definition` the draft; False (nothing recorded) when it already is the current one."""
        self._check_exists()
        if definition == self.current:
            return False
        self.trigger_event(self.DraftChanged, tenant=self.tenant, item_id=self.item_id, definition=definition, by=by)
        return True

    def publish(self, by: str, *, changeset: str | None = None, message: str | None = None) -> int:
        self._check_exists()
        if self.draft is None:
            raise NothingToPublish(self.item_id)
        self.trigger_event(self.Published, tenant=self.tenant, item_id=self.item_id, version=self.published_version + 1,
                           definition=self.draft, by=by, changeset=changeset, message=message)
        return self.published_version

    def revert(self, version: int, definition: Definition, by: str) -> bool:
        """Published version `version` becomes the draft; False when it already is the current one."""
        self._check_exists()
        if definition == self.current:
            return False
        self.trigger_event(self.Reverted, tenant=self.tenant, item_id=self.item_id, version=version, definition=definition, by=by)
        return True

    def discard_draft(self, by: str) -> None:
        self._check_exists()
        if self.published is None:
            raise CannotDiscard(f"{self.item_id!r} was never published; delete it instead (R11)")
        if self.draft is None:
            raise CannotDiscard(f"{self.item_id!r} has no draft to discard (R11)")
        self.trigger_event(self.DraftDiscarded, tenant=self.tenant, item_id=self.item_id, by=by)

    def delete(self, by: str) -> None:
        self._check_exists()
        self.trigger_event(self.Deleted, tenant=self.tenant, item_id=self.item_id, by=by)

    def recreate(self, definition: Definition, by: str) -> None:
        assert self.deleted, "only a deleted item is created again"
        self.trigger_event(self.Recreated, tenant=self.tenant, item_id=self.item_id, definition=definition, by=by)

    def _check_exists(self) -> None:
        if self.deleted:
            raise UnknownRecord(self.label, self.item_id)

    # -- events (each defined again on every subclass, under its name) -------------------------

    class DraftChanged(Chained.Event):
        tenant: str
        item_id: str
        definition: Definition
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.draft = self.definition
            aggregate._touched(self)

    class Published(Chained.Event):
        tenant: str
        item_id: str
        version: int
        definition: Definition
        by: str
        changeset: str | None = None
        message: str | None = None
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.published = self.definition
            aggregate.published_version = self.version
            aggregate.published_at = self.timestamp
            aggregate.published_by = self.by
            aggregate.published_changeset = self.changeset
            aggregate.published_message = self.message
            aggregate.draft = None
            aggregate._touched(self)

    class Reverted(Chained.Event):
        tenant: str
        item_id: str
        version: int
        definition: Definition
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.draft = self.definition
            aggregate._touched(self)

    class DraftDiscarded(Chained.Event):
        tenant: str
        item_id: str
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.draft = None
            aggregate._touched(self)

    class Deleted(Chained.Event):
        tenant: str
        item_id: str
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.deleted = True
            aggregate.draft = aggregate.published = None
            aggregate.published_at = aggregate.published_by = None
            aggregate.published_changeset = aggregate.published_message = None
            aggregate._touched(self)

    class Recreated(Chained.Event):
        tenant: str
        item_id: str
        definition: Definition
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.deleted = False
            aggregate.draft = self.definition
            aggregate.created_by = self.by
            aggregate._touched(self)

    def _touched(self, happened: Any) -> None:
        self.updated_by = happened.by
        self.updated_at = happened.timestamp


def version_of(happened: Any) -> dict[str, Any]:
    """One published version as the API shows it, from its `Published` event."""
    return {"version": happened.version, "publishedAt": happened.timestamp, "publishedBy": happened.by, **happened.definition,
            "changeset": happened.changeset, "message": happened.message}
