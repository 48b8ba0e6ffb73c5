"""Runs a projection over the application's notification log, resuming from the view's tracking.

eventsourcing's own `ProjectionRunner` needs a recorder that supports subscriptions, which its
SQLite recorder does not; this runner pulls instead. It wakes when the API says it wrote (`poke`),
and otherwise polls, so that writes of other processes arrive too. `wait` gives the API its
read-your-writes: it returns once the view has applied the given notification id.
"""

from __future__ import annotations

import logging
import threading
import time

from eventsourcing.application import Application
from eventsourcing.persistence import Tracking
from eventsourcing.projection import Projection

from projections.interface import ModuleReadModel

log = logging.getLogger("toolsmith.projections")

BATCH = 500


class PullingProjectionRunner:
    def __init__(self, app: Application, projection: Projection[ModuleReadModel], *, poll_seconds: float = 0.5) -> None:
        self.app = app
        self.projection = projection
        self.view = projection.view
        self.poll_seconds = poll_seconds
        self._caught_up = threading.Condition()
        self._poked = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        """Applies everything recorded so far, then follows the log in a thread."""
        self.catch_up()
        self._thread = threading.Thread(target=self._follow, name=f"projection-{self.projection.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._poked.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def poke(self) -> None:
        self._poked.set()

    def position(self) -> int:
        return self.view.max_tracking_id(self.app.name) or 0

    def wait(self, notification_id: int | None, timeout: float) -> bool:
        """True once the view has applied `notification_id`; False after `timeout` seconds."""
        if notification_id is None:
            return True
        self.poke()
        deadline = time.monotonic() + timeout
        with self._caught_up:
            while self.position() < notification_id:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.error is not None:
                    return False
                self._caught_up.wait(remaining)
        return True

    def catch_up(self) -> int:
        """Applies every notification after the view's position; answers how many."""
        applied = 0
        while True:
            start = self.position() + 1
            notifications = self.app.recorder.select_notifications(start=start, limit=BATCH)
            if not notifications:
                return applied
            for notification in notifications:
                domain_event = self.app.mapper.to_domain_event(notification)
                self.projection.process_event(domain_event, Tracking(self.app.name, notification.id))
                applied += 1
            with self._caught_up:
                self._caught_up.notify_all()

    def _follow(self) -> None:
        while not self._stopping.is_set():
            self._poked.wait(self.poll_seconds)
            self._poked.clear()
            try:
                self.catch_up()
            except Exception as error:  # noqa: BLE001 - reported by `error` and the log, retried
                self.error = error
                log.exception("projection failed; retrying", extra={"projection": self.projection.name})
                with self._caught_up:
                    self._caught_up.notify_all()
                self._stopping.wait(1.0)
            else:
                self.error = None
