"""Benchmark: fair share of the sandbox between tenants (issue 19; docs/tenants.md).

One real `toolsmith serve` (embedded sandbox, its default session caps: 16 in all, 8 per tenant)
holds two tenants, made through the operator's API. Tenant B calls a small tool (bench.tool_call's
line counter) over REST from `--b-callers` threads, back to back; tenant A floods the service from
`--a-callers` threads, each calling a tool that loops forever (until its `--spin-ms` timeout) and,
when refused, trying again after `--pause-ms`. Phases alternate in the same run, B alone then B
with A flooding, `--rounds` times (A's calls end before each B-alone phase starts), so that the
machine's other load falls on both alike.

Figures:

- B's throughput (right answers/s) with A flooding against B alone: the median of the phases; the
  spread is the IQR of each round's ratio. Goal ≥ 0.8.
- B's p95 latency, the same way. Goal ≤ 2 (the issue's acceptance).
- B's failures while A floods (any answer but 200 with the right output). Goal 0.
- A: its calls that ran (each until its timeout) and the most of them running in the sandbox at
  once (`Flood.most_at_once`: at most its share), and its 429 `tenant-busy` refusals. A's clients are a process of their own, as another tenant's would be. A token's request rate limit is off (TOOLSMITH_RATE_PER_SECOND=0), so the share of
  sandbox sessions is all that stands between A and B.

Run: `python -m bench.tenants [--quick]`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench._common import Progress, Row, median, millis, quartiles, standalone
from bench.tool_call import EXPECTED, INPUT, SOURCE, TOOL
from testing.launcher import Server

TITLE = "Fair share: tenant B's tool calls alone and while tenant A floods the sandbox with infinite loops, same run"
NOTES = ("(a program running past 20 ms has its worker lowered: niceness 19, or SCHED_IDLE in a tenant's sessions beyond "
         "its first few; a tenant's calls beyond its share are refused at once with 429 tenant-busy)")
THROUGHPUT_GOAL = 0.8
P95_GOAL = 2.0
OPERATOR = "tso_bench_tenants_" + "x" * 24
MODULES = "/api/v1/admin/code-modules"
SPIN = "exports.run = function () { for (;;) {} };"
DEFAULT_SESSIONS = 16
CLOCK_SLACK = 0.02  # seconds, at each end of a run of A's, when counting how many ran at once


@dataclass
class Phase:
    """B's calls in one phase: each right answer's seconds, and the answers that were not right
    (not counted in the throughput nor in the latencies)."""

    seconds: float
    latencies: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds

    @property
    def p95(self) -> float:
        return percentile(self.latencies, 0.95)


class Flood:
    """Tenant A's clients, in a process of their own (as another tenant's are: never sharing B's
    client's interpreter): `callers` threads, each calling the infinite loop again and again."""

    def __init__(self, url: str, token: str, callers: int, pause: float) -> None:
        self.url, self.token, self.callers, self.pause = url, token, callers, pause
        self.answers: Counter[str] = Counter()
        self.ran: list[tuple[float, float]] = []  # each call that ran: (sent, sent + its run's duration)
        self._process: multiprocessing.process.BaseProcess | None = None
        self._stop: Any = None
        self._results: Any = None

    def start(self) -> None:
        """Starts A's process; returns once A has been refused a first time (it holds its share),
        or after a few seconds (its callers fit in its share)."""
        context = multiprocessing.get_context("spawn")
        self._stop, refused = context.Event(), context.Event()
        self._receiving, self._results = context.Pipe(duplex=False)
        self._process = context.Process(target=_flood, daemon=True,
                                        args=(self.url, self.token, self.callers, self.pause, self._stop, refused, self._results))
        self._process.start()
        refused.wait(3)

    def stop(self) -> None:
        """Stops asking; returns once every call of A's has ended (at its timeout at the latest)."""
        assert self._process is not None
        self._stop.set()
        answers, ran = self._receiving.recv()
        self._process.join()
        self.answers.update(answers)
        self.ran += ran

    def most_at_once(self) -> int:
        """The most of A's calls that ran in the sandbox at the same time. Each run is taken as its
        duration (`durationMillis`) from when its request was sent, less `CLOCK_SLACK` at each
        end: a run starts a little after that (the request's way in) and a new call's may start
        as soon as another's session ends, before that one's answer is out. An overlap shorter
        than the slack is not counted; a call beyond the share would overlap by seconds."""
        ran = [(start + CLOCK_SLACK, end - CLOCK_SLACK) for start, end in self.ran if end - start > 2 * CLOCK_SLACK]
        moments = sorted([(start, 1) for start, _ in ran] + [(end, -1) for _, end in ran], key=lambda m: (m[0], m[1]))
        running = most = 0
        for _, change in moments:
            running += change
            most = max(most, running)
        return most


