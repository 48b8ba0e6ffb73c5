"""The audit of the event store (docs/rules.md B5, docs/cli.md): verify every hash chain, export every stored
event as JSON lines, and import such an export into an empty store.

**Verify** reads the log in order, decodes each event as the application would, and checks, per
aggregate, that each event records the hash of the one before it (`domain/chain.py`), that
versions follow one another, and that every event can be decoded at all. Hashes are computed from
the stored state as it was recorded, before any upcaster runs (`domain/versions.py`): an event an
older release stored verifies the same after its class gained a version. It names the first
broken link in log order: an event whose content no longer matches the hash it was recorded with,
or whose successor recorded another hash for it. It also prints a digest of every chain's head,
for an auditor to keep: whoever rewrites the newest event of a chain together with its own hash
leaves no broken link, but changes the digest (equal digests, with no writes in between, mean no
head changed).

Snapshots are not events: they live in a table of their own, outside the log and its chains. Yet
a cold load starts from an aggregate's newest snapshot, so a snapshot changed in its table would
change the live state with every chain intact. Verify therefore also replays, from the log alone,
each aggregate that has snapshots, and checks every one of its snapshots against the state the
replay reaches at that snapshot's version (both in today's shape, after any upcaster, and both
through the transcoder, so that they compare as eventsourcing stores them). A snapshot that
differs, that cannot be decoded, or whose version the log does not reach is a finding, after the
log's. One replay per snapshotted aggregate checks all of its snapshots: the older ones (which
loads as of an older version read, and from which the next snapshot was built) cost one decoding
each.

**Export** writes one header line, one line per stored event, and one trailer line that counts
them (so a truncated file is refused on import):

    {"format":"toolsmith-audit-export","formatVersion":1,"exportedAt":"…","through":N,"scope":"store"}
    {"position":1,"originatorId":"…","originatorVersion":1,"topic":"domain.model:CodeModule.Created","state":{…}}
    {"end":true,"events":N}

`state` is the stored state itself, byte for byte, embedded as a JSON value (so a human reads
it and an import restores it exactly); a state that is not JSON on one line (compressed,
encrypted, corrupted) is under `stateBase64` instead. `state` is always the last key.

**Import** restores an export into an empty store, every stored event byte-identical and in the
original order; log positions are renumbered from 1 if the original had gaps. The store's identity
(`projections/store_identity.py`) is not an event and never travels: the import gives the
restored store a new one. Nor do snapshots: the restored store replays its aggregates until it
takes snapshots of its own, and an import is refused where an earlier store's snapshots remain.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gc
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, BinaryIO, Protocol
from uuid import UUID

import orjson
from eventsourcing.application import Application
from eventsourcing.domain import CanSnapshotAggregate
from eventsourcing.persistence import StoredEvent, find_id_convertor
from eventsourcing.utils import resolve_topic

from domain.callers import TOKENS_ID, registry_id
from domain.tenants import TENANTS_ID
from domain.chain import GENESIS, OWN_HASH, state_hash
from domain.model import CodeModule, graph_aggregate_id, module_aggregate_id
from domain.topics import stored_topics
from domain.secrets import Secret, secret_aggregate_id
from domain.users import users_id
from projections.store_identity import renew_store_identity

FORMAT = "toolsmith-audit-export"
FORMAT_VERSION = 1
# Rows per read: large enough that a read's round trip is a small part of its cost.
BATCH = 5_000
INSERT_BATCH = 1_000

Progress = Callable[[int, int], None]  # (done, total)


# -- reading the log -------------------------------------------------------------------------------

def read_log(app: Application, through: int, progress: Progress | None) -> Iterator[list[Any]]:
    """The stored events up to position `through`, in log order, a batch at a time."""
    select = app.recorder.select_notifications
    start = 1
    while start <= through:
        batch = select(start, BATCH, stop=through)
        if not batch:
            return
        yield batch
        start = batch[-1].id + 1
        if progress is not None:
            progress(batch[-1].id, through)


def head_position(app: Application) -> int:
    return app.recorder.max_notification_id() or 0


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Pauses Python's cycle collector, for a process that does nothing but an audit (the command
    line; not the API). A scan makes millions of short-lived objects and no reference cycles, so
    reference counting frees them all; but each batch lives through enough collections that the
    collector traverses it again and again, a third to a half of a scan's time."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- verify ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BrokenLink:
    position: int  # 0 for a snapshot, which is not in the log
    aggregate_id: UUID
    version: int
    reason: str
    # What the aggregate is, for a human ("module default/dates"); filled in once the scan knows.
    aggregate: str = ""
    # A snapshot that does not match its events: `version` is the snapshot's, `reason` a predicate.
    snapshot: bool = False

    def __str__(self) -> str:
        if self.snapshot:
            return f"snapshot at version {self.version} of {self.aggregate} {self.reason}"
        return f"{self.aggregate}, version {self.version}: {self.reason} (log position {self.position})"


@dataclass
class VerifyReport:
    events: int = 0
    aggregates: int = 0
    through: int = 0
    heads_digest: str = ""
    # The snapshots checked against a replay of their events (`_check_snapshots`).
    snapshots: int = 0
    # The log's broken links in log order, then the snapshots that do not match their events.
    broken: list[BrokenLink] = field(default_factory=list)

    @property
    def intact(self) -> bool:
        return not self.broken

    @property
    def first_broken(self) -> BrokenLink | None:
        return self.broken[0] if self.broken else None


class _Chain:
    __slots__ = ("version", "hash", "label")

    def __init__(self) -> None:
        self.version = 0
        self.hash: str | None = GENESIS  # None: the last event could not be decoded
        self.label: str | None = None


def verify(app: Application, progress: Progress | None = None) -> VerifyReport:
    """Recomputes every aggregate's hash chain, in log order, up to the position the store had
    when it started; then checks every snapshot against a replay of its aggregate's events."""
    report = VerifyReport(through=head_position(app))
    chains: dict[UUID, _Chain] = {}
    tenants: set[str] = set()
    mapper = app.mapper
    broken = report.broken
    for batch in read_log(app, report.through, progress):
        report.events += len(batch)
        for stored in batch:
            chain = chains.get(stored.originator_id)
            if chain is None:
                chain = chains[stored.originator_id] = _Chain()
            version = stored.originator_version
            try:
                event_class, state = _as_stored(mapper, stored)
                digest = state_hash(event_class, state)
            except Exception as error:  # noqa: BLE001 - a corrupted event is a finding, never a crash
                broken.append(BrokenLink(stored.id, stored.originator_id, version, f"cannot be decoded ({_short(error)})"))
                chain.version, chain.hash = version, None
                continue
            if version != chain.version + 1:
                missing = f"version {chain.version + 1}" if version == chain.version + 2 else f"versions {chain.version + 1} to {version - 1}"
                reason = (f"{missing} missing: it follows version {chain.version}" if version > chain.version + 1
                          else f"recorded after version {chain.version}, out of order")
                broken.append(BrokenLink(stored.id, stored.originator_id, version, reason))
            else:
                own = state.get(OWN_HASH)
                if own is not None and own != digest:
                    # The event's content no longer matches the hash it was recorded with.
                    broken.append(BrokenLink(stored.id, stored.originator_id, version, "its content no longer matches its own hash"))
                recorded = state.get("previous_hash")
                if recorded is None:
                    broken.append(BrokenLink(stored.id, stored.originator_id, version, "records no previous hash"))
                elif chain.hash is not None and recorded != chain.hash and not _already_named(broken, stored.originator_id, chain.version):
                    if chain.version == 0:
                        broken.append(BrokenLink(stored.id, stored.originator_id, version,
                                                 "records a previous hash, but no event comes before it"))
                    else:
                        # Event k+1 holds the hash of event k as it was written: it is event k that changed.
                        broken.append(BrokenLink(stored.id, stored.originator_id, chain.version,
                                                 f"its content no longer matches: version {version} recorded another hash"))
            chain.version, chain.hash = version, digest
            if chain.label is None:
                chain.label = _label(event_class, state, tenants)
    report.aggregates = len(chains)
    names = _names(chains, tenants)
    report.broken[:] = [_named(link, names) for link in broken]
    report.broken += _check_snapshots(app, names, report)
    lines = sorted(f"{aggregate_id}:{chain.hash if chain.hash is not None else 'undecodable'}"
                   for aggregate_id, chain in chains.items())
    report.heads_digest = hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()
    return report


