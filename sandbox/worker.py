"""Worker processes and the zygote they are forked from.

`python -m sandbox.worker '<config json>'` starts the zygote: it imports everything a worker needs
(QuickJS, Babel, httpx) once, then waits on its control socket. For each request it receives one
end of a socket pair, forks, and answers the child's pid; the child serves calls on that socket,
one at a time, until it is closed. Forking a warmed process costs a few milliseconds, so replacing
a worker the supervisor killed is cheap. The zygote holds no thread, so forking it is safe.

A worker's loop: make a fresh context (while idle), read a request, evaluate its program, answer,
drop the context. A request is a visit of one or more programs under the same limits (a publish's
check of a module, then its examples: `encode_visit`), evaluated in order, each in a context no
other program has touched (V3), each answered as soon as it ends. While a program runs, each `log`
line is sent as soon as it is written (`L` frames), and each `ai.progress` report let through (`P`,
its JSON array), then its answer (`A`). In a gated visit the
programs after the first run only if the first passed (`passed_check`), a rule the supervisor
applies to the same answer, so both know how many answers come. A worker never decides when a
program is over: the supervisor does, and kills the worker when its deadline passes.

A worker's socket carries frames: four bytes of length (little-endian), then the bytes.
"""

from __future__ import annotations

import array
import json
import os
import math
import resource
import select
import signal
import struct
import socket
import sys
import time


WORKER_NICENESS = 10
MIB = 1024 * 1024
# What a worker may use beyond the call's memory limit (its QuickJS heap), by default
# (`SandboxConfig.memory_allowance_mb`): the Python side of a call — a result of up to
# `MAX_RESULT_CHARS` as text and bytes, host-call payloads (capped in JavaScript), an http.fetch
# response and its thread's stack, Intl's locale data.
MEMORY_ALLOWANCE_MB = 96

_KINDS = ("value", "json", "check")

# A visit: timeout in seconds and memory cap in MB (each program's), the capability grants
# (`sandbox.engine`'s bits), whether it is gated, the number of programs, the length of the
# ai.context() JSON; then that JSON, each program's kind and length, and the programs, UTF-8.
# Decoding this costs far less than a JSON envelope around the programs.
_VISIT = struct.Struct("<dIBBHI")
_PROGRAM = struct.Struct("<BI")


def encode_visit(
    *, programs: list[tuple[str, str]], timeout: float, memory_mb: int, grants: int, context_json: str, gated: bool = False,
) -> bytes:
    """One request: `programs` as (kind, text), evaluated in order, each in a fresh context with
    `timeout` and `memory_mb`. `gated`: the programs after the first run only if it passed."""
    context = context_json.encode()
    texts = [text.encode() for _, text in programs]
    table = b"".join(_PROGRAM.pack(_KINDS.index(kind), len(text)) for (kind, _), text in zip(programs, texts))
    head = _VISIT.pack(timeout, memory_mb, grants, gated, len(programs), len(context))
    return b"".join((head, context, table, *texts))


class Visit:
    """A decoded request; each program is decoded when its turn comes."""

    def __init__(self, data: bytes) -> None:
        self.timeout, self.memory_mb, self.grants, gated, count, size = _VISIT.unpack_from(data)
        self.gated = bool(gated)
        start = _VISIT.size
        self.context_json = data[start : start + size].decode()
        start += size
        self._kinds: list[str] = []
        self._spans: list[tuple[int, int]] = []
        offset = start + count * _PROGRAM.size
        for n in range(count):
            kind, length = _PROGRAM.unpack_from(data, start + n * _PROGRAM.size)
            self._kinds.append(_KINDS[kind])
            self._spans.append((offset, offset + length))
            offset += length
        self._data = data

    def __len__(self) -> int:
        return len(self._kinds)

    def program(self, n: int) -> tuple[str, str]:
        begin, end = self._spans[n]
        return self._kinds[n], self._data[begin:end].decode()


def passed_check(kind: str, answer: bytes) -> bool:
    """Whether a gated visit goes on after its first program answered `answer`: a load-and-link
    check that found nothing missing (`[1, "", logs]`), or a script check that loaded (`[1, true,
    logs]`). The worker and the supervisor both decide by this, on the same bytes."""
    try:
        body = json.loads(answer)
    except (ValueError, RecursionError, MemoryError):
        return False
    if not isinstance(body, list) or len(body) != 3 or body[0] != 1 or isinstance(body[0], bool):
        return False
    return body[1] == "" if kind == "check" else body[1] is True if kind == "json" else True


