"""Benchmark 2: publishing a library with 1,000 transitive importers, against 1,000 × one check.

Publishing (R10) checks the module and every module that imports it, transitively, in the sandbox
with the new version in place, on all the sandbox's workers at once (issue 15: the goal is a
publish that costs at most 0.6 × (1,000 × one check) with two workers, the default).

Setup (through `bootstrap` on a temporary SQLite data dir): a library `lib`
(`exports.f = function(x){return x+1}`), then `--importers` tool modules (1,000 by default, 200
with `--quick`), half
importing `lib` directly (`a_i`) and half importing an `a_i` (`b_i` imports `a_i`), each exporting
`f` and a tool `run` that calls `lib.f` or `a_i.f`. Every module is published.

Measured, interleaved in the same run (check batch, publish, check batch, publish, …):

- publish: a compatible new draft of `lib` (still exports `f`), then the time of
  `services.modules.publish(tenant, "lib", by="bench")`. It checks `lib` and all its importers,
  and it also loads each importer's published definition from the event store, builds each
  bundle's order, and saves. The time spent inside `sandbox.check` during the publish is reported
  too, summed over the checks (they overlap), with the most that ran at once and the time during
  which none ran (the sandbox's `check` is wrapped by a timer on this instance only). Each round
  publishes twice, in turns: on every worker (as issue 15 asks), and one check at a time (as
  before: the sandbox's `parallelism` shadowed to 1 on this instance).
- one check: the median time of `sandbox.check(execution)` of an importer bundle built here from
  `SourceUnit`s (the same sources as stored), back to back like the publish's checks, with a new
  `lib` source each time so that no bundle cache helps (the publish's bundles are all new too).
  One check = the mean of the medians for an `a_i` bundle (lib, a_i) and a `b_i` bundle
  (lib, a_i, b_i), since the publish checks as many of each.

Ratio = publish time / (N × one check); lower is better: 1.0 would mean the publish costs no more
than its importers' checks one after the other, 0.5 that two workers halve it with nothing else
to pay. Run: `python -m bench.publish [--quick] [--importers N]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench._common import Progress, Row, bench_settings, format_table, machine_line, median, millis, micros, rotated

# Issue 15: a publish with 1,000 importers costs at most this × (1,000 × one check) with two workers.
GOAL = 0.6
LIB = "exports.f = function (x) { return x + 1; };"
TOOL = {"inputParameters": [{"name": "x", "type": "integer", "required": True, "description": "a number"}]}


def lib_source(revision: int) -> str:
    """A compatible change of `lib`: still exports `f`, same behaviour."""
    return f"exports.f = function (x) {{ return x + 1 + 0 * {revision}; }};"


def a_source(i: int) -> str:
    return (
        f"exports.f = function (x) {{ return lib.f(x) + {i}; }};\n"
        "exports.run = function (input) { return exports.f(input.x); };"
    )


def b_source(i: int) -> str:
    return (
        f"exports.f = function (x) {{ return a_{i}.f(x) * 2; }};\n"
        f"exports.run = function (input) {{ return a_{i}.f(input.x); }};"
    )


class TimedChecks:
    """Wraps one sandbox instance's `check` to add up the time a publish spends in it, the most
    checks that ran at once (the publish calls it from several threads), and the wall-clock time
    during which at least one ran."""

    def __init__(self, sandbox) -> None:
        self.sandbox = sandbox
        self.inner = sandbox.check
        self._lock = threading.Lock()
        self.reset()
        sandbox.check = self  # an instance attribute: shadows the method of this object only

    def __call__(self, execution):
        t0 = time.perf_counter()
        with self._lock:
            if self._running == 0:
                self._first_started = t0
            self._running += 1
            self.most_at_once = max(self.most_at_once, self._running)
        try:
            return self.inner(execution)
        finally:
            t1 = time.perf_counter()
            with self._lock:
                self._running -= 1
                self.seconds += t1 - t0
                self.count += 1
                if self._running == 0:
                    self.wall_seconds += t1 - self._first_started

    def reset(self) -> None:
        self.seconds = 0.0
        self.count = 0
        self.most_at_once = 0
        self.wall_seconds = 0.0
        self._running = 0
        self._first_started = 0.0


def _workers_cpu(sandbox) -> dict[int, float]:
    """CPU seconds (user + system) of each live worker process, by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for pid in sandbox.worker_pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / tick
    return found


