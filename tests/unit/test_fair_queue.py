"""docs/tenants.md, fair share of queued work (`application.fair_queue`, document extraction's): a tenant
with many jobs never holds more than its share of the workers, another tenant's one job starts next
rather than after the queue, a tenant's smallest job goes first, a job whose deadline passed before
its turn is expired rather than run (never dropped), and jobs beyond a tenant's first few are
background. Jobs here block on events the test sets: nothing depends on how fast the machine is."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from application.fair_queue import FairQueue

WAIT = 10.0


class Jobs:
    """Jobs that each run until the test releases them, recording what started, in order."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.expired: list[str] = []
        self.background: dict[str, bool] = {}
        self.running: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.release: dict[str, threading.Event] = {}
        self.changed = threading.Condition()

    def gate(self, job: str) -> threading.Event:
        return self.release.setdefault(job, threading.Event())

    def run(self, job: str, background: bool) -> None:
        tenant = job.split("-")[0]
        with self.changed:
            self.started.append(job)
            self.background[job] = background
            self.running[tenant] = self.running.get(tenant, 0) + 1
            self.most[tenant] = max(self.most.get(tenant, 0), self.running[tenant])
            self.changed.notify_all()
        self.gate(job).wait(WAIT)
        with self.changed:
            self.running[tenant] -= 1
            self.changed.notify_all()

    def expire(self, job: str) -> None:
        with self.changed:
            self.expired.append(job)
            self.changed.notify_all()

    def until(self, condition: object, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(condition, WAIT), f"{what}: started {self.started}, expired {self.expired}"  # type: ignore[arg-type]


@pytest.fixture
def jobs() -> Iterator[Jobs]:
    made = Jobs()
    yield made
    for event in made.release.values():
        event.set()


def test_one_tenants_flood_holds_its_share_and_another_tenants_job_starts_next(jobs: Jobs) -> None:
    queue: FairQueue[str] = FairQueue(jobs.run, jobs.expire, workers=2, per_tenant=1, foreground=1)
    flood = [f"alpha-{n}" for n in range(10)]
    for job in flood:
        queue.put("alpha", job)
    jobs.until(lambda: jobs.started == ["alpha-0"], "alpha's first job starts")
    # A second worker is free, yet alpha is at its share: its second job waits.
    assert queue.running("alpha") == 1 and queue.waiting("alpha") == 9
    queue.put("beta", "beta-0")
    jobs.until(lambda: "beta-0" in jobs.started, "beta's one job starts at once, beside alpha's")
    jobs.gate("beta-0").set()
    for job in flood:
        jobs.gate(job).set()
    jobs.until(lambda: len(jobs.started) == 11, "every job runs")
    queue.close()
    assert jobs.started.index("beta-0") == 1  # before alpha's second: not after its nine others
    assert jobs.most == {"alpha": 1, "beta": 1}


def test_a_free_worker_goes_to_the_tenant_served_least_recently(jobs: Jobs) -> None:
    queue: FairQueue[str] = FairQueue(jobs.run, jobs.expire, workers=1, per_tenant=1)
    queue.put("alpha", "alpha-0")
    jobs.until(lambda: jobs.started == ["alpha-0"], "the first job starts")
    for n in range(1, 4):
        queue.put("alpha", f"alpha-{n}")
    queue.put("beta", "beta-0")
    queue.put("gamma", "gamma-0")
    for job in ("alpha-0", "alpha-1", "alpha-2", "alpha-3", "beta-0", "gamma-0"):
        jobs.gate(job).set()
    jobs.until(lambda: len(jobs.started) == 6, "every job runs")
    queue.close()
    # In turn: alpha has just been served, so beta and gamma go before its queue.
    assert jobs.started == ["alpha-0", "beta-0", "gamma-0", "alpha-1", "alpha-2", "alpha-3"]


def test_a_tenants_smallest_job_goes_first(jobs: Jobs) -> None:
    queue: FairQueue[str] = FairQueue(jobs.run, jobs.expire, workers=1, per_tenant=1)
    queue.put("alpha", "alpha-first", size=1)
    jobs.until(lambda: jobs.started == ["alpha-first"], "the first job starts")
    for job, size in (("alpha-big", 5_000_000), ("alpha-small", 10), ("alpha-medium", 20_000)):
        queue.put("alpha", job, size=size)
    for job in ("alpha-first", "alpha-big", "alpha-small", "alpha-medium"):
        jobs.gate(job).set()
    jobs.until(lambda: len(jobs.started) == 4, "every job runs")
    queue.close()
    assert jobs.started == ["alpha-first", "alpha-small", "alpha-medium", "alpha-big"]


def test_a_job_whose_deadline_passed_before_its_turn_is_expired_not_run(jobs: Jobs) -> None:
    queue: FairQueue[str] = FairQueue(jobs.run, jobs.expire, workers=2, per_tenant=1)
    deadline = time.monotonic() + 0.3
    for n in range(3):
        queue.put("alpha", f"alpha-{n}", deadline=deadline)
    jobs.until(lambda: jobs.started == ["alpha-0"], "the first job starts")
    # The second worker is idle (alpha is at its share): it expires the waiting two at the deadline,
    # while the first still runs.
    jobs.until(lambda: sorted(jobs.expired) == ["alpha-1", "alpha-2"], "the jobs left waiting are expired")
    assert jobs.started == ["alpha-0"]
    jobs.gate("alpha-0").set()
    assert queue.close(timeout=WAIT) == []
    assert jobs.started == ["alpha-0"]


def test_jobs_beyond_a_tenants_first_foreground_ones_are_background(jobs: Jobs) -> None:
    queue: FairQueue[str] = FairQueue(jobs.run, jobs.expire, workers=3, per_tenant=3, foreground=1)
    for n in range(3):
        queue.put("alpha", f"alpha-{n}")
    jobs.until(lambda: len(jobs.started) == 3, "the three start")
    queue.put("beta", "beta-0")
    for n in range(3):
        jobs.gate(f"alpha-{n}").set()
    jobs.gate("beta-0").set()
    jobs.until(lambda: "beta-0" in jobs.started, "beta's starts")
    queue.close()
    assert sorted(jobs.background[f"alpha-{n}"] for n in range(3)) == [False, True, True]
    assert jobs.background["beta-0"] is False  # beta's first: foreground whatever alpha holds


def test_close_answers_the_jobs_never_started_and_refuses_more(jobs: Jobs) -> None:
    queue: FairQueue[str] = FairQueue(jobs.run, jobs.expire, workers=1, per_tenant=1)
    queue.put("alpha", "alpha-0")
    jobs.until(lambda: jobs.started == ["alpha-0"], "the first job starts")
    queue.put("alpha", "alpha-1")
    queue.put("beta", "beta-0")
    for job in ("alpha-0", "alpha-1", "beta-0"):
        jobs.gate(job).set()
    left = queue.close(timeout=WAIT)
    # Each job either ran or is answered back, never lost.
    assert sorted(left + [j for j in jobs.started if j != "alpha-0"]) == ["alpha-1", "beta-0"]
    with pytest.raises(RuntimeError):
        queue.put("alpha", "alpha-2")


def test_each_tenants_queued_and_running_jobs_are_counted(jobs: Jobs) -> None:
    queue: FairQueue[str] = FairQueue(jobs.run, jobs.expire, workers=2, per_tenant=1, foreground=1)
    for job in ("alpha-0", "alpha-1", "alpha-2", "beta-0"):
        queue.put(job.split("-")[0], job)
    jobs.until(lambda: len(jobs.started) == 2, "one job of each tenant starts")
    assert queue.by_tenant() == {"alpha": (2, 1), "beta": (0, 1)}
    for event in ("alpha-0", "alpha-1", "alpha-2", "beta-0"):
        jobs.gate(event).set()
    jobs.until(lambda: len(jobs.started) == 4 and not any(jobs.running.values()), "every job ran")
    queue.close()
    assert queue.by_tenant() == {}
