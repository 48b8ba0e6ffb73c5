"""Runs a projection over the application's notification log, resuming from the view's tracking.

eventsourcing's own `ProjectionRunner` needs a recorder that supports subscriptions, which its
SQLite recorder does not; this runner pulls instead. It wakes when the API says it wrote (`poke`),
when the store says so (on PostgreSQL, its LISTEN/NOTIFY: `listen`), and otherwise polls, so that
writes of other processes arrive even when a notification is lost. Each batch of notifications is
applied in three steps: the view loads the documents the batch changes (`prepare`), the events are
applied, and the view makes the batch durable, its tracking position last (`flush`). A batch that
fails is dropped and applied again from the view's stored position, so an event counts once.

`wait_async` gives the API its read-your-writes: it returns once the view has applied the given
notification id, holding no thread meanwhile (issue 15, 7: sixty writers waiting had taken the
API's threads from its reads). When the runner is another process (`toolsmith projections run`),
the runner announces each position it applies (`announce`), and the API uses `TrackingWatcher`
instead: one thread per process hears the positions (or, without notifications, reads the view's
stored position while someone waits) and wakes every request waiting for one.

A runner of its own process proves it is alive by a heartbeat (`heartbeat`, every
`heartbeat_seconds`, written to the read model where every API process can read it), from a
thread of its own, so that a long catch-up beats too. `TrackingWatcher` reads it every quarter
interval and counts the runner dead once its counter has not changed for two intervals by the
API's own clock (`Pulse`): a dead runner shows while nothing is written, and no clock skew between
the machines matters (issue 28, 11). A write waiting for a runner known dead stops waiting.

The runner runs every other projection too (issue 29, 3: the tool indexes, the changesets, the
usage counts, each with its own tracking record): its `followers` (`application/projected.py`),
each caught up after every pass over the module summaries, and at the start (the replay, with its
progress logged). A follower also catches itself up when it is read, so a list is exact in any
process; the runner's passes leave it little or nothing to read then. A runner of another process
(`TrackingWatcher`'s side) keeps the API process's followers up to date in its own thread.

`health` is what `/healthz` says of the read side: the positions, the lag in events and in
seconds (the age of the oldest event not applied yet), whether the runner runs (its thread, or
its heartbeat), each projection's position and lag, and `degraded` with the reasons.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol
from concurrent.futures import Future, ThreadPoolExecutor

import anyio
from eventsourcing.application import Application
from eventsourcing.persistence import Tracking
from opentelemetry import trace

from projections.interface import ModuleReadModel, ReadModelUnavailable
from projections.modules import ModuleSummaries
from projections.store_identity import store_identity

log = logging.getLogger("toolsmith.projections")

BATCH = 500


class Following(Protocol):
    """A projection besides the module summaries, with its own tracking record
    (`application.projected.Follower`)."""

    name: str
    error: BaseException | None

    def position(self) -> int: ...

    def catch_up(self, progress: Callable[[int, int], None] | None = None) -> int: ...


def catch_up_followers(followers: Sequence[Following]) -> None:
    """Catches each follower up; one that fails is logged (its `error` says so in the health) and
    the others still run: it is tried again at the next pass, or by its next reader."""
    for follower in followers:
        try:
            follower.catch_up()
        except Exception as error:  # noqa: BLE001 - reported by the health and the log, retried
            log.error("projection failed; retrying", extra={"projection": follower.name, "error": str(error)})


def replay_followers(followers: Sequence[Following]) -> None:
    """The start's catch-up of each follower, its progress logged (a replay of a large store takes
    a while: the log says how far it got)."""
    for follower in followers:
        def said(position: int, head: int, name: str = follower.name) -> None:
            log.debug("projection replaying", extra={"projection": name, "position": position, "head": head})
        started = time.monotonic()
        try:
            applied = follower.catch_up(said)
        except Exception as error:  # noqa: BLE001 - reported by the health and the log, retried
            log.error("projection failed; retrying", extra={"projection": follower.name, "error": str(error)})
        else:
            log.info("projection ready", extra={"projection": follower.name, "events": applied,
                                                "position": follower.position(),
                                                "seconds": round(time.monotonic() - started, 3)})


class Listening(Protocol):
    """A listener to the store's notifications, running in a thread of its own (PostgreSQL's)."""

    connected: bool

    def stop(self) -> None: ...


class AppliedPosition:
    """The position the view has applied, as this process knows it, and the requests waiting for
    it to reach theirs: an async request waits on a future (no thread), a blocking caller on an
    event. Whoever learns a new position calls `advance`; `give_up` answers every waiter False."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.position = 0
        self._waiting: list[tuple[int, Callable[[bool], None]]] = []

    def advance(self, position: int) -> None:
        with self._lock:
            self.position = position
            ready = [waiter for waiter in self._waiting if waiter[0] <= position]
            self._waiting = [waiter for waiter in self._waiting if waiter[0] > position]
        for _, wake in ready:
            wake(True)

    def give_up(self) -> None:
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for _, wake in waiting:
            wake(False)

    def waiting(self) -> bool:
        return bool(self._waiting)

    async def wait_async(self, position: int, timeout: float) -> bool:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bool] = loop.create_future()

        def wake(result: bool) -> None:
            try:
                loop.call_soon_threadsafe(_settle, answer, result)
            except RuntimeError:  # the loop closed: nobody waits any more
                pass

        waiter = (position, wake)
        if not self._add(waiter):
            return True
        try:
            return await asyncio.wait_for(answer, timeout)
        except TimeoutError:
            return False
        finally:
            self._remove(waiter)

    def wait(self, position: int, timeout: float) -> bool:
        woken = threading.Event()
        result: list[bool] = []

        def wake(answer: bool) -> None:
            result.append(answer)
            woken.set()

        waiter = (position, wake)
        if not self._add(waiter):
            return True
        try:
            return woken.wait(timeout) and result[0]
        finally:
            self._remove(waiter)

    def _add(self, waiter: tuple[int, Callable[[bool], None]]) -> bool:
        """Adds the waiter unless its position is applied already (then False)."""
        with self._lock:
            if self.position >= waiter[0]:
                return False
            self._waiting.append(waiter)
            return True

    def _remove(self, waiter: tuple[int, Callable[[bool], None]]) -> None:
        with self._lock:
            if waiter in self._waiting:
                self._waiting.remove(waiter)


