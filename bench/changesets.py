"""Benchmark of issue 18: a publish that re-checks 200 importers with 3 examples each, and a changeset.

(a) Publishing a library (R10, B4) checks it and every transitive importer with the new version in
place, and runs each importer's examples: each check with its examples is one visit to one of the
sandbox's workers (`Sandbox.check_then_run`), on all the workers at once. The goal: a publish of a
library with 200 transitive importers, each with 3 examples, costs at most 1.3 × (200 × one check
with its examples) ÷ the number of workers, both measured in the same run.

(b) A changeset of 50 modules (B6: `Modules.publish_changeset`, what POST
/api/v1/admin/code-modules/publish does) against 50 single publishes of the same drafts. No goal
is set; below 1 the changeset is the cheaper way.

Setup (through `bootstrap` on a temporary SQLite data dir): a library `lib`
(`exports.f = function(x){return x+1}`), then `--importers` tool modules (200), half importing
`lib` directly (`a_i`) and half importing an `a_i` (`b_i` imports `a_i`), each with a tool `run`
and 3 examples (`x` = 1, 2, 10 and the output each gives). Every module is published.

Measured, interleaved in the same run (check batch, publish, check batch, publish, …):

- publish: a compatible new draft of `lib` (still exports `f`, same answers), then the time of
  `services.modules.publish(tenant, "lib", by="bench")`. It checks `lib` and all its importers
  with their examples, loads each importer's published definition from the event store, builds
  each bundle, and saves. The time spent inside `sandbox.check_then_run` is reported too, summed
  over the importers (they overlap), with the most at once and the time during which none ran,
  and the CPU the API process and the workers used (spread over the machine's cores, the floor
  of the ratio here). Each round publishes twice, in turns: with each importer's check and
  examples as one visit (as issue 18 asks), and as separate calls (as before: the port's default
  `check_then_run`, check then a run per example, on this instance).
- one check with its examples: the median time of `checked_with_examples` (what the publish calls
  for each importer: the visit, then the comparison of each example) on an importer bundle built
  here from `SourceUnit`s (the same sources as stored), back to back on one thread, with a new
  `lib` source each time so that no bundle cache helps (the publish's bundles are all new too);
  the mean of the medians for an `a_i` bundle (lib, a_i) and a `b_i` bundle (lib, a_i, b_i).
  Beside it, for comparison, the same check and examples as 1 + 3 calls of their own (`check`,
  then `run` per example), as before the visit existed.
- changeset: compatible drafts of `a_0` … `a_49` (each with its importer `b_i`: 100 checks with
  their examples), then the time of one `publish_changeset` of the 50, against the time of 50
  `publish` calls one after the other, of the same drafts made again; in turns.

Ratio (a) = publish time ÷ (N × one check with its examples ÷ workers); lower is better.
Run: `python -m bench.changesets [--quick]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._common import Progress, Row, bench_settings, format_table, machine_line, median, millis, micros, rotated

# Issue 18: the publish costs at most this × (N × one check with its examples) ÷ workers.
GOAL = 1.3
LIB = "exports.f = function (x) { return x + 1; };"
PARAMETERS = [{"name": "x", "type": "integer", "required": True, "description": "a number"}]
XS = (1, 2, 10)


def lib_source(revision: int) -> str:
    """A compatible change of `lib`: still exports `f`, same answers."""
    return f"exports.f = function (x) {{ return x + 1 + 0 * {revision}; }};"


def a_source(i: int, revision: int = 0) -> str:
    return (
        f"exports.f = function (x) {{ return lib.f(x) + {i} + 0 * {revision}; }};\n"
        "exports.run = function (input) { return exports.f(input.x); };"
    )


def b_source(i: int) -> str:
    return (
        f"exports.f = function (x) {{ return a_{i}.f(x) * 2; }};\n"
        f"exports.run = function (input) {{ return a_{i}.f(input.x); }};"
    )


def tool(i: int) -> dict[str, Any]:
    """`a_i` and `b_i` both answer lib.f(x) + i = x + 1 + i."""
    examples = [{"name": f"x_{x}", "input": {"x": x}, "output": x + 1 + i} for x in XS]
    return {"inputParameters": PARAMETERS, "examples": examples}


class Timed:
    """Wraps one sandbox instance's `check_then_run` to add up the time a publish spends in it, the
    most visits at once (the publish calls it from several threads), and the wall-clock time
    during which at least one ran."""

    def __init__(self, sandbox) -> None:  # noqa: ANN001
        self.inner = sandbox.check_then_run
        self._lock = threading.Lock()
        self.reset()
        sandbox.check_then_run = self  # an instance attribute: shadows the method of this object only

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        with self._lock:
            if self._running == 0:
                self._first_started = t0
            self._running += 1
            self.most_at_once = max(self.most_at_once, self._running)
        try:
            return self.inner(*args, **kwargs)
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


def _workers_cpu(sandbox) -> dict[int, float]:  # noqa: ANN001
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


def _setup(services, tenant: str, importers: int, progress: Progress) -> None:  # noqa: ANN001
    modules = services.modules
    modules.create(tenant, "lib", description="A library.", content=LIB, imports=[], tool=None, by="bench")
    modules.publish(tenant, "lib", by="bench")
    direct = (importers + 1) // 2
    names = [(f"a_{i}", a_source(i), ["lib"], tool(i)) for i in range(direct)]
    names += [(f"b_{i}", b_source(i), [f"a_{i}"], tool(i)) for i in range(importers - direct)]
    t0 = time.perf_counter()
    for n, (name, source, imports, definition) in enumerate(names, 1):
        modules.create(tenant, name, description=f"Importer {name}.", content=source, imports=imports, tool=definition, by="bench")
        modules.publish(tenant, name, by="bench")
        if n % 50 == 0 or n == len(names):
            progress(f"  setup: {n}/{len(names)} importers with 3 examples created and published ({time.perf_counter() - t0:.1f} s)")


class Baseline:
    """One check with its examples, back to back on one thread, on fresh bundles (a new `lib`
    source each time): by the visit (`checked_with_examples`), and as 1 + 3 calls of their own."""

    def __init__(self, services, sandbox, importers: int) -> None:  # noqa: ANN001
        tenant = services.settings.tenant
        self.sandbox = sandbox
        self.importers = importers
        self.direct = (importers + 1) // 2
        self.serial = 0
        self.tools = {name: services.store.find(tenant, name).published["tool"] for name in ("a_0", "b_0")}

    def _bundle(self, kind: str) -> tuple[Any, dict[str, Any]]:
        from domain.ports import Execution, SourceUnit

        self.serial += 1
        i = self.serial % (self.importers - self.direct)
        lib = SourceUnit("lib", lib_source(1_000_000 + self.serial))
        units = [lib, SourceUnit(f"a_{i}", a_source(i), ("lib",))]
        if kind == "b":
            units.append(SourceUnit(f"b_{i}", b_source(i), (f"a_{i}",)))
        definition = dict(self.tools[f"{kind}_0"], examples=tool(i)["examples"])
        return Execution(units=tuple(units), is_tool=True, timeout_millis=3_000), definition

    def batch(self, size: int, *, separate: bool = False) -> tuple[float, float]:
        """The median time of each kind (a-bundles and b-bundles, alternating)."""
        from application.execution import arguments, checked_with_examples, compared

        sandbox = self.sandbox
        times: dict[str, list[float]] = {"a": [], "b": []}
        clock = time.perf_counter
        for k in range(size):
            kind = "a" if k % 2 == 0 else "b"
            execution, definition = self._bundle(kind)
            examples = definition["examples"]
            t0 = clock()
            if separate:
                result = sandbox.check(execution)
                runs = [sandbox.run(dataclasses.replace(execution, input=arguments(definition, e["input"]))) for e in examples]
                passed = result.error is None and all(compared(e, r).passed for e, r in zip(examples, runs, strict=True))
            else:
                result = checked_with_examples(sandbox, execution.target.name, execution, definition)
                passed = result.error is None
            times[kind].append(clock() - t0)
            if not passed:
                raise SystemExit(f"bench.changesets: the check of {execution.target.name} or an example failed: {result.error}")
        return median(times["a"]), median(times["b"])


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    from entrypoints.compose import bootstrap

    args = parse_args(argv)
    progress = Progress("changesets", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        services = bootstrap(bench_settings(tmp))
        services.start()
        try:
            return _measure(services, args, progress)
        finally:
            services.close()


# Each importer's check and examples as one visit to a worker (issue 18), and as the port's default
# does them (the check, then each example, as calls of their own: `Sandbox.check_then_run` of the
# base class on this instance), in turns.
VISITS, SEPARATE = "one visit each", "check and examples as separate calls"


@dataclass
class Arm:
    """One way of publishing: each publish's time, its ratio, and what ran in it."""

    publishes: list[float] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    in_visits: list[float] = field(default_factory=list)
    idle: list[float] = field(default_factory=list)  # no check with its examples running
    api_cpu: list[float] = field(default_factory=list)  # CPU seconds of this process (every thread) during the publish
    worker_cpu: list[float] = field(default_factory=list)  # CPU seconds of the sandbox's workers during it
    counts: list[int] = field(default_factory=list)
    at_once: list[int] = field(default_factory=list)