def _as_stored(mapper: Any, stored: StoredEvent) -> tuple[type, dict[str, Any]]:
    """An event's class and its attributes as they were stored (what its hash covers): what the
    application's mapper decodes, before its upcasters run. An event that the application reads
    through upcasters is also read so, for an upcaster that fails on it is an event that cannot be
    decoded."""
    event_class = resolve_topic(stored.topic)
    data = stored.state
    if mapper.cipher:
        data = mapper.cipher.decrypt(data)
    if mapper.compressor:
        data = mapper.compressor.decompress(data)
    state = mapper.transcoder.decode(data)
    if type(state) is not dict:
        raise TypeError(f"the state is a {type(state).__name__}, not an object")
    state["originator_id"] = find_id_convertor(event_class, type(stored.originator_id))(stored.originator_id)
    state["originator_version"] = stored.originator_version
    stored_version = state.pop("class_version", 1)
    if stored_version < getattr(event_class, "class_version", 1):
        mapper.to_domain_event(stored)
    return event_class, state


def _already_named(broken: list[BrokenLink], aggregate_id: UUID, version: int) -> bool:
    """Whether the event at `version` was found changed already (by its own hash): the next
    event's link to it then says nothing new."""
    return bool(broken) and broken[-1].aggregate_id == aggregate_id and broken[-1].version == version