def _flood(url: str, token: str, callers: int, pause: float, stop: Any, refused: Any, results: Any) -> None:
    answers: Counter[str] = Counter()
    ran: list[tuple[float, float]] = []
    lock = threading.Lock()

    def loop() -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60, trust_env=False) as http:
            while not stop.is_set():
                sent = time.monotonic()
                answer = http.post("/api/v1/tools/spin/call", json={})
                body = answer.json()
                outcome = f"{answer.status_code} {body.get('code') or (body.get('error') or {}).get('type')}"
                with lock:
                    answers[outcome] += 1
                    if answer.status_code == 200:
                        ran.append((sent, sent + body["durationMillis"] / 1000))
                if answer.status_code == 429:
                    refused.set()
                    stop.wait(pause)

    threads = [threading.Thread(target=loop) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.send((answers, ran))


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def b_phase(url: str, token: str, callers: int, seconds: float) -> Phase:
    """`callers` threads of B's calling its tool back to back for `seconds`; every answer checked."""
    phase = Phase(seconds)
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def loop() -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60, trust_env=False) as http:
            while time.monotonic() < deadline:
                started = time.perf_counter()
                answer = http.post("/api/v1/tools/countLines/call", json=INPUT)
                elapsed = time.perf_counter() - started
                wrong = None
                if answer.status_code != 200:
                    wrong = f"{answer.status_code} {answer.json().get('code')}"
                elif answer.json().get("output") != EXPECTED:
                    wrong = f"200 {answer.json().get('error')}"
                with lock:
                    if wrong:
                        phase.failures[wrong] += 1
                    else:
                        phase.latencies.append(elapsed)

    threads = [threading.Thread(target=loop) for _ in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return phase


def _tenant(http: httpx.Client, tenant: str) -> str:
    made = http.post("/api/v1/operator/tenants", json={"id": tenant, "name": tenant.title()},
                     headers={"Authorization": f"Bearer {OPERATOR}"})
    if made.status_code != 201:
        raise SystemExit(f"bench.tenants: creating tenant {tenant} answered {made.status_code}: {made.text}")
    return made.json()["adminToken"]


def _publish(http: httpx.Client, token: str, module_id: str, content: str, tool: dict[str, object]) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    for answer in (http.post(MODULES, json={"id": module_id, "description": module_id, "draftContent": content, "tool": tool}, headers=headers),
                   http.post(f"{MODULES}/{module_id}/publish", headers=headers)):
        if answer.status_code not in (200, 201):
            raise SystemExit(f"bench.tenants: {answer.request.method} {answer.request.url} answered {answer.status_code}: {answer.text}")


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("tenants", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-tenants-") as tmp:
        server = Server(Path(tmp) / "data", inherit_settings=False, env={
            "TOOLSMITH_ADMIN_TOKEN": "tsa_bench_tenants_" + "x" * 24, "TOOLSMITH_OPERATOR_TOKEN": OPERATOR,
            "TOOLSMITH_RATE_PER_SECOND": "0", "CODESANDBOX_MAX_ACTIVE_SESSIONS": str(args.sessions),
        })
        try:
            server.start()
        except RuntimeError as failed:
            raise SystemExit(f"bench.tenants: {failed}") from None
        try:
            return _measure(server, args, progress)
        finally:
            server.stop()


def _measure(server: Server, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:
    share = max(1, args.sessions // 2)
    with httpx.Client(base_url=server.url, timeout=60, trust_env=False) as http:
        a_token, b_token = _tenant(http, "alpha"), _tenant(http, "beta")
        _publish(http, b_token, "countLines", SOURCE, TOOL)
        _publish(http, a_token, "spin", SPIN, {"timeoutMillis": args.spin_ms})
    progress(f"tenants alpha (A) and beta (B) made; share {share} sessions each of {args.sessions}; warming up")
    b_phase(server.url, b_token, args.b_callers, 1.0)
    flood = Flood(server.url, a_token, args.a_callers, args.pause_ms / 1000)
    flood.start()  # A's first flood starts its background workers: not timed
    time.sleep(args.spin_ms / 1000)
    flood.stop()
    flood = Flood(server.url, a_token, args.a_callers, args.pause_ms / 1000)
    alone: list[Phase] = []
    flooded: list[Phase] = []
    progress(f"{args.rounds} rounds: B alone {args.seconds:g} s, then B with A flooding {args.seconds:g} s "
             f"({args.b_callers} B callers; {args.a_callers} A callers, {args.spin_ms} ms loops, {args.pause_ms:g} ms pause after a 429)")
    for r in range(args.rounds):
        alone.append(b_phase(server.url, b_token, args.b_callers, args.seconds))
        flood.start()
        time.sleep(args.settle_ms / 1000)
        flooded.append(b_phase(server.url, b_token, args.b_callers, args.seconds))
        flood.stop()
        progress(f"  round {r + 1}/{args.rounds}: B alone {alone[-1].rate:,.0f}/s p95 {millis(alone[-1].p95)}; "
                 f"with A {flooded[-1].rate:,.0f}/s p95 {millis(flooded[-1].p95)}; load {os.getloadavg()[0]:.1f}")
    rows = _rows(alone, flooded, flood, share)
    return rows, {"load": " ".join(f"{v:.1f}" for v in os.getloadavg()), "args": vars(args), "a": dict(flood.answers)}


def _rows(alone: list[Phase], flooded: list[Phase], flood: Flood, share: int) -> list[Row]:
    rate_alone, rate_flooded = median([p.rate for p in alone]), median([p.rate for p in flooded])
    p95_alone, p95_flooded = median([p.p95 for p in alone]), median([p.p95 for p in flooded])
    rate_q = quartiles([f.rate / a.rate for a, f in zip(alone, flooded)])
    p95_q = quartiles([f.p95 / a.p95 for a, f in zip(alone, flooded)])
    failures = sum((p.failures for p in flooded), Counter())
    calls = sum(len(p.latencies) + sum(p.failures.values()) for p in flooded)
    refused = flood.answers.get("429 tenant-busy", 0)
    others = {k: v for k, v in flood.answers.items() if k not in ("429 tenant-busy", "200 timeout")}
    most = flood.most_at_once()
    rows = [
        Row("B's throughput, with A flooding / alone", f"{rate_flooded:,.0f} calls/s", f"alone {rate_alone:,.0f} calls/s",
            rate_flooded / rate_alone, f"≥ {THROUGHPUT_GOAL}", rate_flooded / rate_alone >= THROUGHPUT_GOAL,
            f"IQR {rate_q[0]:.2f}–{rate_q[1]:.2f}"),
        Row("B's p95 latency, with A flooding / alone", millis(p95_flooded), f"alone {millis(p95_alone)}",
            p95_flooded / p95_alone, f"≤ {P95_GOAL}", p95_flooded / p95_alone <= P95_GOAL, f"IQR {p95_q[0]:.2f}–{p95_q[1]:.2f}"),
        Row("B's p50 latency, with A flooding / alone", millis(median([statistics.median(p.latencies) for p in flooded])),
            f"alone {millis(median([statistics.median(p.latencies) for p in alone]))}"),
        Row("B's calls failed while A floods", f"{sum(failures.values())} of {calls:,}", ", ".join(f"{k}: {v}" for k, v in failures.items()) or "none",
            goal="0", meets=not failures),
        Row("A's calls running at once, most", f"{most}", f"its share {share}", goal=f"≤ {share}", meets=most <= share),
        Row("A's calls: ran to their timeout / refused 429 tenant-busy", f"{flood.answers.get('200 timeout', 0):,} / {refused:,}",
            ", ".join(f"{k}: {v}" for k, v in others.items()) or "no other answer", goal="> 0 refused", meets=refused > 0 and not others),
    ]
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.tenants", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 30 s)")
    parser.add_argument("--rounds", type=int, help="alternations of B alone / B with A flooding (default 6, quick 3)")
    parser.add_argument("--seconds", type=float, help="length of each phase (default 5, quick 3)")
    parser.add_argument("--b-callers", type=int, default=2, help="B's threads calling its tool back to back (default 2)")
    parser.add_argument("--a-callers", type=int, help="A's threads calling its infinite loop (default twice its share)")
    parser.add_argument("--spin-ms", type=int, default=2000, help="the timeout of A's infinite loop (default 2000)")
    parser.add_argument("--pause-ms", type=float, default=100, help="A's pause after a 429 (default 100)")
    parser.add_argument("--settle-ms", type=float, default=200, help="from A's first refusal (it holds its share) to B's first timed call (default 200)")
    parser.add_argument("--sessions", type=int, default=DEFAULT_SESSIONS, help="CODESANDBOX_MAX_ACTIVE_SESSIONS (default 16; a tenant's share is half)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 6)
    args.seconds = args.seconds or (3.0 if args.quick else 5.0)
    args.a_callers = args.a_callers or 2 * max(1, args.sessions // 2)
    return args


main = standalone(run, TITLE, NOTES)


if __name__ == "__main__":
    sys.exit(main())
