"""`python -m bench.compare OLD NEW`: the same benchmark figures on two commits, in one table.

A redesign step promises "no figure falls by more than 5 %" (issue 13). Each commit's figures come
from that commit's OWN benchmark code, run against that commit's own product code: a temporary
`git worktree add --detach` of each revision, put first on `PYTHONPATH`, with the virtualenv this
command runs in. The benchmark's `run(argv)` is called by a small driver in a subprocess, which
writes its rows as JSON, so no commit needs a machine-readable output of its own.

Runs alternate between the commits, benchmark by benchmark (old, new; then new, old for the next
one, …), so that the drift of a shared, noisy machine hits both. With `--runs N` each benchmark
runs N times per commit and each figure is the median of its N runs.

The console script `toolsmith` that `mcp_call` starts is the virtualenv's, which names one
commit's entry point (`infrastructure.cli` before issue 13, `entrypoints.cli` after). So each
commit runs from a throwaway view of the virtualenv (its `lib/` linked, `pyvenv.cfg` copied) whose
`bin/toolsmith` calls that commit's own entry point, read from its `pyproject.toml`.

Figures and their direction (what "falls" means) are listed in FIGURES below; a figure marked
"ref" is not ours (bare QuickJS, a plain read of SQLite, one sandbox check) and gets no verdict:
it shows how much the machine moved between the runs. The ratios are computed inside one run of
one commit (ours against its baseline measured interleaved), so they are the figures least moved
by the machine's drift; the absolute figures are printed beside them and judged too.

Run: `python -m bench.compare 22bda80 HEAD [--only tool_call publish] [--runs 1] [--full|--quick]`.
It exits 1 when a judged figure falls by more than 5 % (or is missing: a benchmark that fails on
one commit is reported, and the others still run), else 0.

Read the verdicts against the noise: an A/A run (`HEAD HEAD`, the same code twice) on the shared
2-core machine at a load average of 2-3 moved single judged figures by up to 12 % and reference
figures by up to 35 %. A 5 % verdict wants a quiet machine, or `--runs 3` and more.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCHMARKS = ("tool_call", "publish", "mcp_call", "audit")

# Each benchmark's arguments for a comparison: its own full defaults (the figures as the benchmarks
# report them), with the 200 importers spelled out, and 7 publishes instead of 3 so that
# the publish median (a few seconds more) is steadier. A full run of the four took 4.5-6 minutes
# per commit on the shared 2-core machine (12 minutes for both, the audit's 100,000-event store
# the longest part), so nothing is cut. `--full` uses the defaults exactly, `--quick` each
# benchmark's `--quick` (a smoke test, not a verdict). Each benchmark's `--help` says what they mean.
DEFAULT_ARGS: dict[str, list[str]] = {
    "tool_call": [],
    "publish": ["--importers", "200", "--repetitions", "7"],
    "mcp_call": [],
    "audit": [],
}

# The driver, run as `python -c DRIVER NAME OUT ARG...` with a commit's tree first on sys.path:
# it calls that tree's `bench.NAME.run(ARGS)` and writes the rows (a dataclass each) as JSON.
DRIVER = r"""
import dataclasses, importlib, json, os, sys, time
name, out, *argv = sys.argv[1:]
module = importlib.import_module("bench." + name)
load_before = os.getloadavg()
started = time.perf_counter()
rows, info = module.run(argv)
seconds = time.perf_counter() - started
with open(out, "w") as f:
    json.dump({
        "module": module.__file__,
        "rows": [dataclasses.asdict(r) if dataclasses.is_dataclass(r) else dict(r) for r in rows],
        "info": info, "seconds": seconds, "load_before": load_before, "load_after": os.getloadavg(),
    }, f, default=str)
