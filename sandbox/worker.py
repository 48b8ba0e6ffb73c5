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
import signal
import socket
import sys
import time


WORKER_NICENESS = 10


def send_frame(sock: socket.socket, data: bytes) -> None:
    sock.sendall(len(data).to_bytes(4, "little") + data)


def recv_frame(sock: socket.socket) -> bytes:
    """One whole frame; `EOFError` when the other end is gone. A socket timeout propagates."""
    size = int.from_bytes(_recv_exactly(sock, 4), "little")
    return bytes(_recv_exactly(sock, size))


def _recv_exactly(sock: socket.socket, size: int) -> bytearray:
    data = bytearray(size)
    view = memoryview(data)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise EOFError("the socket was closed")
        got += n
    return data


def serve(sock: socket.socket, engine) -> None:  # noqa: ANN001 - sandbox.engine.Engine
    context = engine.fresh()
    while True:
        try:
            # [kind, timeout seconds, memory MB, http?, context?, ai.context() JSON, program]
            kind, timeout, memory_mb, http, with_context, context_json, program = json.loads(recv_frame(sock))
        except (EOFError, OSError):
            return
        deadline = time.monotonic() + timeout
        if not with_context:
            context.eval("delete globalThis.ai")
        answer = engine.evaluate(
            context, program, kind=kind, memory_mb=memory_mb, deadline=deadline, http=http, context_json=context_json,
        )
        try:
            send_frame(sock, b"A" + answer.encode())
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
                sock = socket.socket(fileno=fds[0])
                serve(sock, Engine(fetch, emit=lambda line: send_frame(sock, b"L" + line.encode())))
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
