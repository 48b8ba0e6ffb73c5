"""Issue 12, the embedded runner's processes: each worker's whole memory bounded per call (finding 1),
no secret and no descriptor of the service in a worker (finding 5), and the host function serving
only what a call's profile grants, whoever calls it (finding 4).

These run the real pool, a zygote and workers forked from it, and read the workers from /proc.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.ports import Execution, ExecutionResult, SourceUnit
from sandbox.embedded import EmbeddedSandbox
from sandbox.engine import Engine
from sandbox.engine import CONTEXT, HOST, HTTP, INTL, LOG
from sandbox.worker import MEMORY_ALLOWANCE_MB

PLAIN = SourceUnit("plain", "exports.run = function (input) { return input.n * 2; };")
HUGE = "var s = 'x'.repeat(30 * 1024 * 1024);"


def call(sandbox: EmbeddedSandbox, content: str, **kw: object) -> ExecutionResult:
    kw.setdefault("input", {"n": 21})
    return sandbox.run(Execution(units=(SourceUnit("tool", content),), **kw))  # type: ignore[arg-type]


def plain_call_works(sandbox: EmbeddedSandbox) -> bool:
    result = sandbox.run(Execution(units=(PLAIN,), input={"n": 21}))
    return result.error is None and result.output == 42


def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def one_worker(sandbox: EmbeddedSandbox) -> int:
    deadline = time.monotonic() + 30
    while len(sandbox.worker_pids()) != 1:
        assert time.monotonic() < deadline, sandbox.worker_pids()
        time.sleep(0.02)
    return sandbox.worker_pids()[0]


@pytest.fixture
def single() -> Iterator[EmbeddedSandbox]:
    sandbox = EmbeddedSandbox(workers=1, max_active_sessions=1, allowed_domains="example.com")
    assert plain_call_works(sandbox)
    yield sandbox
    sandbox.close()


# -- finding 1: the worker's memory ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "source", "expected"),
    [
        ("log", f"exports.run = function () {{ {HUGE} log(s); return 1; }};", None),
        ("intl", f"exports.run = function () {{ {HUGE} return new Intl.NumberFormat('en', {{currency: s}}).format(1); }};", "RangeError"),
        ("locale", f"exports.run = function () {{ {HUGE} return (1).toLocaleString(s); }};", "RangeError"),
        ("http", f"exports.run = async function () {{ {HUGE} return (await http.fetch('https://example.com', {{method: 'POST', body: s}})).status; }};", "RangeError"),
        ("context", f"exports.run = function () {{ {HUGE} return ai.context(s); }};", None),
        *(
            (f"direct {kind}", f"exports.run = function () {{ {HUGE} log(1); ai; return $host('{kind}', s); }};", "ReferenceError")
            for kind in ("l", "i", "f", "c", "s")
        ),
    ],
)
def test_a_30_mb_string_at_a_host_function_is_refused_and_the_worker_stays_within_its_bound(
    single: EmbeddedSandbox, name: str, source: str, expected: str | None
) -> None:
    pid = one_worker(single)
    baseline = status_kib(pid, "VmRSS")
    result = call(single, source, memory_limit_mb=128, timeout_millis=10_000)
    if expected is None:
        assert result.error is None, result.error
    else:
        assert result.error is not None and result.error.type in ("runtime", "memory"), result
        assert result.error.type == "memory" or expected in result.error.message, result.error
    if pid in single.worker_pids():  # the worker served on: its peak is readable
        peak = status_kib(pid, "VmHWM")
        assert peak < baseline + (128 + MEMORY_ALLOWANCE_MB) * 1024, (name, baseline, peak)
    assert plain_call_works(single)


# The check runs in a new interpreter, as a worker does (forked from the zygote, a process of its own):
# a fork of the test run would inherit whatever heap earlier tests freed, and a freed chunk the process
# still holds may be used again within the bound (MemoryBound's docstring), so 64 MB could fit in it.
PROCESS_BOUND_CHECKS = """
import _quickjs
from sandbox.worker import MemoryBound

bound = MemoryBound(8)
bound.enter(16)
try:
    blob = bytearray(64 * 1024 * 1024)
    print("n", end="")  # allocated past the bound
except MemoryError:
    print("y", end="")
context = _quickjs.Context()  # no engine limit: only the process bound
try:
    context.eval("'x'.repeat(64 * 1024 * 1024).length")
    print("n", end="")
except _quickjs.JSException as e:
    print("y" if "out of memory" in str(e) else "n", end="")
