"""The tool catalog and every way a tool is called (docs/rules.md R2, R14–R16; docs/rest-api.md catalog; docs/mcp.md MCP).

The catalog of a tenant is every installed kind's entries (`application/kinds/`), resolved by R15
in the kinds' order, kept by name in a sorted map so that a page costs its size. It keeps itself
as the event store moves (issue 15): the store's new events, read once for every tenant (the
`_Journal`, a projection of the stored notifications, so it works across processes), say which names of
which kind each touched, and only those entries are read again (one aggregate each) and resolved
again; a kind whose entries derive from the others' (a plan takes its first node's schema) is read
again whenever its tenant's catalog changed. One thread per tenant brings the catalog up to the
store's position; the others wait for it and use its result (single flight), so a caller never
sees a catalog older than a write it made. Each update leaves `Change`s (a name's winner before and
after) for MCP's change watch, which tells only the sessions that can see a changed tool.

A call resolves the name (R15), checks the caller's permissions (R14, and what the tool's kind adds
to them), and hands the call to the tool's kind, which validates the arguments before anything
runs and executes it. Admission comes first and is the kind's own: only a kind with a bound (code,
on the JavaScript pool) refuses when its capacity is taken; the toolbox never names a kind.
An async route awaits the call (`acall`): on the event loop when nothing before the run can block
(the catalog up to date, a store that asks no database before a read) and the kind can await its
own work (`acall` of code and API URL tools), in a worker thread otherwise.

Every result, whatever kind of tool produced it, passes `answered` before anyone sees it: a value
nested deeper than `MAX_DEPTH` becomes a `result` error, and lone surrogates become U+FFFD.
"""

from __future__ import annotations

import dataclasses
import gc
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Container, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple
from uuid import UUID

import anyio.to_thread
from eventsourcing.persistence import Tracking
from eventsourcing.popo import POPOTrackingRecorder
from eventsourcing.projection import Projection
from sortedcontainers import SortedDict

from application import spans
from application.call_log import CallLog
from application.context import CallContext
from application.kinds.base import OPAQUE, K, Ranked, ToolKind, ToolKinds, Tools
from application.projected import Follower
from application.store import Store
from domain import callers
from domain.catalog import EVERYTHING, NOTHING, Permissions, ToolEntry, ranked
from domain.content import ContentError, content_of, is_content
from domain.errors import InvalidInput, ToolNotCallable, UnknownRecord
from domain.ports import ExecutionError, ExecutionResult
from domain.rules import undeclared_violations
from domain.schemas import output_problem
from domain.values import TOO_DEEP_RESULT, has_lone_surrogate, too_deep, well_formed

ADMIN = "admin"
CALLER = "caller"


# How many of the store's latest events the journal keeps, and how many changes each catalog keeps
# for the change watch; a catalog or a watcher further behind is built, or told, afresh.
JOURNAL_SIZE = 100_000
CHANGES_KEPT = 10_000


class Change(NamedTuple):
    """What a call of `name` reached before and after a change of the catalog at `position` (None:
    no tool). `name` None: the tenant's MCP servers or usage profiles changed."""

    position: int
    name: str | None
    before: ToolEntry | None = None
    after: ToolEntry | None = None


class _Touch(NamedTuple):
    """What one stored event may have changed: names by call type (`OPAQUE`: every tool of the
    kind), and whether it changed a record MCP offers depend on (a server, a usage profile). The
    event's `tenant` is None when it does not say (a registry's events): its `originator` tells
    whose, once that tenant's catalog is followed."""

    position: int
    tenant: str | None
    originator: UUID
    names: dict[str, Collection[str]]
    callers: bool


