"""Benchmark: API URL tool calls (issue 16) through `POST /api/v1/tools/{name}/call` against the
same request made directly with httpx, in one run.

Three processes: a small local HTTP API (`bench/_upstream.py`: uvicorn answering a ~400-byte JSON
weather answer), one `toolsmith serve` (SQLite, `TOOLSMITH_EGRESS_ALLOW` naming the local API) with
two API URL tools on it — `weather` (the answer as it is) and `temperature` (the same request, the
answer extracted by the JMESPath `current.temp`) — and this process, the client.

- Throughput (the goal, ≥ 0.8× at 8 concurrent callers; issue 30): the same number of concurrent
  callers on both sides (httpx's async client, one kept-alive connection per caller: a pool of
  exactly `CONCURRENCY` connections, all kept alive) calling back to back for a fixed time: through
  Toolsmith (`POST /api/v1/tools/weather/call`) and directly (`GET /v1/weather/{city}` on the local
  API). Toolsmith's own requests to the local API go through its egress pool, which keeps its
  connections alive too: the local API counts the connections each side opened (by User-Agent),
  shown last. Every answer is checked (the city comes back). 1 caller: informative.
- Overhead per call: the median latency of one caller through Toolsmith minus the direct one, in
  µs, without and with JMESPath extraction.
- The route's floor (informative): the same calls of a native tool (`bench._upstream:weather`)
  that answers the same JSON at once, without any outbound request. No tool called through
  `POST /api/v1/tools/{name}/call` on this machine can do better: its ratio is the ceiling.

Variants run in a rotated order each round; a figure is the median of the rounds.

Run: `python -m bench.api_tools [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import anyio
import httpx

from bench._common import Progress, Row, median, quartiles, rotated, standalone
from testing.launcher import Server, free_port, launch, stop

TOKEN = "tsa_bench-admin-token"
GOAL = 0.8  # at CONCURRENCY callers (issue 30, point 4)
CONCURRENCY = 8
CITY = "Oslo"

TITLE = "Benchmark — API URL tool calls through POST /api/v1/tools/{name}/call vs the same request with httpx directly; medians"


def start_upstream(tmp: str, progress: Progress) -> tuple[subprocess.Popen, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = launch([sys.executable, "-m", "bench._upstream", str(port)], url=url, log_path=Path(tmp) / "upstream.log",
                     env=dict(os.environ), name="the local API", ready_path=f"/v1/weather/{CITY}")
    progress(f"local API on {url}")
    return process, url


def start_toolsmith(tmp: str, upstream: str) -> Server:
    allow = upstream.removeprefix("http://")
    tools_file = Path(tmp) / "tools.json"
    tools_file.write_text(json.dumps({"native": [{
        "name": "nativeWeather", "description": "The same answer, at once", "entrypoint": "bench._upstream:weather"}]}))
    server = Server(data_dir=Path(tmp) / "data", token=TOKEN, inherit_settings=False, log_file=Path(tmp) / "serve.log", log_mode="w",
                    env={"TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING", "TOOLSMITH_EGRESS_ALLOW": allow,
                         "TOOLSMITH_TOOLS_FILE": str(tools_file), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    try:
        return server.start()
    except RuntimeError as failed:
        raise SystemExit(f"bench.api_tools: {failed}") from None


def create_tools(server: Server, upstream: str) -> None:
    weather = {"description": "Current weather for a city", "urlTemplate": upstream + "/v1/weather/{city}",
               "parameters": [{"name": "city", "type": "string", "required": True, "location": "path"}]}
    with server.client() as http:
        for name, extra in (("weather", {}), ("temperature", {"response": {"jmespath": "current.temp"}})):
            made = http.post("/api/v1/admin/api-tools", json={"id": name, **weather, **extra})
            if made.status_code != 201:
                raise SystemExit(f"bench.api_tools: could not create {name}: {made.text}")


async def _rate(call: Callable[[], Awaitable[bool]], concurrency: int, seconds: float) -> tuple[float, float, int]:
    """Calls/s of `concurrency` callers back to back for `seconds`, the median latency, and how many answered wrong."""
    latencies: list[float] = []
    wrong = 0
    deadline = time.perf_counter() + seconds

    async def caller() -> None:
        nonlocal wrong
        while time.perf_counter() < deadline:
            started = time.perf_counter()
            try:
                ok = await call()
            except Exception:  # noqa: BLE001 - a failed call is counted, not fatal
                ok = False
            latencies.append(time.perf_counter() - started)
            wrong += not ok

    started = time.perf_counter()
    async with anyio.create_task_group() as tasks:
        for _ in range(concurrency):
            tasks.start_soon(caller)
    return len(latencies) / (time.perf_counter() - started), median(latencies), wrong


async def _measure(server: Server, upstream: str, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:
    # One kept-alive connection per caller on both sides, kept between the phases too (httpx drops
    # an idle one after 5 s by default; the local API keeps them, `bench._upstream`).
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY, keepalive_expiry=120)
    async with (
        httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, limits=limits, timeout=30, trust_env=False) as api,
        httpx.AsyncClient(base_url=upstream, limits=limits, timeout=30, trust_env=False) as direct,
    ):
        async def through(name: str, check: Callable[[object], bool]) -> Callable[[], Awaitable[bool]]:
            async def call() -> bool:
                answer = await api.post(f"/api/v1/tools/{name}/call", json={"city": CITY})
                return answer.status_code == 200 and check(answer.json()["output"])
            return call

        async def straight() -> bool:
            answer = await direct.get(f"/v1/weather/{CITY}")
            return answer.status_code == 200 and answer.json()["city"] == CITY

        calls = {
            "direct": straight,
            "toolsmith": await through("weather", lambda o: isinstance(o, dict) and o.get("city") == CITY),
            "toolsmith+jmespath": await through("temperature", lambda o: o == 21.5),
            "floor": await through("nativeWeather", lambda o: isinstance(o, dict) and o.get("city") == CITY),
        }
        for name, call in calls.items():
            if not await call():
                raise SystemExit(f"bench.api_tools: {name} did not answer as expected")
        progress(f"answers checked; warming up {args.warmup} s each")
        for call in calls.values():
            await _rate(call, CONCURRENCY, args.warmup)
        rates: dict[tuple[str, int], list[float]] = {(n, c): [] for n in calls for c in (1, CONCURRENCY)}
        p50: dict[tuple[str, int], list[float]] = {(n, c): [] for n in calls for c in (1, CONCURRENCY)}
        wrong = 0
        progress(f"{args.rounds} rounds × {args.seconds} s per variant, 1 and {CONCURRENCY} callers")
        for r in range(args.rounds):
            for c in (1, CONCURRENCY):
                for name in rotated(list(calls), r):
                    rate, latency, bad = await _rate(calls[name], c, args.seconds)
                    rates[(name, c)].append(rate)
                    p50[(name, c)].append(latency)
                    wrong += bad
            progress(f"  round {r + 1}/{args.rounds}: " + ", ".join(
                f"{n}×{c} {rates[(n, c)][-1]:,.0f}/s" for c in (1, CONCURRENCY) for n in calls))
        connections = (await direct.get("/v1/connections")).json()
    return _rows(rates, p50, connections), {"wrong": wrong, "args": vars(args), "connections": connections}


def _rows(rates: dict[tuple[str, int], list[float]], p50: dict[tuple[str, int], list[float]],
          connections: dict[str, int]) -> list[Row]:
    rows = []
    for c in (CONCURRENCY, 1):
        ours, base = rates[("toolsmith", c)], rates[("direct", c)]
        q1, q3 = quartiles([o / b for o, b in zip(ours, base)])
        ratio = median(ours) / median(base)
        rows.append(Row(
            f"calls/s, {c} concurrent caller{'s' if c > 1 else ''}",
            f"Toolsmith {median(ours):,.0f}/s",
            f"httpx directly {median(base):,.0f}/s",
            ratio,
            f"≥ {GOAL}" if c == CONCURRENCY else "(informative)",
            ratio >= GOAL if c == CONCURRENCY else None,
            f"IQR {q1:.2f}–{q3:.2f}",
        ))
    floor, base = rates[("floor", CONCURRENCY)], rates[("direct", CONCURRENCY)]
    rows.append(Row(
        f"the route's floor: a native tool answering at once, {CONCURRENCY} callers",
        f"Toolsmith {median(floor):,.0f}/s",
        f"httpx directly {median(base):,.0f}/s",
        median(floor) / median(base),
        "(the ceiling of any tool on this route)",
        None,
        "",
    ))
    direct = median(p50[("direct", 1)])
    for name, what in (("toolsmith", "without extraction"), ("toolsmith+jmespath", "with JMESPath extraction")):
        latency = median(p50[(name, 1)])
        rows.append(Row(
            f"overhead per call, {what}",
            f"{(latency - direct) * 1e6:,.0f} µs (p50 {latency * 1e6:,.0f} µs)",
            f"direct p50 {direct * 1e6:,.0f} µs",
            None, "(informative)", None, "",
        ))
    # Both sides keep their connections to the local API alive: one per caller over the whole run
    # (the direct side's count includes the launcher's readiness probe).
    rows.append(Row(
        "connections opened to the local API over the run",
        f"Toolsmith's egress {connections['toolsmith']}",
        f"httpx directly {connections['direct']}",
        None, f"(informative: kept alive, {CONCURRENCY} each + the probe)", None, "",
    ))
    return rows


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("api_tools", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        upstream_process, upstream = start_upstream(tmp, progress)
        try:
            progress("starting toolsmith serve")
            server = start_toolsmith(tmp, upstream)
            try:
                create_tools(server, upstream)
                rows, info = anyio.run(_measure, server, upstream, args, progress)
            finally:
                server.stop()
        finally:
            stop(upstream_process)
    if info["wrong"]:
        progress(f"WARNING: {info['wrong']} calls did not answer as expected")
    return rows, info


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.api_tools", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 15 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--seconds", type=float, help="time per variant and concurrency per round (default 2, quick 1)")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per variant first (default 1)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.seconds = args.seconds or (1.0 if args.quick else 2.0)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
