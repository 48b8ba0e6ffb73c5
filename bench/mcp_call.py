"""Benchmark 5: `tools/call` over MCP against `POST /api/v1/tools/{name}/call`, one `toolsmith serve`.

One server process (SQLite, embedded sandbox) on a throwaway data dir serves a small published
tool, exposed in chat (the only tool: the catalog costs nothing here). Two clients call it:

- wrk (the goal, issue 15: MCP ≥ 0.8 × REST): ONE handshake-era session is opened first
  (initialize, notifications/initialized), then wrk POSTs `tools/call` with that session id on 4
  connections, against wrk POSTing `/api/v1/tools/{name}/call` on 4 connections. A C client costs
  the server's CPU little, so this ratio is what the server's MCP layer costs over its REST route.
  Each answer is checked (status 200 and the tool's output in the body).
- the MCP SDK's client (informative): one session, `call_tool` from N concurrent tasks (1 and 8),
  against httpx from N tasks. Both clients run in this process, so these figures include their
  client-side cost too, as a Python caller's would.

Each round runs both variants (and, for the SDK, each concurrency) in a rotated order, for a fixed
time each; a variant's figure is the median of its per-round calls/s, and the ratio MCP / REST
(higher is better) is of those medians. wrk comes from Debian (`apt-get install -y wrk`; `make
bench` installs it when missing).

Run: `python -m bench.mcp_call [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
import httpx

from bench import request_path
from bench._common import Progress, Row, median, quartiles, rotated, standalone
from testing.launcher import Server

TOKEN = "tsa_bench-admin-token"
TOOL = "countLines"
SOURCE = "exports.run = function (input) { return input.text.split('\\n').length; };"
ARGUMENTS = {"text": "a\nb\nc"}
EXPECTED = 3
CONCURRENCY = (1, 8)
WRK_CONNECTIONS = 4
GOAL = 0.8
HANDSHAKE_VERSION = "2025-11-25"

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


def open_session(url: str) -> str:
    """A handshake-era session, as a client opens one: `initialize`, then `notifications/initialized`."""
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": {"name": "bench.mcp_call", "version": "1"}}}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
        opened = http.post("/mcp", json=initialize)
        session = opened.headers.get("mcp-session-id")
        if opened.status_code != 200 or not session:
            raise SystemExit(f"bench.mcp_call: initialize answered {opened.status_code}: {opened.text}")
        headers = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE_VERSION}
        initialized = http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        if initialized.status_code != 202:
            raise SystemExit(f"bench.mcp_call: notifications/initialized answered {initialized.status_code}")
    return session


# wrk's script (bench.request_path's): POSTs `head .. n .. tail` with n counting the requests (MCP:
# the requests of one session are told apart by their JSON-RPC id), or the body as it is (REST: a
# tool takes no member it does not declare); it counts the answers that are not 200 with the
# expected output, and prints one line of JSON at the end.
def wrk_script(path: str, body: str | tuple[str, str], expected: str, headers: dict[str, str]) -> str:
    """`body`: as it is, or a (head, tail) pair with a counter between them."""
    return request_path.wrk_script("POST", path, body, expected, headers)


def wrk_variants(url: str, session: str) -> dict[str, str]:
    """wrk's script for each variant: the same tool, the same arguments, over MCP and over REST."""
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    mcp_headers = {**auth, "Accept": "application/json, text/event-stream", "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE_VERSION}
    params = json.dumps({"name": TOOL, "arguments": ARGUMENTS}, separators=(",", ":"))
    call = ('{"jsonrpc":"2.0","method":"tools/call","params":' + params + ',"id":', "}")
    return {
        "mcp": wrk_script("/mcp", call, f'"text":"{EXPECTED}"', mcp_headers),
        "rest": wrk_script(f"/api/v1/tools/{TOOL}/call", json.dumps(ARGUMENTS), f'"output":{EXPECTED}', auth),
    }


def run_wrk(url: str, script: Path, seconds: float) -> dict[str, float]:
    command = ["wrk", "-t1", f"-c{WRK_CONNECTIONS}", f"-d{max(1, round(seconds))}s", "-s", str(script), url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    found = re.search(r"^WRK (\{.*\})$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"bench.mcp_call: wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    figures = json.loads(found.group(1))
    return {"rate": figures["requests"] / figures["micros"] * 1e6, "p50": figures["p50"] / 1e6,
            "wrong": figures["wrong"] + figures["errors"]}


def ensure_wrk() -> None:
    if shutil.which("wrk") is None:
        raise SystemExit("bench.mcp_call: wrk is needed: apt-get install -y wrk (`make bench` installs it when missing)")


def wrk_rounds(url: str, tmp: str, variants: dict[str, str], rounds: int, seconds: float, warmup: float,
               progress: Progress) -> dict[str, list[dict[str, float]]]:
    """Each variant's wrk script (name -> Lua) run `warmup` seconds untimed, then `rounds` rounds of
    `seconds` each, the order rotated each round: each variant's figures (rate, p50, wrong), a round each."""
    scripts = {}
    for name, text in variants.items():
        scripts[name] = Path(tmp) / f"{name.replace('/', '_')}.lua"
        scripts[name].write_text(text)
    for script in scripts.values():
        run_wrk(url, script, warmup)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in scripts}
    progress(f"wrk: {rounds} rounds × {seconds} s per variant, {WRK_CONNECTIONS} connections")
    for r in range(rounds):
        for name in rotated(list(scripts), r):
            runs[name].append(run_wrk(url, scripts[name], seconds))
        progress("  round {}/{}: {}".format(r + 1, rounds, ", ".join(f"{n} {runs[n][-1]['rate']:,.0f}/s" for n in scripts)))
    return runs


def measure_wrk(url: str, tmp: str, args: argparse.Namespace, progress: Progress) -> tuple[Row, int]:
    """The goal's figure: wrk, one session, 4 connections, MCP against REST, rounds interleaved."""
    session = open_session(url)
    progress(f"wrk: session {session[:8]}…, warming up for {args.warmup} s each")
    runs = wrk_rounds(url, tmp, wrk_variants(url, session), args.rounds, args.wrk_seconds, args.warmup, progress)
    mcp, rest = ([run["rate"] for run in runs[name]] for name in ("mcp", "rest"))
    q1, q3 = quartiles([m / r for m, r in zip(mcp, rest)])
    p50 = {name: median([run["p50"] for run in runs[name]]) for name in runs}
    ratio = median(mcp) / median(rest)
    row = Row(
        f"tools/call over wrk, one session, {WRK_CONNECTIONS} connections",
        f"MCP {median(mcp):,.0f} calls/s (p50 {p50['mcp'] * 1e3:.1f} ms)",
        f"REST {median(rest):,.0f} calls/s (p50 {p50['rest'] * 1e3:.1f} ms)",
        ratio,
        f"≥ {GOAL} (MCP/REST)",
        ratio >= GOAL,
        f"IQR {q1:.2f}–{q3:.2f}",
    )
    return row, int(sum(run["wrong"] for name in runs for run in runs[name]))


async def _rate(call: Callable[[], Awaitable[object]], concurrency: int, seconds: float) -> tuple[float, int]:
    """Calls/s of `concurrency` tasks calling back to back for `seconds`, and how many answered wrong."""
    done = wrong = 0
    deadline = time.perf_counter() + seconds

    async def caller() -> None:
        nonlocal done, wrong
        while time.perf_counter() < deadline:
            try:
                answered = await call()
            except Exception:  # a dropped connection (the server's keep-alive ran out under load): not answered
                answered = None
            if answered != EXPECTED:
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
    ensure_wrk()
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        progress("starting toolsmith serve")
        serve = start_server(tmp)
        try:
            publish_tool(serve)
            wrk_row, wrk_wrong = measure_wrk(serve.url, tmp, args, progress)
            if wrk_wrong:
                progress(f"WARNING: wrk saw {wrk_wrong} answers that were not 200 with {EXPECTED} in them")
            rows, info = anyio.run(_measure, serve.url, args, progress)
            return [wrk_row, *rows], info | {"wrk_wrong": wrk_wrong}
        finally:
            serve.stop()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.mcp_call", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 10 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 6, quick 2)")
    parser.add_argument("--seconds", type=float, help="time per variant and concurrency per round (default 2, quick 1)")
    parser.add_argument("--wrk-seconds", type=float, help="wrk's time per variant per round, whole seconds (default 3, quick 1)")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per variant first (default 1)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 6)
    args.seconds = args.seconds or (1.0 if args.quick else 2.0)
    args.wrk_seconds = args.wrk_seconds or (1.0 if args.quick else 3.0)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
