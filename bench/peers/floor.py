"""The floor of `bench.request_path`: bare FastAPI routes doing the request path's least work, on
uvicorn with the options `toolsmith serve` uses (entrypoints/cli.py: `loop` and `http` left to
"auto", so uvloop and httptools where installed, as they are with `uvicorn[standard]`), without an
access log (a bare route has none; Toolsmith's is part of what the bench measures).

- `POST /call` takes `{"n": <integer>}` (validated by a pydantic model, as any FastAPI JSON route
  is) and answers `{"output": n + 1}`: the REST call's floor before its JavaScript runs.
- `GET /healthz` answers `{"status": "ok"}`: `/healthz`'s floor.
- `POST /call-in-worker` takes the same body and has `n + 1` worked out by a bare QuickJS in a worker
  process of its own (a fresh context and an `eval` per call, as Toolsmith's sandbox does), asked over
  a Unix socket and awaited on the event loop: the least any server that runs its tools out of its
  own process (for isolation: a crash, a runaway or memory-hungry script) can do. It is the ceiling
  `bench.request_path` shows beside the in-process floor; its worker takes one call at a time.

Run: `python -m bench.peers.floor PORT`.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from contextlib import asynccontextmanager
from typing import AsyncIterator

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

# The worker: a length-prefixed `n` in, `n + 1` worked out by QuickJS out, one call at a time.
WORKER = """
import socket, struct, sys, _quickjs
channel = socket.socket(fileno=int(sys.argv[1]))
script = "var exports = {}; exports.run = function (input) { return input.n + 1; }; exports.run({n: %d});"
while True:
    head = channel.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        break
    n = int(channel.recv(struct.unpack("<I", head)[0], socket.MSG_WAITALL))
    answer = str(_quickjs.Context().eval(script % n)).encode()
    channel.sendall(struct.pack("<I", len(answer)) + answer)
"""


class Worker:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(theirs.fileno())], pass_fds=[theirs.fileno()])
        theirs.close()
        ours.setblocking(False)
        self.channel = ours
        self.lock = asyncio.Lock()

    async def ask(self, n: int) -> int:
        loop = asyncio.get_running_loop()
        text = str(n).encode()
        async with self.lock:
            await loop.sock_sendall(self.channel, len(text).to_bytes(4, "little") + text)
            answer = b""
            while len(answer) < 4 or len(answer) < 4 + int.from_bytes(answer[:4], "little"):
                answer += await loop.sock_recv(self.channel, 4096)
        return int(answer[4:])

    def close(self) -> None:
        self.channel.close()
        self.process.wait(timeout=10)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    app.state.worker = Worker()
    yield
    app.state.worker.close()


app = FastAPI(lifespan=lifespan)


class Call(BaseModel):
    n: int


@app.post("/call")
async def call(body: Call) -> dict[str, int]:
    return {"output": body.n + 1}


@app.post("/call-in-worker")
async def call_in_worker(body: Call) -> dict[str, int]:
    return {"output": await app.state.worker.ask(body.n)}


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_config=None, access_log=False)
