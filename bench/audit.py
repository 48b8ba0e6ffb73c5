"""Benchmark: `toolsmith audit verify` and `export` against a plain read of the same event store.

The store: 100,000 events in SQLite (50,000 modules, each created then published, 1,000 modules
per transaction; read_side's store, written by another process), opened as the command opens it.
Measured in the same run, in rounds that rotate which goes first:

- **plain read**: every stored event through `select_notifications`, in the audit's batches,
  nothing decoded: the floor that reading the store sets.
- **verify**: the same read, plus decoding each event as the application does, hashing it
  (canonical JSON, SHA-256) and comparing the hash with the one its successor recorded.
- **export**: the same read, plus checking that each state is one line of JSON and writing the
  JSON lines (to /dev/null).
- **export of one tenant** (what the HTTP export does): the export, keeping the tenant's events.

Each runs as `toolsmith audit` runs it, with Python's cycle collector paused (the plain read too).
The HTTP export runs in the API process, with the collector on: about a third slower.

Ratio = plain-read seconds / audit seconds (the audit's speed as a share of a plain read's; 1.0
would mean it costs nothing beyond reading). Run: `python -m bench.audit [--quick]`.
"""

from __future__ import annotations

import argparse
import functools
import gc
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench._common import Progress, Row, bench_settings, median, quartiles, rotated, standalone

TITLE = "Audit: verify and export against a plain read of the event store"


def plain_read(app: Any) -> int:
    from infrastructure.audit import head_position, read_log

    return sum(len(batch) for batch in read_log(app, head_position(app), None))


def verify(app: Any) -> int:
    from infrastructure.audit import verify

    report = verify(app)
    if not report.intact:
        raise SystemExit(f"bench.audit: the store does not verify: {report.first_broken}")
    return report.events


@functools.lru_cache(maxsize=1)
def _kinds(app: Any) -> Any:
    """The kinds of tool, which say whose events are whose, built once per store as the CLI builds
    them (the warm-up round pays for it, as the CLI pays before its export)."""
    from entrypoints.compose import build_kinds

    return build_kinds(app)


def export(app: Any, tenant: str | None = None) -> int:
    from infrastructure.audit import export

    kinds = _kinds(app) if tenant is not None else None
    with open("/dev/null", "wb") as out:
        return export(app, out, tenant=tenant, kinds=kinds)


VARIANTS: dict[str, Callable[[Any], int]] = {
    "plain read": plain_read,
    "verify": verify,
    "export": export,
    "export of one tenant": lambda app: export(app, tenant="default"),
}


def _write_store(folder: str, modules: int) -> None:
    from bench.read_side import build_event_store

    build_event_store(bench_settings(folder).sqlite_path, modules, Progress("audit")).close()


def measure(events: int, rounds: int, progress: Progress) -> dict[str, list[float]]:
    from application.store import Store
    from infrastructure.audit import collection_paused

    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        # Written by another process, as read_side does: the writer's 50,000 aggregates would
        # otherwise stay in this process's heap and slow every round.
        writer = multiprocessing.get_context("spawn").Process(target=_write_store, args=(tmp, events // 2))
        writer.start()
        writer.join()
        if writer.exitcode != 0:
            raise SystemExit("bench.audit: writing the event store failed")
        app = Store(bench_settings(tmp).event_store_env())
        try:
            stored = app.position()
            for name, run in VARIANTS.items():  # warm-up: the file in the page cache, topics resolved
                run(app)
            seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
            for r in range(rounds):
                for name in rotated(list(VARIANTS), r):
                    gc.collect()
                    with collection_paused():  # as the command runs them, the plain read too
                        t0 = time.perf_counter()
                        counted = VARIANTS[name](app)
                        seconds[name].append(time.perf_counter() - t0)
                    if name != "export of one tenant" and counted != stored:
                        raise SystemExit(f"bench.audit: {name} counted {counted} events of {stored}")
                progress("  round {}: {}".format(r + 1, ", ".join(f"{n} {s[-1]:.2f} s" for n, s in seconds.items())))
        finally:
            app.close()
    return {"events": [stored], **seconds}


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    args = parse_args(argv)
    progress = Progress("audit", quiet=quiet)
    progress(f"audit: a store of {args.events:,} events, {args.rounds} rounds")
    measured = measure(args.events, args.rounds, progress)
    events = int(measured["events"][0])
    plain = measured["plain read"]

    def rate(seconds: list[float]) -> str:
        return f"{events / median(seconds):,.0f} events/s ({median(seconds):.2f} s)"

    rows = [Row(f"plain read of {events:,} events (nothing decoded)", rate(plain), "")]
    for name in ("verify", "export", "export of one tenant"):
        ratios = [p / s for p, s in zip(plain, measured[name])]
        q1, q3 = quartiles(ratios)
        rows.append(Row(name, rate(measured[name]), f"plain read {events / median(plain):,.0f} events/s",
                        median(ratios), "", None, f"{q1:.2f}–{q3:.2f}"))
    return rows, {"args": vars(args)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.audit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a store of 20,000 events, 3 rounds")
    parser.add_argument("--events", type=int, help="events in the store (default 100,000)")
    parser.add_argument("--rounds", type=int, help="rounds of the four variants (default 7)")
    args = parser.parse_args(argv)
    args.events = args.events or (20_000 if args.quick else 100_000)
    args.rounds = args.rounds or (3 if args.quick else 7)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