def _label(event_class: type, state: dict[str, Any], tenants: set[str]) -> str | None:
    """What a human calls an event's aggregate, when the event says so credibly: the ids derive
    from the tenant and the module's name, so an altered event cannot lend its aggregate another
    name (None then, and a later event of the aggregate names it)."""
    aggregate_id = state["originator_id"]
    tenant = state.get("tenant")
    if not isinstance(tenant, str):
        return None  # a graph's or a registry's later events, the token registry: `_names` knows their ids
    if issubclass(event_class, CodeModule.Event):
        module_id = state.get("module_id")
        if isinstance(module_id, str) and module_aggregate_id(tenant, module_id) == aggregate_id:
            tenants.add(tenant)
            return f"module {tenant}/{module_id}"
    elif issubclass(event_class, Secret.Event):
        secret_id = state.get("secret_id")
        if isinstance(secret_id, str) and secret_aggregate_id(tenant, secret_id) == aggregate_id:
            return f"secret {tenant}/{secret_id}"
    elif aggregate_id == graph_aggregate_id(tenant):
        tenants.add(tenant)
        return f"import graph of tenant {tenant}"
    elif aggregate_id == registry_id(tenant):
        tenants.add(tenant)
        return f"caller registry of tenant {tenant}"
    return None


def _names(chains: dict[UUID, _Chain], tenants: set[str]) -> dict[UUID, str]:
    known = {TOKENS_ID: "token registry", TENANTS_ID: "tenant registry"}
    for tenant in tenants:
        known[graph_aggregate_id(tenant)] = f"import graph of tenant {tenant}"
        known[registry_id(tenant)] = f"caller registry of tenant {tenant}"
    return {aggregate_id: chain.label or known.get(aggregate_id, f"aggregate {aggregate_id}")
            for aggregate_id, chain in chains.items()}


def _named(link: BrokenLink, names: dict[UUID, str]) -> BrokenLink:
    return dataclasses.replace(link, aggregate=names[link.aggregate_id])


