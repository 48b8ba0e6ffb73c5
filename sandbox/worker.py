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
import struct
import signal
import socket
import sys
import time


WORKER_NICENESS = 10


# A call: kind ("value"/"json"), timeout in seconds, memory cap in MB, whether the program uses the
# host function, whether http.fetch is granted, the length of the ai.context() JSON; then that JSON
# and the program, UTF-8. Decoding this costs far less than a JSON envelope around the program.
_CALL = struct.Struct("<?dI??I")


def encode_call(*, kind: str, timeout: float, memory_mb: int, host: bool, http: bool, context_json: str, program: str) -> bytes:
    context = context_json.encode()
    return _CALL.pack(kind == "json", timeout, memory_mb, host, http, len(context)) + context + program.encode()


def decode_call(data: bytes) -> tuple[str, float, int, bool, bool, str, str]:
    is_json, timeout, memory_mb, host, http, size = _CALL.unpack_from(data)
    start = _CALL.size
    context_json = data[start : start + size].decode()
    program = data[start + size :].decode()
    return ("json" if is_json else "value"), timeout, memory_mb, host, http, context_json, program


class Frames:
    """Frames over a socket, read through a buffer: one `recv` is usually a whole frame."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray()

    def send(self, data: bytes) -> None:
        self.sock.sendall(len(data).to_bytes(4, "little") + data)

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


def serve(frames: Frames, engine) -> None:  # noqa: ANN001 - sandbox.engine.Engine
    context = engine.fresh()
    while True:
        try:
            kind, timeout, memory_mb, host, http, context_json, program = decode_call(frames.recv())
        except (EOFError, OSError):
            return
        deadline = time.monotonic() + timeout
        answer = engine.evaluate(
            context, program, kind=kind, memory_mb=memory_mb, host=host, deadline=deadline, http=http,
            context_json=context_json,
        )
        try:
            frames.send(b"A" + answer.encode())
        except OSError:
            return
        context = None  # the last reference: the context and its runtime are freed here, off the call's path
        context = engine.fresh()


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
                serve(frames, Engine(fetch, emit=lambda line: frames.send(b"L" + line.encode())))
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