def _settle(answer: asyncio.Future[bool], result: bool) -> None:
    if not answer.done():
        answer.set_result(result)


_TRACER = trace.get_tracer("toolsmith")


def runner_id() -> str:
    """Who beats: the host, the process, and a random part (a pid is reused after a restart)."""
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class Pulse:
    """A heartbeat as a reader sees it, on the reader's own clock: `observe(mark)` is given what
    the heartbeat reads now (any value that changes at each beat, or None when there is none),
    and the beater counts as silent once the mark has not changed for two intervals. The first
    observation starts the count (a reader started after the beater died knows so two intervals
    later). No heartbeat at all (None) is no beater to judge: a runner starting for the first time
    has not beaten yet, and what the lag says is the answer then, as for a runner that beats none."""

    BEATS_MISSED = 2

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._mark: object = None
        self._changed_at: float | None = None

    def observe(self, mark: object) -> None:
        with self._lock:
            if self._changed_at is None or mark != self._mark:
                self._mark, self._changed_at = mark, self._clock()

    def silent_for(self) -> float:
        """Seconds since the mark last changed (0 before the first observation)."""
        with self._lock:
            return 0.0 if self._changed_at is None else max(self._clock() - self._changed_at, 0.0)

    def alive(self) -> bool:
        with self._lock:
            if self._mark is None:
                return True
        return self.silent_for() <= self.BEATS_MISSED * self.interval