def _short(error: Exception) -> str:
    cause = error.__cause__ or error
    return f"{type(cause).__name__}: {str(cause)[:120]}"


# -- verify: snapshots -----------------------------------------------------------------------------

# Snapshot rows read at a time: a tenant's graph of 10,000 events holds 50, each the whole graph.
SNAPSHOT_BATCH = 10


def _check_snapshots(app: Application, names: dict[UUID, str], report: VerifyReport) -> list[BrokenLink]:
    """Every snapshot of every aggregate that has one (an aggregate without a single event too: a
    load would take its snapshot for the aggregate), against a replay of the log alone. An
    application opened with snapshots off reads none, and checks none."""
    if app.snapshots is None:
        return []
    found: list[BrokenLink] = []
    for aggregate_id in _snapshotted_ids(app.snapshots.recorder):
        found += _check_aggregate_snapshots(app, aggregate_id, names.get(aggregate_id), report)
    found.sort(key=lambda link: (link.aggregate, link.version))
    return found


def _check_aggregate_snapshots(app: Application, aggregate_id: UUID, label: str | None,
                               report: VerifyReport) -> list[BrokenLink]:
    """One replay of the aggregate's events, stopping at each snapshot's version to compare."""
    assert app.snapshots is not None
    recorder = app.snapshots.recorder
    # The newest snapshot first, then the log: a snapshot is taken after its events are recorded,
    # so every snapshot up to this one has its events in the log, even while the service writes.
    newest = recorder.select_events(aggregate_id, desc=True, limit=1)
    if not newest:
        return []
    top = newest[0].originator_version
    in_log = app.recorder.select_events(aggregate_id, desc=True, limit=1)
    log_top = in_log[0].originator_version if in_log else 0
    events = iter(app.events.get(aggregate_id, lte=min(top, log_top)))
    replayed: Any = None
    cannot_replay: str | None = None
    found: list[tuple[int, str]] = []
    after = 0
    while rows := recorder.select_events(aggregate_id, gt=after, lte=top, limit=SNAPSHOT_BATCH):
        for row in rows:
            after = version = row.originator_version
            report.snapshots += 1
            try:
                restored = _restored(app, row)
            except Exception as error:  # noqa: BLE001 - a corrupted snapshot is a finding, never a crash
                restored, undecodable = None, _short(error)
            else:
                label = label or _snapshot_label(restored)
            if version > log_top:
                found.append((version, f"is beyond its events: the log's newest is version {log_top}" if log_top
                              else "is beyond its events: the log holds none"))
                continue
            if restored is None:
                found.append((version, f"cannot be decoded ({undecodable})"))
                continue
            if cannot_replay is None:
                try:
                    while replayed is None or replayed.version < version:
                        replayed = next(events).mutate(replayed)
                except StopIteration:
                    cannot_replay = f"the log ends at version {replayed.version if replayed is not None else 0}"
                except Exception as error:  # noqa: BLE001 - an event that does not replay is a finding
                    cannot_replay = _short(error)
            if cannot_replay is not None:
                found.append((version, f"cannot be checked: its events do not replay ({cannot_replay})"))
            elif replayed.version != version or _comparable(app, replayed) != _comparable(app, restored):
                found.append((version, "does not match its events"))
    name = label or {TOKENS_ID: "token registry", TENANTS_ID: "tenant registry"}.get(aggregate_id, f"aggregate {aggregate_id}")
    return [BrokenLink(0, aggregate_id, version, reason, name, snapshot=True) for version, reason in found]


def _restored(app: Application, stored: StoredEvent) -> Any:
    """The aggregate a load builds from a stored snapshot: decoded by the application's mapper,
    its state upcast to today's shape by the aggregate class (`domain/versions.py`)."""
    snapshot = app.mapper.to_domain_event(stored)
    if not isinstance(snapshot, CanSnapshotAggregate):
        raise TypeError(f"a {type(snapshot).__qualname__}, not a snapshot")
    return snapshot.mutate(None)


