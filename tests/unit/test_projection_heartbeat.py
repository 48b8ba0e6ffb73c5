"""Issue 28, finding 11: a projections runner of its own process proves it is alive by a heartbeat,
and the API counts it dead once the heartbeat has not changed for two intervals, on the API's own
clock, writes or no writes. Before, `alive` was read from the age of the oldest unapplied write
only: with nothing written, a dead runner stayed `alive: true`, and each write waited its bound.

A fake clock decides every age here: nothing depends on the machine's speed."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

from application.store import Store
from projections.memory import InMemoryModuleReadModel
from projections.modules import ModuleSummaries
from projections.runner import PullingProjectionRunner, Pulse, TrackingWatcher, health

INTERVAL = 2.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Recorder:
    """The event store as the watcher sees it: how far it goes, and events with no age to tell."""

    def __init__(self) -> None:
        self.head = 0

    def max_notification_id(self) -> int:
        return self.head

    def select_notifications(self, start: int, limit: int) -> list[Any]:
        return []


class View:
    """The read model's side: its applied position, and the runner's heartbeat in it."""

    def __init__(self) -> None:
        self.position = 0
        self.beat: tuple[str, int] | None = None

    def open(self) -> None:
        pass

    def max_tracking_id(self, application_name: str) -> int:
        return self.position


def _watcher(clock: Clock, view: View, recorder: Recorder) -> TrackingWatcher:
    app = SimpleNamespace(name="store", recorder=recorder)
    return TrackingWatcher(app, view, max_lag_seconds=None, heartbeat=lambda: view.beat,  # type: ignore[arg-type]
                           heartbeat_seconds=INTERVAL, clock=clock)


def test_a_heartbeat_unchanged_for_two_intervals_is_a_dead_runner_and_a_new_beat_a_live_one() -> None:
    clock = Clock()
    pulse = Pulse(INTERVAL, clock)
    pulse.observe(("runner-a", 1))
    clock.now += 2 * INTERVAL
    assert pulse.alive()  # two intervals: the second beat may still come
    pulse.observe(("runner-a", 1))  # read again, unchanged
    clock.now += 0.01
    assert not pulse.alive() and pulse.silent_for() > 2 * INTERVAL
    pulse.observe(("runner-b", 1))  # a new runner beats (its counter starts again)
    assert pulse.alive() and pulse.silent_for() == 0


def test_health_reports_a_runner_whose_heartbeat_stopped_dead_with_nothing_written() -> None:
    clock, view, recorder = Clock(), View(), Recorder()
    watcher = _watcher(clock, view, recorder)
    app = SimpleNamespace(name="store", recorder=recorder)
    for beats in range(1, 6):  # beating: alive, interval after interval
        view.beat = ("runner-a", beats)
        assert health(app, watcher, max_lag_seconds=30)["readModel"]["runner"] == {"mode": "external", "alive": True}  # type: ignore[arg-type]
        clock.now += INTERVAL
    # killed: no more beats, and nothing is written (the event store stays at 0)
    clock.now += INTERVAL + 0.1
    answer = health(app, watcher, max_lag_seconds=30)  # type: ignore[arg-type]
    assert answer["status"] == "degraded", answer
    assert answer["readModel"]["lag"] == 0
    assert answer["readModel"]["runner"] == {"mode": "external", "alive": False}
    assert "has not beaten for" in answer["readModel"]["problems"][0]


def test_a_runner_dead_before_the_api_started_is_dead_two_intervals_after_the_api_first_looked() -> None:
    clock, view, recorder = Clock(), View(), Recorder()
    view.beat = ("runner-a", 41)  # its last beat, long ago: the API cannot tell how long ago
    watcher = _watcher(clock, view, recorder)
    watcher.listen_to_heart()
    assert watcher.alive()
    clock.now += 2 * INTERVAL + 0.1
    assert not watcher.alive()


def test_with_no_heartbeat_ever_written_the_lag_decides_as_before() -> None:
    # A first runner still starting has not beaten yet: a write waits for it (the lag, not the
    # heartbeat, tells once it is evidently not coming), and its first beat is heard.
    clock, view, recorder = Clock(), View(), Recorder()
    watcher = _watcher(clock, view, recorder)
    watcher.listen_to_heart()
    clock.now += 10 * INTERVAL
    assert watcher.alive() and watcher.beating()
    view.beat = ("runner-a", 1)
    assert watcher.alive()
    clock.now += 2 * INTERVAL + 0.1
    assert not watcher.alive()  # it beat once, then no more


def test_a_write_stops_waiting_once_the_runner_is_known_dead() -> None:
    clock, view, recorder = Clock(), View(), Recorder()
    watcher = _watcher(clock, view, recorder)
    view.beat = ("runner-a", 7)
    watcher.listen_to_heart()
    recorder.head = 1  # a write the runner has not applied yet

    answers: list[bool] = []
    waiting = threading.Thread(target=lambda: answers.append(watcher.wait(1, timeout=600)))
    waiting.start()
    while not watcher._applied.waiting():  # the write waits (its bound is ten minutes)
        waiting.join(0.01)
    clock.now += 2 * INTERVAL + 0.1
    watcher.listen_to_heart()  # as the watcher's thread does four times an interval
    waiting.join(60)
    assert answers == [False]  # given up when the heartbeat went stale, long before its bound
    # and the next write does not wait at all
    recorder.head = 2
    assert watcher.wait(2, timeout=600) is False


def test_the_runner_of_its_own_process_beats_with_a_counter_that_changes_at_each_beat() -> None:
    beats: list[int] = []
    enough = threading.Event()

    def beat(count: int) -> None:
        beats.append(count)
        if len(beats) >= 3:
            enough.set()

    store = Store({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    runner = PullingProjectionRunner(store, ModuleSummaries(view=InMemoryModuleReadModel()),
                                     heartbeat=beat, heartbeat_seconds=0.01)
    runner.start()
    try:
        assert enough.wait(60)
    finally:
        runner.stop()
    assert beats[:3] == [1, 2, 3]
    stopped = len(beats)
    assert not runner._beating.is_alive()  # type: ignore[union-attr]
    assert len(beats) == stopped  # a stopped runner beats no more


def test_the_runner_beats_as_soon_as_its_view_is_open_not_an_interval_later() -> None:
    # a runner killed a moment after it started has beaten once, so the API sees it die
    first = threading.Event()
    store = Store({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    runner = PullingProjectionRunner(store, ModuleSummaries(view=InMemoryModuleReadModel()),
                                     heartbeat=lambda count: first.set(), heartbeat_seconds=3600)
    runner.start()
    try:
        assert first.wait(30), "no beat until an hour-long interval had passed"
    finally:
        runner.stop()


def test_a_follower_made_but_not_yet_started_counts_as_following() -> None:
    # `start` makes the follower thread after the catch-up and starts it a moment later; a beat
    # that falls in between must not be skipped (it was, and the next one came an interval later)
    store = Store({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    runner = PullingProjectionRunner(store, ModuleSummaries(view=InMemoryModuleReadModel()),
                                     heartbeat=lambda count: None, heartbeat_seconds=3600)
    assert runner._following()  # no follower made yet
    made = threading.Thread(target=lambda: None)
    runner._thread = made
    assert runner._following()  # made, not started
    made.start()
    made.join()
    assert not runner._following()  # started and ended: the runner is dead, it beats no more
