"""Benchmark 7: what the worker's per-call process memory bound costs, and what it holds.

Two pools of one worker each, identical but for `memory_allowance_mb`: `bound off` (None, the
"before") and `bound on` (the default: each call lowers the worker's RLIMIT_DATA and raises it
after, `sandbox.worker.MemoryBound`). The small tool of benchmark 1 runs back to back on each,
the two interleaved round by round (order rotated each round) after both were warmed. Figures:
calls/s (median over rounds; spread: IQR of the per-round ratios) and the CPU per call, this
process's plus the worker's (`/proc/<pid>/schedstat`); goal: the bound costs at most 5 %.

Then the amplification case of issue 12: a 128 MB tool handing a 30 MB string to each host
function kind (log, Intl, a locale method, http.fetch, ai.context, and `$host` called directly),
each on a fresh single-worker pool; the figure is the worker's peak RSS (VmHWM) against the call's
memory limit and against the bound (the worker's RSS before the call + the limit + the allowance).

Run: `python -m bench.memory_bound [--quick]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from bench._common import Progress, Row, median, micros, quartiles, rotated, standalone
from bench.tool_call import EXPECTED, INPUT, SOURCE
from bench.workers import Series, _pool_round, _schedstat, _wait_for_workers

TITLE = "Benchmark 7 — the worker's per-call process memory bound: cost (same run, interleaved) and peak RSS under the amplification case"
GOAL = 0.95  # bound on / bound off, throughput
ARMS = ("bound off", "bound on")
LIMIT_MB = 128
HUGE = "var s = 'x'.repeat(30 * 1024 * 1024);"
AMPLIFICATION = {
    "log(s)": f"exports.run = function () {{ {HUGE} log(s); return 1; }};",
    "Intl options": f"exports.run = function () {{ {HUGE} try {{ new Intl.NumberFormat('en', {{currency: s}}).format(1); }} catch (e) {{ return e.name; }} }};",
    "toLocaleString(s)": f"exports.run = function () {{ {HUGE} try {{ (1).toLocaleString(s); }} catch (e) {{ return e.name; }} }};",
    "http.fetch body": f"exports.run = async function () {{ {HUGE} try {{ await http.fetch('https://example.com', {{method: 'POST', body: s}}); }} catch (e) {{ return e.name; }} }};",
    "ai.context(s)": f"exports.run = function () {{ {HUGE} return typeof ai.context(s); }};",
    **{
        f"$host('{kind}', s)": f"exports.run = function () {{ {HUGE} log(1); ai; try {{ $host('{kind}', s); }} catch (e) {{ return e.name; }} }};"
        for kind in ("l", "i", "f", "c", "s")
    },
}


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    from domain.ports import Execution, SourceUnit
    from sandbox.embedded import EmbeddedSandbox
    from sandbox.worker import MEMORY_ALLOWANCE_MB

    args = parse_args(argv)
    progress = Progress("memory_bound", quiet=quiet)
    execution = Execution(units=(SourceUnit("countLines", SOURCE),), input=INPUT)
    pools = {
        "bound off": EmbeddedSandbox(workers=1, max_active_sessions=1, memory_allowance_mb=None),
        "bound on": EmbeddedSandbox(workers=1, max_active_sessions=1),
    }
    load_before = os.getloadavg()[0]
    try:
        for pool in pools.values():
            _wait_for_workers(pool, 1, progress)
        series = _interleaved(pools, execution, args, progress)
    finally:
        for pool in pools.values():
            pool.close()
    progress("amplification: a 128 MB tool, a 30 MB string at each host function kind")
    peaks = {arm: _amplification(EmbeddedSandbox, Execution, SourceUnit, arm, progress) for arm in ARMS}
    rows = _rows(series, peaks, MEMORY_ALLOWANCE_MB)
    load = f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    return rows, {"load": load, "args": vars(args), "peaks": peaks}


def _interleaved(pools: dict, execution: object, args: argparse.Namespace, progress: Progress) -> dict[str, Series]:
    calls = {arm: (lambda pool=pool: pool.run(execution)) for arm, pool in pools.items()}
    for arm in ARMS:
        warm = _pool_round(calls[arm], 1, args.warmup, 0.0)
        if warm.wrong:
            raise SystemExit(f"bench.memory_bound: {arm} answered {warm.wrong[0]!r}, expected {EXPECTED}")
    progress(f"warmed; {args.rounds} rounds of {args.batch} back-to-back calls per arm, order rotated")
    series = {arm: Series() for arm in ARMS}
    for r in range(args.rounds):
        gc.collect()
        for arm in rotated(ARMS, r):
            pids = pools[arm].worker_pids()
            cpu0, (worker0, _) = time.process_time(), _schedstat(pids)
            result = _pool_round(calls[arm], 1, args.batch, 0.0)
            cpu1, (worker1, _) = time.process_time(), _schedstat(pids)
            if result.wrong:
                raise SystemExit(f"bench.memory_bound: {arm} answered {result.wrong[0]!r}")
            s = series[arm]
            s.rates.append(args.batch / result.elapsed)
            s.client_cpu.append((cpu1 - cpu0) / args.batch)
            s.worker_cpu.append((worker1 - worker0) / args.batch)
            s.latencies += result.latencies
        if (r + 1) % max(1, args.rounds // 5) == 0 or r + 1 == args.rounds:
            progress(f"  round {r + 1}/{args.rounds}: " + ", ".join(f"{a} {series[a].rates[-1]:,.0f}/s" for a in ARMS))
    return series


def _kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _amplification(sandbox_class: Callable, execution_class: Callable, unit_class: Callable, arm: str, progress: Progress) -> dict[str, tuple[str, int | None, int | None]]:
    """Per case: the outcome, the worker's RSS before the call and its peak after it (KiB)."""
    overrides = {"memory_allowance_mb": None} if arm == "bound off" else {}
    peaks = {}
    for name, source in AMPLIFICATION.items():
        pool = sandbox_class(workers=1, max_active_sessions=1, allowed_domains="example.com", **overrides)
        try:
            _wait_for_workers(pool, 1, Progress("memory_bound", quiet=True))
            pid = pool.worker_pids()[0]
            before = _kib(pid, "VmRSS")
            result = pool.run(execution_class(units=(unit_class("tool", source),), input={}, memory_limit_mb=LIMIT_MB, timeout_millis=10_000))
            peak = _kib(pid, "VmHWM")
            outcome = f"{result.error.type} error" if result.error else f"result {result.output!r}"
            peaks[name] = (outcome, before, peak)
        finally:
            pool.close()
    worst = max((p for _, _, p in peaks.values() if p is not None), default=0)
    progress(f"  {arm}: worst worker peak RSS {worst / 1024:,.0f} MiB")
    return peaks