"""


@dataclass(frozen=True)
class Figure:
    """One compared figure: which row (a predicate on its `figure` text), which field of it, and
    whether higher or lower is better. `reference`: not our code, shown without a verdict."""

    benchmark: str
    label: str
    row: Callable[[str], bool]
    field: str  # "ours", "baseline" or "ratio"
    higher_is_better: bool
    reference: bool = False


def _starts(prefix: str, *, without: str | None = None) -> Callable[[str], bool]:
    return lambda figure: figure.lstrip().startswith(prefix) and (without is None or without not in figure)


FIGURES: tuple[Figure, ...] = (
    # tool_call: (a) latency, lower is better; its ratio is bare/ours, higher is better.
    # (b) calls/s and its ratio ours/bare, higher is better.
    Figure("tool_call", "tool call via app, paced latency", _starts("(a)", without="EmbeddedSandbox"), "ours", False),
    Figure("tool_call", "  ratio bare/app (goal ≥ 0.8)", _starts("(a)", without="EmbeddedSandbox"), "ratio", True),
    Figure("tool_call", "  bare QuickJS paced latency", _starts("(a)", without="EmbeddedSandbox"), "baseline", False, True),
    Figure("tool_call", "tool call via app, saturated", _starts("(b)", without="EmbeddedSandbox"), "ours", True),
    Figure("tool_call", "  ratio app/bare (goal ≥ 0.8)", _starts("(b)", without="EmbeddedSandbox"), "ratio", True),
    Figure("tool_call", "  bare QuickJS saturated", _starts("(b)", without="EmbeddedSandbox"), "baseline", True, True),
    # publish: time, lower is better; ratio publish / (N × one check), lower is better.
    Figure("publish", "publish lib, 200 importers", _starts("publish lib"), "ours", False),
    Figure("publish", "  ratio publish/(200 × check)", _starts("publish lib"), "ratio", False),
    Figure("publish", "  one sandbox check", _starts("one check"), "ours", False, True),
    # mcp_call: calls/s, higher is better; ratio MCP/REST, higher is better.
    Figure("mcp_call", "MCP tools/call, 1 caller", _starts("tools/call throughput, 1 "), "ours", True),
    Figure("mcp_call", "  REST call, 1 caller", _starts("tools/call throughput, 1 "), "baseline", True),
    Figure("mcp_call", "  ratio MCP/REST, 1 caller", _starts("tools/call throughput, 1 "), "ratio", True),
    Figure("mcp_call", "MCP tools/call, 8 callers", _starts("tools/call throughput, 8 "), "ours", True),
    Figure("mcp_call", "  REST call, 8 callers", _starts("tools/call throughput, 8 "), "baseline", True),
    Figure("mcp_call", "  ratio MCP/REST, 8 callers", _starts("tools/call throughput, 8 "), "ratio", True),
    # audit: events/s, higher is better; ratio plain-read seconds / verify seconds, higher is better.
    Figure("audit", "audit verify", _starts("verify"), "ours", True),
    Figure("audit", "  ratio verify/plain read", _starts("verify"), "ratio", True),
    Figure("audit", "  plain read of the store", _starts("plain read"), "ours", True, True),
)

LIMIT = 5.0  # per cent: the most a figure may fall

_NUMBER = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*(µs|ms|s|calls/s|events/s)?")


def parse_figure(text: str) -> tuple[float, str] | None:
    """The first number in a printed figure and its unit: `"1,234 µs"` → (1234.0, "µs");
    `"MCP 512 calls/s"` → (512.0, "calls/s")."""
    match = _NUMBER.search(text)
    if match is None:
        return None
    return float(match.group(1).replace(",", "")), match.group(2) or ""


def value(figure: Figure, rows: Sequence[dict[str, Any]]) -> tuple[float, str] | None:
    for row in rows:
        if figure.row(row["figure"]):
            if figure.field == "ratio":
                return (float(row["ratio"]), "") if row.get("ratio") is not None else None
            return parse_figure(str(row.get(figure.field, "")))
    return None


# --- the two trees -------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


class Tree:
    """A detached worktree of one revision, and the interpreter that runs it."""

    def __init__(self, repo: Path, revision: str, label: str, scratch: Path) -> None:
        self.repo = repo
        self.revision = revision
        self.label = label
        self.commit = git(repo, "rev-parse", "--verify", f"{revision}^{{commit}}")
        self.subject = git(repo, "log", "-1", "--format=%h %s", self.commit)
        self.path = scratch / f"tree-{label}"
        self.venv = scratch / f"venv-{label}"
        self.added = False

    def add(self) -> None:
        git(self.repo, "worktree", "add", "--detach", str(self.path), self.commit)
        self.added = True
        self._venv()

    def _venv(self) -> None:
        """A view of this interpreter's virtualenv whose `bin/toolsmith` is this tree's entry point."""
        base = Path(sys.prefix)
        real = Path(os.path.realpath(sys.executable))
        (self.venv / "bin").mkdir(parents=True)
        if (base / "pyvenv.cfg").exists():
            shutil.copy(base / "pyvenv.cfg", self.venv / "pyvenv.cfg")
            for name in ("lib", "lib64", "include"):
                if (base / name).exists():
                    (self.venv / name).symlink_to((base / name).resolve())
        else:  # a Python outside any virtualenv: the view sees its site-packages
            (self.venv / "pyvenv.cfg").write_text(f"home = {real.parent}\ninclude-system-site-packages = true\n")
        for name in ("python", "python3", Path(sys.executable).name):
            link = self.venv / "bin" / name
            if not link.exists():
                link.symlink_to(real)
        project = tomllib.loads((self.path / "pyproject.toml").read_text())
        module, _, function = project["project"]["scripts"]["toolsmith"].partition(":")
        script = self.venv / "bin" / "toolsmith"
        script.write_text(
            f"#!{self.python}\nimport sys\nfrom {module} import {function}\n"
            f"if __name__ == '__main__':\n    sys.exit({function}())\n"
        )
        script.chmod(0o755)

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def remove(self) -> None:
        if self.added:
            subprocess.run(["git", "-C", str(self.repo), "worktree", "remove", "--force", str(self.path)], capture_output=True)
            self.added = False

    def run(self, benchmark: str, argv: Sequence[str], out: Path) -> dict[str, Any] | None:
        """The benchmark's result, or None when it failed (its traceback is on stderr): the
        comparison goes on with the others, and the table shows the missing figures."""
        env = dict(os.environ, PYTHONPATH=str(self.path))
        command = [str(self.python), "-c", DRIVER, benchmark, str(out), *argv]
        finished = subprocess.run(command, cwd=self.path, env=env)
        if finished.returncode != 0:
            print(f"[compare] {benchmark} FAILED on {self.label} ({_short(self.subject, 60)}), exit code {finished.returncode}",
                  file=sys.stderr, flush=True)
            return None
        result = json.loads(out.read_text())
        expected = str(self.path)
        if not str(result["module"]).startswith(expected):
            raise SystemExit(f"bench.compare: {benchmark} on {self.label} ran {result['module']}, not the tree's own code")
        return result


# --- the run and the table -----------------------------------------------------------------------


def bench_args(args: argparse.Namespace, benchmark: str) -> list[str]:
    if args.quick:
        return ["--quick"]
    if args.full:
        return []
    return list(DEFAULT_ARGS[benchmark])


def compare(args: argparse.Namespace) -> int:
    repo = Path(git(Path.cwd(), "rev-parse", "--show-toplevel"))
    scratch = Path(tempfile.mkdtemp(prefix="toolsmith-compare-"))
    try:
        trees = [Tree(repo, args.old, "old", scratch), Tree(repo, args.new, "new", scratch)]
    except subprocess.CalledProcessError as failed:
        shutil.rmtree(scratch, ignore_errors=True)
        raise SystemExit(f"bench.compare: {shlex.join(failed.cmd)}: {failed.stderr.strip()}") from None
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    order: list[str] = []
    failed: list[str] = []
    started = time.perf_counter()
    try:
        for tree in trees:
            tree.add()
            print(f"[compare] {tree.label}: {tree.subject}", file=sys.stderr, flush=True)
        k = 0
        for run in range(args.runs):
            for benchmark in args.only:
                pair = trees if k % 2 == 0 else trees[::-1]
                k += 1
                for tree in pair:
                    argv = bench_args(args, benchmark)
                    print(f"[compare] run {run + 1}/{args.runs}: {benchmark} on {tree.label} "
                          f"({shlex.join(argv) or 'its defaults'})", file=sys.stderr, flush=True)
                    out = scratch / f"{benchmark}-{tree.label}-{run}.json"
                    result = tree.run(benchmark, argv, out)
                    if result is None:
                        failed.append(f"{benchmark} on {tree.label}")
                    else:
                        results.setdefault((benchmark, tree.label), []).append(result)
                    order.append(f"{benchmark} {tree.label}")
    finally:
        for tree in trees:
            tree.remove()
        subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    text, failures = report(args, trees, results, order, time.perf_counter() - started)
    print(text)
    if failed:
        print(f"FAILED runs (their tracebacks are above, on stderr): {', '.join(failed)}")
    return 1 if failures else 0


def _median_of_runs(figure: Figure, runs: list[dict[str, Any]]) -> tuple[float, str] | None:
    values = [v for v in (value(figure, r["rows"]) for r in runs) if v is not None]
    if not values:
        return None
    return statistics.median(v for v, _ in values), values[0][1]


def _format(number: float, unit: str) -> str:
    if unit == "":
        return f"{number:.2f}"
    return f"{number:,.1f} {unit}" if number < 100 else f"{number:,.0f} {unit}"


def judge(figure: Figure, old: float, new: float) -> tuple[float, bool | None]:
    """The change from `old` to `new` in per cent, and whether it stays within the limit (None for
    a reference figure). A figure falls when a time rises or a rate or a higher-is-better ratio drops."""
    change = (new - old) / old * 100 if old else float("nan")
    if figure.reference:
        return change, None
    fall = -change if figure.higher_is_better else change
    return change, fall <= LIMIT


def compared(only: Sequence[str], results: dict[tuple[str, str], list[dict[str, Any]]]) -> tuple[list[tuple[str, ...]], int, int]:
    """The table's lines (figure, better, old, new, change, verdict), the judged figures and how many fall too far."""
    lines: list[tuple[str, ...]] = []
    failures = judged = 0
    for figure in FIGURES:
        if figure.benchmark not in only:
            continue
        old = _median_of_runs(figure, results.get((figure.benchmark, "old"), []))
        new = _median_of_runs(figure, results.get((figure.benchmark, "new"), []))
        if old is None or new is None:
            lines.append((figure.label, "", "—" if old is None else _format(*old), "—" if new is None else _format(*new), "", "no figure"))
            failures += not figure.reference
            judged += not figure.reference
            continue
        change, ok = judge(figure, old[0], new[0])
        if ok is None:
            verdict = "ref"
        else:
            judged += 1
            failures += not ok
            fall = -change if figure.higher_is_better else change
            verdict = "yes" if ok else f"NO (falls {fall:.1f} %)"
        better = "higher" if figure.higher_is_better else "lower"
        lines.append((figure.label, better, _format(*old), _format(*new), f"{change:+.1f} %", verdict))
    return lines, judged, failures