def _comparable(app: Application, aggregate: Any) -> tuple[str, int, Any]:
    """An aggregate as a snapshot of it stores it (its class, version and state), the state through
    the transcoder and back: what two aggregates that would store alike compare equal in."""
    taken = getattr(type(aggregate), "Snapshot", type(app).snapshot_class).take(aggregate)
    transcoder = app.mapper.transcoder
    return taken.topic, taken.originator_version, transcoder.decode(transcoder.encode(taken.state))


def _snapshot_label(aggregate: Any) -> str | None:
    """What a human calls a snapshotted aggregate that has no event in the log (a snapshot with
    nothing behind it), when its state says so credibly (its id derives from its tenant)."""
    tenant = getattr(aggregate, "tenant", None)
    if isinstance(tenant, str) and aggregate.id == graph_aggregate_id(tenant):
        return f"import graph of tenant {tenant}"
    if isinstance(tenant, str) and aggregate.id == registry_id(tenant):
        return f"caller registry of tenant {tenant}"
    return None


def _snapshotted_ids(recorder: Any) -> list[UUID]:
    """The ids of every aggregate the snapshots table holds a row of. eventsourcing's recorders
    select by aggregate only, so this asks the table itself, per engine."""
    datastore = getattr(recorder, "datastore", None)
    if datastore is None:  # eventsourcing's POPO store, in memory
        return [UUID(key) for key, versions in recorder._stored_events_index.items() if versions]
    table = recorder.events_table_name
    if type(datastore).__module__.startswith("eventsourcing.postgres"):
        from psycopg.sql import SQL, Identifier

        with datastore.transaction(commit=False) as cursor:
            cursor.execute(SQL("SELECT DISTINCT originator_id FROM {}.{}").format(Identifier(datastore.schema), Identifier(table)))
            return [row["originator_id"] for row in cursor.fetchall()]
    with datastore.transaction(commit=False) as cursor:
        cursor.execute(f"SELECT DISTINCT originator_id FROM {table}")
        ids = [row[0] for row in cursor.fetchall()]
    found = []
    for text in ids:
        with contextlib.suppress(ValueError):
            # A row whose id is no UUID's is one that no load selects: it changes nothing.
            found.append(UUID(text))
    return found


# -- export ----------------------------------------------------------------------------------------

class EventOwner(Protocol):
    """Says which tenant an event belongs to: each kind of tool for its own aggregates
    (`ToolKind.tenant_of`)."""

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None: ...


class _TenantScope:
    """Which events belong to one tenant: those its kinds of tool say are its (its modules, and any
    other kind's aggregates), and the aggregates of its own that are no tool: its import graph, its
    caller registry and its secrets (whose events hold fingerprints, never values). The token
    registry is store-wide, so a tenant's export leaves it out."""

    def __init__(self, tenant: str, recorder: Any, kinds: Iterable[EventOwner]) -> None:
        self.tenant = tenant
        self.recorder = recorder
        self.kinds = tuple(kinds)
        self.own = {graph_aggregate_id(tenant), registry_id(tenant), users_id(tenant)}  # its people's: no credential
        self.decided: dict[UUID, bool] = {}

    def holds(self, stored: Any) -> bool:
        aggregate_id = stored.originator_id
        if aggregate_id in self.own:
            return True
        if aggregate_id in (TOKENS_ID, TENANTS_ID):  # the store's, no tenant's
            return False
        decided = self.decided.get(aggregate_id)
        if decided is not None:
            return decided
        owner = self.owner(stored)
        if owner is None:
            # An altered or undecodable event: its aggregate's other events say whose it is.
            owner = next(filter(None, map(self.owner, self.recorder.select_events(aggregate_id))), None)
        self.decided[aggregate_id] = owner == self.tenant
        return owner == self.tenant

    def owner(self, stored: Any) -> str | None:
        """The tenant an event says it belongs to, if its aggregate's id confirms it (the ids derive
        from the tenant, so an altered event cannot move its aggregate to another tenant)."""
        try:
            state = orjson.loads(stored.state)
        except orjson.JSONDecodeError:
            return None
        tenant = state.get("tenant") if type(state) is dict else None
        if not isinstance(tenant, str):
            return None
        if stored.originator_id in (graph_aggregate_id(tenant), registry_id(tenant), users_id(tenant)):
            return tenant
        secret_id = state.get("secret_id")
        if isinstance(secret_id, str) and stored.originator_id == secret_aggregate_id(tenant, secret_id):
            return tenant
        for kind in self.kinds:
            owner = kind.tenant_of(state, stored.originator_id)
            if owner is not None:
                return owner
        return None


