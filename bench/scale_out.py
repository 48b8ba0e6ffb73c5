"""Benchmark: the scale-out topology (issue 15, 7): two `toolsmith serve` on one PostgreSQL store and
one OpenSearch index, fed by one `toolsmith projections run`, as docker-compose.yml runs them.

Figures, in one run:

- write → listed: from sending a create to API one until API two lists it (p50; goal ≤ 50 ms).
  Also the write's own answer, which waits for the read side (read-your-writes). Before issue 15
  a write answered only after the runner's next poll: 415–523 ms on an idle system.
- tool calls/s: `--callers` threads calling the published tools over REST, spread over both APIs,
  with no writes and then while `--writes-per-second` writes land (a description changed on a
  tool, through API one). Ratio with / without; goal ≥ 0.8. The catalog's single flight and
  incremental upkeep (another part of issue 15) decide much of this one.
- GET latency: a list page from API one while `--waiting` writes wait for a paused runner
  (SIGSTOP), against none waiting (p50; the ratio should stay near 1: waiting writes hold no thread).

The engines are the caller's: PostgreSQL (eventsourcing's POSTGRES_* variables) and OpenSearch
(OPENSEARCH_URL), e.g. `export $(scripts/postgres.sh start); export OPENSEARCH_URL=$(scripts/opensearch.sh start | tail -1)`.
Each run gets a fresh schema and index, dropped afterwards.

Run: `python -m bench.scale_out [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench._common import Progress, Row, format_table, machine_line, median
from testing.launcher import SETTING_PREFIXES, TOOLSMITH, Server

TITLE = "Scale-out: two APIs on PostgreSQL, an external projections runner"
TOKEN = "tsa_bench_scale_out_" + "x" * 24
BASE = "/api/v1/admin/code-modules"
SOURCE = "exports.run = function (input) { return input.n + 1; };"


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=200, help="published tools in the store")
    parser.add_argument("--samples", type=int, default=40, help="writes timed for write → listed")
    parser.add_argument("--callers", type=int, default=8, help="threads calling tools")
    parser.add_argument("--seconds", type=float, default=15, help="length of each throughput phase")
    parser.add_argument("--writes-per-second", type=float, default=2.0)
    parser.add_argument("--waiting", type=int, default=60, help="writes waiting on a paused runner")
    parser.add_argument("--quick", action="store_true", help="20 tools, 10 samples, 4 s phases")
    args = parser.parse_args(argv)
    if args.quick:
        args.tools, args.samples, args.seconds = 20, 10, 4.0
    progress = Progress("scale_out", quiet=quiet)
    missing = [name for name in ("POSTGRES_HOST", "POSTGRES_USER", "POSTGRES_DBNAME", "OPENSEARCH_URL") if not os.environ.get(name)]
    if missing:
        raise SystemExit(f"bench.scale_out needs the engines: {', '.join(missing)} unset "
                         "(export $(scripts/postgres.sh start); OPENSEARCH_URL from scripts/opensearch.sh start)")
    with _topology(progress) as (one, two, runner):
        _publish_tools(one, args.tools, progress)
        listed, answered = _write_to_listed(one, two, args.samples, progress)
        _warm(one, two, args.tools, progress)
        quiet_rate = _call_rate(one, two, args, writes=False, progress=progress)
        busy_rate = _call_rate(one, two, args, writes=True, progress=progress)
        idle_get, waiting_get = asyncio.run(_get_while_writes_wait(one, runner, args.waiting, progress))
    rows = [
        Row("write → listed by the other API, p50", f"{listed * 1000:.1f} ms", "goal 50 ms", listed * 1000 / 50,
            "≤ 1.0", listed <= 0.050),
        Row("a write's own answer (waits for the read side), p50", f"{answered * 1000:.1f} ms", "was 415–523 ms"),
        Row(f"tool calls/s, {args.writes_per_second:g} writes/s landing", f"{busy_rate:,.0f} calls/s",
            f"no writes {quiet_rate:,.0f} calls/s", busy_rate / quiet_rate if quiet_rate else None, "≥ 0.8",
            quiet_rate > 0 and busy_rate / quiet_rate >= 0.8),
        Row(f"GET list p50, {args.waiting} writes waiting", f"{waiting_get * 1000:.1f} ms",
            f"none waiting {idle_get * 1000:.1f} ms", waiting_get / idle_get if idle_get else None, "≤ 1.5 (unaffected)",
            idle_get > 0 and waiting_get / idle_get <= 1.5),
    ]
    return rows, {"args": vars(args), "load": os.getloadavg()}


@contextmanager
def _topology(progress: Progress) -> Iterator[tuple[Server, Server, subprocess.Popen]]:
    """Both APIs and the runner on a fresh schema and index, torn down afterwards."""
    import psycopg

    from infrastructure.notifications import connection_settings

    schema = f"bench_scale_out_{uuid.uuid4().hex[:8]}"
    index = f"bench-scale-out-{uuid.uuid4().hex[:8]}"
    connection = connection_settings(os.environ)
    with psycopg.connect(**connection, autocommit=True) as admin:  # type: ignore[arg-type]
        admin.execute(f'CREATE SCHEMA "{schema}"')
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_SCHEMA": schema, "TOOLSMITH_OPENSEARCH_INDEX": index,
           "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "TOOLSMITH_PROJECTION_RUNNER": "external", "TOOLSMITH_ADMIN_TOKEN": TOKEN,
           "TOOLSMITH_READ_YOUR_WRITES_SECONDS": "30", "TOOLSMITH_LOG_LEVEL": "WARNING",
           # The runner paused (SIGSTOP) for as long as the writes wait is not yet counted dead (two
           # silent heartbeats), so they wait their bound while the pages are read.
           "TOOLSMITH_PROJECTION_HEARTBEAT_SECONDS": "30"}
    with tempfile.TemporaryDirectory(prefix="bench-scale-out-") as tmp:
        root = Path(tmp)
        progress(f"starting two APIs and the runner on schema {schema}, index {index}")
        one = Server(data_dir=root / "one", env=env, token=TOKEN).start(120)
        runner_env = {k: v for k, v in os.environ.items() if not k.startswith(SETTING_PREFIXES)}
        runner_env.update({k: v for k, v in os.environ.items() if k.startswith(("POSTGRES_", "OPENSEARCH_"))})
        runner_env.update({k: v for k, v in env.items() if k != "TOOLSMITH_ADMIN_TOKEN"}, TOOLSMITH_DATA_DIR=str(root / "runner"))
        log = root / "runner.log"
        runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=runner_env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        two: Server | None = None
        try:
            two = Server(data_dir=root / "two", env=env, token=TOKEN).start(120)
            deadline = time.monotonic() + 120
            while "following the event log" not in log.read_text():
                if runner.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"bench.scale_out: the runner did not start:\n{log.read_text()}")
                time.sleep(0.1)
            yield one, two, runner
        finally:
            os.kill(runner.pid, signal.SIGCONT)
            for server in (one, two):
                if server is not None:
                    server.stop()
            runner.terminate()
            runner.wait(timeout=30)
            with psycopg.connect(**connection, autocommit=True) as admin:  # type: ignore[arg-type]
                admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
            httpx.delete(f"{os.environ['OPENSEARCH_URL'].rstrip('/')}/{index}*", trust_env=False)


def _publish_tools(api: Server, count: int, progress: Progress) -> None:
    progress(f"publishing {count} tools")
    with api.client() as http:
        for n in range(count):
            created = http.post(BASE, json={"id": f"tool{n}", "description": f"Tool {n}", "draftContent": SOURCE, "tool": {}})
            published = http.post(f"{BASE}/tool{n}/publish")
            if created.status_code != 201 or published.status_code != 200:
                raise SystemExit(f"bench.scale_out: tool{n}: {created.status_code} {published.status_code} {published.text}")


def _write_to_listed(one: Server, two: Server, samples: int, progress: Progress) -> tuple[float, float]:
    """Median seconds from sending a create to API one until API two lists it, and of its answer."""
    progress(f"write → listed: {samples} creates through API one, each looked for through API two")
    listed, answered = [], []
    with one.client() as first, two.client() as second:
        for n in range(samples):
            module_id = f"listed{n}"
            started = time.perf_counter()
            created = first.post(BASE, json={"id": module_id, "description": "d", "draftContent": SOURCE})
            answered.append(time.perf_counter() - started)
            if created.status_code != 201:
                raise SystemExit(f"bench.scale_out: create answered {created.status_code} {created.text}")
            while module_id not in [m["id"] for m in second.get(BASE, params={"search": module_id}).json()["collection"]]:
                if time.perf_counter() - started > 30:
                    raise SystemExit(f"bench.scale_out: {module_id} not listed within 30 s")
            listed.append(time.perf_counter() - started)
            time.sleep(0.05)  # an idle system between writes, as the issue measured
    return median(listed), median(answered)


def _warm(one: Server, two: Server, tools: int, progress: Progress) -> None:
    """Each tool called once through each API, so that no phase pays for building the catalog."""
    progress("warming both APIs: each tool called once")
    for api in (one, two):
        with api.client() as http:
            for n in range(tools):
                http.post(f"/api/v1/tools/tool{n}/call", json={"n": n})


def _call_rate(one: Server, two: Server, args: argparse.Namespace, *, writes: bool, progress: Progress) -> float:
    """Tool calls per second by `args.callers` threads over both APIs, while writes land or not."""
    label = f"{args.writes_per_second:g} writes/s landing" if writes else "no writes"
    progress(f"tool calls: {args.callers} callers for {args.seconds:g} s, {label}")
    stop = threading.Event()
    calls = [0] * args.callers
    failures = [0] * args.callers

    def caller(k: int) -> None:
        with (one, two)[k % 2].client() as http:
            for n in itertools.count(k):
                if stop.is_set():
                    return
                answer = http.post(f"/api/v1/tools/tool{n % args.tools}/call", json={"n": n})
                if answer.status_code == 200:
                    calls[k] += 1
                else:
                    failures[k] += 1

    def writer() -> None:
        with one.client() as http:
            for n in itertools.count():
                if stop.wait(1 / args.writes_per_second):
                    return
                http.put(f"{BASE}/tool{n % args.tools}", json={"description": f"Tool {n % args.tools}, changed {n}"})

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(args.callers)]
    if writes:
        threads.append(threading.Thread(target=writer))
    for thread in threads:
        thread.start()
    time.sleep(args.seconds)
    stop.set()
    for thread in threads:
        thread.join()
    if sum(failures):
        progress(f"WARNING: {sum(failures)} tool calls failed")
    return sum(calls) / args.seconds


async def _get_while_writes_wait(api: Server, runner: subprocess.Popen, waiting: int, progress: Progress) -> tuple[float, float]:
    """Median seconds of a list page with none waiting, and with `waiting` writes waiting for the paused runner."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=api.url, headers=headers, timeout=60, limits=httpx.Limits(max_connections=waiting + 10)) as http:
        async def page_times(count: int) -> float:
            times = []
            for _ in range(count):
                started = time.perf_counter()
                answer = await http.get(BASE, params={"limit": 20})
                times.append(time.perf_counter() - started)
                if answer.status_code != 200:
                    raise SystemExit(f"bench.scale_out: list answered {answer.status_code}")
            return statistics.median(times)

        progress("GET list: 20 pages with no write waiting")
        idle = await page_times(20)
        progress(f"GET list: {waiting} writes waiting for the paused runner, 20 pages meanwhile")
        start = (await http.get("/healthz")).json()["eventStore"]["position"]
        os.kill(runner.pid, signal.SIGSTOP)
        try:
            writes = [asyncio.ensure_future(http.post(BASE, json={"id": f"waiting{n}", "description": "d", "draftContent": SOURCE}))
                      for n in range(waiting)]
            while (await http.get("/healthz")).json()["eventStore"]["position"] < start + waiting:
                await asyncio.sleep(0.05)
            busy = await page_times(20)
            if any(write.done() for write in writes):
                progress("WARNING: some writes were answered before the pages were read (the runner was not paused?)")
        finally:
            os.kill(runner.pid, signal.SIGCONT)
        await asyncio.gather(*writes)
    return idle, busy


def main(argv: Sequence[str] | None = None) -> int:
    rows, info = run(argv)
    print(format_table(TITLE, rows))
    print(f"({machine_line()}; load average {', '.join(f'{x:.1f}' for x in info['load'])})")  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main())
