"""Fair share of a pool of background workers between tenants (docs/tenants.md), for work that queues
rather than being refused: document extraction (`toolkinds.search_tools.ingest`).

Each tenant has a queue of its own. A free worker takes the next job from the tenant that runs the
fewest jobs right now, the one served least recently among equals (round robin): so one tenant's
hundred files never keep another tenant's one file waiting behind them, whatever order they came
in. A tenant runs at most `per_tenant` jobs at once (a worker left over stays idle rather than
take a third job of the same tenant: it is there for the next tenant's file), and within a tenant
the smallest job goes first. A job beyond the tenant's first `foreground` running at once is
marked background, as the sandbox marks sessions (`application.fair_share`): the worker may let it
yield the CPU entirely once it runs long.

A job may have a deadline: one still queued then is handed to `expire` rather than run (it is never
dropped), by the first worker that is free. `close` stops taking jobs and answers those never
started.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from application.fair_share import foreground_sessions

log = logging.getLogger("toolsmith.fair_queue")

J = TypeVar("J")


@dataclass(order=True)
class _Queued(Generic[J]):
    size: int
    seq: int
    deadline: float | None = field(compare=False)
    job: J = field(compare=False)


class FairQueue(Generic[J]):
    """Jobs of many tenants run by `workers` threads: `run(job, background)` for each job, or
    `expire(job)` for one whose deadline passed before it started. Neither may raise (what they
    raise is logged and the job is over)."""

    def __init__(self, run: Callable[[J, bool], None], expire: Callable[[J], None], *, workers: int,
                 per_tenant: int, foreground: int | None = None, name: str = "toolsmith-fair") -> None:  # fmt: skip
        if workers < 1 or per_tenant < 1:
            raise ValueError("a fair queue needs at least one worker, and a tenant at least one job at once")
        self.workers = workers
        self.per_tenant = per_tenant
        self.foreground = foreground_sessions() if foreground is None else foreground
        self._run = run
        self._expire = expire
        self._name = name
        self._waiting: dict[str, list[_Queued[J]]] = {}
        self._running: dict[str, int] = {}
        self._served: dict[str, int] = {}  # when each tenant last had a job started, by `_ticks`
        self._ticks = itertools.count()
        self._seq = itertools.count()
        self._ready = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def put(self, tenant: str, job: J, *, size: int = 0, deadline: float | None = None) -> None:
        """Queues `job` of `tenant`; `size` orders a tenant's jobs (smallest first), `deadline` is
        a `time.monotonic()` instant. Refused with `RuntimeError` once closed."""
        with self._ready:
            if self._closed:
                raise RuntimeError("the queue is closed")
            heapq.heappush(self._waiting.setdefault(tenant, []), _Queued(size, next(self._seq), deadline, job))
            if len(self._threads) < self.workers:
                thread = threading.Thread(target=self._serve, name=f"{self._name}-{len(self._threads) + 1}", daemon=True)
                self._threads.append(thread)
                thread.start()
            self._ready.notify()

    def running(self, tenant: str) -> int:
        """The jobs of `tenant` running right now."""
        with self._ready:
            return self._running.get(tenant, 0)

    def waiting(self, tenant: str) -> int:
        """The jobs of `tenant` queued and not started."""
        with self._ready:
            return len(self._waiting.get(tenant, ()))

    def by_tenant(self) -> dict[str, tuple[int, int]]:
        """Each tenant's jobs queued and running now (those with any): the metrics' figures."""
        with self._ready:
            tenants = {*self._waiting, *self._running}
            return {t: (len(self._waiting.get(t, ())), self._running.get(t, 0)) for t in tenants
                    if self._waiting.get(t) or self._running.get(t)}

    def close(self, timeout: float | None = None) -> list[J]:
        """Stops starting jobs, waits up to `timeout` for the running ones, and answers the jobs
        that never started (in no particular order)."""
        with self._ready:
            self._closed = True
            left = [queued.job for queue in self._waiting.values() for queued in queue]
            self._waiting.clear()
            self._ready.notify_all()
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(timeout)
        return left

    # -- the workers ---------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            expired: list[J] = []
            with self._ready:
                while True:
                    if self._closed:
                        return
                    expired = self._take_expired(time.monotonic())
                    if expired:
                        break
                    chosen = self._next()
                    if chosen is not None:
                        tenant, job = chosen
                        held = self._running.get(tenant, 0)
                        self._running[tenant] = held + 1
                        self._served[tenant] = next(self._ticks)
                        break
                    self._ready.wait(self._until_next_deadline())
            if expired:
                for job in expired:
                    self._call(self._expire, job)
                continue
            try:
                self._call(self._run, job, held >= self.foreground)
            finally:
                with self._ready:
                    left = self._running[tenant] - 1
                    if left:
                        self._running[tenant] = left
                    else:
                        del self._running[tenant]
                    self._ready.notify_all()  # a tenant below its share again may have jobs waiting

    def _next(self) -> tuple[str, J] | None:
        """The next job to start, under the lock: of the tenant below its share running the
        fewest, served least recently among equals; its smallest."""
        eligible = [t for t, queue in self._waiting.items() if queue and self._running.get(t, 0) < self.per_tenant]
        if not eligible:
            return None
        tenant = min(eligible, key=lambda t: (self._running.get(t, 0), self._served.get(t, -1)))
        queue = self._waiting[tenant]
        queued = heapq.heappop(queue)
        if not queue:
            del self._waiting[tenant]
        return tenant, queued.job

    def _take_expired(self, now: float) -> list[J]:
        expired: list[J] = []
        for tenant in list(self._waiting):
            queue = self._waiting[tenant]
            kept = [q for q in queue if q.deadline is None or q.deadline > now]
            if len(kept) < len(queue):
                expired += [q.job for q in queue if q.deadline is not None and q.deadline <= now]
                heapq.heapify(kept)
                if kept:
                    self._waiting[tenant] = kept
                else:
                    del self._waiting[tenant]
        return expired

    def _until_next_deadline(self) -> float | None:
        deadlines = [q.deadline for queue in self._waiting.values() for q in queue if q.deadline is not None]
        return max(0.0, min(deadlines) - time.monotonic()) + 0.001 if deadlines else None

    def _call(self, function: Callable[..., None], *args: object) -> None:
        try:
            function(*args)
        except Exception:
            log.exception("a queued job failed unexpectedly", extra={"queue": self._name})
