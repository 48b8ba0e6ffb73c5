"""The aggregate of a configured kind of tool (docs/kinds/index.md): live configuration, no draft.

A configured tool (an API URL tool, a File Search tool) is live, not versioned: it has no draft and
no publish, and every change of its configuration takes effect at once. Each change is still an
event of the tool's own aggregate, with who and when, in the tenant's hash chain (B5), history,
`asOf` and export. A deleted tool keeps its aggregate: created again under the same name, it is the
same aggregate's next life (`Recreated`), as a module is.

`Configured` declares the lifecycle once: `Created` (its `__init__`), `Changed`, `Deleted` and
`Recreated`. eventsourcing defines each of them again on every subclass (`ApiTool.Changed` is a
subclass of `Configured.Changed` and of `ApiTool.Event`), and the commands here trigger the
subclass's own class (`self.Changed`), so each event is stored under its kind's topic and
qualified name (`toolkinds.api_tools.model:ApiTool.Changed`), as before this base existed: stored
events resolve, and their hashes (which cover the qualified name) still verify. A subclass never
calls `Configured`'s classes by name.

What a kind's tool holds besides its configuration (a File Search tool's documents) starts empty
when the tool is created, deleted or created again: `_empty()`, which a subclass extends.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from eventsourcing.domain import event

from domain.chain import Chained

Config = dict[str, Any]


class Configured(Chained):
    """One configured tool of one tenant through all its lives. `config` is the whole normalised
    configuration; `tool_id` its name. A subclass gives `create_id(tenant, tool_id)`."""

    @event("Created")
    def __init__(self, tenant: str, tool_id: str, config: Config, by: str, previous_hash: str = "",
                 timestamp: datetime | None = None) -> None:
        self.tenant = tenant
        self.tool_id = tool_id
        self.config = config
        self.deleted = False
        self._empty()
        self.created_by = self.updated_by = by

    def _empty(self) -> None:
        """What the tool holds besides its configuration starts empty (nothing, here)."""

    # -- commands ------------------------------------------------------------------------------

    def change(self, config: Config, by: str) -> bool:
        """Makes `config` the tool's configuration at once; False (nothing recorded) when it is."""
        if config == self.config:
            return False
        self.trigger_event(self.Changed, tenant=self.tenant, tool_id=self.tool_id, config=config, by=by)
        return True

    def delete(self, by: str) -> None:
        """The tool is gone, with whatever it holds (its events stay)."""
        self.trigger_event(self.Deleted, tenant=self.tenant, tool_id=self.tool_id, by=by)

    def recreate(self, config: Config, by: str) -> None:
        assert self.deleted, "only a deleted tool is created again"
        self.trigger_event(self.Recreated, tenant=self.tenant, tool_id=self.tool_id, config=config, by=by)

    # -- events (each defined again on every subclass, under its name) -------------------------

    class Changed(Chained.Event):
        tenant: str
        tool_id: str
        config: Config
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.config = self.config
            aggregate.updated_by = self.by

    class Deleted(Chained.Event):
        tenant: str
        tool_id: str
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.deleted = True
            aggregate._empty()
            aggregate.updated_by = self.by

    class Recreated(Chained.Event):
        tenant: str
        tool_id: str
        config: Config
        by: str
        previous_hash: str = ""

        def apply(self, aggregate: Any) -> None:
            aggregate.config = self.config
            aggregate.deleted = False
            aggregate._empty()
            aggregate.created_by = aggregate.updated_by = self.by
