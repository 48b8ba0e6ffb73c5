"""A small local HTTP API for `bench.api_tools`: uvicorn (httptools) serving one JSON weather
answer at `/v1/weather/{city}`, in its own process. Run: `python -m bench._upstream PORT`."""

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


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    path = scope["path"]
    if not path.startswith("/v1/weather/"):
        await send({"type": "http.response.start", "status": 404, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
        return
    body = json.dumps({**ANSWER, "city": path.removeprefix("/v1/weather/")}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False, http="httptools",
                loop="uvloop")
