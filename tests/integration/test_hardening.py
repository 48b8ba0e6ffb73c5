"""The hardened embedded runner: worker processes, wall-clock deadlines, crashes, caps (docs/javascript.md V4).

These run the real pool: a zygote process and workers forked from it, as `CODESANDBOX_URL=embedded`
runs them under `toolsmith serve`.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from domain.errors import SandboxBusy
from domain.ports import Execution, ExecutionResult, SourceUnit
from sandbox.embedded import EmbeddedSandbox

LOOP = SourceUnit("loop", "exports.run = function () { while (true) {} };")
PLAIN = SourceUnit("plain", "exports.run = function (input) { return input.n * 2; };")


@pytest.fixture(scope="module")
def pool() -> Iterator[EmbeddedSandbox]:
    sandbox = EmbeddedSandbox(max_active_sessions=16, workers=2)
    assert plain_call_works(sandbox)  # the pool is up, as it is once a service answers
    yield sandbox
    sandbox.close()


def call(sandbox: EmbeddedSandbox, unit: SourceUnit, **kw: object) -> ExecutionResult:
    kw.setdefault("input", {"n": 21})
    return sandbox.run(Execution(units=(unit,), **kw))  # type: ignore[arg-type]


def plain_call_works(sandbox: EmbeddedSandbox) -> bool:
    result = call(sandbox, PLAIN)
    return result.error is None and result.output == 42


def test_eight_concurrent_infinite_loops_end_at_their_wall_clock_deadline(pool: EmbeddedSandbox) -> None:
    def timed() -> tuple[float, ExecutionResult]:
        started = time.monotonic()
        result = call(pool, LOOP, timeout_millis=1_000)
        return time.monotonic() - started, result

    with ThreadPoolExecutor(8) as threads:
        outcomes = list(threads.map(lambda _: timed(), range(8)))
    for elapsed, result in outcomes:
        assert result.error is not None and result.error.type == "timeout", result
        # at the 1 s deadline of wall clock: not before, and not near the 2 s of two loops served
        # one after the other, nor the 4 s that 1 s of CPU each takes on 2 cores (what the bound
        # tells apart; the slack above 1 s is the machine's, however busy: issue 28, finding 10)
        assert 1.0 <= elapsed < 2.0, [round(e, 3) for e, _ in outcomes]
    assert plain_call_works(pool)


def test_a_worker_killed_in_the_middle_of_a_call_costs_that_call_only(pool: EmbeddedSandbox) -> None:
    busy_before = set(pool.worker_pids())
    result: list[ExecutionResult] = []
    caller = threading.Thread(target=lambda: result.append(call(pool, LOOP, timeout_millis=5_000)))
    started = time.monotonic()
    caller.start()
    victim = None
    while victim is None and time.monotonic() - started < 3:
        # the worker running the loop is the one whose pid is busy; any live worker is a fair victim,
        # but the call's own worker is the one that matters: kill the busiest (the newest busy one)
        busy = pool._busy_pids()  # noqa: SLF001 - the test needs to know which worker runs the call
        victim = busy[0] if busy else None
        time.sleep(0.01)
    assert victim is not None, f"no busy worker among {busy_before}"
    os.kill(victim, signal.SIGKILL)
    caller.join(10)
    assert time.monotonic() - started < 4, "the killed call waited for its deadline"
    assert result and result[0].error is not None
    assert result[0].error.type == "crash"
    assert all(plain_call_works(pool) for _ in range(5))
    assert victim not in pool.worker_pids()


def test_an_engine_crash_is_an_error_result_and_the_next_calls_succeed(pool: EmbeddedSandbox) -> None:
    # bellard/quickjs#129: spreading a big typed array crashes the engine (SIGSEGV) on this build
    crash = SourceUnit("spread", "exports.run = function () { let a=new Int8Array(2583647);let b={...a};return Object.keys(b).length };")
    result = call(pool, crash, timeout_millis=2_000, memory_limit_mb=64)
    assert result.error is not None
    assert plain_call_works(pool)


def test_logs_written_before_the_deadline_are_kept(pool: EmbeddedSandbox) -> None:
    unit = SourceUnit("chatty", "exports.run = function () { log('before the loop'); log({step: 2}); while (true) {} };")
    result = call(pool, unit, timeout_millis=300)
    assert result.error is not None and result.error.type == "timeout"
    assert result.logs == ("before the loop", '{"step":2}')


def test_the_memory_cap_is_clamped_to_the_platform_cap() -> None:
    capped = EmbeddedSandbox(max_memory_mb=16, workers=1)
    try:
        bomb = SourceUnit("bomb", "exports.run = function () { return 'x'.repeat(40 * 1024 * 1024).length };")
        result = call(capped, bomb, memory_limit_mb=4_096)
        assert result.error is not None and result.error.type == "memory", result
        assert "16 MB" in result.error.message
        fits = SourceUnit("fits", "exports.run = function () { return 'x'.repeat(4 * 1024 * 1024).length };")
        assert call(capped, fits, memory_limit_mb=4_096).output == 4 * 1024 * 1024
    finally:
        capped.close()


def test_a_fresh_context_per_call_on_the_same_worker() -> None:
    single = EmbeddedSandbox(workers=1, max_active_sessions=1)
    try:
        pollute = SourceUnit("pollute", "exports.run = function () { Object.prototype.polluted = 1; globalThis.leak = 1; return 1 };")
        look = SourceUnit("look", "exports.run = function () { return [typeof ({}).polluted, typeof globalThis.leak] };")
        assert call(single, pollute).output == 1
        assert call(single, look).output == ["undefined", "undefined"]
        assert len(single.worker_pids()) == 1
    finally:
        single.close()


def test_one_call_beyond_the_session_cap_is_refused_at_once() -> None:
    small = EmbeddedSandbox(max_active_sessions=2, workers=2)
    try:
        with ThreadPoolExecutor(2) as threads:
            running = [threads.submit(call, small, LOOP, timeout_millis=1_000) for _ in range(2)]
            deadline = time.monotonic() + 30
            while not small.busy():  # both sessions taken (a condition, not a time: issue 28, finding 10)
                assert time.monotonic() < deadline
                time.sleep(0.005)
            asked = time.monotonic()
            with pytest.raises(SandboxBusy):
                call(small, PLAIN)
            # refused, not queued: a queued call would wait for a 1 s loop to end
            assert time.monotonic() - asked < 0.5
            assert all(f.result().error.type == "timeout" for f in running)  # type: ignore[union-attr]
        assert plain_call_works(small)
    finally:
        small.close()


def test_closing_the_pool_ends_its_processes() -> None:
    pool = EmbeddedSandbox(workers=2)
    assert plain_call_works(pool)
    pids = pool.worker_pids()
    assert pids
    pool.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_worker_is_replaced_after_its_share_of_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    import sandbox.embedded as embedded

    monkeypatch.setattr(embedded, "CALLS_PER_WORKER", 3)
    single = EmbeddedSandbox(workers=1, max_active_sessions=1)
    try:
        assert plain_call_works(single)
        first = single.worker_pids()
        assert len(first) == 1
        assert all(plain_call_works(single) for _ in range(2))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and single.worker_pids() in ([], first):
            time.sleep(0.02)
        assert single.worker_pids() and single.worker_pids() != first
        assert all(plain_call_works(single) for _ in range(4))
    finally:
        single.close()