def export_chunks(app: Application, *, tenant: str | None = None, kinds: Iterable[EventOwner] | None = None,
                  progress: Progress | None = None, calls: Iterable[dict[str, Any]] | None = None) -> Iterator[bytes]:
    """The export, as chunks of whole lines (one chunk per read batch): for a file, or a stream.
    A tenant's export needs the service's `kinds` of tool: each says which of its events are whose.
    `calls`: the call log's records (docs/calls.md), by tenant and place in its chain, one
    `{"call": …}` line each after the events (a tenant's export, only that tenant's); the end
    line then counts them too."""
    if tenant is not None and kinds is None:
        raise ValueError("a tenant's export needs the kinds of tool, which say whose events are whose")
    through = head_position(app)
    scope = _TenantScope(tenant, app.recorder, kinds or ()) if tenant is not None else None
    yield orjson.dumps({
        "format": FORMAT,
        "formatVersion": FORMAT_VERSION,
        "exportedAt": datetime.now(timezone.utc).isoformat(),
        "through": through,
        "scope": "store" if tenant is None else {"tenant": tenant},
    }) + b"\n"
    events = 0
    line = _Lines()
    for batch in read_log(app, through, progress):
        if scope is not None:
            batch = [stored for stored in batch if scope.holds(stored)]
        events += len(batch)
        yield b"".join([line(stored) for stored in batch])
    if calls is None:
        yield orjson.dumps({"end": True, "events": events}) + b"\n"
        return
    counted = 0
    chunk: list[bytes] = []
    for record in calls:
        if tenant is not None and record.get("tenant") != tenant:
            continue
        chunk.append(orjson.dumps({"call": record}, option=orjson.OPT_SORT_KEYS) + b"\n")
        counted += 1
        if len(chunk) >= 1000:
            yield b"".join(chunk)
            chunk = []
    # No call record, no count: the end line of a store without calls is what it always was.
    end = {"end": True, "events": events, **({"calls": counted} if counted else {})}
    yield b"".join(chunk) + orjson.dumps(end) + b"\n"


def export(app: Application, out: BinaryIO, *, tenant: str | None = None, kinds: Iterable[EventOwner] | None = None,
           progress: Progress | None = None, calls: Iterable[dict[str, Any]] | None = None) -> int:
    """Writes the export to `out`; answers how many events it holds."""
    chunk = b""
    for chunk in export_chunks(app, tenant=tenant, kinds=kinds, progress=progress, calls=calls):
        out.write(chunk)
    return orjson.loads(chunk.rsplit(b"\n", 2)[-2])["events"]  # the last line is the end line, which counts them


def _prefix(position: int, originator_id: str, version: int, topic: str) -> bytes:
    return b'{"position":%d,"originatorId":%b,"originatorVersion":%d,"topic":%b,' % (
        position, orjson.dumps(originator_id), version, orjson.dumps(topic))