def _short(subject: str, width: int = 90) -> str:
    return subject if len(subject) <= width else subject[: width - 1] + "…"


def report(args: argparse.Namespace, trees: list[Tree], results: dict[tuple[str, str], list[dict[str, Any]]],
           order: list[str], seconds: float) -> tuple[str, int]:
    headers = ("figure", "better", "old", "new", "change", "within 5 %")
    lines, judged, failures = compared(args.only, results)
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [f"Benchmarks, old = {_short(trees[0].subject)}", f"            new = {_short(trees[1].subject)}", "",
           line(headers), line(["-" * w for w in widths]), *map(line, lines), ""]
    out.append(f"{judged - failures} of {judged} judged figures within {LIMIT:g} %; "
               f"{'none falls' if not failures else f'{failures} fall by more or are missing'}; 'ref' figures are not ours (machine drift)")
    mode = "quick" if args.quick else "each benchmark's defaults" if args.full else "defaults, publish ×7 (DEFAULT_ARGS)"
    out.append(f"{args.runs} run(s) per benchmark per commit; {mode} parameters; in this order: {', '.join(order)}")
    for benchmark in args.only:
        for label in ("old", "new"):
            runs = results.get((benchmark, label), [])
            if runs:
                took = ", ".join(f"{r['seconds']:.0f} s" for r in runs)
                loads = ", ".join(f"{r['load_before'][0]:.2f}→{r['load_after'][0]:.2f}" for r in runs)
                out.append(f"  {benchmark:9} {label}: {took}; 1-min load average {loads}")
    import platform

    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    out.append(f"(python {platform.python_version()}, {os.cpu_count()} CPUs, {platform.platform(terse=True)}; "
               f"load average now {load}; {seconds:.0f} s in all)")
    return "\n".join(out), failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the revision before (a commit, branch or tag)")
    parser.add_argument("new", help="the revision after")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, default=list(BENCHMARKS), help="the benchmarks to run (default: all four)")
    parser.add_argument("--runs", type=int, default=1, help="runs of each benchmark per commit; figures are their medians (default 1)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--full", action="store_true", help="each benchmark's own default parameters, nothing added")
    size.add_argument("--quick", action="store_true", help="each benchmark's --quick (a smoke test, not a verdict)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return compare(args)


if __name__ == "__main__":
    sys.exit(main())
