"""The embedded runner (`CODESANDBOX_URL=embedded`): a supervised pool of worker processes.

Each call takes an idle worker (or starts one, up to the session cap), sends it the program and
waits for the answer until the call's wall-clock deadline. A worker that is still running then is
killed (SIGKILL) and replaced; one that dies (an engine crash) costs its call an error result and
nothing else. So a call's timeout is wall-clock time whatever else runs, and no JavaScript can
take the API process down (docs/javascript.md V4).

A check with runs (`check_then_run`, a publish's check of a module with its examples) is one
visit: one request to one worker, which answers each program as it ends, each under its own
deadline. A run that times out, crashes or runs out of memory costs its worker as a call would;
the programs after it go to another worker, in a visit of their own.

A call from a thread (`run`, `check`, `check_then_run`) waits on its worker's socket; a call from
an event loop (`arun`) awaits the same answer on the loop, without a thread (docs/sandbox.md). Both
hold the same conversation with the worker (`_conversation`: send the request, read its frames,
lower the worker at `LONG_CALL_SECONDS`, kill it at the deadline), which waits on nothing itself.

At most `max_active_sessions` calls run at once; one more fails at once with `SandboxBusy` (429):
nothing queues. Workers are forked from a zygote (`sandbox.worker`) in a few milliseconds;
`workers` of them are kept while idle, more start on demand and retire after a minute unused.

Short calls first (docs/tenants.md, fair share): a program still running after `LONG_CALL_SECONDS` has
its worker lowered where it stands: to niceness 19, so that it yields the CPU to ordinary calls
and yet goes on; or, in a background execution (`Execution.background`: a tenant's sessions
beyond its first few), to `SCHED_IDLE`, so that it gets the CPU only when nothing else wants it.
One tenant's flood of busy loops thus leaves the CPU to the others' calls, while a short call, of
any tenant and any rank, is over before it could be lowered and runs as fast as ever. An
unprivileged process cannot raise a priority back, so a lowered worker retires after its visit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from domain.errors import SandboxBusy, SandboxUnavailable
from domain.ports import Execution, ExecutionError, ExecutionResult, Sandbox
from domain.values import TOO_DEEP_RESULT, too_deep, well_formed
from infrastructure.priority import lower
from sandbox.bundle import Program, build_program
from sandbox.capabilities import Capabilities
from sandbox.config import SandboxConfig
from sandbox.engine import CONTEXT, HOST, HTTP, INTL, LOG
from sandbox.worker import Frames, encode_visit, passed_check

log = logging.getLogger("toolsmith.sandbox")

IDLE_RETIREMENT_SECONDS = 60.0
# A worker is replaced after this many calls, so that whatever the engine leaks cannot pile up.
CALLS_PER_WORKER = 10_000
# How long a program runs at the normal priority before its worker is lowered: longer than an
# ordinary call's evaluation, well under the least timeout a tool may have (R9's 100 ms), so that
# no busy loop escapes it by timing out first.
LONG_CALL_SECONDS = 0.02
ZYGOTE_START_SECONDS = 60.0
# The largest request `arun` writes from the event loop; a larger one (a large bundle) could fill
# the socket's buffer and hold the loop until the worker reads, so its call goes to a thread.
INLINE_REQUEST_BYTES = 64 * 1024
_PLACE = re.compile(r"<input>:(\d+)(?::(\d+))?")
_ROOT = Path(__file__).resolve().parent.parent

# A program's outcome as a visit reads it: output, error, logs, and its seconds.
_Answer = tuple[object, "ExecutionError | None", list[str], float]


@dataclasses.dataclass(frozen=True)
class _Visit:
    """What one session asks of the workers: programs evaluated in order, each in a fresh context
    with the same limits. `gated`: the first is a check, and the rest run only if it passed."""

    programs: list[Program]
    grants: int
    context_json: str
    timeout: float
    memory_mb: int
    gated: bool
    background: bool = False
    # When its first program was sent to a worker (`time.perf_counter()`): the end of its wait.
    sent: list[float] = dataclasses.field(default_factory=list)
    # Its span, when traced: the parent of its programs' `http.fetch` requests.
    span: Any = None
    # `Execution.events`: told of each log line and progress report while the program runs.
    events: Any = None


class _Worker:
    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.frames = Frames(sock)
        self.closed = False
        self.calls = 0
        self.idle_since = time.monotonic()
        self.lowered = False  # for good (`_lower`): retired after its visit
        try:
            self._pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = None

    def kill(self) -> None:
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass
        self.close()

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


class _Zygote:
    """The process workers are forked from; restarted if it dies."""

    def __init__(self, config: SandboxConfig) -> None:
        self._config = config
        self._lock = threading.Lock()
        self._control: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def spawn(self) -> _Worker:
        ours, theirs = socket.socketpair()
        try:
            with self._lock:
                control = self._ensure()
                try:
                    socket.send_fds(control, [b"S"], [theirs.fileno()])
                    pid = int.from_bytes(_read_exactly(control, 4), "little")
                except OSError:
                    self._stop()
                    raise SandboxUnavailable("the sandbox could not start a worker process") from None
        finally:
            theirs.close()
        return _Worker(pid, ours)

    def _ensure(self) -> socket.socket:
        if self._control is not None and self._process is not None and self._process.poll() is None:
            return self._control
        self._stop()
        ours, theirs = socket.socketpair()
        settings = {"allowed_domains": self._config.allowed_domains, "memory_allowance_mb": self._config.memory_allowance_mb}
        self._process = subprocess.Popen(
            [sys.executable, "-m", "sandbox.worker", json.dumps(settings)],
            pass_fds=[theirs.fileno()],  # and no other descriptor of this process
            env=worker_environment(theirs.fileno()),
            cwd="/",  # not the service's working directory, which may be its data dir
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C on the terminal is the supervisor's to handle
        )
        theirs.close()
        ours.settimeout(ZYGOTE_START_SECONDS)
        try:
            ready = ours.recv(1)
        except OSError:
            ready = b""
        if ready != b"R":
            ours.close()
            self._process.kill()
            raise SandboxUnavailable("the sandbox's worker processes could not start; see the service log")
        ours.settimeout(10)
        self._control = ours
        return ours

    def _stop(self) -> None:
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            self._process = None

    def close(self) -> None:
        with self._lock:
            self._stop()


# What the worker processes get of this process's environment: what Python needs to start and
# import (its libraries, its user site under HOME), its locale and the clock, and the trust store
# http.fetch verifies with and the DNS server it may be told to resolve by (TOOLSMITH_EGRESS_NAMESERVER)
# — never a secret, a token, a database URL or a path to the data dir.
_ENVIRONMENT = frozenset({"PATH", "HOME", "LD_LIBRARY_PATH", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "PYTHONHASHSEED",
                          "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "SSL_CERT_FILE", "SSL_CERT_DIR",
                          "TOOLSMITH_EGRESS_NAMESERVER"})


def worker_environment(zygote_fd: int, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The zygote's environment (and so its workers'): an allow-list of `environ`, plus the
    zygote's control descriptor and this tree on the module path."""
    environ = os.environ if environ is None else environ
    env = {k: v for k, v in environ.items() if k in _ENVIRONMENT or k.startswith("LC_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_ROOT), env.get("PYTHONPATH")]))
    env["TOOLSMITH_ZYGOTE_FD"] = str(zygote_fd)
    return env


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("the zygote closed its control socket")
        data += chunk
    return data


class EmbeddedSandbox(Sandbox):
    def __init__(self, config: SandboxConfig | None = None, **overrides: object) -> None:
        config = config or SandboxConfig()
        if overrides:
            config = SandboxConfig(**{**config.__dict__, **overrides})
        self.config = config
        self.max_timeout_millis = config.max_timeout_millis
        self.max_memory_mb = config.max_memory_mb
        self.max_active_sessions = config.max_active_sessions
        self._capabilities = config.capabilities
        self._active = 0  # calls holding a session, under `_counting`; `busy` reads it as a hint
        self.refused = 0  # sessions refused (SandboxBusy), under `_counting`: the metrics read it
        self.recycled = 0  # workers replaced (their calls done, killed, lowered), under `_lock`
        self._counting = threading.Lock()
        self._zygote = _Zygote(config)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._closed = False
        self._replenishing = False
        self._warmed = threading.Event()  # the first workers are up (or could not start)
        self._replenish()

    # -- the port ------------------------------------------------------------------------------

    def run(self, execution: Execution, *, capabilities: Capabilities | None = None) -> ExecutionResult:
        return self._execute(execution, check=False, capabilities=capabilities or self._capabilities)[0]

    def check(self, execution: Execution, *, capabilities: Capabilities | None = None) -> ExecutionResult:
        return self._execute(execution, check=True, capabilities=capabilities or self._capabilities)[0]

    def check_then_run(
        self, execution: Execution, inputs: Sequence[Any], *, capabilities: Capabilities | None = None,
    ) -> tuple[ExecutionResult, list[ExecutionResult]]:
        results = self._execute(execution, check=True, capabilities=capabilities or self._capabilities, inputs=inputs)
        return results[0], results[1:]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers = [*self._idle, *self._busy]
            self._idle.clear()
        for worker in workers:
            worker.kill()
        self._zygote.close()

    def busy(self) -> bool:
        return self._active >= self.max_active_sessions

    def parallelism(self) -> int:
        return max(1, min(self.config.workers, self.max_active_sessions))

    def stats(self) -> dict[str, int]:
        """The pool now (the metrics' gauges): live and busy workers, sessions held, and the
        sessions refused and workers replaced since the start."""
        with self._lock:
            workers, busy = len(self._idle) + len(self._busy), len(self._busy)
        return {"workers": workers, "busy": busy, "sessions": self._active, "refused": self.refused, "recycled": self.recycled}

    def worker_pids(self) -> list[int]:
        """The pids of the live workers (for the benchmark's memory figures and the tests)."""
        with self._lock:
            return [w.pid for w in (*self._idle, *self._busy)]

    def _busy_pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self._busy]

    # -- one visit -----------------------------------------------------------------------------

    def _execute(
        self, execution: Execution, *, check: bool, capabilities: Capabilities, inputs: Sequence[Any] = (),
    ) -> list[ExecutionResult]:
        """The bundle's check (`check`) or its run; after a check, a run per input if it passed.
        One session, one visit to a worker (more only when one is lost on the way)."""
        started = time.perf_counter()
        traced = _visit_span() if trace.get_current_span().is_recording() else None
        visit = None
        try:
            self._enter()
            try:
                visit = self._visit_of(execution, check, capabilities, inputs, traced)
                answers = self._visit_when_warm(visit, started)
            finally:
                self._leave()
        finally:
            if traced is not None:
                _visit_ended(traced, started, visit)
        return self._results(answers, execution, capabilities)

    async def arun(self, execution: Execution, *, capabilities: Capabilities | None = None) -> ExecutionResult:
        """`run` awaited on the event loop's own thread: the same result, the same errors
        (`SandboxBusy` at once, before any wait) and the same limits, the worker's answer awaited
        with `loop.add_reader` instead of a thread blocked on its socket (an asyncio loop, uvloop's
        included). What could block the loop goes to a thread as `run` would: a call before the
        pool's first workers are up, one that finds no idle worker (one is forked for it), and a
        request too large to be written at once. A call whose task is cancelled kills its worker,
        as a call past its deadline does (a fresh one replaces it), so that nothing runs on for it."""
        capabilities = capabilities or self._capabilities
        started = time.perf_counter()
        traced = _visit_span() if trace.get_current_span().is_recording() else None
        visit = None
        try:
            self._enter()
            try:
                visit = self._visit_of(execution, False, capabilities, (), traced)
                request = _request(visit, 0)
                worker = self._take_idle() if self._warmed.is_set() and len(request) <= INLINE_REQUEST_BYTES else None
                if worker is None:
                    import anyio.to_thread  # the thread pool the API's other blocking calls use

                    answers = await anyio.to_thread.run_sync(self._visit_when_warm, visit, started)
                else:
                    answers = []
                    await _converse(self._conversation(visit, answers, started, worker, request), worker.frames)
            finally:
                self._leave()
        finally:
            if traced is not None:
                _visit_ended(traced, started, visit)
        return self._results(answers, execution, capabilities)[0]

    def _enter(self) -> None:
        """A session of the pool for this call, or `SandboxBusy` at once: nothing queues."""
        with self._counting:
            if self._active >= self.max_active_sessions:
                self.refused += 1
                raise SandboxBusy(self.max_active_sessions)
            self._active += 1

    def _leave(self) -> None:
        with self._counting:
            self._active -= 1

    def _visit_of(self, execution: Execution, check: bool, capabilities: Capabilities, inputs: Sequence[Any],
                  span: Span | None = None) -> _Visit:
        timeout = min(execution.timeout_millis, self.max_timeout_millis) / 1000
        memory_mb = min(execution.memory_limit_mb, self.max_memory_mb)
        programs = [build_program(execution, check=check, capabilities=capabilities)]
        programs += [
            build_program(dataclasses.replace(execution, input=value), check=False, capabilities=capabilities) for value in inputs
        ]
        host = any(program.host for program in programs)
        context_json = json.dumps(execution.context) if host and capabilities.context else "{}"
        return _Visit(programs, _grants(host, capabilities), context_json, timeout, memory_mb, gated=check and bool(inputs),
                      background=execution.background, events=None if check else execution.events, span=span)

    def _visit_when_warm(self, visit: _Visit, started: float) -> list[_Answer]:
        # Each program's wall-clock deadline counts from when it starts, starting a worker on
        # demand included; only the pool's own start (the zygote's imports, once) is not its time.
        if not self._warmed.is_set():
            self._warmed.wait(ZYGOTE_START_SECONDS)
        return self._visit(visit, started)

    def _results(self, answers: list[_Answer], execution: Execution, capabilities: Capabilities) -> list[ExecutionResult]:
        results = []
        for output, error, logs, seconds in answers:
            if capabilities.log:
                for line in logs if execution.service_log else ():
                    log.info("module log", extra={"codeModule": execution.target.name, "logLine": line})
            else:
                logs = []
            results.append(ExecutionResult(output=output, error=error, logs=tuple(logs), duration_millis=round(seconds * 1000, 3)))
        return results

    def _visit(self, visit: _Visit, started: float) -> list[_Answer]:
        """Each program's outcome, logs and duration, in order. A worker lost on the way (killed at
        a deadline, crashed, out of memory) costs its program an error, and the programs after it
        go to another worker; a gated visit whose check failed is over."""
        answers: list[_Answer] = []
        while len(answers) < len(visit.programs):
            if visit.gated and answers and answers[0][1] is not None:
                break  # the check failed: nothing runs
            request = _request(visit, len(answers))  # before a worker is taken: nothing to give back if it fails
            worker = self._take()
            conversation = self._conversation(visit, answers, started, worker, request)
            frames = worker.frames
            try:
                until = next(conversation)
                while True:
                    try:
                        readable = frames.readable(until)
                    except BaseException as e:
                        conversation.throw(e)  # the worker is killed, and `e` raised again
                        raise
                    until = conversation.send(readable)
            except StopIteration:
                pass
            started = time.perf_counter()
        return answers

    def _conversation(
        self, visit: _Visit, answers: list[_Answer], started: float, worker: _Worker, request: bytes,
    ) -> Generator[float, bool, None]:
        """One worker's part of a visit: the programs not yet answered, sent in one request, their
        answers read into `answers` until all are in, the gate closes, or the worker is lost.
        It waits on nothing itself, so that a thread (`_visit`) and an event loop (`arun`) drive
        the same rules: whenever it needs more of the worker's bytes it yields a time (on
        `time.monotonic()`), and is sent whether bytes came by then."""
        first = len(answers)
        programs = visit.programs[first:]
        gated = visit.gated and first == 0
        timeout = visit.timeout
        frames = worker.frames
        served = 0
        try:
            try:
                frames.send(request)
                if not visit.sent:
                    visit.sent.append(time.perf_counter())
            except OSError:  # it died while idle
                worker.kill()
                log.warning("sandbox worker died while idle", extra={"pid": worker.pid})
                answers.append((None, _CRASH, [], time.perf_counter() - started))
                return
            request = b""
            for program in programs:
                now = time.monotonic()
                deadline = now + timeout
                lower_at = deadline if worker.lowered else now + LONG_CALL_SECONDS
                logs: list[str] = []
                try:
                    while True:
                        frame = frames.take()
                        if frame is None:
                            if not (yield min(lower_at, deadline)):
                                if lower_at >= deadline:
                                    raise TimeoutError
                                _lower(worker, idle=visit.background)  # a long program: short calls go first
                                lower_at = deadline
                            else:
                                frames.fill()
                            continue
                        tag = frame[:1]
                        if tag == b"H":
                            if visit.span is not None:
                                _fetched(visit.span, frame[1:])
                            continue
                        if tag == b"P":
                            if visit.events is not None:
                                _tell(visit.events, "progress", frame[1:])
                            continue
                        if tag != b"L":
                            break
                        logs.append(frame[1:].decode(errors="replace"))
                        if visit.events is not None:
                            _tell(visit.events, "log", logs[-1])
                except TimeoutError:
                    worker.kill()
                    log.info("sandbox worker killed at its call's deadline", extra={"pid": worker.pid, "timeoutMillis": round(timeout * 1000)})
                    answers.append((None, _timeout(timeout), logs, time.perf_counter() - started))
                    return
                except (EOFError, OSError):
                    worker.kill()
                    log.warning("sandbox worker died during a call", extra={"pid": worker.pid})
                    answers.append((None, _CRASH, logs, time.perf_counter() - started))
                    return
                served += 1
                answer = frame[1:]
                output, error, more = _outcome(answer, program, timeout, visit.memory_mb)
                if error is not None and error.type == "memory":
                    worker.kill()  # it may have reached its process bound: never reused, a fresh worker replaces it
                if gated and served == 1:
                    goes_on = passed_check(program.kind, answer)  # what the worker decided, on the same bytes
                    if error is None and not goes_on:
                        output, error = None, ExecutionError("result", "the check's result could not be read")
                    elif error is not None and goes_on:
                        worker.kill()  # it would go on with runs this visit no longer waits for
                now = time.perf_counter()
                answers.append((output, error, logs + more, now - started))
                started = now
                if worker.closed or (gated and served == 1 and error is not None):
                    return
        except BaseException:
            worker.kill()
            raise
        finally:
            self._release(worker, calls=max(served, 1))

    # -- the pool ------------------------------------------------------------------------------

    def _take(self) -> _Worker:
        """An idle worker, or one started for this call."""
        worker = self._take_idle()
        if worker is not None:
            return worker
        worker = self._zygote.spawn()
        with self._lock:
            self._busy.add(worker)
        return worker

    def _take_idle(self) -> _Worker | None:
        """The idle worker last used (its pages are the likeliest in memory), or None."""
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("the sandbox is shut down")
            if not self._idle:
                return None
            worker = self._idle.pop()
            self._busy.add(worker)
            return worker

    def _release(self, worker: _Worker, calls: int = 1) -> None:
        """Back to the idle list, unless it was killed; workers beyond the kept number retire.
        `calls`: the programs it evaluated (a visit's, each in a context of its own)."""
        retired: list[_Worker] = []
        with self._lock:
            self._busy.discard(worker)
            worker.calls += calls
            if worker.closed:
                self.recycled += 1  # killed: replaced below, off the call's path
            elif self._closed or worker.calls >= CALLS_PER_WORKER or worker.lowered:
                self.recycled += not self._closed
                retired.append(worker)
            else:
                now = worker.idle_since = time.monotonic()
                self._idle.append(worker)
                while len(self._idle) > self.config.workers and now - self._idle[0].idle_since > IDLE_RETIREMENT_SECONDS:
                    retired.append(self._idle.pop(0))
        for old in retired:
            old.close()  # its socket closes: the worker exits
        if worker.closed:
            self._replenish()

    def _replenish(self) -> None:
        """Starts workers in the background until `workers` are running."""
        with self._lock:
            if self._replenishing or self._closed:
                return
            self._replenishing = True
        threading.Thread(target=self._fill, name="sandbox-replenish", daemon=True).start()

    def _fill(self) -> None:
        try:
            while True:
                with self._lock:
                    if self._closed or len(self._idle) + len(self._busy) >= self.config.workers:
                        return
                worker = self._zygote.spawn()
                with self._lock:
                    if self._closed:
                        worker.kill()
                        return
                    self._idle.append(worker)
        except Exception as e:  # noqa: BLE001 - calls start workers on demand and report it there
            log.error("sandbox workers could not start", extra={"reason": str(e)})
        finally:
            with self._lock:
                self._replenishing = False
            self._warmed.set()


_TRACER = trace.get_tracer("toolsmith")


def _visit_span() -> Span:
    """The span of one session of the pool (docs/observability.md): its wait and its run are two
    attributes, `toolsmith.sandbox.queue_wait_ms` and `toolsmith.sandbox.run_ms`."""
    return _TRACER.start_span("sandbox.visit", attributes={"toolsmith.sandbox": "embedded"})


def _fetched(visit_span: Span, frame: bytes) -> None:
    """The span of one `http.fetch` request a program made (its worker's `H` frame), a child of
    the visit's: method, host, port and status only, at the times the worker measured."""
    try:
        method, host, port, status, began, ended = json.loads(frame)
        span = _TRACER.start_span(f"HTTP {method}", context=trace.set_span_in_context(visit_span), kind=SpanKind.CLIENT,
                                  start_time=int(began), attributes={
                                      "http.request.method": str(method), "server.address": str(host), "server.port": int(port),
                                      "toolsmith.fetch": "http.fetch"})
    except (ValueError, TypeError):
        return  # a worker's frame this supervisor cannot read: no span, the call goes on
    if isinstance(status, int):
        span.set_attribute("http.response.status_code", status)
    else:
        span.set_status(StatusCode.ERROR)
    span.end(end_time=int(ended))


def _visit_ended(span: Span, started: float, visit: _Visit | None) -> None:
    now = time.perf_counter()
    sent = visit.sent[0] if visit is not None and visit.sent else now  # refused (busy) or lost before a worker took it
    span.set_attribute("toolsmith.sandbox.queue_wait_ms", round((sent - started) * 1000, 3))
    span.set_attribute("toolsmith.sandbox.run_ms", round((now - sent) * 1000, 3))
    if visit is not None:
        span.set_attribute("toolsmith.sandbox.programs", len(visit.programs))
    else:
        span.set_status(StatusCode.ERROR)
    span.end()


def _lower(worker: _Worker, *, idle: bool) -> None:
    """The worker's CPU scheduling lowered for good (`infrastructure.priority.lower`: niceness 19,
    or with `idle` `SCHED_IDLE`); it retires after its visit."""
    worker.lowered = True
    lower(worker.pid, idle=idle, what="a sandbox worker")


def _request(visit: _Visit, first: int) -> bytes:
    """The request for the programs of `visit` from `first` on (those a lost worker left)."""
    return encode_visit(
        programs=[(program.kind, program.text) for program in visit.programs[first:]], timeout=visit.timeout,
        memory_mb=visit.memory_mb, grants=visit.grants, context_json=visit.context_json, gated=visit.gated and first == 0,
    )


def _tell(events: Any, kind: str, payload: Any) -> None:
    """An event of a running call to whoever listens (`Execution.events`); its failure is theirs."""
    try:
        if kind == "progress":
            done, total, message = json.loads(payload)
            payload = (done, total, message)
        events(kind, payload)
    except Exception:  # noqa: BLE001 - a listener's failure never costs the call
        log.debug("a call's listener failed", exc_info=True)


async def _converse(conversation: Generator[float, bool, None], frames: Frames) -> None:
    """`arun`'s driver of a conversation: each wait for the worker's bytes is a future the loop
    resolves when its socket is readable (`add_reader`) or when the time comes (`call_later`),
    whichever is first; bytes there at that time still count, as `Frames.readable` counts them."""
    try:
        until = next(conversation)  # first: from here on, the conversation gives its worker back
        loop = asyncio.get_running_loop()
        sock = frames.sock
        fd = sock.fileno()
        while True:
            waiting = loop.create_future()
            loop.add_reader(fd, _settle, waiting, True)
            timer = loop.call_later(max(0.0, until - time.monotonic()), _settle, waiting, False)
            try:
                readable = await waiting or frames.readable(0.0)
            except BaseException as e:  # cancelled: the worker is killed, and `e` raised again
                loop.remove_reader(fd)  # before the worker's socket closes
                timer.cancel()
                conversation.throw(e)
                raise
            loop.remove_reader(fd)
            timer.cancel()
            # uvloop's add_reader leaves the socket non-blocking (libuv's poll handle sets
            # O_NONBLOCK, and nothing sets it back): blocking again before the conversation goes
            # on, and so before it gives the worker back, since a call from a thread writes its
            # request with a blocking `sendall` (one larger than the socket's buffer failed with
            # EAGAIN, taken for a worker that died while idle). One ioctl.
            sock.setblocking(True)
            until = conversation.send(readable)
    except StopIteration:
        pass


def _settle(waiting: asyncio.Future[bool], readable: bool) -> None:
    if not waiting.done():
        waiting.set_result(readable)


_CRASH = ExecutionError("crash", "the sandbox process running this call ended abruptly (an engine crash); the call was abandoned")


def _grants(host: bool, capabilities: Capabilities) -> int:
    """The bits of `sandbox.engine` the worker's host function serves for a visit (`host`: its
    programs use the host function at all)."""
    return (
        (HOST if host else 0) | (LOG if capabilities.log else 0) | (CONTEXT if capabilities.context else 0)
        | (INTL if capabilities.intl else 0) | (HTTP if capabilities.http else 0)
    )


def _outcome(answer: bytes, program: Program, timeout: float, memory_mb: int) -> tuple[object, ExecutionError | None, list[str]]:
    try:
        body = json.loads(answer.decode())
    except RecursionError:
        return None, _too_deep(), []
    except ValueError:
        return None, ExecutionError("result", "the result could not be read as JSON"), []
    if not isinstance(body, list) or not body:
        return None, ExecutionError("result", "the result could not be read"), []
    tag = body[0]
    if tag == 1 and len(body) == 3:
        if program.kind == "check":
            return (*_links_outcome(body[1], program), _strings(body[2]))
        output = body[1]
        if too_deep(output):
            return None, _too_deep(), _strings(body[2])
        if _ESCAPED_SURROGATE.search(answer):  # JSON.stringify writes a lone surrogate as an escape
            output = well_formed(output)
        return output, None, _strings(body[2])
    if tag == 0 and len(body) == 4:
        type_, message, logs = str(body[1]), well_formed(str(body[2])), _strings(body[3])
        if not type_:
            type_ = _type_of(message)
        if type_ == "memory":
            message = _out_of_memory(memory_mb).message
        return None, ExecutionError(type_, message), logs
    kind = tag
    message = well_formed(str(body[1])) if len(body) > 1 else ""
    logs = _strings(body[2]) if len(body) > 2 else []
    if kind == "never":
        return None, ExecutionError("timeout", "run() returned a promise that never settles"), logs
    if kind == "stack":
        return None, ExecutionError("stack", _first_line(message)), logs
    if kind == "memory":
        return None, _out_of_memory(memory_mb), logs
    if kind == "escaped":
        exact = well_formed(str(body[3])) if len(body) > 3 else None
        return None, _escaped_error(message, program, memory_mb, exact), logs
    if kind == "result":
        return None, ExecutionError("result", message), logs
    if kind == "refused":
        log.warning("sandbox refused a program", extra={"reason": message})
        return None, ExecutionError("runtime", f"the sandbox could not run this code: {message}"), logs
    return None, ExecutionError("result", "the result could not be read"), []


_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def _too_deep() -> ExecutionError:
    return ExecutionError("result", TOO_DEEP_RESULT)


def _links_outcome(found: object, program: Program) -> tuple[object, ExecutionError | None]:
    """A check's answer: what `_LINKS` found missing, as the link error a publish shows."""
    if found == "":
        return True, None
    if found == "run":
        return None, ExecutionError("link", "LinkError: a tool module must assign a function to exports.run")
    try:
        missing = [program.links[int(i)] for i in str(found).split(",")]
    except (ValueError, IndexError):
        return None, ExecutionError("result", "the check's result could not be read")
    message = "; ".join(f"uses {module}.{member}, which {module} does not export" for module, member in missing)
    return None, ExecutionError("link", f"LinkError: {message}")


def _strings(logs: object) -> list[str]:
    return [well_formed(str(line)) for line in logs] if isinstance(logs, list) else []


def _type_of(message: str) -> str:
    if message.startswith("InternalError: out of memory"):
        return "memory"
    if message.startswith("RangeError: Maximum call stack size exceeded"):
        return "stack"
    # Known gap: when the heap cannot even hold an error, the engine throws null, which reads here
    # as a runtime error "null".
    return "runtime"


def _timeout(seconds: float) -> ExecutionError:
    return ExecutionError("timeout", f"the call did not finish within {seconds * 1000:.0f} ms")


def _out_of_memory(memory_mb: int) -> ExecutionError:
    return ExecutionError("memory", f"the call exceeded its memory limit of {memory_mb} MB")


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


# How the binding shows the engine's "uninitialized" exception value: what quickjs-ng throws when
# an allocation fails where it sets no error (String.prototype.normalize does; the harness wraps
# it by name, this covers a call that reaches it under a computed name).
_UNINITIALIZED = "[uninitialized]"


def _escaped_error(text: str, program: Program, memory_mb: int, exact: str | None = None) -> ExecutionError:
    """Types an error that escaped the program's own try/catch: `text` as the binding read it (the
    thrown value, up to a NUL, then its stack), `exact` the thrown value's whole text when the
    worker could read it (`sandbox.engine`: what `run` threw, a NUL or a line break in it)."""
    message = _first_line(text)
    if "out of memory" in message or message == _UNINITIALIZED:
        return _out_of_memory(memory_mb)
    if "call stack" in message:
        return ExecutionError("stack", message)
    if exact is not None:
        message = exact
    if message.startswith("SyntaxError"):
        place = _PLACE.search(text)
        where = program.locate(int(place.group(1))) if place else None
        if where is not None:
            unit, line = where
            column = f", column {place.group(2)}" if place and place.group(2) else ""
            message = f"{message} ({unit}, line {line}{column})"
        return ExecutionError("syntax", message)
    return ExecutionError("runtime", message)