class _Lines:
    """Writes event lines; the few topics are encoded once, not once per event."""

    def __init__(self) -> None:
        self.topics: dict[str, bytes] = {}

    def __call__(self, stored: Any) -> bytes:
        topic = self.topics.get(stored.topic)
        if topic is None:
            topic = self.topics[stored.topic] = orjson.dumps(stored.topic)
        originator_id = stored.originator_id
        # A UUID's text needs no escaping; any other id goes through the encoder.
        quoted_id = b'"%s"' % str(originator_id).encode() if type(originator_id) is UUID else orjson.dumps(str(originator_id))
        prefix = b'{"position":%d,"originatorId":%b,"originatorVersion":%d,"topic":%b,' % (
            stored.id, quoted_id, stored.originator_version, topic)
        state = stored.state
        if b"\n" not in state and b"\r" not in state:
            try:
                orjson.loads(state)
            except orjson.JSONDecodeError:
                pass
            else:
                return prefix + b'"state":' + state + b"}\n"
        return prefix + b'"stateBase64":"' + base64.b64encode(state) + b'"}\n'


# -- import ----------------------------------------------------------------------------------------

class ImportRefused(Exception):
    """The store is not empty, or the file is not an export; `line` is 1-based, or None."""

    def __init__(self, reason: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {reason}" if line is not None else reason)
        self.line = line


_EVENT_KEYS = ({"position", "originatorId", "originatorVersion", "topic", "state"},
               {"position", "originatorId", "originatorVersion", "topic", "stateBase64"})


def read_export(lines: Iterable[bytes], calls: list[dict[str, Any]] | None = None) -> list[StoredEvent]:
    """Every stored event of an export, checked line by line (nothing is written here); its call
    records (`{"call": …}` lines) are added to `calls`."""
    events: list[StoredEvent] = []
    records: list[dict[str, Any]] = [] if calls is None else calls
    versions: dict[UUID, int] = {}
    position = 0
    header = end = None
    number = 0
    for number, line in enumerate(lines, start=1):
        if end is not None:
            raise ImportRefused("a line after the end line", number)
        line = line.rstrip(b"\n").rstrip(b"\r")
        try:
            parsed = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise ImportRefused(f"not JSON ({error})", number) from None
        if type(parsed) is not dict:
            raise ImportRefused("not a JSON object", number)
        if header is None:
            if parsed.get("format") != FORMAT or parsed.get("formatVersion") != FORMAT_VERSION:
                raise ImportRefused(f"not a {FORMAT} (format version {FORMAT_VERSION}) header", number)
            header = parsed
            continue
        if "end" in parsed:
            if parsed.get("events") != len(events):
                raise ImportRefused(f"the end line counts {parsed.get('events')} events, the file holds {len(events)}", number)
            if parsed.get("calls", 0) != len(records):
                raise ImportRefused(f"the end line counts {parsed.get('calls')} call records, the file holds {len(records)}", number)
            end = parsed
            continue
        if set(parsed) == {"call"}:
            record = parsed["call"]
            if type(record) is not dict or not all(isinstance(record.get(k), str) for k in ("id", "tenant", "hash")) \
                    or type(record.get("n")) is not int:
                raise ImportRefused("a call line holds one call record: its id, tenant, n and hash at least", number)
            records.append(record)
            continue
        stored = _stored_event(line, parsed, number)
        if parsed["position"] <= position:
            raise ImportRefused(f"position {parsed['position']} after position {position}: lines out of order", number)
        position = parsed["position"]
        before = versions.get(stored.originator_id, 0)
        if stored.originator_version <= before:
            raise ImportRefused(f"version {stored.originator_version} of aggregate {stored.originator_id} "
                                f"after its version {before}", number)
        versions[stored.originator_id] = stored.originator_version
        events.append(stored)
    if header is None:
        raise ImportRefused("the file is empty")
    if end is None:
        raise ImportRefused("no end line: the file is cut short", number + 1)
    return events


def _stored_event(line: bytes, parsed: dict[str, Any], number: int) -> StoredEvent:
    if set(parsed) not in _EVENT_KEYS:
        raise ImportRefused("an event line has exactly position, originatorId, originatorVersion, topic "
                            "and state (or stateBase64)", number)
    position, originator_id, version, topic = (parsed[k] for k in ("position", "originatorId", "originatorVersion", "topic"))
    if type(position) is not int or type(version) is not int or version < 1 or position < 1:
        raise ImportRefused("position and originatorVersion are whole numbers from 1", number)
    if not isinstance(topic, str) or ":" not in topic:
        raise ImportRefused("topic is a 'module:Class' string", number)
    try:
        aggregate_id = UUID(originator_id)
    except (TypeError, ValueError, AttributeError):
        raise ImportRefused(f"originatorId {originator_id!r} is not a UUID", number) from None
    if "stateBase64" in parsed:
        try:
            state = base64.b64decode(parsed["stateBase64"], validate=True)
        except (TypeError, ValueError):
            raise ImportRefused("stateBase64 is not base64", number) from None
    else:
        # The state's own bytes, not a re-encoding: they sit between the fixed prefix and the last "}".
        prefix = _prefix(position, originator_id, version, topic) + b'"state":'
        if not line.startswith(prefix) or not line.endswith(b"}"):
            raise ImportRefused("not in the export's layout (keys in order, no spaces, state last)", number)
        state = line[len(prefix):-1]
        try:
            orjson.loads(state)
        except orjson.JSONDecodeError:
            raise ImportRefused("state is not one JSON value", number) from None
    return StoredEvent(originator_id=aggregate_id, originator_version=version, topic=topic, state=state)


def import_events(app: Application, lines: Iterable[bytes], *, progress: Progress | None = None,
                  call_store: Any = None) -> int:
    """Restores an export into an empty store; answers how many events it wrote. Its call records
    go to `call_store` (the call log's, empty too: `infrastructure/call_log_sqlite.py`), their
    places and hashes kept, so that the log verifies with the same digest.

    The whole file is read and checked first (the parsed events are held in memory, about the
    file's size), so that a malformed line refuses the import before anything is written.
    """
    held = head_position(app)
    if held:
        raise ImportRefused(f"the event store is not empty (it holds events up to position {held}); "
                            "import only into an empty store")
    if call_store is not None and call_store.count():
        raise ImportRefused("the call log is not empty: import only into an empty data dir")
    calls: list[dict[str, Any]] = []
    events = read_export(lines, calls)
    if calls and call_store is None:
        raise ImportRefused("the export holds call records, and there is no call log to restore them to")
    stale = _snapshotted(app, events)
    if stale is not None:
        # A snapshot of an earlier store would stand in for the first events of the imported log.
        raise ImportRefused(f"the event store holds no events but snapshots (of aggregate {stale}, at least): "
                            "import only into an empty store, its snapshots table empty too")
    for start in range(0, len(events), INSERT_BATCH):
        app.recorder.insert_events(events[start:start + INSERT_BATCH])
        if progress is not None:
            progress(min(start + INSERT_BATCH, len(events)), len(events))
    # A restored store is a new store: a read model built from the original (or from this store
    # before the import) must not be taken for its own (issue 12, 10).
    renew_store_identity(app)
    if calls:
        call_store.restore(calls)
    return len(events)


def _snapshotted(app: Application, events: list[StoredEvent]) -> UUID | None:
    """An aggregate of the export that the store already holds a snapshot of, if any."""
    if app.snapshots is None:
        return None
    # The store's own (`Store.snapshot_intervals`: the kinds' snapshotted aggregates too), else its class's.
    intervals = getattr(app, "snapshot_intervals", type(app).snapshotting_intervals)
    kinds = {topic for cls in intervals for topic in stored_topics(cls)}
    # An aggregate's event topics are its class's topic and the event's name: `module:Class.Event`.
    ids = {e.originator_id for e in events if e.topic.rpartition(".")[0] in kinds}
    return next((i for i in ids if app.snapshots.recorder.select_events(i, limit=1)), None)

