"""Benchmark: the cost of the JMESPath bound (issue 28, finding 2) on ordinary expressions; goal ≤ 5 %.

In-process, on what an API URL tool's answer step does after the answer is read: a realistic JSON
answer (about 64 KB of records, parsed once), an expression, and the output measured against
`maxOutputChars` (20 000). Ours is `domain.jmes.search` (the bounded interpreter: budget and
deadline) and the kind's `_cut` of a JMESPath result (`domain.jmes.serialized_length`, written out
only past the cap); the baseline is what the kind did before: `jmespath.search` and `json.dumps`
of the whole result to measure it. Each figure is the median of interleaved rounds (rotated order),
each round the median of many evaluations; the ratio is ours / the baseline, read as the bound's
cost (ratio − 1) against the goal for the named expression, informative for the others.

Run: `python -m bench.jmespath_bound [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import jmespath

from bench._common import Progress, Row, median, micros, quartiles, rotated, standalone

TITLE = "Benchmark — the JMESPath bound (bounded search + measured cut) vs jmespath.search + json.dumps, a 64 KB answer; medians"
GOAL = 0.05
ANSWER_BYTES = 65_536
MAX_OUTPUT_CHARS = 20_000
GOAL_EXPRESSION = "items[?active].{id: id, name: name}"
OTHERS = ("items[*].id", "items[?score > `0.5`].name | sort(@)", "items[0]", "length(items)", "items[*].tags[]")


def answer() -> tuple[str, Any]:
    """About `ANSWER_BYTES` of JSON records (its text and its parsed value), the same each run."""
    rng = random.Random(28)
    items: list[dict[str, Any]] = []
    text = ""
    while len(text) < ANSWER_BYTES:
        n = len(items)
        items.append({"id": n, "name": f"item {n}", "active": rng.random() < 0.6, "score": round(rng.random(), 4),
                      "email": f"user{n}@example.com", "tags": rng.sample(["red", "green", "blue", "amber"], 2),
                      "address": {"city": rng.choice(["Oslo", "Bern", "Lyon"]), "zip": f"{rng.randrange(10_000):04d}"}})
        text = json.dumps({"items": items, "total": n + 1})
    return text, json.loads(text)


def variants(expression: str, text: str, data: Any) -> dict[str, Callable[[], Any]]:
    from toolkinds.api_tools.kind import _cut
    from domain import jmes

    budget = jmes.budget_for(len(text), MAX_OUTPUT_CHARS)

    def bounded() -> Any:
        found = jmes.evaluate(expression, data, budget=budget, answer_chars=len(text))
        return _cut(found.value, MAX_OUTPUT_CHARS, references=found.written_at_most is None)

    def plain() -> Any:
        output = jmespath.search(expression, data)
        written = json.dumps(output, ensure_ascii=False, separators=(",", ":"))
        return output if len(written) <= MAX_OUTPUT_CHARS else written[:MAX_OUTPUT_CHARS]

    return {"bounded": bounded, "plain": plain}


def _time(call: Callable[[], Any], repeat: int) -> float:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return median(seconds)


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("jmespath_bound", quiet=quiet)
    text, data = answer()
    progress(f"answer: {len(text):,} characters, {len(data['items']):,} records")
    rows = []
    for expression in (GOAL_EXPRESSION, *OTHERS):
        calls = variants(expression, text, data)
        same = calls["bounded"]() == calls["plain"]()
        if not same:
            raise SystemExit(f"bench.jmespath_bound: {expression!r} gives another answer bounded")
        for call in calls.values():  # warm-up (the parser's cache, the interpreter's method cache)
            _time(call, 20)
        figures: dict[str, list[float]] = {name: [] for name in calls}
        for k in range(args.rounds):
            for name in rotated(list(calls), k):
                figures[name].append(_time(calls[name], args.repeat))
        ratios = [b / p for b, p in zip(figures["bounded"], figures["plain"])]
        q1, q3 = quartiles(ratios)
        ratio = median(figures["bounded"]) / median(figures["plain"])
        goal = expression == GOAL_EXPRESSION
        rows.append(Row(
            f"{expression}",
            f"bounded {micros(median(figures['bounded']))}",
            f"jmespath + json.dumps {micros(median(figures['plain']))}",
            ratio,
            f"cost ≤ {GOAL:.0%} (ratio ≤ {1 + GOAL:.2f})" if goal else "(informative)",
            ratio <= 1 + GOAL if goal else None,
            f"IQR {q1:.2f}–{q3:.2f}",
        ))
        progress(f"{expression}: {ratio:.3f}")
    return rows, {"answer_chars": len(text), "rounds": args.rounds, "repeat": args.repeat}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.jmespath_bound", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (a few seconds)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 15, quick 5)")
    parser.add_argument("--repeat", type=int, help="evaluations per variant per round (default 60, quick 20)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (5 if args.quick else 15)
    args.repeat = args.repeat or (20 if args.quick else 60)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