class PullingProjectionRunner:
    def __init__(
        self,
        app: Application,
        projection: ModuleSummaries,
        *,
        poll_seconds: float = 0.5,
        batch: int = BATCH,
        rebuild: Callable[[], object] | None = None,
        listen: Callable[[Callable[[], None]], Listening] | None = None,
        announce: Callable[[int], None] | None = None,
        heartbeat: Callable[[int], None] | None = None,
        heartbeat_seconds: float = 2.0,
        followers: Sequence[Following] = (),
    ) -> None:
        """`followers` are the other projections it runs (see the module's docstring). `rebuild` replaces the view's storage with one built from `app`'s store (for a view
        found holding another event store's documents). `listen(wake)` starts listening to the
        store's writes (PostgreSQL); `announce(position)` tells the API processes of each new
        position applied, and `heartbeat(beats)` writes the `beats`th heartbeat, every
        `heartbeat_seconds` (both for a runner in a process of its own)."""
        self.app = app
        self.projection = projection
        self.followers: tuple[Following, ...] = tuple(followers)
        self.view: ModuleReadModel = projection.view
        self.poll_seconds = poll_seconds
        self.batch = batch
        self._applied = AppliedPosition()
        self._announced: int | None = None
        self._listen = listen
        self._announce = announce
        self._heartbeat = heartbeat
        self.heartbeat_seconds = heartbeat_seconds
        self._beating: threading.Thread | None = None
        self._beat_now = threading.Event()  # the view was just opened (or the runner stops): beat at once
        self._listening: Listening | None = None
        self._opened = False
        self._poked = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self.rebuild = rebuild
        self._rebuilt = False
        if self.view.store is None:
            # The view records which event store its documents come from (issue 12, 10).
            self.view.store = store_identity(app)
        if announce is not None and hasattr(self.view, "on_searchable"):
            # The API processes hear of a batch as soon as its documents can be found, not after
            # its position is stored too (a request less per write, issue 15).
            self.view.on_searchable = self._searchable

    def _searchable(self, positions: dict[str, int]) -> None:
        position = positions.get(self.app.name)
        if position is not None and self._announce is not None and position != self._announced:
            self._announce(position)
            self._announced = position

    def start(self) -> None:
        """Applies everything recorded so far (when the view can be reached), then follows the
        log in a thread, which keeps retrying while the view is unavailable. The heartbeat starts
        first: a runner busy with a long catch-up is alive."""
        if self._heartbeat is not None:
            self._beating = threading.Thread(target=self._beat, name=f"projection-{self.projection.name}-heartbeat",
                                             daemon=True)
            self._beating.start()
        try:
            self.catch_up()
        except Exception as error:  # noqa: BLE001 - reported by `error` and the log, retried by the thread
            self._failed(error)
        replay_followers(self.followers)
        self._thread = threading.Thread(target=self._follow, name=f"projection-{self.projection.name}", daemon=True)
        self._thread.start()
        if self._listen is not None:
            self._listening = self._listen(self.poke)

    def stop(self) -> None:
        self._stopping.set()
        self._poked.set()
        self._beat_now.set()
        if self._listening is not None:
            self._listening.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._beating is not None:
            self._beating.join(timeout=5)
        self._applied.give_up()

    def poke(self) -> None:
        self._poked.set()

    def _beat(self) -> None:
        """Beats every `heartbeat_seconds` while the runner follows the log (or catches up before
        it does), once the view's storage is prepared (a beat goes where its documents do); a beat
        that cannot be written is logged once until one is again."""
        assert self._heartbeat is not None
        beats, failing = 0, False
        next_beat = time.monotonic()
        while not self._stopping.is_set():
            if self._opened and self._following():
                beats += 1
                try:
                    self._heartbeat(beats)
                except Exception as error:  # noqa: BLE001 - the readers see the silence; retried at the next beat
                    if not failing:
                        log.warning("projection heartbeat not written; retrying",
                                    extra={"projection": self.projection.name, "error": str(error)})
                    failing = True
                else:
                    failing = False
            next_beat = max(next_beat + self.heartbeat_seconds, time.monotonic())
            # The first beat goes as soon as the view is open, not an interval later: a runner that
            # dies right after it started has beaten once, and so is seen dead two intervals on.
            if self._beat_now.wait(next_beat - time.monotonic()):
                self._beat_now.clear()
                next_beat = time.monotonic()

    def _following(self) -> bool:
        """Whether the runner follows the log, or is about to: its thread is not made yet, or made
        and not yet started (`start` makes it after the catch-up), or alive."""
        thread = self._thread
        return thread is None or thread.ident is None or thread.is_alive()

    def position(self) -> int:
        """The last notification id the view has applied, as this runner knows it."""
        return self._applied.position

    mode = "in-process"

    def alive(self) -> bool:
        """Whether the thread that follows the log runs."""
        return self._thread is not None and self._thread.is_alive() and not self._stopping.is_set()

    def wait(self, notification_id: int | None, timeout: float) -> bool:
        """True once the view has applied `notification_id`; False after `timeout` seconds, or at
        once while the view is failing or nothing follows the log (a write must not hang on an
        unavailable read model). Holds the calling thread: for scripts and tests."""
        if notification_id is None or self._applied.position >= notification_id:
            return True
        if self.error is not None or not self.alive():
            return False
        self.poke()
        if not self._applied.wait(notification_id, timeout):
            return False
        self._followers_reach(notification_id)
        return True

    async def wait_async(self, notification_id: int | None, timeout: float) -> bool:
        """`wait` for a request on the event loop: it holds no thread while it waits."""
        if notification_id is None or self._applied.position >= notification_id:
            return True
        if self.error is not None or not self.alive():
            return False
        self.poke()
        if not await self._applied.wait_async(notification_id, timeout):
            return False
        if self._followers_behind(notification_id):
            await anyio.to_thread.run_sync(self._followers_reach, notification_id)
        return True

    def _followers_behind(self, notification_id: int) -> bool:
        return any(follower.position() < notification_id for follower in self.followers)

    def _followers_reach(self, notification_id: int) -> None:
        """Catches up the followers that have not applied `notification_id` yet (the runner's
        thread does so right after its pass: this is rarely needed, and short)."""
        catch_up_followers([f for f in self.followers if f.position() < notification_id])

    def catch_up(self, progress: Callable[[int, int], None] | None = None, *, pipelined: bool = False) -> int:
        """Applies every notification after the view's stored position; answers how many.
        `progress(position, head)` is called after each batch. `pipelined` (for a rebuild) reads
        the next batch and writes the last one in two more threads while a batch is applied."""
        if not self._opened:
            self.view.open()
            self._opened = True
            self._beat_now.set()
        position = self._tracked_position()
        self._advance(position)
        head = (self.app.recorder.max_notification_id() or 0) if progress else 0
        if not pipelined:
            applied = 0
            while True:
                notifications = self._select(position)
                if not notifications:
                    return applied
                self._apply(notifications)
                try:
                    self.view.flush()
                except BaseException:
                    self.view.discard()
                    raise
                applied += len(notifications)
                position = notifications[-1].id
                self._advance(position)
                if progress is not None:
                    progress(position, max(head, position))
        return self._pipelined(position, head, progress)

    def _tracked_position(self) -> int:
        """The view's position in this event store. A view holding another store's position (a
        server started on a fresh or restored store, or on a staging database, against an index
        built from another store) is rebuilt from this store first: that position would skip this
        store's events, and its documents are not this store's (issue 12, 10)."""
        tracked = self.view.tracking(self.app.name)
        if tracked is None:
            return 0
        position, store = tracked
        if store == self.view.store:
            return position
        reason = (f"the read model holds event store {store or '(unrecorded)'}'s documents up to its position {position}, "
                  f"not this event store's ({self.view.store})")
        if self.rebuild is None:
            raise ReadModelUnavailable(f"{reason}; rebuild it (toolsmith projections rebuild)")
        if self._rebuilt:
            # Rebuilt once already since this runner started: another deployment writes the same alias.
            raise ReadModelUnavailable(f"{reason}, again after this runner rebuilt it: another deployment writes the "
                                       "same index; give each deployment its own TOOLSMITH_OPENSEARCH_INDEX")
        log.warning("read model of another event store: rebuilding it from this one",
                    extra={"projection": self.projection.name, "reason": reason})
        self.rebuild()
        self._rebuilt = True  # only once it succeeded: a rebuild that failed is tried again
        self.view.discard()
        tracked = self.view.tracking(self.app.name)
        return tracked[0] if tracked is not None and tracked[1] == self.view.store else 0

    def _pipelined(self, position: int, head: int, progress: Callable[[int, int], None] | None) -> int:
        applied = 0
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="projection") as threads:
            written: tuple[Future[None], int, int] | None = None
            reading = threads.submit(self._select, position)
            try:
                while True:
                    notifications = reading.result()
                    if notifications:
                        # SQLite and PostgreSQL release the GIL while the next batch is read.
                        reading = threads.submit(self._select, notifications[-1].id)
                        self._apply(notifications)
                    if written is not None:
                        # The batch before must be written before this one is sealed (see `seal`).
                        written[0].result()
                        applied += written[1]
                        self._advance(written[2])
                        if progress is not None:
                            progress(written[2], max(head, written[2]))
                        written = None
                    if not notifications:
                        return applied
                    batch = self.view.seal()
                    written = (threads.submit(self.view.write, batch), len(notifications), notifications[-1].id)
            except BaseException:
                if written is not None:
                    written[0].exception()  # a write in flight ends before its buffers go
                self.view.discard()
                raise

    def _select(self, after: int) -> list[Any]:
        return self.app.recorder.select_notifications(start=after + 1, limit=self.batch)

    def _apply(self, notifications: list[Any]) -> None:
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):  # traces on (docs/observability.md)
            with _TRACER.start_as_current_span("readmodel.apply", attributes={
                    "toolsmith.events": len(notifications), "toolsmith.position": notifications[-1].id if notifications else 0}):
                self._applied_now(notifications)
            return
        self._applied_now(notifications)

    def _applied_now(self, notifications: list[Any]) -> None:
        try:
            events = [self.app.mapper.to_domain_event(n) for n in notifications]
            self.projection.prepare(events)
            for notification, domain_event in zip(notifications, events, strict=True):
                self.projection.process_event(domain_event, Tracking(self.app.name, notification.id))
        except BaseException:
            self.view.discard()
            raise

    def _advance(self, position: int) -> None:
        self._applied.advance(position)
        if self._announce is not None and position != self._announced:
            self._announce(position)
            self._announced = position

    def _failed(self, error: BaseException) -> None:
        self.error = error
        log.error("projection failed; retrying", extra={"projection": self.projection.name, "error": str(error)})
        self._applied.give_up()

    def _follow(self) -> None:
        while not self._stopping.is_set():
            self._poked.wait(self.poll_seconds)
            self._poked.clear()
            try:
                self.catch_up()
            except Exception as error:  # noqa: BLE001 - reported by `error` and the log, retried
                self._failed(error)
                self._opened = False  # the storage may be gone (an index deleted): prepare it again
                catch_up_followers(self.followers)
                self._stopping.wait(1.0)
            else:
                self.error = None
                catch_up_followers(self.followers)


