"""Small charts drawn on the server as inline SVG (docs/calls.md, "A tool's activity"): no script, no
library, no request of their own. This module only computes the shapes (coordinates in a fixed
view box, each mark's title); `console/templates/calls/_charts.html` writes them, escaped as every
template is. Each chart names what it shows in words (`label`), for those who cannot see it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

WIDTH = 240
HEIGHT = 56
TOP = 4  # room above the tallest mark


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    y: float
    height: float
    error_y: float
    error_height: float
    title: str


@dataclass(frozen=True)
class Bars:
    bars: tuple[Bar, ...]
    peak: int
    label: str
    first: str
    last: str


@dataclass(frozen=True)
class Lines:
    p50: tuple[str, ...]  # SVG polyline points, one string per unbroken run of buckets with calls
    p95: tuple[str, ...]
    dots: tuple[tuple[float, float, str], ...]  # a lone bucket's point (x, y, title): no line to draw
    peak: float
    label: str
    first: str
    last: str


def millis(value: float | None) -> str:
    """A duration as people read it: "0.8 ms", "12 ms", "1.4 s"; "–" for none."""
    if value is None:
        return "–"
    if value >= 1000:
        return f"{value / 1000:.1f} s"
    if value >= 10:
        return f"{value:.0f} ms"
    return f"{value:.1f} ms"


def _slot(count: int) -> float:
    return WIDTH / max(count, 1)


def bars(buckets: Sequence[Any], what: str) -> Bars:
    """Calls per bucket, each bar's failed part in the error colour; `what` says the buckets ("hour")."""
    peak = max((b.calls for b in buckets), default=0)
    scale = (HEIGHT - TOP) / peak if peak else 0.0
    slot = _slot(len(buckets))
    drawn = []
    for i, b in enumerate(buckets):
        h = b.calls * scale
        eh = b.errors * scale
        title = f"{b.label}: {b.calls} call{'s' if b.calls != 1 else ''}" + (f", {b.errors} failed or refused" if b.errors else "")
        drawn.append(Bar(round(i * slot + slot * 0.15, 2), round(slot * 0.7, 2), round(HEIGHT - h, 2), round(h, 2),
                         round(HEIGHT - eh, 2), round(eh, 2), title))
    total = sum(b.calls for b in buckets)
    errors = sum(b.errors for b in buckets)
    busiest = max(buckets, key=lambda b: b.calls, default=None)
    label = f"Calls per {what}: {total} in all, {errors} failed or refused" + (
        f"; the most in one {what}: {peak}, at {busiest.label}" if busiest is not None and peak else "")
    return Bars(tuple(drawn), peak, label, buckets[0].label if buckets else "", buckets[-1].label if buckets else "")


def lines(buckets: Sequence[Any], what: str) -> Lines:
    """p50 and p95 duration per bucket; a bucket without calls breaks the lines."""
    peak = max((b.p95 for b in buckets if b.p95 is not None), default=0.0)
    scale = (HEIGHT - TOP) / peak if peak else 0.0
    slot = _slot(len(buckets))
    runs50: list[list[str]] = []
    runs95: list[list[str]] = []
    dots: list[tuple[float, float, str]] = []
    current: list[int] = []

    def close() -> None:
        if len(current) == 1:
            b = buckets[current[0]]
            x = round(current[0] * slot + slot / 2, 2)
            dots.append((x, round(HEIGHT - (b.p95 or 0) * scale, 2), f"{b.label}: p95 {millis(b.p95)}"))
            dots.append((x, round(HEIGHT - (b.p50 or 0) * scale, 2), f"{b.label}: p50 {millis(b.p50)}"))
        elif current:
            runs50.append([f"{round(i * slot + slot / 2, 2)},{round(HEIGHT - (buckets[i].p50 or 0) * scale, 2)}" for i in current])
            runs95.append([f"{round(i * slot + slot / 2, 2)},{round(HEIGHT - (buckets[i].p95 or 0) * scale, 2)}" for i in current])
        current.clear()

    for i, b in enumerate(buckets):
        if b.p50 is None:
            close()
        else:
            current.append(i)
    close()
    label = f"Duration per {what}, median (p50) and 95th percentile (p95); the highest p95: {millis(peak) if peak else 'none'}"
    return Lines(tuple(" ".join(r) for r in runs50), tuple(" ".join(r) for r in runs95), tuple(dots), peak, label,
                 buckets[0].label if buckets else "", buckets[-1].label if buckets else "")


def shares(callers: Sequence[tuple[str, int]]) -> list[dict[str, Any]]:
    """The top callers as rows of a bar list: name, calls, and the bar's width in percent of the first."""
    most = max((n for _, n in callers), default=0)
    return [{"name": name or "(unknown)", "calls": n, "percent": round(100 * n / most, 1) if most else 0} for name, n in callers]
