"""The event store, as an `eventsourcing` application: the aggregates, loaded and saved, and the
queries that must be exact (a module, the import graph, the registries) read here.

The commands that change the aggregates are the application services' (`modules.py`,
`records.py`, `tokens.py`), each run by the one `CommandRunner` (`commands.py`); a save that
raced another writer answers None here and the runner decides what that means. Aggregates are
cached and shared between request threads, which only ever read them (see
`SharedAggregateRepository`); a command changes a copy (`for_update=True`).
"""

from __future__ import annotations

import functools
import sys
import threading
from copy import deepcopy
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application, LRUCache, ProcessingEvent, Repository
from eventsourcing.persistence import ApplicationRecorder, EventStore, IntegrityError
from eventsourcing.utils import get_topic
from opentelemetry import trace

from domain.callers import TOKENS_ID, CallerRegistry, TokenRegistry, registry_id
from domain.tenants import TENANTS_ID, TenantRegistry
from domain.errors import UnknownModule
from domain.model import CodeModule, ImportGraph, graph_aggregate_id, module_aggregate_id
from domain.ports import NoOtherTools, ToolNames
from domain.rules import id_violations

# 200 events: a cold load then decodes at most 199 events after the snapshot (a few milliseconds),
# and a tenant's graph of 10,000 events holds 50 snapshot rows.
SNAPSHOT_INTERVAL = 200
# Events a query of `Store.published_tools` reads, and the most modules one of its passes rebuilds.
TOOLS_PAGE = 2_000
TOOLS_PER_PASS = 10_000

T = TypeVar("T")
# How the store's tables are made: `make()` once, unless the engine says otherwise (replicas racing
# to make a PostgreSQL store's catalog try again: `infrastructure.postgres_store.created_despite_others`).
Opening = Callable[[Callable[[], T]], T]


def _made_once(make: Callable[[], T]) -> T:
    return make()


@functools.cache
def _module_topics() -> tuple[str, ...]:
    """The topic of every `CodeModule` event, as the event store records it."""
    return tuple(sorted(
        get_topic(kind) for kind in vars(CodeModule).values()
        if isinstance(kind, type) and issubclass(kind, CodeModule.Event) and kind is not CodeModule.Event
    ))


def project_events(aggregate: Any, events: Any) -> Any:
    """eventsourcing's `project_aggregate` without its assertion that each event matches a
    runtime-checkable protocol: that `isinstance` took a quarter of every aggregate load."""
    for domain_event in events:
        aggregate = domain_event.mutate(aggregate)
    return aggregate


class NewestAggregateCache(LRUCache):
    """An LRU cache of aggregates that never goes back: a put of an older version than the one
    held is dropped (a thread that read an aggregate before another thread's save must not put
    its stale copy over the saved one)."""

    def __init__(self, maxsize: int) -> None:
        super().__init__(maxsize)
        self._putting = threading.Lock()

    def put(self, key: Any, value: Any) -> Any:
        with self._putting:
            link = self.cache.get(key)
            held = link[self.RESULT] if link is not None else None
            if held is not None and value is not None and held.version >= value.version:
                return None, None
            return super().put(key, value)


