"""A background execution (docs/tenants.md, fair share: a tenant's sessions beyond its first few) answers
exactly as any other, from either sandbox; only its CPU priority differs. The embedded runner
lowers its worker once a program of it runs past a short grace, and retires that worker after it;
the remote client says so with a header, which the service reads."""

from __future__ import annotations

import dataclasses
import os
import threading
import time

import httpx

from domain.ports import Execution, ExecutionResult, Sandbox, SourceUnit
from sandbox.config import SandboxConfig
from sandbox.embedded import EmbeddedSandbox
from sandbox.remote import RemoteSandbox
from sandbox.wire import PRIORITY_HEADER, result_to_wire
from tests.sandbox_service import SECRET

DOUBLE = Execution(units=(SourceUnit("double", "exports.run = function (input) { return input.n * 2; };"),), input={"n": 21})
# busy for 300 ms of wall-clock time, then answers
BUSY = Execution(units=(SourceUnit("busy", "exports.run = function () { var t = Date.now(); while (Date.now() - t < 300) {} return 'done'; };"),),
                 input={}, timeout_millis=5000)
SPIN = Execution(units=(SourceUnit("spin", "exports.run = function () { for (;;) {} };"),), input={}, timeout_millis=300)


def test_a_background_execution_answers_as_any_other(sandbox: Sandbox) -> None:
    background = dataclasses.replace(DOUBLE, background=True)
    assert sandbox.run(background).output == 42
    assert sandbox.check(background).error is None
    checked, runs = sandbox.check_then_run(background, [{"n": 1}, {"n": 2}])
    assert checked.error is None and [run.output for run in runs] == [2, 4]
    timed_out = sandbox.run(dataclasses.replace(SPIN, background=True))
    assert timed_out.error is not None and timed_out.error.type == "timeout"
    assert sandbox.run(DOUBLE).output == 42  # and the next normal call is served as ever


def test_the_embedded_runner_lowers_a_background_program_past_its_grace_and_retires_its_worker() -> None:
    pool = EmbeddedSandbox(SandboxConfig())
    try:
        # short background calls answer, and no worker kept for the next call is lowered
        for _ in range(5):
            assert pool.run(dataclasses.replace(DOUBLE, background=True)).output == 42
        assert all(_scheduler(pid) != os.SCHED_IDLE for pid in pool.worker_pids())
        # a long one is lowered where it runs, and its worker retires after it
        seen: list[int] = []
        busy = threading.Thread(target=lambda: seen.append(pool.run(dataclasses.replace(BUSY, background=True)).output))
        busy.start()
        deadline = time.monotonic() + 5
        lowered: set[int] = set()
        while not lowered and time.monotonic() < deadline:
            lowered = {pid for pid in pool._busy_pids() if _scheduler(pid) == os.SCHED_IDLE}
            time.sleep(0.005)
        busy.join()
        assert seen == ["done"] and len(lowered) == 1
        assert not lowered & set(pool.worker_pids())
        # a long call that is not background is never lowered
        busy = threading.Thread(target=pool.run, args=(BUSY,))
        busy.start()
        while busy.is_alive():
            assert all(_scheduler(pid) != os.SCHED_IDLE for pid in pool._busy_pids())
            time.sleep(0.005)
        busy.join()
    finally:
        pool.close()


def _scheduler(pid: int) -> int | None:
    try:
        return os.sched_getscheduler(pid)
    except OSError:  # it ended meanwhile
        return None


def test_the_remote_client_marks_a_background_call_with_a_header() -> None:
    seen: list[str | None] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get(PRIORITY_HEADER))
        return httpx.Response(200, json=result_to_wire(ExecutionResult(output=1)))

    client = RemoteSandbox("http://sandbox.test", secret=SECRET, caller_name="t", capability_profile="default",
                           transport=httpx.MockTransport(answer))
    client.run(DOUBLE)
    client.run(dataclasses.replace(DOUBLE, background=True))
    client.check(dataclasses.replace(DOUBLE, background=True))
    assert seen == [None, "background", "background"]
