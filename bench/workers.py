"""Benchmark 3: the embedded sandbox's worker-process pool against a bare QuickJS fresh context.

`EmbeddedSandbox` runs each call in a worker process forked from a zygote; the worker makes the
next fresh context while it is idle. This measures what the pool costs and what a second worker
buys, all in one run, the variants interleaved round by round (order rotated each round) after
every variant has been warmed:

- `bare`: one thread doing `_quickjs.Context()` + `eval` of the small tool as a plain script that
  calls `run` and `JSON.stringify`s the result, back to back: the fresh-context limit.
- `1 worker`: `EmbeddedSandbox(workers=1, max_active_sessions=1)`, one client thread calling
  `run` back to back.
- `2 workers`: `EmbeddedSandbox(workers=2, max_active_sessions=2)`, two client threads.
- `paced, 1 worker` / `paced, 2 workers`: the same pools and clients, each call after an idle
  gap (`--gap-ms`, 2 ms) so that the worker's next fresh context is ready: the latency a tool
  caller sees. Only the call is timed.

Figures: calls/s (median over rounds; the ratio's spread is the IQR of per-round ratios), p50 and
p99 of every timed call, and each worker's RSS and PSS after the runs (PSS from
`/proc/<pid>/smaps_rollup`: the workers share the zygote's pages, so PSS is their honest share),
with the zygote's (the workers' parent). And where the time goes: the CPU each call costs this
process and the workers (`/proc/<pid>/schedstat`), and how long the workers were runnable but had
no CPU — on a shared machine, each call's two hand-offs (request, answer) can each wait behind
other processes, which the bare loop, never blocking, does not. Every client checks every answer.

Run: `python -m bench.workers [--quick]`.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import _quickjs

from bench._common import Progress, Row, median, micros, quartiles, rotated, standalone
from bench.tool_call import EXPECTED, INPUT, SOURCE

if TYPE_CHECKING:
    from sandbox.embedded import EmbeddedSandbox

BARE_SCRIPT = "var exports = {}; " + SOURCE + ' JSON.stringify(exports.run({"text":"a\\nb\\nc"}))'
BARE_EXPECTED = str(EXPECTED)
ONE_WORKER_GOAL = 0.8  # 1 worker against bare
TWO_WORKERS_GOAL = 1.6  # 2 workers against 1
SATURATED = ("bare", "1 worker", "2 workers")
PACED = ("paced, 1 worker", "paced, 2 workers")
TITLE = (
    "Benchmark 3 — the embedded sandbox's worker pool (fresh context per call, made while idle) vs bare "
    "_quickjs.Context() + eval, same run; medians over rounds"
)


@dataclass
class Series:
    """One variant's figures: calls/s per round, every call's time, the median call per round."""

    rates: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    round_p50: list[float] = field(default_factory=list)
    # Per call, one figure per round: this process's CPU time, the workers' CPU time, and the
    # workers' time spent runnable but waiting for a CPU (what the other load on the machine costs).
    client_cpu: list[float] = field(default_factory=list)
    worker_cpu: list[float] = field(default_factory=list)
    worker_wait: list[float] = field(default_factory=list)


@dataclass
class Round:
    elapsed: float
    latencies: list[float]
    wrong: list[object]


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Pools:
    """The two pools under test and the call they run."""

    def __init__(self, progress: Progress) -> None:
        from domain.ports import Execution, SourceUnit
        from sandbox.embedded import EmbeddedSandbox

        self.execution = Execution(units=(SourceUnit("countLines", SOURCE),), input=INPUT)
        self.sandboxes: dict[int, EmbeddedSandbox] = {}
        try:
            for workers in (1, 2):
                self.sandboxes[workers] = EmbeddedSandbox(workers=workers, max_active_sessions=workers)
            for workers, sandbox in self.sandboxes.items():
                _wait_for_workers(sandbox, workers, progress)
        except BaseException:
            self.close()
            raise
        self.started_pids = {n: sorted(s.worker_pids()) for n, s in self.sandboxes.items()}

    def close(self) -> None:
        for sandbox in self.sandboxes.values():
            sandbox.close()


def _wait_for_workers(sandbox: EmbeddedSandbox, count: int, progress: Progress, limit: float = 60.0) -> None:
    """Lets the pool start its workers before the first call, which would otherwise start one more."""
    deadline = time.monotonic() + limit
    while len(sandbox.worker_pids()) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"bench.workers: the pool started {len(sandbox.worker_pids())} of {count} workers in {limit:.0f} s")
        time.sleep(0.05)
    progress(f"pool of {count} ready: workers {sorted(sandbox.worker_pids())}")


def _bare_round(calls: int) -> Round:
    clock = time.perf_counter
    latencies = []
    wrong = []
    started = clock()
    for _ in range(calls):
        t0 = clock()
        output = _quickjs.Context().eval(BARE_SCRIPT)
        latencies.append(clock() - t0)
        if output != BARE_EXPECTED:
            wrong.append(output)
    return Round(clock() - started, latencies, wrong)


def _pool_round(run: Callable[[], object], clients: int, calls: int, gap: float) -> Round:
    """`calls` calls shared by `clients` threads (each takes the next ticket until none is left)."""
    tickets = itertools.count()
    clock = time.perf_counter
    per_client: list[tuple[list[float], list[object]]] = [([], []) for _ in range(clients)]
    failures: list[BaseException] = []
    start = threading.Barrier(clients + 1) if clients > 1 else None

    def client(latencies: list[float], wrong: list[object]) -> None:
        try:
            if start is not None:
                start.wait()
            while next(tickets) < calls:
                if gap:
                    time.sleep(gap)
                t0 = clock()
                result = run()
                latencies.append(clock() - t0)
                if result.error is not None or result.output != EXPECTED:
                    wrong.append(result)
        except BaseException as e:  # noqa: BLE001 - re-raised on the main thread
            failures.append(e)

    if start is None:
        started = clock()
        client(*per_client[0])
    else:
        threads = [threading.Thread(target=client, args=pair, name=f"bench-client-{i}") for i, pair in enumerate(per_client)]
        for thread in threads:
            thread.start()
        start.wait()
        started = clock()
        for thread in threads:
            thread.join()
    elapsed = clock() - started
    if failures:
        raise failures[0]
    return Round(elapsed, [t for lat, _ in per_client for t in lat], [w for _, ws in per_client for w in ws])


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("workers", quiet=quiet)
    progress("starting the pools (a zygote each, then 1 and 2 workers)")
    pools = Pools(progress)
    try:
        return _measure(pools, args, progress)
    finally:
        pools.close()


def _measure(pools: Pools, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:
    load_before = os.getloadavg()[0]
    gap = args.gap_ms / 1000
    one, two = pools.sandboxes[1], pools.sandboxes[2]
    pids: dict[str, Callable[[], list[int]]] = {
        "bare": list,
        "1 worker": one.worker_pids,
        "2 workers": two.worker_pids,
        "paced, 1 worker": one.worker_pids,
        "paced, 2 workers": two.worker_pids,
    }
    rounds: dict[str, Callable[[int], Round]] = {
        "bare": _bare_round,
        "1 worker": lambda n: _pool_round(lambda: one.run(pools.execution), 1, n, 0.0),
        "2 workers": lambda n: _pool_round(lambda: two.run(pools.execution), 2, n, 0.0),
        "paced, 1 worker": lambda n: _pool_round(lambda: one.run(pools.execution), 1, n, gap),
        "paced, 2 workers": lambda n: _pool_round(lambda: two.run(pools.execution), 2, n, gap),
    }
    names = list(rounds)
    size = {name: args.paced if name in PACED else args.batch for name in names}

    for name in names:
        warm = rounds[name](args.warmup)
        if warm.wrong:
            raise SystemExit(f"bench.workers: {name} answered {warm.wrong[0]!r}, expected {EXPECTED}")
    progress(f"outputs checked and every variant warmed ({args.warmup} calls each)")
    progress(
        f"{args.rounds} rounds, variants rotated: {args.batch} back-to-back calls each "
        f"(bare, 1 worker, 2 workers), {args.paced} paced calls each ({args.gap_ms:g} ms idle before each)"
    )

    series = {name: Series() for name in names}
    wrong: dict[str, list[object]] = {name: [] for name in names}
    for r in range(args.rounds):
        gc.collect()
        for name in rotated(names, r):
            workers = pids[name]()
            cpu0, (worker0, wait0) = time.process_time(), _schedstat(workers)
            result = rounds[name](size[name])
            cpu1, (worker1, wait1) = time.process_time(), _schedstat(workers)
            s = series[name]
            s.client_cpu.append((cpu1 - cpu0) / size[name])
            s.worker_cpu.append((worker1 - worker0) / size[name])
            s.worker_wait.append((wait1 - wait0) / size[name])
            s.rates.append(size[name] / result.elapsed)
            s.latencies += result.latencies
            s.round_p50.append(median(result.latencies))
            wrong[name] += result.wrong
        if (r + 1) % max(1, args.rounds // 5) == 0 or r + 1 == args.rounds:
            figures = ", ".join(f"{n} {series[n].rates[-1]:,.0f}/s" for n in SATURATED)
            paced = ", ".join(f"{n} p50 {micros(series[n].round_p50[-1])}" for n in PACED)
            progress(f"  round {r + 1}/{args.rounds}: {figures}; {paced}")

    for name, bad in wrong.items():
        if bad:
            progress(f"WARNING: {len(bad)} {name} calls answered something other than {EXPECTED}, e.g. {bad[0]!r}")
    memory = _pool_memory(pools)
    churn = {n: sorted(s.worker_pids()) for n, s in pools.sandboxes.items()}
    if churn != pools.started_pids:
        progress(f"NOTE: the workers changed during the run: {pools.started_pids} → {churn}")
    load = f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    info = {"load": load, "wrong_outputs": sum(map(len, wrong.values())), "args": vars(args), "memory": memory, "worker_pids": churn}
    return _rows(series, memory), info


def _schedstat(pids: Sequence[int]) -> tuple[float, float]:
    """Seconds on a CPU and seconds runnable but waiting for one, summed over `pids`
    (`/proc/<pid>/schedstat`, in nanoseconds: unlike `stat`'s clock ticks, fine enough for a round)."""
    running = waiting = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/schedstat") as stat:
                fields = stat.read().split()
        except OSError:
            continue  # a worker replaced during the round
        running += int(fields[0])
        waiting += int(fields[1])
    return running / 1e9, waiting / 1e9


# -- memory ---------------------------------------------------------------------------------------


def _rss_pss_kib(pid: int) -> tuple[int, int] | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            fields = dict(line.split(":", 1) for line in rollup if ":" in line)
    except OSError:
        return None
    return int(fields["Rss"].split()[0]), int(fields["Pss"].split()[0])


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split after the last `)`.
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _pool_memory(pools: Pools) -> dict[str, list[tuple[int, int]]]:
    """RSS and PSS (KiB) of every worker, of every zygote, and of each pool in all (workers + zygote)."""
    workers: list[tuple[int, int]] = []
    zygotes: list[tuple[int, int]] = []
    totals: list[tuple[int, int]] = []
    for sandbox in pools.sandboxes.values():
        pids = sandbox.worker_pids()
        figures = [m for m in map(_rss_pss_kib, pids) if m is not None]
        workers += figures
        parents = {p for p in map(_parent, pids) if p is not None}
        zygote = _rss_pss_kib(parents.pop()) if len(parents) == 1 else None
        if zygote is not None:
            zygotes.append(zygote)
            figures = figures + [zygote]
        totals.append((sum(m[0] for m in figures), sum(m[1] for m in figures)))
    return {"workers": workers, "zygotes": zygotes, "pools": totals}


def _mib(kib: float) -> str:
    return f"{kib / 1024:,.1f} MiB"


# -- the table ------------------------------------------------------------------------------------


def _latency(series: Series) -> str:
    return f"p50 {micros(median(series.latencies))}, p99 {micros(percentile(series.latencies, 99))}"


def _rows(series: dict[str, Series], memory: dict[str, list[tuple[int, int]]]) -> list[Row]:
    return _throughput_rows(series) + _latency_rows(series) + _memory_rows(memory) + _cpu_rows(series)


def _throughput_rows(series: dict[str, Series]) -> list[Row]:
    bare, one, two = series["bare"], series["1 worker"], series["2 workers"]
    q1, q3 = quartiles(bare.rates)
    rows = [Row("(1) bare fresh context + eval, 1 thread", f"{median(bare.rates):,.0f} calls/s", "", spread=f"IQR {q1:,.0f}–{q3:,.0f}/s")]
    for label, ours, base, base_label, goal in (
        ("(2) 1 worker, 1 client, back to back", one, bare, "bare", ONE_WORKER_GOAL),
        ("(3) 2 workers, 2 clients, back to back", two, one, "1 worker", TWO_WORKERS_GOAL),
    ):
        ratio = median(ours.rates) / median(base.rates)
        q1, q3 = quartiles([o / b for o, b in zip(ours.rates, base.rates)])
        rows.append(
            Row(
                label,
                f"{median(ours.rates):,.0f} calls/s",
                f"{base_label} {median(base.rates):,.0f} calls/s",
                ratio,
                f"≥ {goal} (ours/{base_label})",
                ratio >= goal,
                f"IQR {q1:.2f}–{q3:.2f}",
            )
        )
    return rows


def _latency_rows(series: dict[str, Series]) -> list[Row]:
    bare = series["bare"]
    bare_p50 = median(bare.latencies)
    rows = []
    for label, name in (
        ("(4) latency, 1 worker, back to back", "1 worker"),
        ("(4) latency, 2 workers, back to back", "2 workers"),
        ("(4) latency, paced, 1 worker", "paced, 1 worker"),
        ("(4) latency, paced, 2 workers, 2 clients", "paced, 2 workers"),
    ):
        s = series[name]
        q1, q3 = quartiles(s.round_p50)
        rows.append(Row(label, _latency(s), f"bare {_latency(bare)}", bare_p50 / median(s.latencies), spread=f"p50 IQR {micros(q1)}–{micros(q3)}"))
    return rows


def _memory_rows(memory: dict[str, list[tuple[int, int]]]) -> list[Row]:
    workers, zygotes, pools = memory["workers"], memory["zygotes"], memory["pools"]
    zygote = (
        f"zygote RSS {_mib(median([m[0] for m in zygotes]))}, PSS {_mib(median([m[1] for m in zygotes]))}"
        if zygotes
        else "zygote not found"
    )
    rows = [
        Row(
            f"(5) memory per worker, median of {len(workers)}",
            f"RSS {_mib(median([m[0] for m in workers]))}, PSS {_mib(median([m[1] for m in workers]))}",
            zygote,
        )
    ]
    if len(pools) == 2:
        rows.append(Row("(5) PSS of a pool in all (workers + zygote)", f"1 worker {_mib(pools[0][1])}, 2 workers {_mib(pools[1][1])}", ""))
    return rows


def _cpu_rows(series: dict[str, Series]) -> list[Row]:
    bare_cpu = median(series["bare"].client_cpu)
    rows = [Row("(6) CPU per call, bare", micros(bare_cpu), "")]
    for label, name in (
        ("(6) CPU per call, 1 worker", "1 worker"),
        ("(6) CPU per call, 2 workers", "2 workers"),
        ("(6) CPU per call, paced, 1 worker", "paced, 1 worker"),
    ):
        s = series[name]
        worker_cpu = median(s.worker_cpu)
        rows.append(
            Row(
                label,
                f"client {micros(median(s.client_cpu))} + worker {micros(worker_cpu)}",
                f"bare {micros(bare_cpu)}",
                bare_cpu / worker_cpu if name == "1 worker" else None,
                spread=f"worker waited {micros(median(s.worker_wait))}",
            )
        )
    return rows


NOTES = (
    "(4) ratio: bare p50 / ours p50. (6) ratio: bare CPU / the worker's CPU per call, the most (2) can reach "
    "while the client has a core of its own; \"waited\": per call, time the workers were runnable but "
    "had no CPU (the machine's other load)."
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.workers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (~15 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 40, quick 8)")
    parser.add_argument("--batch", type=int, help="back-to-back calls per variant per round (default 300, quick 200)")
    parser.add_argument("--paced", type=int, help="paced calls per variant per round (default 100, quick 60)")
    parser.add_argument("--gap-ms", type=float, default=2.0, help="idle time before each paced call (default 2)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed calls per variant first (default 100)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (8 if args.quick else 40)
    args.batch = args.batch or (200 if args.quick else 300)
    args.paced = args.paced or (60 if args.quick else 100)
    return args


main = standalone(run, TITLE, NOTES)


if __name__ == "__main__":
    sys.exit(main())
