"""The application's read models kept by projection of the log (issue 29, 3): which aggregates of a
kind live in each tenant (the tool index, the usage counts), and the machinery every such read model
shares, a `Follower`.

A `Follower` holds one eventsourcing `Projection` and its view, an eventsourcing `TrackingRecorder`
whose tracking record says where in the log it stopped. `catch_up` applies what was recorded since,
selecting only the projection's `topics` (`domain.topics.stored_topics`: the events recorded under
their former topics too), and then records the log's head it read to, so a projection of rare events
shows no lag. `current` catches up first and answers the projection: a read is as exact as the
store is, as of the question, in every process (a PostgreSQL store commits its events in the order of
their positions, so nothing is recorded behind the head read first), and a create then a list shows
what was created. The one projection runner (`projections/runner.py`) catches every follower up in
its thread after each pass, so a read finds nothing, or little, left to apply: a list costs what it
answers, not what the store holds. The views here are in memory: each process replays the log into
them once, at its start (logged with its progress).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import Tracking, TrackingRecorder
from eventsourcing.popo import POPOTrackingRecorder
from eventsourcing.projection import Projection

from domain.topics import stored_topics

log = logging.getLogger("toolsmith.projections")

PAGE = 1_000  # notifications a follower reads at a time
PROGRESS_SECONDS = 5.0  # a long replay says how far it got this often

V = TypeVar("V", bound=TrackingRecorder)


def topics_of(*event_classes: type) -> tuple[str, ...]:
    """Every topic the events of these classes are stored under, the former ones too."""
    return tuple(topic for event_class in event_classes for topic in stored_topics(event_class))


class Follower(Generic[V]):
    """One projection over `app`'s log, brought up to date on demand (`catch_up`, `current`) by
    whoever asks first: a reader, or the runner's thread. Its name is the projection's `name`
    (its class name when it has none)."""

    def __init__(self, app: Application, projection: Projection[V], *, page: int = PAGE) -> None:
        self.app = app
        self.projection = projection
        self.name: str = getattr(projection, "name", type(projection).__name__)
        self.page = page
        self.error: BaseException | None = None
        self._lock = threading.Lock()

    @property
    def view(self) -> V:
        return self.projection.view

    def position(self) -> int:
        """The last notification id the view has applied (or read past)."""
        return self.view.max_tracking_id(self.app.name) or 0

    def current(self) -> Projection[V]:
        """The projection, caught up to the log's head as of now."""
        self.catch_up()
        return self.projection

    def reset(self, clear: Callable[[], None]) -> None:
        """Empties the view by `clear` (which forgets its tracking record too) while no catch-up
        is in flight: the next one replays the log from its start (a rebuild)."""
        with self._lock:
            clear()

    def catch_up(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Applies every notification of the projection's topics after the view's position, up
        to the log's head as read first; answers how many were applied. A replay longer than
        `PROGRESS_SECONDS` logs how far it got, and `progress(position, head)` hears each page."""
        with self._lock:
            try:
                applied = self._catch_up(progress)
            except BaseException as error:
                self.error = error
                raise
            self.error = None
            return applied

    def _catch_up(self, progress: Callable[[int, int], None] | None) -> int:
        recorder, name = self.app.recorder, self.app.name
        head = recorder.max_notification_id() or 0
        position = self.position()
        if position >= head:
            return 0
        topics = tuple(getattr(self.projection, "topics", ()))
        prepare = getattr(self.projection, "prepare", None)
        flush = getattr(self.projection, "flush", None)
        applied, started, said = 0, time.monotonic(), time.monotonic()
        while position < head:
            page = recorder.select_notifications(position + 1, self.page, stop=head, topics=topics)
            if not page:
                break
            decoded = [(notification, self._decoded(notification)) for notification in page]
            decoded = [(notification, event) for notification, event in decoded if event is not None]
            if prepare is not None:
                prepare([event for _, event in decoded])
            for notification, domain_event in decoded:
                self.projection.process_event(domain_event, Tracking(name, notification.id))
            if flush is not None:
                flush()
            applied += len(page)
            position = page[-1].id
            if progress is not None:
                progress(position, head)
            if time.monotonic() - said >= PROGRESS_SECONDS:
                said = time.monotonic()
                log.info("projection replaying", extra={"projection": self.name, "position": position, "head": head})
            if len(page) < self.page:
                break
        if position < head:
            # Nothing of ours up to the head: the position says the view has read that far.
            self.view.insert_tracking(Tracking(name, head))
        if applied >= self.page:
            log.info("projection replayed", extra={"projection": self.name, "events": applied, "head": head,
                                                    "seconds": round(time.monotonic() - started, 3)})
        return applied


    def _decoded(self, notification: Any) -> Any:
        """The notification's event; None for one this process cannot decode (an event of a kind
        not installed here) when the projection says it skips those (`skips_undecodable`)."""
        if not getattr(self.projection, "skips_undecodable", False):
            return self.app.mapper.to_domain_event(notification)
        try:
            return self.app.mapper.to_domain_event(notification)
        except Exception:  # noqa: BLE001 - an event of a kind not installed here concerns none of its kinds
            return None


class LiveIds(POPOTrackingRecorder):
    """The view of a `LiveIndex`: by tenant and aggregate type (its group), the live aggregates'
    ids and names."""

    def __init__(self) -> None:
        super().__init__()
        self._live: dict[tuple[str, str], dict[UUID, str]] = {}
        self._names: dict[UUID, str] = {}

    def live(self, tenant: str, group: str) -> dict[str, UUID]:
        """The tenant's live aggregates of the group, name to id."""
        with self._database_lock:
            return {name: aggregate_id for aggregate_id, name in self._live.get((tenant, group), {}).items()}

    def count(self, tenant: str, group: str) -> int:
        with self._database_lock:
            return len(self._live.get((tenant, group), ()))

    def ids(self, tenant: str, group: str) -> list[UUID]:
        with self._database_lock:
            return list(self._live.get((tenant, group), ()))

    def everywhere(self, group: str) -> list[UUID]:
        """Every tenant's live aggregates of the group."""
        with self._database_lock:
            return [aggregate_id for (_, of), ids in self._live.items() if of == group for aggregate_id in ids]

    def born(self, tenant: str, group: str, aggregate_id: UUID, name: str | None, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            known = self._names.setdefault(aggregate_id, name if name is not None else str(aggregate_id))
            self._live.setdefault((tenant, group), {})[aggregate_id] = known
            self._insert_tracking(tracking)

    def died(self, tenant: str, group: str, aggregate_id: UUID, tracking: Tracking) -> None:
        with self._database_lock:
            self._assert_tracking_uniqueness(tracking)
            ids = self._live.get((tenant, group))
            if ids is not None:
                ids.pop(aggregate_id, None)
                if not ids:
                    del self._live[(tenant, group)]
            self._insert_tracking(tracking)


def group_of(aggregate: type) -> str:
    """The group a `LiveIndex` keeps an aggregate type's ids under: its topic's class path."""
    return f"{aggregate.__module__.rpartition('.')[2]}.{aggregate.__qualname__}"


class LiveIndex(Projection[LiveIds]):
    """Which aggregates of the given types live in each tenant, from their lifecycle events alone
    (the `Created`, `Recreated` and `Deleted` classes each aggregate declares, each naming its
    `tenant`): a kind's tool index, what the quotas count. `name_field` is the attribute of a
    `Created` event that names the aggregate (None: the ids are enough)."""

    def __init__(self, aggregates: Iterable[type], name_field: str | None = None, *, name: str,
                 view: LiveIds | None = None) -> None:
        super().__init__(view=view if view is not None else LiveIds())
        self.name = name
        self._name_field = name_field
        self._alive: dict[type, tuple[str, bool]] = {
            event: (group_of(aggregate), alive) for aggregate in aggregates
            for event, alive in ((aggregate.Created, True), (aggregate.Recreated, True), (aggregate.Deleted, False))
        }
        self.topics = topics_of(*self._alive)

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        found = self._alive.get(type(domain_event))
        if found is None:
            self.view.insert_tracking(tracking)
            return
        group, alive = found
        if alive:
            name = getattr(domain_event, self._name_field, None) if self._name_field else None
            self.view.born(domain_event.tenant, group, domain_event.originator_id, name, tracking)
        else:
            self.view.died(domain_event.tenant, group, domain_event.originator_id, tracking)


class Index:
    """A kind's tool index: a `LiveIndex` of one aggregate type with its follower, as its readers
    use it (every read is caught up first)."""

    def __init__(self, app: Application, aggregate: type, name_field: str, *, name: str) -> None:
        self.follower: Follower[LiveIds] = Follower(app, LiveIndex((aggregate,), name_field, name=name))
        self._group = group_of(aggregate)

    def live(self, tenant: str) -> dict[str, UUID]:
        """The tenant's live aggregates, name to id."""
        return self.follower.current().view.live(tenant, self._group)

    def count(self, tenant: str) -> int:
        return self.follower.current().view.count(tenant, self._group)

    def everywhere(self) -> list[UUID]:
        return self.follower.current().view.everywhere(self._group)


def loaded(load: Callable[[UUID], Any], ids: Mapping[str, UUID]) -> list[Any]:
    """The live aggregates of `ids`, in the order of their names, each as the store has it now."""
    found = (load(ids[name]) for name in sorted(ids))
    return [aggregate for aggregate in found if aggregate is not None and not aggregate.deleted]


def followers_of(sources: Iterable[Any]) -> list[Follower[Any]]:
    """The followers each of `sources` contributes (`projections()`, which a source may not
    have: none then), once each, in order."""
    found: list[Follower[Any]] = []
    for source in sources:
        projections = getattr(source, "projections", None)
        for follower in projections() if projections is not None else ():
            if all(follower is not known for known in found):
                found.append(follower)
    return found
