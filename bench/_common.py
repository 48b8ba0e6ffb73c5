"""Shared helpers: medians, progress lines, rows and the printed table."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def rotated(names: Sequence[str], k: int) -> list[str]:
    """`names` started at position `k` (mod its length): each round runs the variants in another order."""
    k %= len(names)
    return list(names[k:]) + list(names[:k])


def quartiles(values: Sequence[float]) -> tuple[float, float]:
    """The first and third quartiles (the spread of per-round figures)."""
    if len(values) < 2:
        v = values[0] if values else float("nan")
        return v, v
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


class Progress:
    """Plain progress lines on stderr, so that stdout keeps only the figures."""

    def __init__(self, name: str, *, quiet: bool = False) -> None:
        self.name = name
        self.quiet = quiet
        self.started = time.perf_counter()

    def __call__(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.started
            print(f"[{self.name} {elapsed:6.1f}s] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Row:
    """One reported figure: ours against its baseline, the ratio and the goal it is read against."""

    figure: str
    ours: str
    baseline: str
    ratio: float | None = None
    goal: str = ""
    # True when higher ratios are better (goal `≥`), False when lower are (goal `≤`), None: no goal.
    meets: bool | None = None
    spread: str = ""


def format_table(title: str, rows: Sequence[Row]) -> str:
    headers = ("figure", "ours", "baseline", "ratio", "per-round spread", "goal", "meets")
    body = [
        (
            r.figure,
            r.ours,
            r.baseline,
            "" if r.ratio is None else f"{r.ratio:.2f}",
            r.spread,
            r.goal,
            "" if r.meets is None else ("yes" if r.meets else "no"),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(line[i]) for line in body)) if body else len(h) for i, h in enumerate(headers)]
    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [title, line(headers), line(["-" * w for w in widths])]
    out += [line(cells) for cells in body]
    return "\n".join(out)


def micros(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def millis(seconds: float) -> str:
    return f"{seconds * 1e3:,.1f} ms"


def machine_line() -> str:
    import platform

    return f"python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.platform(terse=True)}"


def bench_settings(data_dir: os.PathLike[str] | str):
    """Settings for a throwaway SQLite data dir and the embedded sandbox, whatever the environment says."""
    from infrastructure.settings import Settings

    # The SQLite path comes from the data dir only (not from an SQLITE_DBNAME in the environment).
    os.environ.pop("SQLITE_DBNAME", None)
    return Settings(
        data_dir=data_dir,
        admin_token="x",
        persistence_module="eventsourcing.sqlite",
        sandbox_url="embedded",
    )


def standalone(
    run: Callable[[Sequence[str] | None], tuple[Sequence[Row], Any]], title: str, notes: str | None = None
) -> Callable[[Sequence[str] | None], int]:
    """The `main` of a benchmark run on its own (`python -m bench.<name>`): its table, its notes,
    then the machine (and the load average, when the run reports one as `info["load"]`)."""

    def main(argv: Sequence[str] | None = None) -> int:
        started = time.perf_counter()
        rows, info = run(argv)
        print(format_table(title, rows))
        if notes:
            print(notes)
        load = f"; load average {info['load']}" if isinstance(info, dict) and "load" in info else ""
        print(f"({machine_line()}{load}; {time.perf_counter() - started:.0f} s)")
        return 0

    return main
