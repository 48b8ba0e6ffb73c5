"""The write model: the `CodeModule` aggregate and each tenant's `ImportGraph`.

A module's aggregate id derives from (tenant, module id), so the event store itself guarantees that
an id is taken once: two concurrent creates of one id race on version 1 and one of them fails. A
deleted module keeps its history and may be created again on the same aggregate (`Recreated`).

The `ImportGraph` aggregate records, per tenant, each module's draft and published imports. Every
command that changes an edge, and every publish, records an event on it in the same transaction as
the module's own event. Two concurrent publishes therefore conflict on the graph's version, in one
process or many, and can never close a cycle or break a dependent between them.

Definitions are plain dicts in the API's camelCase (`description`, `content`, `imports`, `tool`), so
that the history an auditor reads is the same shape as the API.

Every event type here is version 1 (`class_version`, from `Chained`) except `Published`, which is
version 2 (B6: it names its changeset and message; the upcaster at the end of this module reads a
version 1 `Published` as a single publish with no message). A field added to a definition is read
into older events by upcasters: bump the `class_version` of each event that carries a definition
(`Created`, `DraftChanged`, `Reverted`, `Recreated` to 2, `Published` to 3) and give it an
upcaster that fills in the field's default; `domain/versions.py` says how, with an example.
The import graph is snapshotted: a change to its state's shape bumps `ImportGraph.class_version`
with an upcaster of the snapshot's state too.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event
from immutables import Map

from domain.chain import Chained

from domain.errors import CannotDiscard, NothingToPublish, UnknownModule
from domain.versions import upcast

Definition = dict[str, Any]
# A module's node in its tenant's import graph: {"published": [...] or None, "draft": [...] or
# None}. Never changed once in a graph (an event replaces it), so copies of the graph share it.
Node = dict[str, list[str] | None]

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates")

UNPUBLISHED = "UNPUBLISHED"
DRAFT = "DRAFT"
PUBLISHED = "PUBLISHED"
STATES = (PUBLISHED, DRAFT, UNPUBLISHED)


@lru_cache(maxsize=65_536)
def module_aggregate_id(tenant: str, module_id: str) -> UUID:
    return uuid5(_NAMESPACE, f"module/{tenant}/{module_id}")


@lru_cache(maxsize=1_024)
def graph_aggregate_id(tenant: str) -> UUID:
    return uuid5(_NAMESPACE, f"import-graph/{tenant}")


class CodeModule(Chained):
    """A JavaScript module: its draft, its published versions, and who changed what when."""

    @staticmethod
    def create_id(tenant: str, module_id: str) -> UUID:  # type: ignore[override]
        return module_aggregate_id(tenant, module_id)

    @event("Created")
    def __init__(self, tenant: str, module_id: str, definition: Definition, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.tenant = tenant
        self.module_id = module_id
        self.draft: Definition | None = definition
        self.published: Definition | None = None
        self.published_version = 0
        self.published_at: datetime | None = None
        self.published_by: str | None = None
        # B6: the changeset the published version came in, and what its publisher said of it.
        self.published_changeset: str | None = None
        self.published_message: str | None = None
        self.deleted = False
        self.created_by = by
        self.updated_by = by
        self.updated_at = timestamp

    # -- queries -----------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self.published is None:
            return UNPUBLISHED
        return DRAFT if self.draft is not None else PUBLISHED

    @property
    def current(self) -> Definition:
        """The definition an editor starts from: the draft if there is one, else the published one."""
        return self.draft if self.draft is not None else self.published  # type: ignore[return-value]

    def published_view(self) -> dict[str, Any] | None:
        if self.published is None:
            return None
        return {
            **self.published,
            "version": self.published_version,
            "publishedAt": self.published_at,
            "publishedBy": self.published_by,
            "changeset": self.published_changeset,
            "message": self.published_message,
        }

    # -- commands ----------------------------------------------------------------------------

    def change_draft(self, definition: Definition, by: str) -> bool:
        """Makes `definition` the draft; answers False (and records nothing) when nothing changes."""
        self._check_exists()
        if definition == self.current:
            return False
        self._draft_changed(tenant=self.tenant, module_id=self.module_id, definition=definition, by=by)
        return True

    def publish(self, by: str, *, changeset: str | None = None, message: str | None = None) -> int:
        """The draft becomes the next published version; `changeset` names the changeset it was
        published in (B6), `message` what the publisher said of it."""
        self._check_can_publish()
        self._published(tenant=self.tenant, module_id=self.module_id, version=self.published_version + 1, definition=self.draft,
                        by=by, changeset=changeset, message=message)
        return self.published_version

    def revert(self, version: int, definition: Definition, by: str) -> bool:
        """B1: published version `version`'s definition becomes the draft; False when it already is
        the current definition (nothing is recorded)."""
        self._check_exists()
        if definition == self.current:
            return False
        self._reverted(tenant=self.tenant, module_id=self.module_id, version=version, definition=definition, by=by)
        return True

    def set_enabled(self, enabled: bool, by: str) -> bool:
        """Switches the tool on or off at once, in the published version and the draft alike: a
        disabled tool leaves MCP and chat without a publish (docs/kinds/index.md). False when nothing changes."""
        self._check_exists()
        sections = [d["tool"] for d in (self.published, self.draft) if d is not None and d["tool"] is not None]
        if not sections or all(section["enabled"] == enabled for section in sections):
            return False
        self._enabled_changed(tenant=self.tenant, module_id=self.module_id, enabled=enabled, by=by)
        return True

    def discard_draft(self, by: str) -> None:
        self._check_exists()
        if self.published is None:
            raise CannotDiscard(f"{self.module_id!r} was never published; delete it instead (R11)")
        if self.draft is None:
            raise CannotDiscard(f"{self.module_id!r} has no draft to discard (R11)")
        self._draft_discarded(tenant=self.tenant, module_id=self.module_id, by=by)

    def delete(self, by: str) -> None:
        self._check_exists()
        self._deleted(tenant=self.tenant, module_id=self.module_id, by=by)

    def recreate(self, definition: Definition, by: str) -> None:
        """A new life for a deleted id; the history before it stays, version numbers go on."""
        assert self.deleted, "only a deleted module can be created again"
        self._recreated(tenant=self.tenant, module_id=self.module_id, definition=definition, by=by)

    # -- guards ------------------------------------------------------------------------------

    def _check_exists(self) -> None:
        if self.deleted:
            raise UnknownModule(self.module_id)

    def _check_can_publish(self) -> None:
        self._check_exists()
        if self.draft is None:
            raise NothingToPublish(self.module_id)

    # -- events ------------------------------------------------------------------------------
    # Every event names its tenant and module id, so that each one reads on its own in an audit
    # export and a projection needs no lookup to place it.

    @event("DraftChanged")
    def _draft_changed(self, tenant: str, module_id: str, definition: Definition, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.draft = definition
        self._touched(by, timestamp)

    @event("Published")
    def _published(self, tenant: str, module_id: str, version: int, definition: Definition, by: str,
                   changeset: str | None = None, message: str | None = None, previous_hash: str = "",
                   timestamp: datetime | None = None) -> None:
        self.published = definition
        self.published_version = version
        self.published_at = timestamp
        self.published_by = by
        self.published_changeset = changeset
        self.published_message = message
        self.draft = None
        self._touched(by, timestamp)

    @event("Reverted")
    def _reverted(
        self, tenant: str, module_id: str, version: int, definition: Definition, by: str, previous_hash: str = "",
        timestamp: datetime | None = None,
    ) -> None:
        self.draft = definition
        self._touched(by, timestamp)

    @event("EnabledChanged")
    def _enabled_changed(self, tenant: str, module_id: str, enabled: bool, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        for name in ("published", "draft"):
            definition = getattr(self, name)
            if definition is not None and definition["tool"] is not None:
                setattr(self, name, {**definition, "tool": {**definition["tool"], "enabled": enabled}})
        self._touched(by, timestamp)

    @event("DraftDiscarded")
    def _draft_discarded(self, tenant: str, module_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.draft = None
        self._touched(by, timestamp)

    @event("Deleted")
    def _deleted(self, tenant: str, module_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.deleted = True
        self.draft = None
        self.published = None
        self.published_at = None
        self.published_by = None
        self.published_changeset = self.published_message = None
        self._touched(by, timestamp)

    @event("Recreated")
    def _recreated(self, tenant: str, module_id: str, definition: Definition, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.deleted = False
        self.draft = definition
        self.created_by = by
        self._touched(by, timestamp)

    def _touched(self, by: str, timestamp: datetime | None) -> None:
        self.updated_by = by
        self.updated_at = timestamp


class ImportGraph(Chained):
    """One tenant's modules and their import edges, as the publish checks must see them.

    The state is persistent (`immutables.Map`, a hash array mapped trie): a copy for a command or
    for a fast-forward shares it whole and costs O(1), and an event makes new maps along its own
    keys only, so an edit costs what it touches at 50,000 modules as at 50, and a thread reading
    a graph never sees it change under it. Two reverse indexes, kept by the event handlers, say
    who imports a module without scanning the nodes: its published importers (R10's transitive
    importers) and its draft importers (with the published ones, R12's).

    A snapshot stores what it always stored, `nodes` as a plain dict (`ImportGraph.Snapshot`); a
    graph restored from one, an older release's too, builds its maps and indexes on first use.
    """

    @staticmethod
    def create_id(tenant: str) -> UUID:  # type: ignore[override]
        return graph_aggregate_id(tenant)

    @event("Started")
    def __init__(self, tenant: str, previous_hash: str = "") -> None:
        self.tenant = tenant
        self._edges = _Edges.of({})

    class Snapshot(Chained.Snapshot):
        """The graph's state as every release has stored it: `nodes` a plain dict of plain nodes,
        no indexes (they are rebuilt from the nodes on load)."""

        @classmethod
        def take(cls, aggregate: Any) -> Any:
            taken = super().take(aggregate)
            taken.state.pop("_edges", None)
            taken.state["nodes"] = dict(aggregate.nodes.items())
            return taken

    def __deepcopy__(self, memo: dict[int, Any]) -> ImportGraph:
        """A copy that shares the immutable maps: O(1), not a copy of every node."""
        edges = self._indexed()
        copied = object.__new__(type(self))
        copied.__dict__.update({k: copy.deepcopy(v, memo) for k, v in vars(self).items() if k not in ("_edges", "nodes")})
        copied._edges = edges
        return copied

    # -- commands ----------------------------------------------------------------------------

    def link(self, module_id: str, published: list[str] | None, draft: list[str] | None) -> None:
        """Records a module's published imports (None: never published) and draft imports (None: no draft)."""
        self._linked(module_id=module_id, published=published, draft=draft)

    def unlink(self, module_id: str) -> None:
        self._unlinked(module_id=module_id)

    # -- queries -----------------------------------------------------------------------------

    @property
    def nodes(self) -> Mapping[str, Node]:
        """Each module's `{"published": [...] or None, "draft": [...] or None}` (read only)."""
        return self._indexed().nodes

    def published_imports(self) -> dict[str, list[str]]:
        """Every published module's imports, copied: the whole graph, for a reader that wants it all."""
        return {m: list(n["published"]) for m, n in self.nodes.items() if n["published"] is not None}

    def published_edges(self) -> Mapping[str, list[str]]:
        """The published imports as a read-only view, for callers that look up only a few modules."""
        return _PublishedEdges(self.nodes)

    def published_importers(self) -> Mapping[str, frozenset[str]]:
        """Module id -> the modules whose published imports name it (read only)."""
        return self._indexed().published_importers

    def is_published(self, module_id: str) -> bool:
        node = self.nodes.get(module_id)
        return node is not None and node["published"] is not None

    def importers_of(self, module_id: str) -> list[str]:
        """Modules whose draft or published imports name `module_id` (R12)."""
        edges = self._indexed()
        return sorted(edges.published_importers.get(module_id, frozenset()) | edges.draft_importers.get(module_id, frozenset()))

    def _indexed(self) -> _Edges:
        edges: _Edges | None = self.__dict__.get("_edges")
        if edges is None:
            # Restored from a snapshot, which holds the nodes as a plain dict: built once, and the
            # same whichever thread builds it first.
            edges = _Edges.of(self.__dict__["nodes"])
            self._edges = edges
        return edges

    # -- events ------------------------------------------------------------------------------

    @event("Linked")
    def _linked(self, module_id: str, published: list[str] | None, draft: list[str] | None, previous_hash: str = "") -> None:
        self._edges = self._indexed().linked(module_id, {"published": copy.copy(published), "draft": copy.copy(draft)})
        self.__dict__.pop("nodes", None)  # as restored: the maps hold them now

    @event("Unlinked")
    def _unlinked(self, module_id: str, previous_hash: str = "") -> None:
        self._edges = self._indexed().unlinked(module_id)
        self.__dict__.pop("nodes", None)


@dataclass(frozen=True)
class _Edges:
    """The graph's nodes and its two reverse indexes, persistent maps changed together."""

    nodes: Map[str, Node]
    # module id -> the modules whose published imports name it (R10; R12 with the drafts')
    published_importers: Map[str, frozenset[str]]
    # module id -> the modules whose draft imports name it (only drafts that change imports)
    draft_importers: Map[str, frozenset[str]]

    @classmethod
    def of(cls, nodes: Mapping[str, Node]) -> _Edges:
        """The maps of `nodes` (a graph restored from a snapshot): one pass over them."""
        found: dict[str, dict[str, list[str]]] = {"published": {}, "draft": {}}
        for module_id, node in nodes.items():
            for side, index in found.items():
                for name in node[side] or ():
                    index.setdefault(name, []).append(module_id)
        published, draft = ({name: frozenset(importers) for name, importers in index.items()} for index in found.values())
        return cls(Map(nodes), Map(published), Map(draft))

    def linked(self, module_id: str, node: Node) -> _Edges:
        before = self.nodes.get(module_id)
        return _Edges(
            self.nodes.set(module_id, node),
            _moved(self.published_importers, module_id, _imports(before, "published"), _imports(node, "published")),
            _moved(self.draft_importers, module_id, _imports(before, "draft"), _imports(node, "draft")),
        )

    def unlinked(self, module_id: str) -> _Edges:
        before = self.nodes.get(module_id)
        if before is None:
            return self
        return _Edges(
            self.nodes.delete(module_id),
            _moved(self.published_importers, module_id, _imports(before, "published"), set()),
            _moved(self.draft_importers, module_id, _imports(before, "draft"), set()),
        )


def _imports(node: Node | None, side: str) -> set[str]:
    return set() if node is None else set(node[side] or ())


def _moved(index: Map[str, frozenset[str]], importer: str, before: set[str], after: set[str]) -> Map[str, frozenset[str]]:
    """`index` with `importer` taken from the entries of what it no longer imports and added to
    those of what it now imports; only those entries are touched."""
    if before == after:
        return index
    with index.mutate() as changing:
        for name in before - after:
            left = changing[name] - {importer}
            if left:
                changing[name] = left
            else:
                del changing[name]
        for name in after - before:
            changing[name] = changing.get(name, frozenset()) | {importer}
        return changing.finish()


class _PublishedEdges(Mapping[str, list[str]]):
    def __init__(self, nodes: Mapping[str, Node]) -> None:
        self._nodes = nodes

    def __getitem__(self, module_id: str) -> list[str]:
        published = self._nodes[module_id]["published"]
        if published is None:
            raise KeyError(module_id)
        return published

    def __iter__(self) -> Iterator[str]:
        return (m for m, n in self._nodes.items() if n["published"] is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


# -- event versions (domain/versions.py) -------------------------------------------------------------

@upcast(CodeModule.Published, to=2)
def _published_gains_changeset_and_message(state: dict[str, Any]) -> None:
    """B6: a `Published` event names its changeset and the publisher's message; one stored before
    either existed was a single publish with no message."""
    state.setdefault("changeset", None)
    state.setdefault("message", None)
