"""The project's hostile corpus (`tests/contract/hostile_cases.json`) against every sandbox backend.

Each case is a module-style source called with `run({})`, a 500 ms timeout and a 64 MB memory cap;
its `expect` is `any` (a result or an error, never a crash of the service), `error`,
`error:<type>` or `value:<json>`. After every case the sandbox must still serve a plain call, and
the service process must still answer its health check. The cases run in the corpus's order
(`pollution-2` looks for what `pollution-1` left behind).

A case expected to exceed its memory runs with the most time a call may have instead: a sandbox
says which limit a call exceeded first, and on a busy machine a memory bomb's worker (lowered
below every short call after 20 ms) may not get the CPU to fill 64 MB within 500 ms of wall clock,
a `timeout` then, and rightly so (issue 28, finding 10). The test sets the limit it depends on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from domain.ports import Execution, Sandbox, SourceUnit
from sandbox.config import SandboxConfig
from sandbox.remote import RemoteSandbox

CORPUS = Path(__file__).with_name("hostile_cases.json")
CASES: list[dict[str, Any]] = json.loads(CORPUS.read_text())["cases"]
TIMEOUT_MILLIS = 500
# The sandbox's most (SandboxConfig.max_timeout_millis): time enough for any machine to fill 64 MB.
MEMORY_CASE_TIMEOUT_MILLIS = SandboxConfig().max_timeout_millis


def timeout_for(case: dict[str, Any]) -> int:
    """The case's time limit: generous for a case whose point is its memory, so memory is exceeded first."""
    return MEMORY_CASE_TIMEOUT_MILLIS if case["expect"] == "error:memory" else TIMEOUT_MILLIS


def assert_still_serves(sandbox: Sandbox) -> None:
    plain = Execution(units=(SourceUnit("plain", "exports.run = function (input) { return input.n * 2; };"),), input={"n": 21})
    result = sandbox.run(plain)
    assert result.error is None and result.output == 42, result


def test_the_corpus_is_all_here() -> None:
    assert len(CASES) >= 45
    assert len({case["id"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_a_hostile_case_gets_its_expected_outcome_and_the_sandbox_keeps_serving(sandbox: Sandbox, case: dict[str, Any]) -> None:
    execution = Execution(units=(SourceUnit("hostile", case["source"]),), input={}, timeout_millis=timeout_for(case),
                          memory_limit_mb=64)
    result = sandbox.run(execution)  # never raises: whatever the code does is in the result
    expect: str = case["expect"]
    if expect == "error":
        assert result.error is not None, f"expected an error, got {result.output!r}"
    elif expect.startswith("error:"):
        assert result.error is not None and result.error.type == expect.split(":", 1)[1], result
    elif expect.startswith("value:"):
        assert result.error is None, result.error
        assert result.output == json.loads(expect.split(":", 1)[1])
    else:
        assert expect == "any"
    if isinstance(sandbox, RemoteSandbox):
        assert httpx.get(f"{sandbox.url}/healthz", timeout=5).status_code == 200
    assert_still_serves(sandbox)


def test_a_plain_call_works_after_the_whole_corpus(sandbox: Sandbox) -> None:
    assert_still_serves(sandbox)