def _rows(series: dict[str, Series], peaks: dict[str, dict[str, tuple[str, int | None, int | None]]], allowance_mb: int) -> list[Row]:
    off, on = series["bound off"], series["bound on"]
    ratio = median(on.rates) / median(off.rates)
    q1, q3 = quartiles([a / b for a, b in zip(on.rates, off.rates)])
    cpu_off = median([c + w for c, w in zip(off.client_cpu, off.worker_cpu)])
    cpu_on = median([c + w for c, w in zip(on.client_cpu, on.worker_cpu)])
    rows = [
        Row("(1) throughput, 1 worker, back to back", f"bound on {median(on.rates):,.0f} calls/s", f"bound off {median(off.rates):,.0f} calls/s",
            ratio, f"≥ {GOAL} (on/off)", ratio >= GOAL, f"IQR {q1:.2f}–{q3:.2f}"),
        Row("(2) CPU per call (client + worker)", f"bound on {micros(cpu_on)} (worker {micros(median(on.worker_cpu))})",
            f"bound off {micros(cpu_off)} (worker {micros(median(off.worker_cpu))})", cpu_on / cpu_off, f"≤ {2 - GOAL:.2f} (on/off)", cpu_on / cpu_off <= 2 - GOAL),
    ]
    for arm in ARMS:
        for name, (outcome, before, peak) in peaks[arm].items():
            if peak is None or before is None:
                rows.append(Row(f"(3) {arm}: {name}", outcome, "worker gone (replaced after a memory error)"))
                continue
            bound = before + (LIMIT_MB + allowance_mb) * 1024
            rows.append(Row(
                f"(3) {arm}: {name}", f"peak RSS {peak / 1024:,.0f} MiB ({outcome})",
                f"limit {LIMIT_MB} MiB; bound {bound / 1024:,.0f} MiB", peak / (LIMIT_MB * 1024), "peak ≤ bound", peak <= bound,
            ))
    return rows


NOTES = (
    "(3) ratio: the worker's peak RSS / the call's memory limit; the bound is the worker's RSS before the call + the "
    "limit + the allowance. With the bound off the payload caps still keep a huge string out of Python."
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.memory_bound", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 30, quick 8)")
    parser.add_argument("--batch", type=int, help="back-to-back calls per arm per round (default 300, quick 150)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed calls per arm first (default 100)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (8 if args.quick else 30)
    args.batch = args.batch or (150 if args.quick else 300)
    return args


main = standalone(run, TITLE, NOTES)


if __name__ == "__main__":
    sys.exit(main())