bound.lift()
blob = bytearray(64 * 1024 * 1024)
print("y" if len(blob) else "n", end="", flush=True)
"""


def test_the_process_bound_fails_any_allocation_past_it_until_lifted() -> None:
    # Python's heap and the engine's heap alike are held to what the process holds now plus the
    # call's limit plus the allowance; one letter per check.
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.run(
        [sys.executable, "-c", PROCESS_BOUND_CHECKS], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    assert (child.stdout, child.returncode) == ("yyy", 0), child.stderr


def test_a_memory_error_retires_the_worker_that_ran_it(single: EmbeddedSandbox) -> None:
    pid = one_worker(single)
    result = call(single, "exports.run = function () { return 'x'.repeat(64 * 1024 * 1024).length; };", memory_limit_mb=16)
    assert result.error is not None and result.error.type == "memory"
    assert plain_call_works(single)
    assert pid not in single.worker_pids()


def test_a_result_over_the_cap_is_a_result_error(single: EmbeddedSandbox) -> None:
    result = call(single, "exports.run = function () { return 'x'.repeat(9 * 1024 * 1024); };", memory_limit_mb=128)
    assert result.error is not None and result.error.type == "result"
    assert "larger than 8388608 characters" in result.error.message


# -- finding 5: what a worker inherits ----------------------------------------------------------------------------


SECRETS = {
    "TOOLSMITH_ADMIN_TOKEN": "admin-token-that-must-not-leak",
    "CODESANDBOX_SECRET": "sandbox-secret-that-must-not-leak",
    "POSTGRES_PASSWORD": "postgres-password-that-must-not-leak",
    "TOOLSMITH_DATA_DIR": "/srv/toolsmith-data-that-must-not-leak",
    "AWS_SECRET_ACCESS_KEY": "aws-key-that-must-not-leak",
}


def test_workers_hold_no_secret_no_data_dir_and_no_descriptor_of_the_service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)  # as a service started in its data dir
    data_file = (tmp_path / "events.sqlite").open("w")  # a descriptor the service holds
    sandbox = EmbeddedSandbox(workers=1, max_active_sessions=1)
    try:
        assert plain_call_works(sandbox)
        worker = one_worker(sandbox)
        zygote = int(Path(f"/proc/{worker}/stat").read_text().rsplit(")", 1)[1].split()[1])
        for pid in (worker, zygote):
            environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            for name, value in SECRETS.items():
                assert value not in environ and f"{name}=" not in environ, (pid, name)
            assert os.readlink(f"/proc/{pid}/cwd") == "/"
            targets = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
            for fd, target in targets.items():
                assert fd in (0, 1, 2) or target.startswith("socket:"), (pid, fd, target)
                assert str(tmp_path) not in target, (pid, fd, target)
            assert targets[0] == "/dev/null"
        # what the code can see of it
        seen = call(sandbox, "exports.run = function () { return [typeof process, typeof require, typeof os, typeof std]; };")
        assert seen.output == ["undefined", "undefined", "undefined", "undefined"]
    finally:
        sandbox.close()
        data_file.close()


# -- finding 4: the host function serves only what the call grants ---------------------------------------------------


def evaluate(grants: int, program: str) -> tuple[str, list[str]]:
    lines: list[str] = []
    engine = Engine(fetch=lambda request, seconds: '{"status": 200, "headers": {}, "text": "fetched", "url": "u"}', emit=lines.append)
    answer = engine.evaluate(engine.fresh(), program, kind="value", memory_mb=128, grants=grants, deadline=time.monotonic() + 5)
    return answer, lines


@pytest.mark.parametrize(
    ("withheld", "program", "granted_answer"),
    [
        (CONTEXT, "$v=$host('c')", '[1,"{\\"userId\\": \\"u1\\"}",[]]'),
        (HTTP, "$v=$host('f','{\"url\":\"https://example.com\",\"method\":\"GET\",\"headers\":{},\"body\":null}')", None),
        (HTTP, "$v=$host('s','fetch').slice(0,9)", '[1,"(function",[]]'),
        (INTL, "$v=$host('i','[\"nf\",\"en\",{}]')", None),
        (INTL, "$v=$host('s','intl').slice(0,9)", None),
        (INTL, "$v=$host('s','locale').slice(0,9)", None),
    ],
)
def test_a_direct_host_call_is_refused_for_every_capability_the_profile_withholds(withheld: int, program: str, granted_answer: str | None) -> None:
    everything = HOST | LOG | CONTEXT | INTL | HTTP
    engine = Engine(fetch=lambda request, seconds: '{"status": 200}')
    engine_answer = engine.evaluate(engine.fresh(), program, kind="value", memory_mb=128, grants=everything, deadline=time.monotonic() + 5,
                                    context_json='{"userId": "u1"}')
    refused = engine.evaluate(engine.fresh(), program, kind="value", memory_mb=128, grants=everything & ~withheld, deadline=time.monotonic() + 5,
                              context_json='{"userId": "u1"}')
    if granted_answer is not None:
        assert engine_answer == granted_answer
    assert engine_answer != refused
    assert "u1" not in refused and "fetched" not in refused and "(function" not in refused
    assert "not available" in refused or refused == '[1,"undefined",[]]', refused


def test_a_direct_log_call_writes_nothing_when_the_profile_withholds_the_log() -> None:
    answer, lines = evaluate(HOST | CONTEXT | INTL | HTTP, "$host('l','\"secret line\"');$v=1")
    assert answer == "[1,1,[]]" and lines == []
    answer, lines = evaluate(HOST | LOG, "$host('l','\"a line\"');$v=1")
    assert lines == ["a line"]


def test_a_log_line_sent_as_json_crosses_whole_and_only_when_the_profile_grants_the_log() -> None:
    answer, lines = evaluate(HOST | LOG, "$host('l',JSON.stringify('a\\u0000b'));$host('l','not json');$host('l','[1]');$v=1")
    assert answer == "[1,1,[]]" and lines == ["a\x00b"]
    answer, lines = evaluate(HOST | CONTEXT | INTL | HTTP, "$host('l',JSON.stringify('secret line'));$v=1")
    assert answer == "[1,1,[]]" and lines == []
    answer, lines = evaluate(HOST | LOG, "$host('l',JSON.stringify('y'.repeat(501)));$v=$host('l',JSON.stringify('\\u0000'.repeat(501)))")
    assert "payload" in answer and lines == ["y" * 500]


def test_the_host_function_refuses_a_payload_over_its_cap_even_called_directly() -> None:
    answer, lines = evaluate(HOST | LOG | INTL, "$v=$host('i','x'.repeat(2*1024*1024));$host('l','y'.repeat(4000))")
    assert "payload" in answer and lines == []
