"""Worker processes and the zygote they are forked from.

`python -m sandbox.worker '<config json>'` starts the zygote: it imports everything a worker needs
(QuickJS, Babel, httpx) once, then waits on its control socket. For each request it receives one
end of a socket pair, forks, and answers the child's pid; the child serves calls on that socket,
one at a time, until it is closed. Forking a warmed process costs a few milliseconds, so replacing
a worker the supervisor killed is cheap. The zygote holds no thread, so forking it is safe.

A worker's loop: make a fresh context (while idle), read a call, evaluate it, answer, drop the
context. While a call runs, each `log` line is sent as soon as it is written (`L` frames), then the
answer (`A`). Each call gets a context no other call has touched (V3). A worker never decides when a
call is over: the supervisor does, and kills the worker when the deadline passes.

A worker's socket carries frames: four bytes of length (little-endian), then the bytes.
"""

from __future__ import annotations

import array
import json
import os
import resource
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

# A call: kind, timeout in seconds, memory cap in MB, the capability grants (`sandbox.engine`'s
# bits), the length of the ai.context() JSON; then that JSON and the program, UTF-8. Decoding this
# costs far less than a JSON envelope around the program.
_CALL = struct.Struct("<BdIBI")


def encode_call(*, kind: str, timeout: float, memory_mb: int, grants: int, context_json: str, program: str) -> bytes:
    context = context_json.encode()
    return _CALL.pack(_KINDS.index(kind), timeout, memory_mb, grants, len(context)) + context + program.encode()


def decode_call(data: bytes) -> tuple[str, float, int, int, str, str]:
    kind, timeout, memory_mb, grants, size = _CALL.unpack_from(data)
    start = _CALL.size
    context_json = data[start : start + size].decode()
    program = data[start + size :].decode()
    return _KINDS[kind], timeout, memory_mb, grants, context_json, program


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
    """Frames over a socket, read through a buffer: one `recv` is usually a whole frame."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()

    def send(self, data: bytes, tag: bytes = b"") -> None:
        """One frame: `tag` then `data` (a large `data` is sent as it is, not copied into the frame)."""
        head = (len(tag) + len(data)).to_bytes(4, "little") + tag
        if len(data) < 65536:
            self.sock.sendall(head + data)
        else:
            self.sock.sendall(head)
            self.sock.sendall(data)

    def recv(self) -> bytes:
        """One whole frame; `EOFError` when the other end is gone. A socket timeout propagates."""
        buffer = self._buffer
        while True:
            if len(buffer) >= 4:
                end = 4 + int.from_bytes(buffer[:4], "little")
                if len(buffer) >= end:
                    frame = bytes(buffer[4:end])
                    del buffer[:end]
                    return frame
                wanted = end - len(buffer)
            else:
                wanted = 0
            chunk = self.sock.recv(max(wanted, 65536))
            if not chunk:
                raise EOFError("the socket was closed")
            buffer += chunk


def serve(frames: Frames, engine, bound: MemoryBound | None = None) -> None:  # noqa: ANN001 - sandbox.engine.Engine
    bound = bound or MemoryBound(None)
    context = engine.fresh()
    while True:
        try:
            kind, timeout, memory_mb, grants, context_json, program = decode_call(frames.recv())
        except (EOFError, OSError):
            return
        deadline = time.monotonic() + timeout
        bound.enter(memory_mb)
        try:
            answer = engine.evaluate(
                context, program, kind=kind, memory_mb=memory_mb, grants=grants, deadline=deadline, context_json=context_json,
            ).encode()
        except MemoryError:  # past the bound outside the engine's own handling: the answer is short
            answer = None
        finally:
            program = context_json = ""
        if answer is None:
            bound.lift()  # room to answer; the supervisor retires this worker after a memory error
            answer = _OUT_OF_MEMORY
        try:
            frames.send(answer, b"A")
        except OSError:
            return
        answer = None
        context = None  # the last reference: the context and its runtime are freed here, off the call's path
        context = engine.fresh()


_OUT_OF_MEMORY = b'["memory","",[]]'


def _fetcher(config: dict):  # noqa: ANN202
    from sandbox.net import AllowList, Fetcher

    fetcher = Fetcher(AllowList.parse(config.get("allowed_domains", "")))
    return fetcher.fetch


def zygote(control: socket.socket, config: dict) -> None:
    from sandbox.engine import Engine

    # Sandboxed code runs at a lower priority than the service that supervises it, so a machine
    # full of busy tools still answers, refuses (429) and kills on time.
    os.nice(WORKER_NICENESS)
    fetch = _fetcher(config)
    Engine(fetch).fresh()  # warms every import a worker needs (and fails here, not in a child)
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
                serve(frames, Engine(fetch, emit=lambda line: frames.send(line.encode(), b"L")), bound)
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
