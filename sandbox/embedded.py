"""The embedded QuickJS runner: a fresh context per call, made before the call arrives.

A background thread keeps a few fresh contexts ready, each with the prelude already evaluated, so a
call pays only for its own modules. Each context serves exactly one call and is then dropped:
nothing leaks from one call to the next. (The binding tracks the stack of whichever thread
evaluates, so a context made on one thread is safe to use, alone, on another.)

Limits: the call's timeout (clamped to the platform cap) is the engine's time limit, the memory
cap is the context's heap limit, and the stack is capped well below the thread's own stack. No host
function is ever called from JavaScript: `log` writes into a JavaScript array and `ai.context()`
returns data written into the program (DESIGN, "What the Python binding allows").

Known limit of this first runner, lifted by the hardened one (worker processes): the engine's time
limit counts the process's CPU time, so with several calls running at once a call can be
interrupted before its own wall-clock budget is spent.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import deque

import _quickjs

from domain.errors import SandboxBusy
from domain.ports import Execution, ExecutionError, ExecutionResult, Sandbox
from sandbox.bundle import PRELUDE, Program, build_program

log = logging.getLogger("toolsmith.sandbox")

STACK_BYTES = 1024 * 1024
_PLACE = re.compile(r"<input>:(\d+)(?::(\d+))?")


class ContextSupply:
    """Keeps `size` fresh contexts with the prelude evaluated; makes one inline when none is ready."""

    def __init__(self, size: int = 4) -> None:
        self._size = size
        self._ready: deque[_quickjs.Context] = deque()
        self._used: deque[_quickjs.Context] = deque()
        self._wanted = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def take(self) -> _quickjs.Context:
        if self._size and self._thread is None:
            self._start()
        try:
            return self._ready.popleft()
        except IndexError:
            return _fresh_context()

    def discard(self, context: _quickjs.Context) -> None:
        """Hands a used context over to be freed, and asks for it to be replaced, off the call's path.

        Both freeing and making a context hold the interpreter lock, so they wait until the call
        is over: the caller calls this once it has its result.
        """
        if self._size:
            self._used.append(context)
            self._wanted.set()

    def close(self) -> None:
        self._closed = True
        self._wanted.set()
        self._ready.clear()
        self._used.clear()

    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._fill, name="quickjs-context-supply", daemon=True)
                self._thread.start()

    def _fill(self) -> None:
        while not self._closed:
            while self._used:
                self._used.popleft()  # the last reference: the context and its runtime are freed here
            while len(self._ready) < self._size and not self._closed:
                self._ready.append(_fresh_context())
            self._wanted.wait()
            self._wanted.clear()


def _fresh_context() -> _quickjs.Context:
    context = _quickjs.Context()
    context.set_max_stack_size(STACK_BYTES)
    context.eval(PRELUDE)
    return context


class EmbeddedSandbox(Sandbox):
    def __init__(
        self,
        *,
        max_timeout_millis: int = 10_000,
        max_memory_mb: int = 512,
        max_active_sessions: int = 16,
        ready_contexts: int = 4,
    ) -> None:
        self.max_timeout_millis = max_timeout_millis
        self.max_memory_mb = max_memory_mb
        self.max_active_sessions = max_active_sessions
        self._sessions = threading.BoundedSemaphore(max_active_sessions)
        self._supply = ContextSupply(ready_contexts)

    def close(self) -> None:
        self._supply.close()

    def run(self, execution: Execution) -> ExecutionResult:
        return self._execute(execution, check=False)

    def check(self, execution: Execution) -> ExecutionResult:
        return self._execute(execution, check=True)

    def _execute(self, execution: Execution, *, check: bool) -> ExecutionResult:
        if not self._sessions.acquire(blocking=False):
            raise SandboxBusy(self.max_active_sessions)
        try:
            started = time.perf_counter()
            program = build_program(execution, check=check)
            output, error, logs = self._evaluate(program, execution)
            duration = (time.perf_counter() - started) * 1000
        finally:
            self._sessions.release()
        if logs:
            for line in logs:
                log.info("module log", extra={"codeModule": execution.target.name, "logLine": line})
        return ExecutionResult(output=output, error=error, logs=tuple(logs), duration_millis=round(duration, 3))

    def _evaluate(self, program: Program, execution: Execution) -> tuple[object, ExecutionError | None, list[str]]:
        timeout = min(execution.timeout_millis, self.max_timeout_millis) / 1000
        memory_mb = min(execution.memory_limit_mb, self.max_memory_mb)
        context = self._supply.take()
        try:
            return self._run_in(context, program, timeout, memory_mb)
        finally:
            self._supply.discard(context)

    def _run_in(self, context: _quickjs.Context, program: Program, timeout: float, memory_mb: int) -> tuple[object, ExecutionError | None, list[str]]:
        deadline = time.monotonic() + timeout
        context.set_memory_limit(memory_mb * 1024 * 1024)
        context.set_time_limit(timeout)
        try:
            outcome = context.eval(program.text)
            while outcome is None:
                # `run` returned a promise: drain the job queue until it settles.
                if time.monotonic() >= deadline:
                    return None, _timeout(timeout), _read_logs(context)
                if not context.execute_pending_job():
                    outcome = context.eval("$r")
                    if outcome is None:
                        return None, ExecutionError("timeout", "run() returned a promise that never settles"), _read_logs(context)
        except _quickjs.StackOverflow as e:
            return None, ExecutionError("stack", _first_line(e)), _read_logs(context)
        except _quickjs.JSException as e:
            return None, _escaped_error(e, program, timeout, memory_mb), _read_logs(context)
        except MemoryError:
            return None, _out_of_memory(memory_mb), []
        except (ValueError, SystemError) as e:  # the binding refusing its input: never the caller's 500
            log.warning("sandbox refused a program", extra={"reason": str(e)})
            return None, ExecutionError("runtime", f"the sandbox could not run this code: {e}"), []
        if not isinstance(outcome, str):
            return None, ExecutionError("runtime", "the program ended without a result"), []
        body = json.loads(outcome)
        if body[0] == 1:
            return body[1], None, body[2]
        type_, message, logs = body[1], body[2], body[3]
        if not type_:
            type_ = _type_of(message)
        if type_ == "memory":
            message = _out_of_memory(memory_mb).message
        return None, ExecutionError(type_, message), logs


def _type_of(message: str) -> str:
    if message.startswith("InternalError: out of memory"):
        return "memory"
    if message.startswith("RangeError: Maximum call stack size exceeded"):
        return "stack"
    # Known gap: when the heap cannot even hold an error, the engine throws null, which reads here
    # as a runtime error "null"; the hardened runner will tell it apart.
    return "runtime"


def _timeout(seconds: float) -> ExecutionError:
    return ExecutionError("timeout", f"the call did not finish within {seconds * 1000:.0f} ms")


def _out_of_memory(memory_mb: int) -> ExecutionError:
    return ExecutionError("memory", f"the call exceeded its memory limit of {memory_mb} MB")


def _first_line(error: Exception) -> str:
    return str(error).split("\n", 1)[0]


def _escaped_error(error: Exception, program: Program, timeout: float, memory_mb: int) -> ExecutionError:
    """Types an error that escaped the program's own try/catch."""
    message = _first_line(error)
    if "interrupted" in message:
        return _timeout(timeout)
    if "out of memory" in message:
        return _out_of_memory(memory_mb)
    if "call stack" in message:
        return ExecutionError("stack", message)
    if message.startswith("SyntaxError"):
        place = _PLACE.search(str(error))
        where = program.locate(int(place.group(1))) if place else None
        if where is not None:
            unit, line = where
            column = f", column {place.group(2)}" if place and place.group(2) else ""
            message = f"{message} ({unit}, line {line}{column})"
        return ExecutionError("syntax", message)
    return ExecutionError("runtime", message)


def _read_logs(context: _quickjs.Context) -> list[str]:
    """The logs written before an escape; the context gets a fresh time budget for this read."""
    try:
        text = context.eval("JSON.stringify($g)")
        return list(json.loads(text)) if isinstance(text, str) else []
    except Exception:  # noqa: BLE001 - a context that cannot even answer this has no logs to give
        return []
