"""A small local HTTP API for `bench.api_tools`: uvicorn (httptools) serving one JSON weather
answer at `/v1/weather/{city}`, in its own process. Run: `python -m bench._upstream PORT`.

`/v1/connections` says how many connections each kind of client opened so far (by User-Agent:
`toolsmith-api-tool` is Toolsmith's egress, anything else the benchmark's own client), so that the
benchmark can show that both sides kept their connections alive."""

from __future__ import annotations

import json
import sys
from typing import Any

import uvicorn

ANSWER = {"city": "", "units": "metric", "current": {"temp": 21.5, "wind": 3.2, "sky": "clear"},
          "days": [{"day": d, "high": 20 + d, "low": 10 + d} for d in range(7)]}


def weather(city: str) -> dict[str, Any]:
    """The same answer as a native tool (the tools file's `bench._upstream:weather`): what a call of
    the REST route costs when the tool itself costs nothing (`bench.api_tools`' floor)."""
    return {**ANSWER, "city": city}


# (client kind, client address): one entry per connection, as a kept-alive connection keeps its port
CONNECTIONS: set[tuple[str, Any]] = set()
TOOLSMITH_AGENT = b"toolsmith-api-tool"


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    agent = next((value for name, value in scope["headers"] if name == b"user-agent"), b"")
    CONNECTIONS.add(("toolsmith" if agent == TOOLSMITH_AGENT else "direct", tuple(scope.get("client") or ())))
    if path == "/v1/connections":
        counts = {kind: sum(1 for k, _ in CONNECTIONS if k == kind) for kind in ("direct", "toolsmith")}
        body = json.dumps(counts).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
        return
    if not path.startswith("/v1/weather/"):
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    body = json.dumps({**ANSWER, "city": path.removeprefix("/v1/weather/")}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    # Connections stay open between the benchmark's phases (uvicorn closes an idle one after 5 s by
    # default), so that each side's count of connections says whether it kept them alive.
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False, http="httptools",
                loop="uvloop", timeout_keep_alive=120)
