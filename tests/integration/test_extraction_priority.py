"""Short documents first in the extraction pool (docs/tenants.md, fair share; issue 28, finding 5), with
real worker processes: a worker whose extraction runs past `LONG_EXTRACTION_SECONDS` is lowered to
niceness 19 (to `SCHED_IDLE` for a background job) while it goes on, and retires after that job; a
short document's worker keeps its priority and serves again; a job's own deadline (its upload's)
ends it with the reason its caller gave; a worker killed at its limit is replaced in the background,
before the next document asks for one. What is asserted is what the kernel says of the worker,
never how long anything took."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.documents import HTML, PDF, TEXT, ExtractionFailed
from infrastructure.extraction import ExtractorPool
from infrastructure.extraction.pool import LONG_EXTRACTION_SECONDS
from tests.documents import looping_pdf, nested_html


@pytest.fixture
def pool() -> Iterator[ExtractorPool]:
    extraction = ExtractorPool(workers=1, timeout_seconds=60, memory_mb=512)
    yield extraction
    extraction.close()


def live_workers(pool: ExtractorPool) -> set[int]:
    return {worker.pid for worker in pool._live}


def lowered_while_running(pool: ExtractorPool, path: Path, media_type: str, *, background: bool) -> tuple[int, int, int]:
    """Extracts `path` in a thread, and answers its worker's pid, niceness and scheduling policy
    once the pool has lowered it (waiting while the extraction goes on)."""
    done = threading.Event()

    def extract() -> None:
        try:
            pool.extract(str(path), media_type, background=background)
        except ExtractionFailed:
            pass
        finally:
            done.set()

    threading.Thread(target=extract, daemon=True).start()
    deadline = time.monotonic() + 60
    while True:
        for pid in live_workers(pool):
            try:
                niceness, policy = os.getpriority(os.PRIO_PROCESS, pid), os.sched_getscheduler(pid)
            except OSError:
                continue
            if niceness == 19 or policy == os.SCHED_IDLE:
                done.wait(90)
                return pid, niceness, policy
        assert not done.is_set(), "the long extraction ended without its worker being lowered"
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_long_extraction_is_lowered_and_its_worker_retired_a_short_ones_kept(pool: ExtractorPool, tmp_path: Path) -> None:
    short = tmp_path / "note.txt"
    short.write_bytes(b"one line about a heron\n")
    assert "heron" in pool.extract(str(short), TEXT).text
    (first,) = live_workers(pool)
    assert os.getpriority(os.PRIO_PROCESS, first) == 0  # a short document's worker is not lowered
    assert "heron" in pool.extract(str(short), TEXT).text
    assert live_workers(pool) == {first}  # and it serves again

    long = tmp_path / "nested.html"
    long.write_bytes(nested_html(50_000))  # seconds of layout: past LONG_EXTRACTION_SECONDS, within 60 s
    pid, niceness, policy = lowered_while_running(pool, long, HTML, background=False)
    assert pid == first and niceness == 19 and policy == os.SCHED_OTHER
    assert first not in live_workers(pool)  # retired after its job: a priority is never raised back
    assert "heron" in pool.extract(str(short), TEXT).text
    (second,) = live_workers(pool)
    assert second != first and os.getpriority(os.PRIO_PROCESS, second) == 0


def test_a_background_jobs_worker_gets_the_cpu_only_when_nothing_else_wants_it(pool: ExtractorPool, tmp_path: Path) -> None:
    hostile = tmp_path / "loop.pdf"
    hostile.write_bytes(looping_pdf())
    pool.timeout_seconds = LONG_EXTRACTION_SECONDS + 3
    _, _, policy = lowered_while_running(pool, hostile, PDF, background=True)
    assert policy == os.SCHED_IDLE


def test_a_jobs_own_deadline_ends_it_with_its_callers_reason(pool: ExtractorPool, tmp_path: Path) -> None:
    hostile = tmp_path / "loop.pdf"
    hostile.write_bytes(looping_pdf())
    with pytest.raises(ExtractionFailed) as failed:
        pool.extract(str(hostile), PDF, deadline=time.monotonic() + 2, overdue="its upload took too long")
    assert failed.value.reason == "its upload took too long"
    # The pool's own limit, when it comes first, still says so.
    pool.timeout_seconds = 2
    with pytest.raises(ExtractionFailed) as failed:
        pool.extract(str(hostile), PDF, deadline=time.monotonic() + 600, overdue="its upload took too long")
    assert failed.value.reason.startswith("extraction took longer than 2 s")


def test_a_killed_worker_is_replaced_before_the_next_document_asks(tmp_path: Path) -> None:
    pool = ExtractorPool(workers=2, timeout_seconds=2, memory_mb=512)
    try:
        short = tmp_path / "note.txt"
        short.write_bytes(b"one line about a heron\n")
        pool.extract(str(short), TEXT)
        both = until_workers(pool, 2)  # the first use starts them all, the second in the background
        hostile = tmp_path / "loop.pdf"
        hostile.write_bytes(looping_pdf())
        with pytest.raises(ExtractionFailed, match="longer than 2 s"):
            pool.extract(str(hostile), PDF)
        # The worker killed at the limit is replaced with no document asking for one.
        after = until_workers(pool, 2, besides=both)
        assert len(after & both) == 1 and len(after - both) == 1
    finally:
        pool.close()


def until_workers(pool: ExtractorPool, count: int, besides: set[int] | None = None) -> set[int]:
    """The pool's idle workers once there are `count` of them (other than exactly `besides`)."""
    deadline = time.monotonic() + 60
    while True:
        with pool._lock:
            idle = {worker.pid for worker in pool._idle}
        if len(idle) == count and idle != besides:
            return idle
        assert time.monotonic() < deadline, f"the pool has {len(idle)} idle workers, not {count}"
        time.sleep(0.02)
