"""Benchmark 5: `tools/call` over MCP against `POST /api/v1/tools/{name}/call`, one `toolsmith serve`.

One server process (SQLite, embedded sandbox) on a throwaway data dir serves a small published
tool, exposed in chat. Two ways of calling it, from this process, in the same run:

- `mcp`:  the MCP SDK's client, ONE handshake-era session (initialize, session id), `call_tool`
  from N concurrent tasks sharing that session: each call is a POST answered on an SSE stream.
- `rest`: httpx, `POST /api/v1/tools/{name}/call` from N concurrent tasks on one connection pool.

Each round runs both variants at each concurrency (1 and 8), in a rotated order, for a fixed time
each; a variant's figure is the median of its per-round calls/s. Ratio = MCP / REST (higher is
better): what the MCP protocol layer (JSON-RPC, SSE framing, the SDK on both ends) costs over the
plain REST call of the same tool. Both clients run in this process, so the figures include their
client-side cost too, as a real caller's would.

Run: `python -m bench.mcp_call [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
import httpx

from bench._common import Progress, Row, median, quartiles, rotated, standalone
from bench._server import Server

TOKEN = "tsa_bench-admin-token"
TOOL = "countLines"
SOURCE = "exports.run = function (input) { return input.text.split('\\n').length; };"
ARGUMENTS = {"text": "a\nb\nc"}
EXPECTED = 3
CONCURRENCY = (1, 8)

TITLE = "Benchmark 5 — tools/call over MCP (one session) vs POST /api/v1/tools/{name}/call, one toolsmith serve; medians"


def start_server(tmp: str) -> Server:
    """`toolsmith serve` on a free port and a throwaway data dir, with none of the runner's settings."""
    server = Server(data_dir=Path(tmp) / "data", token=TOKEN, inherit_settings=False, log_file=Path(tmp) / "serve.log", log_mode="w",
                    env={"TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING"})
    try:
        return server.start()
    except RuntimeError as failed:
        raise SystemExit(f"bench.mcp_call: {failed}") from None


def publish_tool(server: Server) -> None:
    tool = {"inputParameters": [{"name": "text", "type": "string", "required": True, "description": "the text"}], "exposeInChat": True}
    body = {"id": TOOL, "description": "Counts the lines of a text.", "draftContent": SOURCE, "tool": tool}
    with server.client() as http:
        created = http.post("/api/v1/admin/code-modules", json=body)
        published = http.post(f"/api/v1/admin/code-modules/{TOOL}/publish")
        if created.status_code != 201 or published.status_code != 200:
            raise SystemExit(f"bench.mcp_call: could not publish the tool: {created.text} {published.text}")


async def _rate(call: Callable[[], Awaitable[object]], concurrency: int, seconds: float) -> tuple[float, int]:
    """Calls/s of `concurrency` tasks calling back to back for `seconds`, and how many answered wrong."""
    done = wrong = 0
    deadline = time.perf_counter() + seconds

    async def caller() -> None:
        nonlocal done, wrong
        while time.perf_counter() < deadline:
            if await call() != EXPECTED:
                wrong += 1
            done += 1

    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for _ in range(concurrency):
            tasks.start_soon(caller)
    return done / (time.perf_counter() - started), wrong


async def _measure(url: str, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {TOKEN}"}
    limits = httpx.Limits(max_connections=max(CONCURRENCY), max_keepalive_connections=max(CONCURRENCY))
    async with (
        httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=30) as rest_http,
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as mcp_http,
        Client(streamable_http_client(f"{url}/mcp", http_client=mcp_http), mode="legacy") as session,
    ):

        async def over_rest() -> object:
            return (await rest_http.post(f"/api/v1/tools/{TOOL}/call", json=ARGUMENTS)).json()["output"]

        async def over_mcp() -> object:
            result = await session.call_tool(TOOL, ARGUMENTS)
            return None if result.is_error else json.loads(result.content[0].text)

        calls = {"mcp": over_mcp, "rest": over_rest}
        for name, call in calls.items():
            if await call() != EXPECTED:
                raise SystemExit(f"bench.mcp_call: {name} did not answer {EXPECTED}")
        progress(f"outputs checked (mcp, rest → {EXPECTED}); warming up for {args.warmup} s each")
        for name, call in calls.items():
            await _rate(call, max(CONCURRENCY), args.warmup)

        rates = {(name, c): [] for name in calls for c in CONCURRENCY}
        wrong = 0
        progress(f"{args.rounds} rounds × {args.seconds} s per variant and concurrency {CONCURRENCY}")
        for r in range(args.rounds):
            for c in CONCURRENCY:
                for name in rotated(list(calls), r):
                    rate, bad = await _rate(calls[name], c, args.seconds)
                    rates[(name, c)].append(rate)
                    wrong += bad
            figures = ", ".join(f"{n}×{c} {rates[(n, c)][-1]:,.0f}/s" for c in CONCURRENCY for n in calls)
            progress(f"  round {r + 1}/{args.rounds}: {figures}")
    if wrong:
        progress(f"WARNING: {wrong} calls answered something other than {EXPECTED}")
    return _rows(rates), {"wrong_outputs": wrong, "args": vars(args)}


def _rows(rates: dict[tuple[str, int], list[float]]) -> list[Row]:
    rows = []
    for c in CONCURRENCY:
        mcp, rest = rates[("mcp", c)], rates[("rest", c)]
        q1, q3 = quartiles([m / r for m, r in zip(mcp, rest)])
        rows.append(Row(
            f"tools/call throughput, {c} concurrent caller{'s' if c > 1 else ''}",
            f"MCP {median(mcp):,.0f} calls/s",
            f"REST {median(rest):,.0f} calls/s",
            median(mcp) / median(rest),
            "(MCP/REST, informative)",
            None,
            f"IQR {q1:.2f}–{q3:.2f}",
        ))
    return rows


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("mcp_call", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        progress("starting toolsmith serve")
        serve = start_server(tmp)
        try:
            publish_tool(serve)
            return anyio.run(_measure, serve.url, args, progress)
        finally:
            serve.stop()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_call", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 10 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 6, quick 2)")
    parser.add_argument("--seconds", type=float, help="time per variant and concurrency per round (default 2, quick 1)")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per variant first (default 1)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 6)
    args.seconds = args.seconds or (1.0 if args.quick else 2.0)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