class SharedAggregateRepository(Repository):
    """eventsourcing's repository, with cached aggregates that no thread ever changes.

    Request threads share what the cache holds (a read takes no copy). eventsourcing's own
    fast-forward applies newer events to the cached object in place, under a lock that only other
    fast-forwards take: a thread reading that object meanwhile saw it change under it (issue 12,
    11a). Here a fast-forward applies the new events to a copy, and the copy replaces the cached
    object; the object a reader holds stays as it was read. Only a cache hit with newer events
    pays for the copy; a hit with none (nearly every read) costs what it did. The tenant's import
    graph, the one aggregate as large as the tenant, copies in O(1): its state is persistent
    (see `ImportGraph`).
    """

    def get(
        self,
        aggregate_id: Any,
        *,
        version: int | None = None,
        projector_func: Any = project_events,
        fastforward_skipping: bool = False,
        deepcopy_from_cache: bool = True,
    ) -> Any:
        if not self.cache or version is not None:
            return super().get(aggregate_id, version=version, projector_func=projector_func)
        try:
            aggregate = self.cache.get(aggregate_id)
        except KeyError:
            aggregate = self._reconstruct_aggregate(aggregate_id, None, projector_func)
            self.cache.put(aggregate_id, aggregate)
        else:
            if self.fastforward:
                new_events = list(self.event_store.get(originator_id=aggregate_id, gt=aggregate.version))
                if new_events:
                    aggregate = projector_func(deepcopy(aggregate), new_events)
                    if aggregate is None:
                        raise AggregateNotFoundError(aggregate_id)
                    self.cache.put(aggregate_id, aggregate)
        if deepcopy_from_cache and self.deepcopy_from_cache:
            # A command changes its own copy; the cached object changes only by being replaced.
            aggregate = deepcopy(aggregate)
        return aggregate


_TRACER = trace.get_tracer("toolsmith")


