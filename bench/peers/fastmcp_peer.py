"""The FastMCP peer of `bench.request_path`: the same `addOne` tool (n + 1) served by FastMCP,
stateless streamable HTTP with JSON responses (no session, no SSE stream per request), under
uvicorn with the same options as `bench.peers.floor`.

It runs in `.venv-peers` (`bench/peers/requirements.txt`), not in the product's `.venv`: FastMCP
brings dependencies of its own that the product does not have. The bench makes that virtualenv
when it is missing (`bench.request_path.peers_python`, or `make bench-peers`).

Run: `.venv-peers/bin/python -m bench.peers.fastmcp_peer PORT`; `tools/call` is at `/mcp`.
"""

from __future__ import annotations

import sys

import uvicorn
from fastmcp import FastMCP

mcp = FastMCP("fastmcp-peer")


@mcp.tool(name="addOne", description="Adds one to n.")
def add_one(n: int) -> int:
    return n + 1


app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_config=None, access_log=False)
