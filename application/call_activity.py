"""A tool's activity from the call log (docs/calls.md, "A tool's activity"): its last 24 hours by hour
and its last 7 days by day, each with its calls, errors, p50 and p95 duration and top callers.

The store answers three bounded queries (`CallRecords.activity`): calls and errors per hour (one
row an hour), the top callers of each window, and the durations of the newest `SAMPLE` calls. The
percentiles are taken here, nearest rank, from those durations: exact while a window has no more
calls than the sample, else of its newest `SAMPLE` calls (and said so: `Window.sampled`). The cost
of a tool's page is thus bounded whatever its traffic.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

# The durations the percentiles are taken from, at most; and the callers each window names.
SAMPLE = 5_000
TOP = 5


@dataclass(frozen=True)
class Bucket:
    key: str  # "2026-12-02T14" (an hour) or "2026-12-02" (a day), UTC, as the records' times begin
    label: str  # "14:00" or "Wed 2"
    calls: int = 0
    errors: int = 0
    p50: float | None = None  # milliseconds; None: no call
    p95: float | None = None


@dataclass(frozen=True)
class Window:
    title: str
    buckets: tuple[Bucket, ...]
    calls: int
    errors: int
    p50: float | None
    p95: float | None
    callers: tuple[tuple[str, int], ...]
    sampled: bool = False  # the percentiles are of the newest SAMPLE calls, not of every call

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class Activity:
    tool: str
    day: Window
    week: Window
    windows: tuple[Window, ...] = field(default=())


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile `q` (0 to 1) of values sorted ascending; None of no value."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def bounds(now: float) -> tuple[list[str], list[str], str, str]:
    """The 24 hour keys ending with `now`'s hour, the 7 day keys ending with its day, and the
    instants the two windows begin at (ISO 8601, as records hold them)."""
    moment = datetime.fromtimestamp(now, timezone.utc)
    hour = moment.replace(minute=0, second=0, microsecond=0)
    hours = [hour - timedelta(hours=i) for i in range(23, -1, -1)]
    today = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    days = [today - timedelta(days=i) for i in range(6, -1, -1)]
    return ([h.strftime("%Y-%m-%dT%H") for h in hours], [d.strftime("%Y-%m-%d") for d in days],
            hours[0].strftime("%Y-%m-%dT%H:%M:%S.000000Z"), days[0].strftime("%Y-%m-%dT%H:%M:%S.000000Z"))


def summarize(tool: str, raw: dict[str, Any], now: float, *, sample: int = SAMPLE) -> Activity:
    """The two windows from what the store answered (`CallRecords.activity`)."""
    hour_keys, day_keys, _, _ = bounds(now)
    by_hour = {h: (c, e) for h, c, e in raw["hours"]}
    durations: dict[str, list[float]] = {}
    for hour, duration in raw["durations"]:
        durations.setdefault(hour, []).append(duration)
    full = len(raw["durations"]) >= sample

    def window(title: str, keys: list[str], width: int, label: Any, callers: list[tuple[str, int]]) -> Window:
        buckets, every, calls, errors = [], [], 0, 0
        for key in keys:
            hours = [h for h in by_hour if h[:width] == key] if width < 13 else ([key] if key in by_hour else [])
            c = sum(by_hour[h][0] for h in hours)
            e = sum(by_hour[h][1] for h in hours)
            spent = sorted(d for h in hours for d in durations.get(h, ()))
            every.extend(spent)
            calls, errors = calls + c, errors + e
            buckets.append(Bucket(key, label(key), c, e, percentile(spent, 0.5), percentile(spent, 0.95)))
        every.sort()
        # sampled when the newest SAMPLE calls did not reach back over the whole window
        sampled = full and len(every) < calls
        return Window(title, tuple(buckets), calls, errors, percentile(every, 0.5), percentile(every, 0.95),
                      tuple(callers), sampled)

    day = window("Last 24 hours", hour_keys, 13, lambda k: f"{k[11:13]}:00", raw["recent_callers"])
    week = window("Last 7 days", day_keys, 10,
                  lambda k: datetime.strptime(k, "%Y-%m-%d").strftime("%a %-d"), raw["callers"])
    return Activity(tool, day, week, (day, week))
