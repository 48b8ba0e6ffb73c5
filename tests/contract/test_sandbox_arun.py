"""`Sandbox.arun`: a tool call awaited from an event loop answers what `run` answers, whichever backend.

The embedded runner awaits its worker's answer on the loop itself (`sandbox.embedded`): a call needs
no thread, every limit holds as in `run` (the deadline kills the worker, the memory bound, the
session cap refuses at once), and a call whose task is cancelled costs its worker and nothing else.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.to_thread
import pytest

from domain.errors import SandboxBusy
from domain.ports import Execution, ExecutionResult, Sandbox, SourceUnit
from sandbox.config import SandboxConfig
from sandbox import embedded as sandbox_embedded
from sandbox.embedded import EmbeddedSandbox

DATES = SourceUnit("dates", "exports.year = function (d) { return d.slice(0, 4); };")
REPORT = SourceUnit("report", "exports.run = function (input) {\n  log('for ' + input.day);\n  return 'Report ' + dates.year(input.day);\n};", ("dates",))
LOOP = SourceUnit("tool", "exports.run = function () { log('looping'); while (true) {} };")

CASES = {
    "a result and its log": Execution(units=(DATES, REPORT), input={"day": "1999-01-01"}),
    "a thrown error": Execution(units=(SourceUnit("tool", "exports.run = function () { throw new TypeError('nope'); };"),)),
    "a syntax error": Execution(units=(SourceUnit("tool", "exports.run = function () {\n  return 1 +;\n};"),)),
    "a timeout": Execution(units=(LOOP,), timeout_millis=300),
    "a memory bomb": Execution(
        units=(SourceUnit("tool", "exports.run = function () { var a = []; while (true) a.push(new Array(100000).fill(7)); };"),),
        memory_limit_mb=16, timeout_millis=5_000,
    ),
    "a script": Execution(units=(SourceUnit("tool", "a + b"),), input={"a": 2, "b": 3}, style="script"),
}


def outcome(result: ExecutionResult) -> tuple[Any, Any, tuple[str, ...]]:
    return result.output, result.error, result.logs


@pytest.mark.parametrize("case", list(CASES))
def test_arun_answers_what_run_answers(sandbox: Sandbox, case: str) -> None:
    execution = CASES[case]
    ran = sandbox.run(execution)
    awaited = asyncio.run(sandbox.arun(execution))
    assert outcome(awaited) == outcome(ran)
    assert outcome(asyncio.run(sandbox.arun(CASES["a result and its log"])))[0] == "Report 1999"  # and it still serves


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedSandbox]:
    sandbox = EmbeddedSandbox(SandboxConfig(max_active_sessions=2))
    yield sandbox
    sandbox.close()


def _wait_until_idle(sandbox: EmbeddedSandbox, workers: int = 2) -> None:
    deadline = time.monotonic() + 10
    while len(sandbox._idle) < workers:  # noqa: SLF001 - the pool's replacements start in the background
        assert time.monotonic() < deadline, "the pool did not fill again"
        time.sleep(0.01)


def test_a_call_awaited_on_the_loop_needs_no_thread(embedded: EmbeddedSandbox) -> None:
    """Every thread of the loop's pool is taken (a blocking call holds the only one): a call, a
    timeout included, is answered all the same, and the loop goes on running other tasks meanwhile."""
    _wait_until_idle(embedded)

    async def main() -> tuple[ExecutionResult, ExecutionResult, int]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = 1
        release = threading.Event()
        holder = asyncio.ensure_future(anyio.to_thread.run_sync(release.wait))
        await asyncio.sleep(0.05)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticking = asyncio.ensure_future(ticker())
        try:
            with anyio.fail_after(5):
                answered = await embedded.arun(CASES["a result and its log"])
                timed_out = await embedded.arun(CASES["a timeout"])
        finally:
            ticking.cancel()
            release.set()
            await holder
        return answered, timed_out, ticks

    answered, timed_out, ticks = asyncio.run(main())
    assert answered.output == "Report 1999" and answered.logs == ("for 1999-01-01",), answered
    assert timed_out.error is not None and timed_out.error.type == "timeout" and timed_out.logs == ("looping",), timed_out
    assert ticks >= 10, f"the loop ran its other tasks {ticks} times during a 300 ms call"


def test_a_cancelled_call_kills_its_worker_and_the_pool_serves_on(embedded: EmbeddedSandbox) -> None:
    _wait_until_idle(embedded)

    async def main() -> ExecutionResult:
        call = asyncio.ensure_future(embedded.arun(Execution(units=(LOOP,), timeout_millis=5_000)))
        deadline = time.monotonic() + 5
        while not embedded._busy_pids():  # noqa: SLF001
            assert time.monotonic() < deadline, "the call never reached a worker"
            await asyncio.sleep(0.005)
        pid = embedded._busy_pids()[0]  # noqa: SLF001
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert pid not in embedded.worker_pids()
        assert not embedded.busy()
        return await embedded.arun(CASES["a result and its log"])

    assert asyncio.run(main()).output == "Report 1999"


def test_a_call_beyond_the_session_cap_is_refused_at_once(embedded: EmbeddedSandbox) -> None:
    _wait_until_idle(embedded)

    async def main() -> float:
        slow = [asyncio.ensure_future(embedded.arun(Execution(units=(LOOP,), timeout_millis=1_000))) for _ in range(2)]
        await asyncio.sleep(0.1)
        asked = time.perf_counter()
        with pytest.raises(SandboxBusy):
            await embedded.arun(CASES["a result and its log"])
        refused_in = time.perf_counter() - asked
        for result in await asyncio.gather(*slow):
            assert result.error is not None and result.error.type == "timeout", result
        return refused_in

    refused_in = asyncio.run(main())
    assert refused_in < 0.1, f"the refusal took {refused_in * 1000:.0f} ms"
    assert asyncio.run(embedded.arun(CASES["a result and its log"])).output == "Report 1999"


ECHO = SourceUnit("echo", "exports.run = function (input) { return input; };")


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_worker_that_answered_on_the_loop_then_takes_a_large_call_from_a_thread(
    loop: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """uvloop's `add_reader` makes the worker's socket non-blocking (libuv's poll handle does), and
    it stays so: a large request written to that worker from a thread then (`run`, or `arun` with
    a request it hands to a thread) failed with EAGAIN as soon as the socket's buffer was full,
    and the call was a `crash` ("died while idle"). Each goes on answering what it was given, on
    the same worker. (A program that runs longer than `LONG_CALL_SECONDS` lowers its worker, which
    then retires: echoing 1.5 MB on a loaded machine can take that long, so it is raised here.)"""
    monkeypatch.setattr(sandbox_embedded, "LONG_CALL_SECONDS", 5.0)
    factory = asyncio.new_event_loop if loop == "asyncio" else pytest.importorskip("uvloop").new_event_loop
    sandbox = EmbeddedSandbox(SandboxConfig(workers=1, max_active_sessions=2))
    try:
        _wait_until_idle(sandbox, workers=1)
        small = {"value": {"n": 2**40}}
        large = {"text": "é" * 262144}  # about 1.5 MB of JSON escapes: more than a socket's buffer
        with asyncio.Runner(loop_factory=factory) as runner:
            for _ in range(2):
                assert outcome(runner.run(sandbox.arun(Execution(units=(ECHO,), input=small)))) == (small, None, ())
                assert outcome(sandbox.run(Execution(units=(ECHO,), input=large))) == (large, None, ())
                assert outcome(runner.run(sandbox.arun(Execution(units=(ECHO,), input=small)))) == (small, None, ())
                assert outcome(runner.run(sandbox.arun(Execution(units=(ECHO,), input=large)))) == (large, None, ())
        assert len(sandbox.worker_pids()) == 1
    finally:
        sandbox.close()
