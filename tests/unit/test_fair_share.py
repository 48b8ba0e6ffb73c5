"""docs/tenants.md, fair share: each tenant's sandbox sessions are counted and capped, one beyond the cap
is refused at once with `TenantBusy`, its sessions beyond the first few are marked background, and a
publish's parallel checks stay within the tenant's share without refusing themselves."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from application.execution import checked_in_order
from application.fair_share import TenantSandbox, TenantSessions
from domain.errors import TenantBusy
from domain.ports import Execution, ExecutionResult, Sandbox, SourceUnit
from infrastructure.settings import Settings


class RecordingSandbox(Sandbox):
    """Records each execution it is given (its `background` mark); a call lasts until `release` is
    set, or a few milliseconds when `release` is None."""

    max_active_sessions = 16

    def __init__(self, parallelism: int = 4) -> None:
        self.given: list[Execution] = []
        self.release: threading.Event | None = None
        self.running = 0
        self.most = 0
        self._parallelism = parallelism
        self._lock = threading.Lock()

    def run(self, execution: Execution) -> ExecutionResult:
        return self._call(execution)

    def check(self, execution: Execution) -> ExecutionResult:
        return self._call(execution)

    def parallelism(self) -> int:
        return self._parallelism

    def _call(self, execution: Execution) -> ExecutionResult:
        with self._lock:
            self.given.append(execution)
            self.running += 1
            self.most = max(self.most, self.running)
        if self.release is not None:
            self.release.wait(5)
        else:
            time.sleep(0.003)
        with self._lock:
            self.running -= 1
        return ExecutionResult(output=True)


def _bundle(name: str = "m") -> Execution:
    return Execution(units=(SourceUnit(name, "exports.run = () => 1;"),))


def _hold(sandbox: TenantSandbox, count: int) -> list[threading.Thread]:
    """`count` more calls of the tenant, started and left running (until the inner sandbox's
    `release`), one after the other so that each one's place among them is known."""
    threads = []
    for _ in range(count):
        before = sandbox.sessions.held(sandbox.tenant)
        thread = threading.Thread(target=sandbox.run, args=(_bundle(),))
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 5
        while sandbox.sessions.held(sandbox.tenant) == before and time.monotonic() < deadline:
            time.sleep(0.001)
    return threads


def test_a_tenant_at_its_cap_is_refused_at_once_and_another_tenant_is_not() -> None:
    sessions = TenantSessions(2, foreground=1)
    inner = RecordingSandbox()
    inner.release = threading.Event()
    alpha, beta = sessions.sandbox("alpha", inner), sessions.sandbox("beta", inner)
    held = _hold(alpha, 2)
    try:
        started = time.perf_counter()
        with pytest.raises(TenantBusy) as refused:
            alpha.run(_bundle())
        assert time.perf_counter() - started < 0.5  # at once: nothing queues
        assert refused.value.limit == 2 and refused.value.code == "tenant-busy"
        assert alpha.busy() and not beta.busy()
        # the other tenant's call goes through while alpha's share is taken
        inner.release.set()
        assert beta.run(_bundle()).output is True
    finally:
        inner.release.set()
        for thread in held:
            thread.join()
    # the sessions came back: alpha may call again
    assert sessions.held("alpha") == 0 and alpha.run(_bundle()).output is True


def test_a_session_is_given_back_when_the_call_fails() -> None:
    sessions = TenantSessions(1)

    class Failing(RecordingSandbox):
        def run(self, execution: Execution) -> ExecutionResult:
            raise RuntimeError("the sandbox broke")

    sandbox = sessions.sandbox("alpha", Failing())
    for _ in range(3):
        with pytest.raises(RuntimeError):
            sandbox.run(_bundle())
    assert sessions.held("alpha") == 0


def test_sessions_beyond_the_first_few_of_a_tenant_are_marked_background() -> None:
    sessions = TenantSessions(4, foreground=1)
    inner = RecordingSandbox()
    inner.release = threading.Event()
    alpha, beta = sessions.sandbox("alpha", inner), sessions.sandbox("beta", inner)
    held = _hold(alpha, 3)
    try:
        beta_call = threading.Thread(target=beta.check, args=(_bundle(),))  # beta's first: its own, in the foreground
        beta_call.start()
        while len(inner.given) < 4:
            time.sleep(0.001)
    finally:
        inner.release.set()
        for thread in held:
            thread.join()
    beta_call.join()
    assert [execution.background for execution in inner.given] == [False, True, True, False]


