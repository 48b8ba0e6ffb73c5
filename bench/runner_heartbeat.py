"""Benchmark: how soon the API tells of a dead `toolsmith projections run` (issue 28, finding 11).

One `toolsmith serve` with TOOLSMITH_PROJECTION_RUNNER=external on OpenSearch, and a runner process
beating every `--heartbeat` seconds. Each round starts a runner, waits until /healthz says it is
alive, lets a random part of a heartbeat pass, kills it with SIGKILL and times, in one run:

- dead in /healthz: from the kill until /healthz says `alive: false`, nothing written meanwhile
  (p50 and the worst; goal: within two heartbeats and the quarter the API takes to look, 2.25 x).
  Before, /healthz said `alive: true` for as long as nothing was written, and for 30 s after a write.
- a write in flight: a create sent right after the kill, until it is answered (p50; goal the same).
  It stops waiting once the heartbeat is stale, with `Toolsmith-Read-Your-Writes: unavailable`;
  before, it waited its whole bound (TOOLSMITH_READ_YOUR_WRITES_SECONDS, 5 s by default; 30 here).

OpenSearch is the caller's (OPENSEARCH_URL, e.g. from `scripts/opensearch.sh start`); each run gets an
index of its own, deleted afterwards. The store is SQLite.

Run: `python -m bench.runner_heartbeat [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench._common import Progress, Row, format_table, machine_line, median
from testing.launcher import SETTING_PREFIXES, TOOLSMITH, Server

TITLE = "Projections runner heartbeat: a dead runner in /healthz and for a waiting write"
TOKEN = "tsa_bench_runner_heartbeat_" + "x" * 24
BASE = "/api/v1/admin/code-modules"
HEADER = "Toolsmith-Read-Your-Writes"
WAIT_SECONDS = 30


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    parser = argparse.ArgumentParser(prog="python -m bench.runner_heartbeat", description=__doc__.split("\n\n")[0])
    parser.add_argument("--heartbeat", type=float, default=2.0, help="TOOLSMITH_PROJECTION_HEARTBEAT_SECONDS")
    parser.add_argument("--rounds", type=int, default=5, help="runners killed for each figure")
    parser.add_argument("--quick", action="store_true", help="2 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 2
    if not os.environ.get("OPENSEARCH_URL"):
        raise SystemExit("bench.runner_heartbeat needs OpenSearch: OPENSEARCH_URL unset (from scripts/opensearch.sh start)")
    progress = Progress("runner_heartbeat", quiet=quiet)
    goal = 2.25 * args.heartbeat
    index = f"bench-runner-heartbeat-{uuid.uuid4().hex[:8]}"
    env = {"OPENSEARCH_URL": os.environ["OPENSEARCH_URL"], "TOOLSMITH_OPENSEARCH_INDEX": index,
           "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "TOOLSMITH_PROJECTION_RUNNER": "external", "TOOLSMITH_ADMIN_TOKEN": TOKEN,
           "TOOLSMITH_PROJECTION_HEARTBEAT_SECONDS": str(args.heartbeat),
           "TOOLSMITH_READ_YOUR_WRITES_SECONDS": str(WAIT_SECONDS), "TOOLSMITH_LOG_LEVEL": "WARNING",
           # only the heartbeat tells of the death here, not the age of an unapplied write
           "TOOLSMITH_READ_MODEL_MAX_LAG_SECONDS": "3600"}
    dead_after: list[float] = []
    answered_after: list[float] = []
    headers: list[str | None] = []
    with tempfile.TemporaryDirectory(prefix="bench-runner-heartbeat-") as tmp:
        root = Path(tmp)
        server = Server(data_dir=root / "data", env=env, token=TOKEN).start(120)
        try:
            with server.client() as http:
                for n in range(args.rounds):
                    progress(f"round {n + 1}/{args.rounds}: killed, nothing written")
                    killed_at = _kill(_alive_runner(server, env, root, progress), args.heartbeat)
                    while _health(server)["readModel"]["runner"]["alive"]:
                        if time.monotonic() - killed_at > WAIT_SECONDS:
                            raise SystemExit(f"bench.runner_heartbeat: /healthz still says the runner is alive {WAIT_SECONDS} s after it was killed")
                        time.sleep(0.02)
                    dead_after.append(time.monotonic() - killed_at)
                for n in range(args.rounds):
                    progress(f"round {n + 1}/{args.rounds}: killed, a write in flight")
                    runner = _alive_runner(server, env, root, progress)
                    _kill(runner, args.heartbeat)
                    sent = time.monotonic()
                    created = http.post(BASE, json={"id": f"inFlight{n}", "description": "d", "draftContent": "exports.x = 1;"},
                                        timeout=WAIT_SECONDS * 2)
                    answered_after.append(time.monotonic() - sent)
                    if created.status_code != 201:
                        raise SystemExit(f"bench.runner_heartbeat: a create answered {created.status_code}: {created.text}")
                    headers.append(created.headers.get(HEADER))
        finally:
            server.stop()
            try:
                httpx.delete(f"{os.environ['OPENSEARCH_URL'].rstrip('/')}/{index}-*", timeout=30)
            except httpx.HTTPError:
                pass
    rows = [
        Row("dead in /healthz after SIGKILL, nothing written, p50", f"{median(dead_after):.2f} s",
            f"goal {goal:g} s (2.25 heartbeats); before: never", median(dead_after) / goal, "≤ 1.0", median(dead_after) <= goal),
        Row("the same, worst", f"{max(dead_after):.2f} s", f"goal {goal:g} s", max(dead_after) / goal, "≤ 1.0",
            max(dead_after) <= goal),
        Row("a write in flight at the kill, answered after, p50", f"{median(answered_after):.2f} s",
            f"before: its whole bound, {WAIT_SECONDS} s", median(answered_after) / goal, f"≤ 1.0 of {goal:g} s",
            median(answered_after) <= goal),
        Row("its answer's Toolsmith-Read-Your-Writes", ", ".join(sorted({str(h) for h in headers})), "before: timeout"),
    ]
    return rows, {"args": vars(args), "load": os.getloadavg(), "dead_after": dead_after, "answered_after": answered_after}


def _health(server: Server) -> dict:
    return httpx.get(f"{server.url}/healthz", timeout=30).json()


def _alive_runner(server: Server, env: dict[str, str], root: Path, progress: Progress) -> subprocess.Popen:
    runner_env = {k: v for k, v in os.environ.items() if not k.startswith(SETTING_PREFIXES) and k != "SQLITE_DBNAME"}
    runner_env.update({k: v for k, v in env.items() if k != "TOOLSMITH_ADMIN_TOKEN"}, TOOLSMITH_DATA_DIR=str(root / "data"))
    log = root / "runner.log"
    runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=runner_env, stdout=log.open("w"),
                              stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while not _health(server)["readModel"]["runner"]["alive"] or "following the event log" not in log.read_text():
        if time.monotonic() > deadline or runner.poll() is not None:
            runner.kill()
            raise SystemExit(f"bench.runner_heartbeat: the runner did not come alive:\n{log.read_text()}")
        time.sleep(0.05)
    progress("runner alive")
    return runner


def _kill(runner: subprocess.Popen, heartbeat: float) -> float:
    """Kills the runner at a random moment of its heartbeat; when it was killed."""
    time.sleep(random.uniform(0, heartbeat))
    killed_at = time.monotonic()
    runner.send_signal(signal.SIGKILL)
    runner.wait(timeout=30)
    return killed_at


def main(argv: Sequence[str] | None = None) -> int:
    rows, info = run(argv)
    print(format_table(TITLE, rows))
    print(f"({machine_line()}; load average {', '.join(f'{x:.1f}' for x in info['load'])})")  # type: ignore[union-attr]
    return 0


if __name__ == "__main__":
    sys.exit(main())