class _JournalView(POPOTrackingRecorder):
    """The journal's touches, oldest first, and the position after which it holds them all."""

    def __init__(self, floor: int) -> None:
        super().__init__()
        self.touches: deque[_Touch] = deque()
        self.floor = floor

    def note(self, touch: _Touch | None, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            if touch is not None:
                self.touches.append(touch)
                if len(self.touches) > JOURNAL_SIZE:
                    self.floor = self.touches.popleft().position
            self._insert_tracking(tracking)

    def after(self, after: int, upto: int) -> list[_Touch] | None:
        """The touches after `after` up to `upto`; None when some of them are no longer held."""
        with self._database_lock:
            if after < self.floor:
                return None
            found = []
            for touch in reversed(self.touches):
                if touch.position <= after:
                    break
                if touch.position <= upto:
                    found.append(touch)
            return found[::-1]


class _JournalProjection(Projection[_JournalView]):
    """Every stored event as a `_Touch` (the events of a kind not installed here touch none of
    these kinds' tools: they are skipped undecoded)."""

    name = "catalog journal"
    skips_undecodable = True

    def __init__(self, view: _JournalView, kinds: ToolKinds) -> None:
        super().__init__(view=view)
        self._kinds = kinds

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        tenant = getattr(domain_event, "tenant", None)
        if not isinstance(tenant, str):
            tenant = None
        names: dict[str, Collection[str]] = {}
        for kind in self._kinds:
            touched = kind.touched(domain_event)
            if touched is not None:
                names[kind.call_type] = touched
        changes_callers = _changes_offers(domain_event)
        touch = _Touch(tracking.notification_id, tenant, domain_event.originator_id, names, changes_callers)
        self.view.note(touch if names or changes_callers else None, tracking)


class _Journal:
    """The store's events since it started, decoded once for every tenant, as `_Touch`es: a
    projection of the log (`application/projected.py`) the one runner keeps up to date, and every
    read catches up first."""

    def __init__(self, store: Store, kinds: ToolKinds) -> None:
        start = store.position()
        view = _JournalView(floor=start)
        if start:
            view.insert_tracking(Tracking(store.name, start))
        self.follower: Follower[_JournalView] = Follower(store, _JournalProjection(view, kinds))
        self._tenants: dict[UUID, str] = {}  # a registry's aggregate id: its tenant (its events do not say)

    def follow(self, tenant: str, position: int) -> None:
        """Learns whose registry events are `tenant`'s."""
        self._tenants[callers.registry_id(tenant)] = tenant

    def since(self, after: int, upto: int) -> list[_Touch] | None:
        """The touches after position `after`, up to `upto`, read from the store as needed, each
        with its tenant; None when the journal no longer (or not yet) holds them all."""
        touches = self.follower.current().view.after(after, upto)
        if touches is None:
            return None
        return [self._resolved(touch) for touch in touches]

    def _resolved(self, touch: _Touch) -> _Touch:
        """The touch with its tenant: an event of an unknown tenant's aggregate concerns no
        catalog built here, except for a kind that cannot say which of its tools it touched."""
        if touch.tenant is not None:
            return touch
        tenant = self._tenants.get(touch.originator)
        if tenant is not None:
            return touch._replace(tenant=tenant)
        return touch._replace(names={t: n for t, n in touch.names.items() if n is OPAQUE}, callers=False)


def _changes_offers(event: Any) -> bool:
    """Whether a registry event changes what MCP offers someone: a server's tools, a profile."""
    if isinstance(event, (callers.CallerRegistry.ToolAttached, callers.CallerRegistry.ToolDetached)):
        return True
    kind = getattr(event, "kind", None)
    return isinstance(event, callers.CallerRegistry.Event) and kind in (callers.SERVER, callers.PROFILE)


class _Catalog:
    """One tenant's catalog at `position`: each kind's entries by name (`kept`), and every name's
    entries resolved by R15, winner first (`listed`, sorted by name). `lock` is held by the one
    thread bringing it up to date, and while a page is read."""

    def __init__(self, kinds: ToolKinds) -> None:
        self.lock = threading.Lock()
        self.position = -1
        self.kept: dict[str, dict[str, ToolEntry]] = {kind.call_type: {} for kind in kinds}
        self.listed: SortedDict = SortedDict()
        self.changes: deque[Change] = deque()
        self.changes_floor = 0  # the changes after this position are all kept
        self.flat: list[ToolEntry] | None = None

    def change(self, change: Change) -> None:
        self.changes.append(change)
        if len(self.changes) > CHANGES_KEPT:
            self.changes_floor = self.changes.popleft().position


class _Winners(Mapping[str, ToolEntry]):
    """The winners among the kinds that do not derive from others (what a plan's first node
    reaches), read from a catalog's kept entries."""

    def __init__(self, catalog: _Catalog, kinds: Sequence[ToolKind]) -> None:
        self._kept = [catalog.kept[kind.call_type] for kind in kinds]

    def __getitem__(self, name: str) -> ToolEntry:
        for entries in self._kept:
            entry = entries.get(name)
            if entry is not None:
                return entry
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter({name for entries in self._kept for name in entries})

    def __len__(self) -> int:
        return len({name for entries in self._kept for name in entries})


class Toolbox(Tools):
    def __init__(self, store: Store, kinds: ToolKinds) -> None:
        self._store = store
        self._kinds = kinds
        self._catalogs: dict[str, _Catalog] = {}
        self._journal = _Journal(store, kinds)
        # Every call is recorded here, once (docs/calls.md); the composition root hands the log in.
        self.call_log = CallLog(None)

    def projections(self) -> tuple[Follower[Any], ...]:
        """The read models the projection runner keeps up to date for the catalog: its journal."""
        return (self._journal.follower,)

    def start(self) -> None:
        self._kinds.start()
        self.call_log.start()

    def close(self) -> None:
        self._kinds.close()
        self.call_log.close()

    @property
    def kinds(self) -> ToolKinds:
        return self._kinds

    def kind(self, cls: type[K]) -> K:
        """The installed kind of class `cls`, for that kind's own routes."""
        return self._kinds.find(cls)

    def kind_of(self, entry: ToolEntry) -> ToolKind:
        return self._kinds.of(entry.call_type)

    @property
    def call_types(self) -> tuple[str, ...]:
        """Every kind's call type, in R15's order."""
        return self._kinds.order

    # -- the catalog -------------------------------------------------------------------------

    def generation(self) -> int:
        """Changes whenever what the catalog or any MCP server shows may have changed."""
        return self._store.position()

    def warm(self, tenant: str) -> None:
        """Builds the tenant's catalog now, at the service's start, before any request waits for it:
        at 50,000 modules that is seconds of a thread holding the interpreter, which would hold up
        every other request of the process while it ran (issue 15)."""
        self._catalog(tenant)

    def position(self, tenant: str) -> int:
        """The position the tenant's catalog is at, brought up to the store's first."""
        return self._catalog(tenant).position

    def entries(self, tenant: str, *, as_of: int | None = None) -> list[ToolEntry]:
        """Every tool of the tenant, sorted by name; those that lose R15 carry `shadowed_by`.
        Costs the whole catalog once per change: a page (`page`) costs its size. `as_of`: the
        catalog as of that store position at least, rather than the store's newest: for an answer
        to a write of the caller's own that changes no tool (an attach: the console's server page
        shows the attached tools' kinds and states), read at the position before the write, so
        that the answer does not read back that write's events to learn nothing."""
        catalog = self._catalog(tenant, as_of)
        with catalog.lock:
            if catalog.flat is None:
                catalog.flat = [entry for holders in catalog.listed.values() for entry in holders]
            return catalog.flat

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        """The tool a call of `name` reaches (R15), or None."""
        holders = self._catalog(tenant).listed.get(name)
        return holders[0] if holders else None

    def entry_as_read(self, tenant: str, name: str) -> ToolEntry | None:
        """`entry` as the catalog was last brought up to date, without asking the store where it
        is: no I/O, for the event loop, when this request already brought it up (`position`)."""
        catalog = self._catalogs.get(tenant)
        holders = (catalog.listed if catalog is not None else self._catalog(tenant).listed).get(name)
        return holders[0] if holders else None

    def holders(self, tenant: str, name: str) -> tuple[ToolEntry, ...]:
        """Every tool named `name`, the one a call reaches first (R15)."""
        return self._catalog(tenant).listed.get(name, ())

    def names(self, tenant: str) -> Container[str]:
        return self._catalog(tenant).listed

    def page(self, tenant: str, *, after: str | None = None, limit: int, accept: Callable[[ToolEntry], bool] | None = None,
             winners_only: bool = False, among: Iterable[str] | None = None) -> tuple[list[ToolEntry], bool]:
        """Up to `limit` accepted entries whose names sort after `after` (every entry of a name
        together), and whether more follow. `among`, sorted, narrows the names looked at (a
        server's attached tools): a page then costs what it looks at, not the catalog's size."""
        catalog = self._catalog(tenant)
        found: list[ToolEntry] = []
        with catalog.lock:
            listed = catalog.listed
            names = among if among is not None else listed.irange(minimum=after, inclusive=(False, True)) if after is not None else listed
            for name in names:
                if after is not None and name <= after:
                    continue
                holders = listed.get(name, ())
                taken = [e for e in (holders[:1] if winners_only else holders) if accept is None or accept(e)]
                if not taken:
                    continue
                if len(found) >= limit:
                    return found, True
                found.extend(taken)
        return found, False

    def changes_since(self, tenant: str, position: int) -> tuple[list[Change] | None, int]:
        """The tenant's catalog changes after `position` (None when they are no longer all kept),
        and the position the catalog is at."""
        catalog = self._catalog(tenant)
        with catalog.lock:
            if position < catalog.changes_floor:
                return None, catalog.position
            found = []
            for change in reversed(catalog.changes):
                if change.position <= position:
                    break
                found.append(change)
            return found[::-1], catalog.position

    def holder_of(self, tenant: str, name: str, *, besides: str | None = None) -> str | None:
        """R2: what the kind holding `name` calls its tools (other than kind `besides`), or None."""
        return self._kinds.holder_of(tenant, name, besides=besides)

    def listed_besides(self, tenant: str, name: str, besides: str) -> bool:
        """Whether the catalog lists a tool `name` of a kind other than the one labelled `besides`."""
        return any(self.kind_of(e).label != besides for e in self.holders(tenant, name))

    def _catalog(self, tenant: str, as_of: int | None = None) -> _Catalog:
        """The tenant's catalog as of the event store's position (or `as_of`) at least: one thread
        brings it up to date while the others wait, then take its result."""
        position = self._store.position() if as_of is None else as_of
        catalog = self._catalogs.get(tenant)
        if catalog is None:
            catalog = self._catalogs.setdefault(tenant, _Catalog(self._kinds))
        if catalog.position >= position:
            return catalog
        with catalog.lock:
            if catalog.position < position:
                self._update(tenant, catalog, position)
        return catalog

    def _update(self, tenant: str, catalog: _Catalog, position: int) -> None:
        self._journal.follow(tenant, position)
        touches = self._journal.since(catalog.position, position) if catalog.position >= 0 else None
        if touches is None:
            self._build(tenant, catalog, position)
            return
        touched: dict[str, set[str] | None] = {}  # None: every tool of the kind
        callers_changed = False
        for touch in touches:
            if touch.tenant not in (tenant, None):
                continue
            callers_changed |= touch.callers
            for call_type, names in touch.names.items():
                if names is OPAQUE or touched.get(call_type, set()) is None:
                    touched[call_type] = None
                else:
                    touched.setdefault(call_type, set()).update(names)  # type: ignore[union-attr]
        changed: set[str] = set()
        nothing = Ranked({}, self._kinds.order)
        plain = [kind for kind in self._kinds if not kind.derived]
        for kind in plain:
            if kind.call_type in touched:
                changed |= self._reread(tenant, catalog, kind, touched[kind.call_type], nothing)
        derived = [kind for kind in self._kinds if kind.derived]
        if changed or any(kind.call_type in touched for kind in derived):
            others = Ranked(_Winners(catalog, plain), self._kinds.order)
            for kind in derived:
                changed |= self._reread(tenant, catalog, kind, None, others)
        for name in sorted(changed):
            before = catalog.listed.get(name, (None,))[0]
            holders = ranked([e for kind in self._kinds if (e := catalog.kept[kind.call_type].get(name)) is not None])
            if holders:
                catalog.listed[name] = holders
            else:
                catalog.listed.pop(name, None)
            after = holders[0] if holders else None
            if before != after:
                catalog.change(Change(position, name, before, after))
        if callers_changed:
            catalog.change(Change(position, None))
        if changed:
            catalog.flat = None
        catalog.position = position

    def _reread(self, tenant: str, catalog: _Catalog, kind: ToolKind, names: set[str] | None, others: Ranked) -> set[str]:
        """Reads again the kind's entries of `names` (None: all of them, as `entries`); answers the
        names whose entry changed."""
        kept = catalog.kept[kind.call_type]
        if names is None:
            fresh = {e.name: e for e in kind.entries(tenant, others)}
            changed = {n for n in kept.keys() | fresh.keys() if kept.get(n) != fresh.get(n)}
            catalog.kept[kind.call_type] = fresh
            return changed
        changed = set()
        for name in names:
            entry = kind.entry(tenant, name)
            if entry != kept.get(name):
                changed.add(name)
                if entry is None:
                    del kept[name]
                else:
                    kept[name] = entry
        return changed

    def _build(self, tenant: str, catalog: _Catalog, position: int) -> None:
        """Every kind's entries afresh; a kind whose entries derive from the others' (a plan takes
        its first node's schema) is built after them, handed their winners. The change watch is
        told everything changed (its changes start here)."""
        # The collector is paused while building, and what the process holds afterwards, this
        # catalog with it, is frozen: a full pass walks every object the process holds (at 50,000
        # tools, 0.3 s of CPU in whichever thread ran it, the event loop's too: the stall that
        # tests/e2e/test_catalog_scale.py looks for), and the building would set off many, each
        # walking again what it built so far. Reference counting still frees what the build drops.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            self._build_all(tenant, catalog, position)
        finally:
            gc.freeze()
            if was_enabled:
                gc.enable()

    def _build_all(self, tenant: str, catalog: _Catalog, position: int) -> None:
        nothing = Ranked({}, self._kinds.order)
        plain = [kind for kind in self._kinds if not kind.derived]
        for kind in plain:
            catalog.kept[kind.call_type] = {e.name: e for e in kind.entries(tenant, nothing)}
        others = Ranked(_Winners(catalog, plain), self._kinds.order)
        for kind in self._kinds:
            if kind.derived:
                catalog.kept[kind.call_type] = {e.name: e for e in kind.entries(tenant, others)}
        names = {name for kept in catalog.kept.values() for name in kept}
        catalog.listed = SortedDict({
            name: ranked([e for kind in self._kinds if (e := catalog.kept[kind.call_type].get(name)) is not None])
            for name in names
        })
        catalog.changes.clear()
        catalog.changes_floor = position
        catalog.flat = None
        catalog.position = position

    def attached(self, tenant: str, server_id: str | None) -> frozenset[str] | None:
        """The tools attached to MCP server `server_id`; None for the default server (every tool).
        Raises `UnknownRecord` for a server the tenant does not have."""
        if server_id is None:
            return None
        server = self._store.registry(tenant).get(callers.SERVER, server_id)
        if server is None:
            raise UnknownRecord(callers.SERVER, server_id)
        return frozenset(self.expanded(tenant, server["tools"]))

    def offers(self, entry: ToolEntry, permissions: Permissions, attached: frozenset[str] | None) -> bool:
        """MCP registration (docs/mcp.md) of one tool: chat-exposed, enabled, configured, of a kind
        that can run (code needs a sandbox), one the caller may use, on the server if it is
        attached there (`attached` None: the default server)."""
        return (
            entry.offered_in_chat
            and (attached is None or entry.name in attached)
            and self.kind_of(entry).available
            and permissions.allow(entry)
        )

    def offered(self, tenant: str, permissions: Permissions, server_id: str | None = None) -> list[ToolEntry]:
        """Every tool MCP offers a caller with `permissions` on `server_id` (see `offers`)."""
        attached = self.attached(tenant, server_id)
        if permissions.none:
            return []
        return [e for e in self.entries(tenant) if self.offers(e, permissions, attached)]

    def permissions(self, tenant: str, role: str, usage_profile: str | None) -> Permissions:
        """R14: an admin may use every tool; a caller what its usage profile allows; others none."""
        if role == ADMIN:
            return EVERYTHING
        if role != CALLER or usage_profile is None:
            return NOTHING
        profile = self._store.registry(tenant).get(callers.PROFILE, usage_profile)
        if profile is None:
            return NOTHING
        return Permissions(tools=frozenset(self.expanded(tenant, profile["allowedTools"])), tags=frozenset(profile["allowedTags"]))

    def expanded(self, tenant: str, names: Iterable[str]) -> list[str]:
        """`names` with every entry each stands for (a File Search tool's name: its capabilities)."""
        return [member for name in names for member in self._kinds.members(tenant, name)]

    # -- admission ---------------------------------------------------------------------------

    def admit(self, tenant: str, name: str, context: CallContext | Callable[[], CallContext] | None = None) -> None:
        """Refuses at once (the kind's own error: `SandboxBusy` for code) a call of `name` whose
        kind's capacity is taken, before the call goes to a thread. While no kind is saturated (the
        usual case) this asks nothing of the event store. A refusal is recorded (the call log)
        when the way in says whose call it was (`context`, or what makes it: made only then)."""
        if not any(kind.saturated() for kind in self._kinds):
            return
        entry = self.entry(tenant, name)
        if entry is not None:
            try:
                self.admit_entry(tenant, entry)
            except Exception as error:
                if context is not None:
                    made = context if isinstance(context, CallContext) else context()
                    self.call_log.called(tenant, name, entry, made, None, None, error, time.time(), 0.0)
                raise

    def refused(self, tenant: str, name: str, context: CallContext, error: BaseException | str, arguments: Any = None) -> None:
        """Records a call a way in refused before it reached the toolbox (a tool its MCP server
        does not offer, a caller over its rate): `error` the refusal, or its code."""
        self.call_log.called(tenant, name, self.entry_as_read(tenant, name), context, arguments, None, error, time.time(), 0.0)

    def admit_entry(self, tenant: str, entry: ToolEntry, depth: int = 0) -> None:
        self.kind_of(entry).admit(tenant, entry, self, depth)

    # -- calls -------------------------------------------------------------------------------

    def call(self, tenant: str, name: str, arguments: Any, *, permissions: Permissions, context: CallContext) -> ExecutionResult:
        """Runs the tool `name` resolves to; refuses before anything runs when it may not. Every
        call, answered or refused, leaves one record in the call log (the one place every way in
        passes: REST, MCP, the Playground; a plan's nodes in `call_entry`)."""
        entry = self.entry(tenant, name)
        traced = spans.tool_call(tenant, name, entry, context)
        result = failure = None
        started, clock = time.time(), time.perf_counter()
        try:
            result = self._call(tenant, name, entry, arguments, permissions, context)
        except Exception as error:
            failure = error
            self.call_log.called(tenant, name, entry, context, arguments, None, error, started, time.perf_counter() - clock)
            raise
        finally:
            if traced is not None:
                spans.ended(traced, result, failure)
        self.call_log.called(tenant, name, entry, context, arguments, result, None, started, time.perf_counter() - clock)
        return result

    def _call(self, tenant: str, name: str, entry: ToolEntry | None, arguments: Any, permissions: Permissions,
              context: CallContext) -> ExecutionResult:
        if entry is None or not permissions.allow(entry):
            if permissions.everything:
                for kind in self._kinds:
                    # A kind's own reason for a tool the catalog does not list (a module not published).
                    result = kind.call_unlisted(tenant, name, arguments, context)
                    if result is not None:
                        return answered(result)
            raise ToolNotCallable(name, "no such tool" if permissions.everything or entry is None else "not allowed for this caller (R14)")
        self._check_caller(tenant, entry, arguments, permissions)
        return self._call_entry(tenant, entry, arguments, context, 0)

    def _check_caller(self, tenant: str, entry: ToolEntry, arguments: Any, permissions: Permissions) -> None:
        """What a caller's call of a listed tool it may use must pass before anything runs."""
        if not permissions.everything:
            self.kind_of(entry).check_permissions(tenant, entry, permissions, self)
        # A caller's arguments meet the schema it was shown: a tool without parameters takes none.
        # (Only the caller's: a plan's later node takes the output of the one before it as given.)
        undeclared = undeclared_violations(entry.input_schema, arguments)
        if undeclared:
            raise InvalidInput(undeclared)

    async def acall(self, tenant: str, name: str, arguments: Any, *, permissions: Permissions, context: CallContext) -> ExecutionResult:
        """`call` awaited from the event loop (issue 30: a call costs what its work costs, not a hop
        to a worker thread and back). When the catalog is up to date and its store asks no database
        before a read (`_in_memory`), `call`'s checks are made here and the call is the kind's
        `acall`, if it has one (it decides what of its work may run on the loop); a kind without
        one is called in a worker thread. Anything else (a catalog to bring up, a refusal or an
        admin's call of an unlisted name, a store with other writers) is `call` in a worker thread,
        as the routes always did. The same checks, in the same order, the same results."""
        entry = self._entry_in_memory(tenant, name)
        if entry is None or not permissions.allow(entry):
            # `call` records the call.
            return await anyio.to_thread.run_sync(lambda: self.call(tenant, name, arguments, permissions=permissions, context=context))
        traced = spans.tool_call(tenant, name, entry, context)
        result = failure = None
        started, clock = time.time(), time.perf_counter()
        try:
            self._check_caller(tenant, entry, arguments, permissions)
            if not entry.enabled:
                raise ToolNotCallable(entry.name, "the tool is disabled")
            kind = self.kind_of(entry)
            awaited = getattr(kind, "acall", None)
            if awaited is None:
                result = answered(await anyio.to_thread.run_sync(kind.call, tenant, entry, arguments, context, self, 0), entry)
            else:
                result = answered(await awaited(tenant, entry, arguments, context, self, 0), entry)
        except Exception as error:
            failure = error
            self.call_log.called(tenant, name, entry, context, arguments, None, error, started, time.perf_counter() - clock)
            raise
        finally:
            if traced is not None:
                spans.ended(traced, result, failure)
        self.call_log.called(tenant, name, entry, context, arguments, result, None, started, time.perf_counter() - clock)
        return result

    def _entry_in_memory(self, tenant: str, name: str) -> ToolEntry | None:
        """The tool a call of `name` reaches (R15) when finding it reads nothing but the store's
        position (a local read: SQLite's, in this process): the tenant's catalog is at it already,
        and the store's cache asks no database before a read. None otherwise."""
        if not self._store.owns_its_writes:
            return None
        catalog = self._catalogs.get(tenant)
        if catalog is None or catalog.position < self._store.position():
            return None
        holders = catalog.listed.get(name)
        return holders[0] if holders else None

    def call_entry(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, depth: int) -> ExecutionResult:
        """Hands the call to the tool's kind; whatever it answers passes `answered`. A call a
        plan's node makes (`depth` above 0) is a call of its own in the call log (`via` plan)."""
        if depth == 0:
            return self._call_entry(tenant, entry, arguments, context, depth)
        traced = spans.tool_call(tenant, entry.name, entry, context)
        result = failure = None
        started, clock = time.time(), time.perf_counter()
        try:
            result = self._call_entry(tenant, entry, arguments, context, depth)
        except Exception as error:
            failure = error
            self.call_log.called(tenant, entry.name, entry, context, arguments, None, error, started, time.perf_counter() - clock)
            raise
        finally:
            if traced is not None:
                spans.ended(traced, result, failure)
        self.call_log.called(tenant, entry.name, entry, context, arguments, result, None, started, time.perf_counter() - clock)
        return result

    def _call_entry(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, depth: int) -> ExecutionResult:
        if not entry.enabled:
            raise ToolNotCallable(entry.name, "the tool is disabled")
        return answered(self.kind_of(entry).call(tenant, entry, arguments, context, self, depth), entry)

    def answer(self, result: ExecutionResult) -> ExecutionResult:
        return answered(result)


def test_entry(tool: dict[str, Any] | None) -> ToolEntry | None:
    """What `answered` needs of a draft's tool section, for its Test run: its `outputSchema`."""
    schema = (tool or {}).get("outputSchema")
    return None if schema is None else ToolEntry(name="(draft)", description="", call_type="CODE", output_schema=schema)


def answered(result: ExecutionResult, entry: ToolEntry | None = None) -> ExecutionResult:
    """The one check every tool result passes before it is answered, over REST and MCP alike: an
    output nested deeper than `MAX_DEPTH` is a `result` error (no encoder has to recurse into it);
    MCP content the code returned (`ai.content`, domain.content) is read into `content`, with the
    structured value as `output`; a tool with an `outputSchema` (`entry`) gets a `result` error
    naming the path where its structured value does not match; and a lone surrogate in the output,
    the content, the logs or the error's message becomes U+FFFD."""
    if result.error is None and too_deep(result.output):
        error = ExecutionError("result", TOO_DEEP_RESULT)
        result = dataclasses.replace(result, output=None, error=error)
    if result.error is None and result.content is None and is_content(result.output):
        try:
            items, structured = content_of(result.output)
        except ContentError as refused:
            result = dataclasses.replace(result, output=None, error=ExecutionError("result", str(refused)))
        else:
            result = dataclasses.replace(result, output=structured, content=tuple(items))
    schema = entry.output_schema if entry is not None else None
    if schema is not None and result.error is None:
        if result.output is None and result.content is not None:
            problem = ("the tool declares an outputSchema, so its result needs a structured value: "
                       "ai.result(content, structured)")
        else:
            problem = output_problem(schema, result.output)
        if problem is not None:
            result = dataclasses.replace(result, output=None, content=None, error=ExecutionError("result", problem))
    message = result.error.message if result.error is not None else None
    content = list(result.content) if result.content is not None else None
    if not has_lone_surrogate([result.output, content, list(result.logs), message]):
        return result
    return dataclasses.replace(
        result,
        output=well_formed(result.output),
        content=None if content is None else tuple(well_formed(content)),
        logs=tuple(well_formed(list(result.logs))),
        error=None if result.error is None else ExecutionError(result.error.type, well_formed(result.error.message)),
    )
