"""Issue 15, 2: a publish's checks on every worker, each thread taking the next check itself.
What the API tests of parallel publishing do not reach: errors that are not a check's result."""

from __future__ import annotations

import threading
import time

import pytest

from application.execution import checked_in_order
from domain.errors import SandboxBusy, UnknownModule
from domain.ports import Execution, ExecutionError, ExecutionResult, SourceUnit


class FakeSandbox:
    """Two sessions; a check takes a few milliseconds and fails for the targets named in `failing`."""

    def __init__(self, failing: set[str] = frozenset(), refuse_all: bool = False) -> None:
        self.failing = failing
        self.refuse_all = refuse_all
        self.checked: list[str] = []
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def parallelism(self) -> int:
        return 2

    def busy(self) -> bool:
        return False

    def check(self, execution: Execution) -> ExecutionResult:
        if self.refuse_all:
            raise SandboxBusy(2)
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(0.003)
        with self._lock:
            self.running -= 1
            self.checked.append(execution.target.name)
        failed = execution.target.name in self.failing
        return ExecutionResult(output=None if failed else True, error=ExecutionError("link", "LinkError") if failed else None)


def _bundle(name: str) -> Execution:
    return Execution(units=(SourceUnit(name, "exports.f = 1;"),), timeout_millis=1000)


TARGETS = [f"m{i}" for i in range(40)]


def test_every_check_runs_once_two_at_a_time_answered_in_order() -> None:
    sandbox = FakeSandbox()
    checks = checked_in_order(sandbox, TARGETS, _bundle, first_failure_only=False)
    assert [name for name, _ in checks] == TARGETS
    assert sorted(sandbox.checked) == sorted(TARGETS) and sandbox.most == 2
    assert all(result.error is None for _, result in checks)


def test_with_first_failure_only_the_answer_ends_at_the_first_failure_in_order() -> None:
    sandbox = FakeSandbox(failing={"m7", "m12"})
    checks = checked_in_order(sandbox, TARGETS, _bundle, first_failure_only=True)
    assert [name for name, _ in checks] == TARGETS[:8]
    assert checks[-1][1].error is not None and all(result.error is None for _, result in checks[:-1])
    assert len(sandbox.checked) < len(TARGETS)  # nothing started long after the failure was known


def test_a_bundle_that_cannot_be_built_ends_the_publish_with_its_error() -> None:
    sandbox = FakeSandbox()
    before = threading.active_count()

    def bundle(name: str) -> Execution:
        if name == "m20":
            raise UnknownModule("gone")
        return _bundle(name)

    with pytest.raises(UnknownModule):
        checked_in_order(sandbox, TARGETS, bundle, first_failure_only=False)
    assert "m20" not in sandbox.checked and len(sandbox.checked) <= 22  # nothing after it but what ran already
    assert threading.active_count() == before  # no thread left behind


def test_a_refusal_with_nothing_of_ours_running_is_the_callers() -> None:
    with pytest.raises(SandboxBusy):
        checked_in_order(FakeSandbox(refuse_all=True), TARGETS, _bundle, first_failure_only=False)