def _setup(services, tenant: str, importers: int, progress: Progress) -> None:
    modules = services.modules
    modules.create(tenant, "lib", description="A library.", content=LIB, imports=[], tool=None, by="bench")
    modules.publish(tenant, "lib", by="bench")
    direct = (importers + 1) // 2
    names = [(f"a_{i}", a_source(i), ["lib"]) for i in range(direct)]
    names += [(f"b_{i}", b_source(i), [f"a_{i}"]) for i in range(importers - direct)]
    t0 = time.perf_counter()
    for n, (name, source, imports) in enumerate(names, 1):
        modules.create(tenant, name, description=f"Importer {name}.", content=source, imports=imports, tool=TOOL, by="bench")
        modules.publish(tenant, name, by="bench")
        if n % 50 == 0 or n == len(names):
            progress(f"  setup: {n}/{len(names)} importers created and published ({time.perf_counter() - t0:.1f} s)")


def _check_batch(sandbox, size: int, importers: int, serial: list[int]) -> tuple[float, float]:
    """Back-to-back checks of fresh a- and b-bundles, alternating; the median of each kind."""
    from domain.ports import Execution, SourceUnit

    direct = (importers + 1) // 2
    times: dict[str, list[float]] = {"a": [], "b": []}
    clock = time.perf_counter
    check = sandbox.check.inner if isinstance(sandbox.check, TimedChecks) else sandbox.check
    for k in range(size):
        serial[0] += 1
        i = serial[0] % (importers - direct)
        lib = SourceUnit("lib", lib_source(1_000_000 + serial[0]))
        a = SourceUnit(f"a_{i}", a_source(i), ("lib",))
        kind = "a" if k % 2 == 0 else "b"
        if kind == "a":
            execution = Execution(units=(lib, a), is_tool=True, timeout_millis=3_000)
        else:
            b = SourceUnit(f"b_{i}", b_source(i), (f"a_{i}",))
            execution = Execution(units=(lib, a, b), is_tool=True, timeout_millis=3_000)
        t0 = clock()
        result = check(execution)
        times[kind].append(clock() - t0)
        if result.error is not None:
            raise SystemExit(f"bench.publish: the check of {execution.target.name} failed: {result.error}")
    return median(times["a"]), median(times["b"])


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    from entrypoints.compose import bootstrap

    args = parse_args(argv)
    progress = Progress("publish", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        services = bootstrap(bench_settings(tmp))
        services.start()
        try:
            return _measure(services, args, progress)
        finally:
            services.close()


# The publish as issue 15 asks (its checks on every worker of the sandbox at once), and as it was
# before (one check at a time: the sandbox's parallelism shadowed to 1 on this instance), in turns.
PARALLEL, ONE_AT_A_TIME = "on every worker", "one check at a time"


@dataclass
class Arm:
    """One way of publishing: each publish's time, its ratio to N × one check, and what ran in it."""

    publishes: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    in_checks: list[float] = field(default_factory=list)
    idle: list[float] = field(default_factory=list)  # no check running
    api_cpu: list[float] = field(default_factory=list)  # CPU seconds of this process (every thread) during the publish
    worker_cpu: list[float] = field(default_factory=list)  # CPU seconds of the sandbox's workers during it
    counts: list[int] = field(default_factory=list)
    at_once: list[int] = field(default_factory=list)


def _measure(services, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:
    tenant = services.settings.tenant
    modules = services.modules
    sandbox = services.sandbox
    workers = sandbox.parallelism()
    progress(f"setup: lib and {args.importers} importers (a_i → lib, b_i → a_i); the sandbox has {workers} workers")
    _setup(services, tenant, args.importers, progress)
    dependents = len(services.store.graph(tenant).published_imports()) - 1
    timed = TimedChecks(sandbox)
    serial = [0]
    _check_batch(sandbox, 20, args.importers, serial)  # warm-up

    arms = {PARALLEL: Arm(), ONE_AT_A_TIME: Arm()}
    one_checks: list[float] = []
    checks_a: list[float] = []
    checks_b: list[float] = []

    def batch() -> float:
        gc.collect()
        a, b = _check_batch(sandbox, args.checks, args.importers, serial)
        checks_a.append(a)
        checks_b.append(b)
        return (a + b) / 2

    def publish(revision: int, name: str) -> float:
        if name == ONE_AT_A_TIME:
            sandbox.parallelism = lambda: 1  # an instance attribute: shadows the method of this object only
        modules.update(tenant, "lib", content=lib_source(revision), by="bench")
        services.runner.wait(services.store.position(), timeout=30)  # no projection backlog during the publish
        gc.collect()
        timed.reset()
        try:
            workers_before = _workers_cpu(sandbox)
            c0, t0 = time.process_time(), time.perf_counter()
            modules.publish(tenant, "lib", by="bench")
            elapsed, api_cpu = time.perf_counter() - t0, time.process_time() - c0
            workers_after = _workers_cpu(sandbox)
        finally:
            vars(sandbox).pop("parallelism", None)
        arm = arms[name]
        arm.api_cpu.append(api_cpu)
        # Workers that retired during the publish are not counted (a few at most; CALLS_PER_WORKER).
        arm.worker_cpu.append(sum(workers_after[pid] - workers_before[pid] for pid in workers_after.keys() & workers_before.keys()))
        arm.publishes.append(elapsed)
        arm.in_checks.append(timed.seconds)
        arm.idle.append(elapsed - timed.wall_seconds)
        arm.counts.append(timed.count)
        arm.at_once.append(timed.most_at_once)
        services.runner.wait(services.store.position(), timeout=30)
        return elapsed

    before = batch()
    progress(f"one check (before): a {micros(checks_a[-1])}, b {micros(checks_b[-1])}")
    revision = 0
    for rep in range(1, args.repetitions + 1):
        for name in rotated(list(arms), rep):
            revision += 1
            elapsed = publish(revision, name)
            after = batch()
            one = (before + after) / 2  # the checks measured on either side of this publish
            before = after
            one_checks.append(one)
            arms[name].ratios.append(elapsed / (args.importers * one))
            progress(
                f"publish {rep}/{args.repetitions}, {name}: {millis(elapsed)} ({timed.count} checks, up to {timed.most_at_once} "
                f"at once, {millis(timed.seconds)} in check); one check {micros(one)}; ratio {arms[name].ratios[-1]:.2f}"
            )

    n = args.importers
    one = median(one_checks)
    ours, old = arms[PARALLEL], arms[ONE_AT_A_TIME]
    rows = []
    for name, arm, goal in ((PARALLEL, ours, True), (ONE_AT_A_TIME, old, False)):
        ratio = median(arm.ratios)
        rows.append(Row(
            f"publish lib ({dependents} transitive importers), {name}" + (f" ({workers} workers)" if goal else " (before)"),
            millis(median(arm.publishes)),
            f"{n} × one check = {millis(n * one)}",
            ratio,
            f"≤ {GOAL} with 2 workers" if goal else "",
            ratio <= GOAL if goal and workers == 2 else None,
            spread=f"range {min(arm.ratios):.2f}–{max(arm.ratios):.2f}",
        ))
        rows.append(Row(
            "  inside sandbox.check, summed over the checks",
            f"{millis(median(arm.in_checks))} ({median(arm.counts):.0f} checks, up to {max(arm.at_once)} at once)",
            f"{n} × one check = {millis(n * one)}",
            median(arm.in_checks) / (n * one),
        ))
        rows.append(Row("  no check running (graph, importers, first bundle, save)", millis(median(arm.idle)), ""))
        if goal:
            # The floor this machine sets: the CPU the publish used, spread perfectly over its cores.
            cores = os.cpu_count() or 1
            cpu = median([a + w for a, w in zip(arm.api_cpu, arm.worker_cpu, strict=True)])
            rows.append(Row(
                f"  CPU it used: API process {millis(median(arm.api_cpu))} + workers {millis(median(arm.worker_cpu))}; "
                f"spread over {cores} cores",
                millis(cpu / cores),
                f"{n} × one check = {millis(n * one)}",
                cpu / cores / (n * one),
                "(the floor of the ratio on this machine)",
            ))
    rows.append(Row(
        f"speed-up on {workers} workers (one at a time / on every worker)",
        f"{median(old.publishes) / median(ours.publishes):.2f}×",
        "",
    ))
    rows.append(Row("one check (median; mean of a-bundle and b-bundle)", micros(one), f"a {micros(median(checks_a))}, b {micros(median(checks_b))}"))
    info = {name: vars(arm) for name, arm in arms.items()}
    return rows, {**info, "one_checks": one_checks, "workers": workers, "args": vars(args)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.publish", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (2 publishes, smaller check batches)")
    parser.add_argument("--importers", type=int, help="transitive importers of lib (default 1000, quick 200)")
    parser.add_argument("--repetitions", type=int, help="publishes of lib, each with a new draft (default 3, quick 2)")
    parser.add_argument("--checks", type=int, help="checks per batch around each publish (default 200, quick 60)")
    args = parser.parse_args(argv)
    if args.importers is not None and args.importers < 2:
        parser.error("--importers must be at least 2")
    args.importers = args.importers or (200 if args.quick else 1000)
    args.repetitions = args.repetitions or (2 if args.quick else 3)
    args.checks = args.checks or (60 if args.quick else 200)
    return args


def title(importers: int) -> str:
    return f"Benchmark 2 — publish of a library with {importers} transitive importers vs {importers} × one check, same run; medians"


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    rows, info = run(argv)
    print(format_table(title(info["args"]["importers"]), rows))
    print(f"(publish also loads each importer's published definition from the event store and saves; "
          f"{machine_line()}; {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