class TrackingWatcher:
    """The API's side of a projection run by another process. One thread per process learns the
    view's position and wakes the requests waiting for theirs: from the runner's announcements
    when it can listen to them (`listen`, PostgreSQL), reading the view's stored position only
    every `fallback_seconds` while someone waits, in case one was lost; without them (SQLite), by
    reading it every `poll_seconds` while someone waits."""

    def __init__(self, app: Application, view: ModuleReadModel, *, poll_seconds: float = 0.02,
                 fallback_seconds: float = 0.25, max_lag_seconds: float | None = None,
                 listen: Callable[[Callable[[int], None], Callable[[], None]], Listening] | None = None,
                 heartbeat: Callable[[], object] | None = None, heartbeat_seconds: float = 2.0,
                 clock: Callable[[], float] = time.monotonic, followers: Sequence[Following] = ()) -> None:
        """`max_lag_seconds`: past this age of the oldest event not applied, the runner counts as
        dead. `listen(heard, on_connect)` starts listening to the runner's announced positions.
        `heartbeat()` reads the runner's heartbeat (a value that changes at each beat, None when
        none was ever written), which it writes every `heartbeat_seconds`; without one, only the
        lag tells of a dead runner. `followers`: the projections this process keeps itself (in
        memory), caught up in the watcher's thread."""
        self.app = app
        self.view = view
        self.followers: tuple[Following, ...] = tuple(followers)
        self.poll_seconds = poll_seconds
        self.fallback_seconds = fallback_seconds
        self.max_lag_seconds = max_lag_seconds
        self.error: BaseException | None = None
        self._position = 0
        self._applied = AppliedPosition()
        self._listen = listen
        self._listening: Listening | None = None
        self._heard: collections.deque[int] = collections.deque()
        self._wake = threading.Event()
        self._read_now = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._heartbeat = heartbeat
        self.heartbeat_seconds = heartbeat_seconds
        self._pulse = Pulse(heartbeat_seconds, clock) if heartbeat is not None else None
        self._clock = clock
        self._listened_at: float | None = None

    def start(self) -> None:
        """Prepares the view's storage too (idempotent), so queries work before the runner's start."""
        try:
            self.view.open()
        except Exception as error:  # noqa: BLE001 - reported as the health's `degraded`, retried by position()
            self.error = error
        self._applied.advance(self.position())
        self.listen_to_heart()
        replay_followers(self.followers)
        self._thread = threading.Thread(target=self._follow, name="read-model-position", daemon=True)
        self._thread.start()
        if self._listen is not None:
            self._listening = self._listen(self._hear, self.poke)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._listening is not None:
            self._listening.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._applied.give_up()

    def poke(self) -> None:
        """Reads the view's position now (after a reconnection: announcements may have been missed)."""
        self._read_now = True
        self._wake.set()

    mode = "external"

    def alive(self) -> bool:
        """Another process's runner, as this process can tell: dead once its heartbeat has not
        changed for two intervals, writes or no writes, or once the oldest event it has not
        applied is older than `max_lag_seconds` (a runner that lives applies it sooner)."""
        self.listen_to_heart()
        return self.beating() and self._alive_at(self.position())

    def beating(self) -> bool:
        """Whether the runner's heartbeat was heard changing within two intervals (True when it
        has none to read)."""
        return self._pulse is None or self._pulse.alive()

    def silent_for(self) -> float:
        """Seconds since the runner's heartbeat last changed, as this process saw it."""
        return self._pulse.silent_for() if self._pulse is not None else 0.0

    def listen_to_heart(self) -> None:
        """Reads the runner's heartbeat now. Once it is stale, the writes waiting for the runner
        stop waiting: nothing will apply them (their answers say so)."""
        if self._pulse is None or self._heartbeat is None:
            return
        self._listened_at = self._clock()
        try:
            mark = self._heartbeat()
        except Exception:  # noqa: BLE001 - an unreadable heartbeat is a silent one; the view's error tells why
            pass
        else:
            self._pulse.observe(mark)
        if not self._pulse.alive():
            self._applied.give_up()

    def position(self) -> int:
        try:
            self._position = self.view.max_tracking_id(self.app.name) or 0
        except Exception as error:  # noqa: BLE001 - reported as the health's `degraded`
            self.error = error
        else:
            self.error = None
        return self._position

    def wait(self, notification_id: int | None, timeout: float) -> bool:
        """Like the runner's own `wait`; it gives up at once while the runner is evidently dead
        (events older than `max_lag_seconds` are still not applied), or the view fails."""
        if notification_id is None or self._applied.position >= notification_id:
            return True
        ready = self._before_waiting(notification_id)
        if ready is not None:
            return ready
        self._waiting_starts()
        return self._applied.wait(notification_id, timeout)

    async def wait_async(self, notification_id: int | None, timeout: float) -> bool:
        """`wait` for a request on the event loop: a worker thread for the few milliseconds of the
        first look, none while it waits."""
        if notification_id is None or self._applied.position >= notification_id:
            return True
        ready = await anyio.to_thread.run_sync(self._before_waiting, notification_id)
        if ready is not None:
            return ready
        self._waiting_starts()
        return await self._applied.wait_async(notification_id, timeout)

    def _before_waiting(self, notification_id: int) -> bool | None:
        """True when the view has applied `notification_id` already, False when no wait can end
        well (the view fails, or the runner is evidently dead), None: wait."""
        applied = self.position()
        if applied >= notification_id:
            return True
        if self.error is not None or not self.beating() or not self._alive_at(applied):
            return False
        return None

    def _alive_at(self, applied: int) -> bool:
        if self.max_lag_seconds is None or applied >= (self.app.recorder.max_notification_id() or 0):
            return True
        return _age_of_event(self.app, applied + 1) <= self.max_lag_seconds

    def _listening_now(self) -> bool:
        return self._listening is not None and self._listening.connected

    def _waiting_starts(self) -> None:
        """Wakes the follower to read at its waiting pace; at once when nothing announces."""
        self._read_now = self._read_now or not self._listening_now()
        self._wake.set()

    def _hear(self, position: int) -> None:
        self._heard.append(position)
        self._wake.set()

    def _follow(self) -> None:
        """The one thread that advances the position, so that what it learns arrives in order."""
        # The heartbeat is read four times an interval: a runner's death shows a quarter late at most.
        listening_pace = self._pulse.interval / 4 if self._pulse is not None else 1.0
        while not self._stopping.is_set():
            pace = self.fallback_seconds if self._listening_now() else self.poll_seconds
            woken = self._wake.wait(min(pace, listening_pace) if self._applied.waiting() else min(1.0, listening_pace))
            self._wake.clear()
            if self._listened_at is None or self._clock() - self._listened_at >= listening_pace:
                self.listen_to_heart()
            while self._heard:
                self._applied.advance(self._heard.popleft())
            read_now, self._read_now = self._read_now, False
            if self._applied.waiting() and (read_now or not woken):
                self._read()
            catch_up_followers(self.followers)

    def _read(self) -> None:
        position = self.position()
        if self.error is not None:
            self._applied.give_up()  # the view fails: no wait ends well (its answer says so)
        else:
            self._applied.advance(position)