def test_a_publish_checks_within_the_tenant_share_and_never_refuses_itself() -> None:
    # the sandbox could take four checks at once; the tenant's share is two
    sessions = TenantSessions(2, foreground=2)
    inner = RecordingSandbox(parallelism=4)
    sandbox = sessions.sandbox("alpha", inner)
    assert sandbox.parallelism() == 2
    targets = [f"m{i}" for i in range(30)]
    checks = checked_in_order(sandbox, targets, _bundle, first_failure_only=False)
    assert [name for name, _ in checks] == targets
    assert inner.most == 2


def test_a_publish_beside_the_tenant_own_calls_takes_the_sessions_left() -> None:
    sessions = TenantSessions(2, foreground=2)
    inner = RecordingSandbox(parallelism=4)
    sandbox = sessions.sandbox("alpha", inner)
    blocker = threading.Event()
    # one of alpha's calls holds a session for the publish's first checks
    slow = TenantSandbox(_Slow(blocker), sessions, "alpha")
    holder = threading.Thread(target=slow.run, args=(_bundle(),))
    holder.start()
    while sessions.held("alpha") < 1:
        time.sleep(0.001)
    threading.Timer(0.05, blocker.set).start()
    targets = [f"m{i}" for i in range(20)]
    checks = checked_in_order(sandbox, targets, _bundle, first_failure_only=False)
    holder.join()
    assert [name for name, _ in checks] == targets and all(result.ok for _, result in checks)


def test_a_publish_is_refused_when_the_tenant_calls_hold_every_session() -> None:
    sessions = TenantSessions(1)
    blocker = threading.Event()
    holder = threading.Thread(target=TenantSandbox(_Slow(blocker), sessions, "alpha").run, args=(_bundle(),))
    holder.start()
    while sessions.held("alpha") < 1:
        time.sleep(0.001)
    try:
        with pytest.raises(TenantBusy):
            checked_in_order(sessions.sandbox("alpha", RecordingSandbox()), ["a", "b"], _bundle, first_failure_only=False)
    finally:
        blocker.set()
        holder.join()


class _Slow(RecordingSandbox):
    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release

    def run(self, execution: Any) -> ExecutionResult:
        return self._call(execution)


def test_the_tenant_cap_defaults_to_half_the_sandbox_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLSMITH_TENANT_MAX_SESSIONS", raising=False)
    monkeypatch.delenv("CODESANDBOX_MAX_ACTIVE_SESSIONS", raising=False)
    assert Settings().tenant_session_cap() == 8
    assert Settings(sandbox_max_active_sessions=5).tenant_session_cap() == 2
    assert Settings(sandbox_max_active_sessions=1).tenant_session_cap() == 1
    monkeypatch.setenv("TOOLSMITH_TENANT_MAX_SESSIONS", "3")
    assert Settings().tenant_session_cap() == 3
    monkeypatch.setenv("TOOLSMITH_TENANT_MAX_SESSIONS", "0")
    with pytest.raises(ValueError):
        Settings()


class AwaitedSandbox(RecordingSandbox):
    """A sandbox whose `arun` is awaited on the loop until `go` is set (as the embedded one's is)."""

    def __init__(self) -> None:
        super().__init__()
        self.go = asyncio.Event()

    async def arun(self, execution: Execution) -> ExecutionResult:
        self.given.append(execution)
        await self.go.wait()
        return ExecutionResult(output=1)


def test_an_awaited_run_holds_a_session_of_its_tenant_until_it_ends_or_is_cancelled() -> None:
    sessions = TenantSessions(2, foreground=1)
    inner = AwaitedSandbox()
    alpha = TenantSandbox(inner, sessions, "alpha")

    async def scenario() -> None:
        first = asyncio.create_task(alpha.arun(_bundle()))
        second = asyncio.create_task(alpha.arun(_bundle()))
        await asyncio.sleep(0)
        assert sessions.held("alpha") == 2
        assert [e.background for e in inner.given] == [False, True]  # beyond the first: background
        with pytest.raises(TenantBusy):  # at once, awaiting nothing
            await alpha.arun(_bundle())
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        assert sessions.held("alpha") == 1
        inner.go.set()
        assert (await first).output == 1
        assert sessions.held("alpha") == 0

    asyncio.run(scenario())