def _measure(services, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:  # noqa: ANN001
    from domain.ports import Sandbox

    tenant = services.settings.tenant
    modules = services.modules
    sandbox = services.sandbox
    workers = sandbox.parallelism()
    progress(f"setup: lib and {args.importers} importers with 3 examples each (a_i → lib, b_i → a_i); {workers} workers")
    _setup(services, tenant, args.importers, progress)
    dependents = len(services.store.graph(tenant).published_imports()) - 1
    timed = Timed(sandbox)
    visit = timed.inner
    baseline = Baseline(services, sandbox, args.importers)
    baseline.batch(20)  # warm-up
    baseline.batch(20, separate=True)

    arms = {VISITS: Arm(), SEPARATE: Arm()}
    ones: list[float] = []
    checks_a: list[float] = []
    checks_b: list[float] = []
    separate: list[float] = []

    def batch() -> float:
        gc.collect()
        a, b = baseline.batch(args.checks)
        checks_a.append(a)
        checks_b.append(b)
        return (a + b) / 2

    def settled() -> None:
        services.runner.wait(services.store.position(), timeout=60)  # no projection backlog while timed

    def publish(revision: int, name: str) -> float:
        modules.update(tenant, "lib", content=lib_source(revision), by="bench")
        settled()
        gc.collect()
        timed.reset()
        if name == SEPARATE:
            timed.inner = lambda execution, inputs: Sandbox.check_then_run(sandbox, execution, inputs)
        try:
            workers_before = _workers_cpu(sandbox)
            c0, t0 = time.process_time(), time.perf_counter()
            modules.publish(tenant, "lib", by="bench")
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            workers_after = _workers_cpu(sandbox)
        finally:
            timed.inner = visit
        settled()
        arm = arms[name]
        arm.publishes.append(elapsed)
        arm.api_cpu.append(cpu)
        # Workers that retired during the publish are not counted (a few at most).
        arm.worker_cpu.append(sum(workers_after[p] - workers_before[p] for p in workers_after.keys() & workers_before.keys()))
        arm.in_visits.append(timed.seconds)
        arm.idle.append(elapsed - timed.wall_seconds)
        arm.counts.append(timed.count)
        arm.at_once.append(timed.most_at_once)
        return elapsed

    # (a) the publish of lib, in turns each way, between batches of single checks with their examples
    before = batch()
    progress(f"one check with its examples (before): a {micros(checks_a[-1])}, b {micros(checks_b[-1])}")
    revision = 0
    for rep in range(1, args.repetitions + 1):
        for name in rotated(list(arms), rep):
            revision += 1
            elapsed = publish(revision, name)
            after = batch()
            one = (before + after) / 2  # the checks measured on either side of this publish
            before = after
            ones.append(one)
            arm = arms[name]
            arm.ratios.append(elapsed / (args.importers * one / workers))
            progress(
                f"publish {rep}/{args.repetitions}, {name}: {millis(elapsed)} ({arm.counts[-1]} checks with examples, up to "
                f"{arm.at_once[-1]} at once, {millis(arm.in_visits[-1])} in them); one check with its examples {micros(one)}; "
                f"ratio {arm.ratios[-1]:.2f}"
            )
        gc.collect()
        a, b = baseline.batch(args.checks // 2, separate=True)
        separate.append((a + b) / 2)

    # (b) a changeset of 50 modules against 50 single publishes of the same drafts
    ids = [f"a_{i}" for i in range(args.changeset)]
    targets = len(ids) + sum(1 for i in range(args.changeset) if i < args.importers - (args.importers + 1) // 2)
    changesets: list[float] = []
    singles: list[float] = []

    def drafted() -> None:
        nonlocal revision
        revision += 1
        for i, module_id in enumerate(ids):
            modules.update(tenant, module_id, content=a_source(i, revision), by="bench")
        settled()
        gc.collect()

    for rep in range(1, args.repetitions + 1):
        for way in rotated(["changeset", "singles"], rep):
            drafted()
            t0 = time.perf_counter()
            if way == "changeset":
                changeset = modules.publish_changeset(tenant, ids, by="bench", message=f"bench round {rep}")
                failed = [target for target, result in changeset.checks if result.error is not None]
                if failed:
                    raise SystemExit(f"bench.changesets: the changeset was refused: {failed}")
                changesets.append(time.perf_counter() - t0)
            else:
                for module_id in ids:
                    modules.publish(tenant, module_id, by="bench")
                singles.append(time.perf_counter() - t0)
            settled()
        progress(f"round {rep}/{args.repetitions}: changeset of {len(ids)} {millis(changesets[-1])}, "
                 f"{len(ids)} single publishes {millis(singles[-1])}")

    n = args.importers
    one = median(ones)
    ideal = n * one / workers
    cores = os.cpu_count() or 1
    rows = []
    for name, arm, goal in ((VISITS, arms[VISITS], True), (SEPARATE, arms[SEPARATE], False)):
        ratio = median(arm.ratios)
        cpu = median([a + w for a, w in zip(arm.api_cpu, arm.worker_cpu, strict=True)])
        rows += [
            Row(
                f"publish lib ({dependents} transitive importers, 3 examples each), {name}" + ("" if goal else " (before)"),
                millis(median(arm.publishes)),
                f"{n} × one check with its examples ÷ {workers} workers = {millis(ideal)}",
                ratio,
                f"≤ {GOAL}" if goal else "",
                ratio <= GOAL if goal else None,
                spread=f"range {min(arm.ratios):.2f}–{max(arm.ratios):.2f}",
            ),
            Row(
                "  inside sandbox.check_then_run, summed over the importers",
                f"{millis(median(arm.in_visits))} ({median(arm.counts):.0f}, up to {max(arm.at_once)} at once)",
                f"{n} × one check with its examples = {millis(n * one)}",
                median(arm.in_visits) / (n * one),
            ),
            Row("  none running (graph, importers, first bundle, save)", millis(median(arm.idle)), ""),
            Row(
                f"  CPU it used: API process {millis(median(arm.api_cpu))} + workers {millis(median(arm.worker_cpu))}; "
                f"spread over {cores} cores",
                millis(cpu / cores),
                f"{n} × one check with its examples ÷ {workers} workers = {millis(ideal)}",
                cpu / cores / ideal,
                "(the floor of the ratio on this machine)",
            ),
        ]
    rows += [
        Row(f"speed-up of one visit each ({SEPARATE} / {VISITS})",
            f"{median(arms[SEPARATE].publishes) / median(arms[VISITS].publishes):.2f}×", ""),
        Row("one check with its examples, one visit (median; mean of a- and b-bundles)", micros(one),
            f"a {micros(median(checks_a))}, b {micros(median(checks_b))}"),
        Row("  the same as separate calls (check, then run per example), alone", micros(median(separate)),
            f"one visit {micros(one)}", median(separate) / one),
        Row(
            f"changeset of {len(ids)} modules ({targets} checks with their examples)",
            millis(median(changesets)),
            f"{len(ids)} single publishes = {millis(median(singles))}",
            median(changesets) / median(singles),
            "(no goal; < 1: the changeset is cheaper)",
            spread=f"changeset {millis(min(changesets))}–{millis(max(changesets))}",
        ),
    ]
    info = {name: vars(arm) for name, arm in arms.items()}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())  # other work on the machine takes the workers' CPU
    info.update(one=ones, separate=separate, changesets=changesets, singles=singles, workers=workers, args=vars(args), load=load)
    return rows, info


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.changesets", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (2 rounds, smaller check batches)")
    parser.add_argument("--importers", type=int, default=200, help="transitive importers of lib (default 200)")
    parser.add_argument("--changeset", type=int, default=50, help="modules in the changeset (default 50)")
    parser.add_argument("--repetitions", type=int, help="rounds of each measure (default 5, quick 2)")
    parser.add_argument("--checks", type=int, help="single checks per batch around each publish (default 200, quick 60)")
    args = parser.parse_args(argv)
    if args.importers < 2:
        parser.error("--importers must be at least 2")
    if not 1 <= args.changeset <= min(100, (args.importers + 1) // 2):
        parser.error("--changeset must be 1 to 100, and at most the a_i modules (half the importers)")
    args.repetitions = args.repetitions or (2 if args.quick else 5)
    args.checks = args.checks or (60 if args.quick else 200)
    return args


def title(importers: int, changeset: int) -> str:
    return (f"Benchmark — publish of a library with {importers} transitive importers, 3 examples each, vs {importers} × one "
            f"check with its examples ÷ workers; a changeset of {changeset} modules vs {changeset} single publishes; medians")


NOTES = "(a publish also loads each importer's published definition from the event store, orders each bundle, and saves)"


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    rows, info = run(argv)
    args = info["args"]
    print(format_table(title(args["importers"], args["changeset"]), rows))
    print(NOTES)
    print(f"({machine_line()}; load average {info['load']}; {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
