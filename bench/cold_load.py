"""Benchmark: a cold load of a tenant's import graph of 10,000 events, before and after snapshots.

The store: one tenant in SQLite whose `ImportGraph` has 10,000 events (its `Started`, then links
of 100 modules' published imports, as publishes and import changes record them), written through
the aggregate and the application's save, ten events to a save, with snapshots on (every
`SNAPSHOT_INTERVAL` events, as the service takes them). Then, in rounds that rotate which goes
first, a cold load: a fresh application on the same store (nothing cached) reads the graph.

- **before** (snapshots off, `IS_SNAPSHOTTING_ENABLED=n`): every event since version 1 is read,
  decoded and applied; the snapshots in their table are not read.
- **after** (snapshots on, as `serve` runs): the newest snapshot, then the events after it.

Then 199 events more (the most a load ever replays after a snapshot) and the same again: the
worst case for "after". Each load's graph is checked to be the same (version, chain head, nodes).
Figures: the median load time over the rounds (spread: IQR of the per-round ratios); ratio =
before / after. Run: `python -m bench.cold_load [--quick]`.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from bench._common import Progress, Row, bench_settings, median, millis, quartiles, rotated, standalone

TITLE = "Cold load of a tenant's import graph of 10,000 events: before snapshots (full replay) and after (newest snapshot + the events after it)"
TENANT = "default"
ARMS = ("before", "after")
PER_SAVE = 10
MODULES = 100


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    from application.store import SNAPSHOT_INTERVAL

    args = parse_args(argv)
    progress = Progress("cold_load", quiet=quiet)
    rows: list[Row] = []
    info: dict[str, Any] = {"args": vars(args), "interval": SNAPSHOT_INTERVAL}
    with tempfile.TemporaryDirectory() as tmp:
        env = bench_settings(tmp).event_store_env()
        app = _open(env, snapshots=True)
        try:
            started = time.perf_counter()
            _grow(app, args.events - 1)  # the first is the graph's `Started`
            info["written_seconds"] = time.perf_counter() - started
            progress(f"{args.events:,} graph events written in {info['written_seconds']:.1f} s")
            rows.append(Row(f"writing the store: {args.events:,} graph events, {PER_SAVE} to a save", f"{info['written_seconds']:.1f} s, snapshots on", ""))
            rows += _measure(env, args, progress, f"{args.events:,} events (the newest snapshot at the newest event)", info)
            _grow(app, SNAPSHOT_INTERVAL - 1)
            rows += _measure(env, args, progress, f"{args.events + SNAPSHOT_INTERVAL - 1:,} events ({SNAPSHOT_INTERVAL - 1} after the newest snapshot: the worst case)", info)
        finally:
            app.close()
    return rows, info


def _open(env: dict[str, str], *, snapshots: bool) -> Any:
    from application.store import Store

    return Store({**env, "IS_SNAPSHOTTING_ENABLED": "y" if snapshots else "n"})


def _grow(app: Any, events: int) -> None:
    """`events` links on the tenant's graph, `PER_SAVE` to a save, as a publish records them."""
    done = 0
    while done < events:
        graph = app.graph(TENANT, for_update=True)
        for i in range(done, min(done + PER_SAVE, events)):
            module = i % MODULES
            graph.link(f"m{module}", published=[f"m{(module + k) % MODULES}" for k in range(1, 1 + i % 4)], draft=None)
        app.save(graph)
        done = min(done + PER_SAVE, events)


def _measure(env: dict[str, str], args: argparse.Namespace, progress: Progress, what: str, info: dict[str, Any]) -> list[Row]:
    seconds: dict[str, list[float]] = {arm: [] for arm in ARMS}
    loaded: dict[str, Any] = {}
    for r in range(args.rounds):
        for arm in rotated(ARMS, r):
            app = _open(env, snapshots=arm == "after")
            try:
                gc.collect()
                started = time.perf_counter()
                graph = app.graph(TENANT)
                seconds[arm].append(time.perf_counter() - started)
                loaded[arm] = (graph.version, graph.chain_head, graph.nodes)
                if arm == "after":
                    newest = list(app.snapshots.get(graph.id, desc=True, limit=1))
                    snapshot_at = newest[0].originator_version if newest else 0
            finally:
                app.close()
        if loaded["before"] != loaded["after"]:
            raise SystemExit("bench.cold_load: the graph loaded from its snapshot is not the graph a full replay builds")
    version = loaded["before"][0]
    progress(f"{what}: before {millis(median(seconds['before']))}, after {millis(median(seconds['after']))}")
    info.setdefault("loads", {})[version] = {arm: seconds[arm] for arm in ARMS}
    ratio = median(seconds["before"]) / median(seconds["after"])
    q1, q3 = quartiles([b / a for b, a in zip(seconds["before"], seconds["after"])])
    return [Row(
        f"graph of {what}",
        f"after {millis(median(seconds['after']))} (snapshot at {snapshot_at:,} + {version - snapshot_at} events)",
        f"before {millis(median(seconds['before']))} ({version:,} events)",
        ratio, "> 1 (before/after)", ratio > 1, f"IQR {q1:.1f}–{q3:.1f}",
    )]


NOTES = (
    "A load is `Store.graph(tenant)` on a fresh application (empty aggregate cache), the store's file in the "
    "page cache. Snapshots are taken in the save, so writing the store includes taking them."
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cold_load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    parser.add_argument("--events", type=int, default=10_000, help="events of the graph (default 10,000)")
    parser.add_argument("--rounds", type=int, help="cold loads per arm (default 15, quick 5)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (5 if args.quick else 15)
    return args


main = standalone(run, TITLE, NOTES)


if __name__ == "__main__":
    sys.exit(main())
