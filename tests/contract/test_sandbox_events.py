"""A run's events while it runs (`Execution.events`: its `log()` lines and `ai.progress` reports,
which an MCP request relays as notifications, issue 33), from the embedded runner and from a
`toolsmith sandbox` service alike: told in order while the program runs, never changing its result.
The remote client's side of the wire (`X-Sandbox-Events: stream`, sandbox.wire): a service from
before it answers the plain result, and a stream that breaks is the sandbox being unavailable."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from domain.errors import SandboxUnavailable
from domain.ports import Execution, ExecutionResult, Sandbox, SourceUnit
from sandbox.remote import RemoteSandbox
from sandbox.wire import EVENTS_HEADER, EVENTS_MEDIA_TYPE, result_to_wire

PAUSE = "function pause(ms) { var until = Date.now() + ms; while (Date.now() < until) {} }\n"
STEPS = SourceUnit(name="steps", content=(
    "exports.run = function () {\n" + PAUSE +
    "  log('started'); ai.progress(0, 3, 'first'); pause(300);\n"
    "  ai.progress(1, 3); log('half way'); pause(100);\n"
    "  ai.progress(3, 3, 'done'); return 'three steps';\n};\n"))


class Heard:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.first_at: float | None = None

    def __call__(self, kind: str, payload: Any) -> None:
        if self.first_at is None:
            self.first_at = time.monotonic()
        self.events.append((kind, tuple(payload) if kind == "progress" else payload))


def test_events_are_told_in_order_while_the_program_runs(sandbox: Sandbox) -> None:
    heard = Heard()
    result = sandbox.run(Execution(units=(STEPS,), input={}, events=heard))
    ended = time.monotonic()
    assert result.error is None and result.output == "three steps"
    assert result.logs == ("started", "half way")
    assert heard.events == [("log", "started"), ("progress", (0, 3, "first")), ("progress", (1, 3, None)),
                            ("log", "half way"), ("progress", (3, 3, "done"))]
    assert heard.first_at is not None and heard.first_at < ended - 0.2  # heard while it ran, not at its end


def test_a_run_that_tells_nothing_and_a_failing_listener_change_nothing(sandbox: Sandbox) -> None:
    heard = Heard()
    quiet = sandbox.run(Execution(units=(SourceUnit(name="quiet", content="exports.run = function () { return 7; };"),), input={},
                                  events=heard))
    assert quiet.error is None and quiet.output == 7 and heard.events == []

    def failing(kind: str, payload: Any) -> None:
        raise RuntimeError("the listener is gone")

    result = sandbox.run(Execution(units=(STEPS,), input={}, events=failing))
    assert result.error is None and result.output == "three steps" and result.logs == ("started", "half way")


# -- the remote client's side of the wire ----------------------------------------------------------


def client(answer: Any) -> RemoteSandbox:
    return RemoteSandbox("http://sandbox.test", secret="s", caller_name="tests", capability_profile="default",
                         transport=httpx.MockTransport(answer))


def streamed(*lines: Any) -> httpx.Response:
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    return httpx.Response(200, content=body, headers={"Content-Type": EVENTS_MEDIA_TYPE})


RESULT = result_to_wire(ExecutionResult(output="done", logs=("one",)))


def test_the_client_asks_for_the_stream_only_when_someone_listens_and_reads_a_plain_answer_too() -> None:
    asked: list[str | None] = []

    def plain(request: httpx.Request) -> httpx.Response:  # a service from before the header
        asked.append(request.headers.get(EVENTS_HEADER))
        return httpx.Response(200, json=RESULT)

    heard = Heard()
    sandbox = client(plain)
    assert sandbox.run(Execution(units=(STEPS,), input={}, events=heard)).output == "done"
    assert sandbox.run(Execution(units=(STEPS,), input={})).output == "done"
    assert asked == ["stream", None] and heard.events == []


def test_streamed_lines_are_told_and_the_last_is_the_result() -> None:
    heard = Heard()
    answer = streamed({"log": "one"}, {"progress": [1, None, "half"]}, {"progress": ["x", 1, None]}, {"later": "a line it does not know"},
                      {"result": RESULT})
    result = client(lambda request: answer).run(Execution(units=(STEPS,), input={}, events=heard))
    assert result.output == "done" and result.logs == ("one",)
    assert heard.events == [("log", "one"), ("progress", (1, None, "half"))]  # a malformed report is dropped


@pytest.mark.parametrize("lines, words", [
    (({"log": "one"}, {"problem": {"status": 503, "detail": "the worker pool failed"}}), "the worker pool failed"),
    (({"log": "one"},), "without a result"),
])
def test_a_stream_that_breaks_is_the_sandbox_unavailable(lines: tuple[Any, ...], words: str) -> None:
    with pytest.raises(SandboxUnavailable) as failed:
        client(lambda request: streamed(*lines)).run(Execution(units=(STEPS,), input={}, events=Heard()))
    assert words in str(failed.value) and "http://sandbox.test" in str(failed.value)