def health(app: Application, runner: PullingProjectionRunner | TrackingWatcher, *, max_lag_seconds: float) -> dict[str, Any]:
    """The read side's health: `degraded`, with the reasons, while the projection fails, its
    runner does not run, or the oldest event it has not applied is older than `max_lag_seconds`
    (a runner in another process that died shows so: nothing applies the events any more)."""
    # The service's store (application.store.Store) keeps its newest position, from its own saves
    # when it owns its writes: no query per probe (issue 30); a bare application's recorder is asked.
    position = getattr(app, "position", None)
    stored = position() if callable(position) else app.recorder.max_notification_id() or 0
    applied = runner.position()
    lag = max(stored - applied, 0)
    behind = _age_of_event(app, applied + 1) if lag else 0.0
    problems = []
    alive = runner.alive()
    if runner.error is not None:
        problems.append("the projection fails (its error is in the log); it is retried")
    if behind > max_lag_seconds:
        problems.append(f"the read model is {behind:.1f} s behind the event store (more than {max_lag_seconds:g} s): "
                        "is the projection runner running?")
    elif isinstance(runner, TrackingWatcher) and not runner.beating():
        problems.append(f"the projection runner has not beaten for {runner.silent_for():.1f} s (its heartbeat comes "
                        f"every {runner.heartbeat_seconds:g} s): is `toolsmith projections run` running?")
    elif not alive:
        problems.append("the projection runner is not running")
    projections = {runner_name(runner): {"position": applied, "lag": lag}}
    for follower in runner.followers:
        try:
            position = follower.position()
        except Exception as error:  # noqa: BLE001 - a view out of reach (the chunk index's engine down) is a reason, not a failed health
            projections[follower.name] = {"position": None, "lag": None}
            problems.append(f"the projection {follower.name!r} cannot be read: {type(error).__name__}")
            continue
        projections[follower.name] = {"position": position, "lag": max(stored - position, 0)}
        if follower.error is not None:
            problems.append(f"the projection {follower.name!r} fails (its error is in the log); it is retried")
    return {
        "status": "degraded" if problems else "ok",
        "eventStore": {"position": stored},
        "readModel": {
            "position": applied,
            "lag": lag,
            "lagSeconds": round(behind, 3),
            "runner": {"mode": runner.mode, "alive": alive and behind <= max_lag_seconds},
            "problems": problems,
            # Every projection the runner runs, each by its own tracking record (issue 29, 3).
            "projections": projections,
        },
    }


def runner_name(runner: PullingProjectionRunner | TrackingWatcher) -> str:
    """The module summaries' projection's name, as the health reports it."""
    return runner.projection.name if isinstance(runner, PullingProjectionRunner) else ModuleSummaries.name


def _age_of_event(app: Application, notification_id: int) -> float:
    """Seconds since the event at `notification_id` (or the next one) was recorded."""
    try:
        found = app.recorder.select_notifications(start=notification_id, limit=1)
        if not found:
            return 0.0
        recorded = app.mapper.to_domain_event(found[0]).timestamp
    except Exception:  # noqa: BLE001 - an undecodable event is audit's finding; health stays an answer
        return 0.0
    return max((datetime.now(UTC) - recorded).total_seconds(), 0.0)