class MemoryBound:
    """The whole worker process's memory, bounded per call (not only the QuickJS heap): the worker
    holds its own RLIMIT_DATA (its heap and private writable mappings, where every Python object
    and the engine's heap live; unlike RLIMIT_AS it does not count the shared libraries or the
    address space glibc reserves) at what it held when last measured, plus the call's memory
    limit, plus `MEMORY_ALLOWANCE_MB`. An allocation past it fails (a JavaScript out-of-memory
    error, or a Python `MemoryError`): the call is a `memory` error, and the supervisor replaces a
    worker whose call ended so. `allowance_mb=None`: off.

    Reading what the process holds (/proc/self/statm) and setting the limit cost about 30 µs, a
    tenth of a small call, so the limit is set again only when a call's memory limit differs from
    the last one's, or every `REMEASURE_CALLS` calls. Memory the process holds but has freed counts
    as held, and a call may use it again: a call never gets more than its limit and the allowance
    beyond what the worker held before it, whatever calls ran before."""

    REMEASURE_CALLS = 256

    def __init__(self, allowance_mb: int | None = MEMORY_ALLOWANCE_MB) -> None:
        self.allowance_mb = allowance_mb
        self._soft, self._hard = resource.getrlimit(resource.RLIMIT_DATA)
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._memory_mb = -1
        self._calls = 0

    def enter(self, memory_mb: int) -> None:
        """Before a call: the process may hold the call's limit and the allowance beyond now."""
        if self.allowance_mb is None:
            return
        self._calls += 1
        if memory_mb == self._memory_mb and self._calls % self.REMEASURE_CALLS:
            return
        resource.setrlimit(resource.RLIMIT_DATA, (self._soft, self._hard))  # so that measuring is not bounded
        limit = self._data_bytes() + (memory_mb + self.allowance_mb) * MIB
        if self._hard != resource.RLIM_INFINITY:
            limit = min(limit, self._hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, self._hard))
        self._memory_mb = memory_mb

    def lift(self) -> None:
        """No bound until the next `enter` measures again."""
        if self.allowance_mb is not None:
            resource.setrlimit(resource.RLIMIT_DATA, (self._soft, self._hard))
            self._memory_mb = -1

    def _data_bytes(self) -> int:
        """The data segment now (`/proc/self/statm`'s data field: data and stack pages)."""
        fd = os.open("/proc/self/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 256).split()[5]) * self._page
        finally:
            os.close(fd)


class Frames:
    """Frames over a socket, read through a buffer: one `recv` is usually a whole frame, and one
    read may bring several (a visit's answers, when the reader comes late)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()
        self._poll: select.poll | None = None

    def send(self, data: bytes, tag: bytes = b"") -> None:
        """One frame: `tag` then `data` (a large `data` is sent as it is, not copied into the frame)."""
        head = (len(tag) + len(data)).to_bytes(4, "little") + tag
        if len(data) < 65536:
            self.sock.sendall(head + data)
        else:
            self.sock.sendall(head)
            self.sock.sendall(data)

    def recv(self, deadline: float | None = None) -> bytes:
        """One whole frame; `EOFError` when the other end is gone. With a `deadline` (on
        `time.monotonic()`), `TimeoutError` when no more bytes came by then: the socket stays
        blocking and a poll waits, so no call changes the socket's mode (a system call each)."""
        while True:
            frame = self.take()
            if frame is not None:
                return frame
            if deadline is not None and not self.readable(deadline):
                raise TimeoutError
            self.fill()

    def take(self) -> bytes | None:
        """The next whole frame if the buffer holds one, else None (no system call)."""
        buffer = self._buffer
        if len(buffer) >= 4:
            end = 4 + int.from_bytes(buffer[:4], "little")
            if len(buffer) >= end:
                frame = bytes(buffer[4:end])
                del buffer[:end]
                return frame
        return None

    def fill(self) -> None:
        """One read into the buffer (it blocks until bytes come: call it when `readable`);
        `EOFError` when the other end is gone."""
        buffer = self._buffer
        wanted = 4 + int.from_bytes(buffer[:4], "little") - len(buffer) if len(buffer) >= 4 else 0
        chunk = self.sock.recv(max(wanted, 65536))
        if not chunk:
            raise EOFError("the socket was closed")
        buffer += chunk

    def readable(self, deadline: float) -> bool:
        """Whether bytes (or the end) came by `deadline`; bytes already there count even after it."""
        if self._poll is None:
            self._poll = select.poll()
            self._poll.register(self.sock, select.POLLIN)
        while True:
            millis = max(0, math.ceil((deadline - time.monotonic()) * 1000))
            if self._poll.poll(millis):
                return True
            if millis == 0:
                return False


def serve(frames: Frames, engine, bound: MemoryBound | None = None) -> None:  # noqa: ANN001 - sandbox.engine.Engine
    bound = bound or MemoryBound(None)
    context = engine.fresh()
    while True:
        try:
            visit = Visit(frames.recv())
        except (EOFError, OSError):
            return
        for n in range(len(visit)):
            if n:
                context = None  # the last reference: the previous program's context is freed first
                context = engine.fresh()
            kind, program = visit.program(n)
            deadline = time.monotonic() + visit.timeout
            bound.enter(visit.memory_mb)
            try:
                answer = engine.evaluate(
                    context, program, kind=kind, memory_mb=visit.memory_mb, grants=visit.grants, deadline=deadline,
                    context_json=visit.context_json,
                ).encode()
            except MemoryError:  # past the bound outside the engine's own handling: the answer is short
                answer = None
            finally:
                program = ""
            try:
                engine.flush_progress()  # the report held back goes before the answer (`P` frames)
            except (OSError, AttributeError):
                pass
            if answer is None:
                bound.lift()  # room to answer; the supervisor retires this worker after a memory error
                answer = _OUT_OF_MEMORY
            try:
                frames.send(answer, b"A")
            except OSError:
                return
            if n == 0 and visit.gated and not passed_check(kind, answer):
                break
            answer = None
        visit = answer = None
        context = None  # the context and its runtime are freed here, off the call's path
        context = engine.fresh()


_OUT_OF_MEMORY = b'["memory","",[]]'


def _fetcher(config: dict):  # noqa: ANN202
    from sandbox.net import AllowList, Fetcher

    return Fetcher(AllowList.parse(config.get("allowed_domains", "")))


def _reporting(fetcher, frames: Frames):  # noqa: ANN001, ANN202
    """`http.fetch` telling the supervisor of each request it made (an `H` frame: method, host,
    port, status, and its wall-clock start and end in nanoseconds), for the call's trace
    (docs/observability.md); a request refused before it was made tells nothing."""
    def fetch(request: str, remaining_seconds: float) -> str:
        began = time.time_ns()
        answer = fetcher.fetch(request, remaining_seconds)
        made = fetcher.last
        if made is not None:
            try:
                frames.send(json.dumps([*made, began, time.time_ns()]).encode(), b"H")
            except OSError:
                pass
        return answer

    return fetch


def zygote(control: socket.socket, config: dict) -> None:
    from sandbox.engine import Engine

    # Sandboxed code runs at a lower priority than the service that supervises it, so a machine
    # full of busy tools still answers, refuses (429) and kills on time.
    os.nice(WORKER_NICENESS)
    fetcher = _fetcher(config)
    Engine(fetcher.fetch).fresh()  # warms every import a worker needs (and fails here, not in a child)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    control.sendall(b"R")
    while True:
        fds = array.array("i")
        try:
            message, ancillary, _flags, _address = control.recvmsg(1, socket.CMSG_SPACE(fds.itemsize))
        except OSError:
            return
        if not message:
            return  # the supervisor is gone: so are we
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:
            try:
                control.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when a worker ends
                frames = Frames(socket.socket(fileno=fds[0]))
                bound = MemoryBound(config.get("memory_allowance_mb", MEMORY_ALLOWANCE_MB))
                serve(frames, Engine(_reporting(fetcher, frames), emit=lambda line: frames.send(line.encode(), b"L"),
                                     progress=lambda report: frames.send(report.encode(), b"P")), bound)
            finally:
                os._exit(0)
        os.close(fds[0])
        control.sendall(pid.to_bytes(4, "little"))


def main() -> None:
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    control = socket.socket(fileno=int(os.environ["TOOLSMITH_ZYGOTE_FD"]))
    zygote(control, config)


if __name__ == "__main__":
    main()
