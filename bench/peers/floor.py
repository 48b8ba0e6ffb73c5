"""The floor of `bench.request_path`: bare FastAPI routes doing the request path's least work, on
uvicorn with the options `toolsmith serve` uses (entrypoints/cli.py: `loop` and `http` left to
"auto", so uvloop and httptools where installed, as they are with `uvicorn[standard]`), without an
access log (a bare route has none; Toolsmith's is part of what the bench measures).

- `POST /call` takes `{"n": <integer>}` (validated by a pydantic model, as any FastAPI JSON route
  is) and answers `{"output": n + 1}`: the REST call's floor before its JavaScript runs.
- `GET /healthz` answers `{"status": "ok"}`: `/healthz`'s floor.

Run: `python -m bench.peers.floor PORT`.
"""

from __future__ import annotations

import sys

import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

app = FastAPI()


class Call(BaseModel):
    n: int


@app.post("/call")
async def call(body: Call) -> dict[str, int]:
    return {"output": body.n + 1}


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_config=None, access_log=False)