class Store(Application):
    """The aggregates of every tenant; queries that must be exact (the graph, a module) read here."""

    name = "toolsmith"
    # The aggregates that grow for as long as a tenant lives (every publish and import change is an
    # event of its graph) are snapshotted, so that a cold load replays at most an interval's events
    # after the newest snapshot, not every event since version 1 (issue 13, 5). A save that reaches
    # a multiple of the interval snapshots the aggregate it saved, as it stands (`_take_snapshots`).
    # Snapshots sit in their own table, outside the log that projections and the audit read.
    # `IS_SNAPSHOTTING_ENABLED=n` in the environment switches them off (loads replay everything).
    snapshotting_intervals: ClassVar[dict[type[Any], int]] = {
        ImportGraph: SNAPSHOT_INTERVAL, CallerRegistry: SNAPSHOT_INTERVAL, TokenRegistry: SNAPSHOT_INTERVAL,
        TenantRegistry: SNAPSHOT_INTERVAL,
    }

    def __init__(self, env: dict[str, str] | None = None, *, tool_names: ToolNames | None = None,
                 opening: Opening[Any] = _made_once) -> None:
        # Set before eventsourcing's constructor opens the recorder and the snapshot store.
        self._opening = opening
        super().__init__(env)
        self._tool_names = tool_names or NoOtherTools()
        # This store's: the core's (`snapshotting_intervals`), and the kinds' aggregates that `snapshot` adds.
        self.snapshot_intervals: dict[type[Any], int] = dict(type(self).snapshotting_intervals)
        # The newest notification id, kept here when this process is the store's one writer (see
        # `owns_its_writes`); None until first asked, and always None for a store others write too.
        self._position: int | None = None
        self._position_lock = threading.Lock()

    def snapshot(self, aggregates: Iterable[type[Any]]) -> None:
        """Snapshots these aggregates too, at the same interval: the kinds' own that grow for as long
        as they live (`KindPlugin.snapshotted`), which the composition root hands every store it opens."""
        for aggregate in aggregates:
            self.snapshot_intervals[aggregate] = SNAPSHOT_INTERVAL

    # Opening the store makes its tables, indexes, types and functions if they are missing, by
    # idempotent statements (`CREATE ... IF NOT EXISTS`); `opening` says what to do when another
    # process makes them at the same moment (the composition root's: `infrastructure/postgres_store.py`).

    def construct_recorder(self) -> ApplicationRecorder:
        return self._opening(super().construct_recorder)

    def construct_snapshot_store(self) -> EventStore[Any]:
        return self._opening(super().construct_snapshot_store)

    def construct_repository(self) -> Repository:
        """eventsourcing's settings, with a cache whose aggregates threads may share (see
        `SharedAggregateRepository`)."""
        made = super().construct_repository()
        repository = SharedAggregateRepository(
            event_store=made.event_store,
            snapshot_store=made.snapshot_store,
            fastforward=made.fastforward,
            fastforward_skipping=made.fastforward_skipping,
            deepcopy_from_cache=made.deepcopy_from_cache,
        )
        if made.cache is not None:
            # eventsourcing makes an unbounded cache for a size of 0: so does a huge bound.
            repository.cache = NewestAggregateCache(made.cache.maxsize if isinstance(made.cache, LRUCache) else sys.maxsize)
        return repository

    # -- aggregates ------------------------------------------------------------------------------

    def find(self, tenant: str, module_id: str, *, for_update: bool = False) -> CodeModule | None:
        """The module aggregate with this id, deleted or not; None when it never existed."""
        if not isinstance(module_id, str) or id_violations(module_id):
            return None
        try:
            return self.repository.get(module_aggregate_id(tenant, module_id), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return None

    def module(self, tenant: str, module_id: str, *, for_update: bool = False) -> CodeModule:
        """A live module. Without `for_update` the object is shared with the cache and other threads:
        only read it (no thread ever changes it, see `SharedAggregateRepository`)."""
        module = self.find(tenant, module_id, for_update=for_update)
        if module is None or module.deleted:
            raise UnknownModule(module_id)
        return module

    def graph(self, tenant: str, *, for_update: bool = False) -> ImportGraph:
        try:
            return self.repository.get(graph_aggregate_id(tenant), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return ImportGraph(tenant=tenant)

    def registry(self, tenant: str, *, for_update: bool = False) -> CallerRegistry:
        """The tenant's plans, agents, MCP servers and usage profiles."""
        try:
            return self.repository.get(registry_id(tenant), deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return CallerRegistry(tenant=tenant)

    def tokens(self, *, for_update: bool = False) -> TokenRegistry:
        try:
            return self.repository.get(TOKENS_ID, deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return TokenRegistry()

    def tenants(self, *, for_update: bool = False) -> TenantRegistry:
        """Every tenant the operator created or changed (docs/tenants.md)."""
        try:
            return self.repository.get(TENANTS_ID, deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return TenantRegistry()

    def stored_events(self, aggregate_id: UUID) -> list[Any]:
        """Every stored event of one aggregate, in order."""
        return list(self.repository.event_store.get(aggregate_id))

    # -- names -----------------------------------------------------------------------------------

    def tool_holding(self, tenant: str, name: str) -> str | None:
        """The kind of tool that holds `name` (R2), as the kinds say; None when none does."""
        return self._tool_names.holder_of(tenant, name)

    def users_of(self, tenant: str, name: str) -> dict[str, list[str]]:
        """What of the kinds names the tool `name` besides plans and agents (R12), as the kinds say."""
        return self._tool_names.users_of(tenant, name)

    def is_module(self, tenant: str, name: str) -> bool:
        """Whether a (non-deleted) module holds `name`, from the event store."""
        module = self.find(tenant, name)
        return module is not None and not module.deleted

    def published_tools(self, tenant: str) -> Iterator[CodeModule]:
        """Every module whose published version is a tool: the import graph's published nodes, each
        rebuilt from its events.

        Passes over the log (`TOOLS_PAGE` events a query, only module events, only those of the
        graph's published modules decoded) rather than a query per module: a tenant of 50,000
        modules is read in seconds, not in the 45 s that 45,000 loads took (issue 15). Each pass
        rebuilds at most `TOOLS_PER_PASS` modules and hands them over before the next rebuilds
        more, so the modules of a large tenant are never all held at once (the memory they took
        stayed the process's after they were dropped). The modules bypass the aggregate cache
        (they would evict what requests use), and each pass reads to the end of the log, so it
        answers each module as of now at least, as `find` does.
        """
        names = sorted(self.graph(tenant).published_edges())
        passes = max(1, -(-len(names) // TOOLS_PER_PASS))
        for part in range(passes):
            wanted = {module_aggregate_id(tenant, name) for name in names[part::passes]}
            modules: dict[UUID, Any] = {}
            after: int | None = None
            while True:
                page = self.recorder.select_notifications(after, TOOLS_PAGE, topics=_module_topics(), inclusive_of_start=after is None)
                for notification in page:
                    if notification.originator_id in wanted:
                        event = self.mapper.to_domain_event(notification)
                        modules[event.originator_id] = event.mutate(modules.get(event.originator_id))
                if len(page) < TOOLS_PAGE:
                    break
                after = page[-1].id
            found = [m for m in modules.values() if m is not None and m.published is not None and m.published["tool"] is not None]
            modules.clear()
            yield from found
            del found  # this pass's modules go before the next pass rebuilds more

    # -- saving ----------------------------------------------------------------------------------

    def _take_snapshots(self, processing_event: ProcessingEvent[UUID]) -> None:
        """eventsourcing's, except that an aggregate saved at the very version to snapshot is
        snapshotted as the save holds it, rather than rebuilt from the snapshot before and up to
        an interval's events (which, for a tenant's graph of 50,000 modules, is decoding 50,000
        nodes inside the save). It is the state those events build: the audit checks each
        snapshot against a replay of the log."""
        if self.snapshots is None:
            return
        for event in processing_event.events:
            aggregate = processing_event.aggregates.get(event.originator_id)
            interval = self.snapshot_intervals.get(type(aggregate))
            if aggregate is None or interval is None or event.originator_version % interval:
                continue
            if aggregate.version == event.originator_version:
                self.snapshots.put([type(aggregate).Snapshot.take(aggregate)])
            else:
                self.take_snapshot(event.originator_id, version=event.originator_version)

    def save(self, *objs: Any, **kwargs: Any) -> Any:
        """eventsourcing's, in its span when a recording one is current (traces on: docs/observability.md)."""
        if not trace.get_current_span().is_recording():
            return super().save(*objs, **kwargs)
        with _TRACER.start_as_current_span("eventstore.write") as span:
            recordings = super().save(*objs, **kwargs)
            span.set_attribute("toolsmith.events", len(recordings))
            if recordings:
                span.set_attribute("toolsmith.position", recordings[-1].notification.id)
            return recordings

    def save_or_conflict(self, *aggregates: Any) -> int | None:
        """Saves atomically; None when another writer got there first (nothing was written)."""
        try:
            recordings = self.save(*aggregates)
        except IntegrityError:
            return None
        return recordings[-1].notification.id if recordings else self.position()

    def moved_since(self, aggregate_id: UUID, version: int) -> bool:
        """Whether the aggregate has an event after `version`. It asks the event store, not the
        aggregate cache: the cache may not have another writer's event yet (another process's, or
        this process's before its save returns)."""
        return bool(self.recorder.select_events(aggregate_id, gt=version, limit=1))

    @property
    def owns_its_writes(self) -> bool:
        """Whether every write of the store passes through this object, so that what it caches
        needs no database read to stay current: its aggregates are cached and not fast-forwarded
        (SQLite, which one serving process owns; a PostgreSQL store has other writers)."""
        repository = self.repository
        return getattr(repository, "cache", None) is not None and not getattr(repository, "fastforward", True)

    def position(self) -> int:
        """The newest notification id. A store that owns its writes keeps it from its own saves
        (a read of SQLite per tool call cost a tenth of the call, issue 30); any other asks the
        database each time."""
        known = self._position
        if known is not None:
            return known
        position = self.recorder.max_notification_id() or 0
        if self.owns_its_writes:
            self._advance(position)
        return position

    def _advance(self, position: int) -> None:
        with self._position_lock:
            if self._position is None or position > self._position:
                self._position = position

    def _record(self, processing_event: ProcessingEvent[Any]) -> list[Any]:
        recordings = super()._record(processing_event)
        if recordings and self.owns_its_writes:
            # After the commit, so a reader that sees the new position finds its events stored.
            # Ids only grow, and `_advance` keeps the larger: a read of the database racing this
            # write cannot set the position back.
            self._advance(max(recording.notification.id for recording in recordings))
        return recordings
