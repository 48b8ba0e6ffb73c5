"""`python -m bench.compare`: the figures it reads from each benchmark's rows, which way each may
fall, and the temporary worktree that runs a commit with its own entry point and leaves nothing."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bench.compare import FIGURES, Tree, compared, judge, parse_figure

ROOT = Path(__file__).resolve().parents[2]


def figure(label: str):
    return next(f for f in FIGURES if f.label.strip() == label)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("1,234 µs", (1234.0, "µs")),
        ("12,345.6 ms", (12345.6, "ms")),
        ("MCP 512 calls/s", (512.0, "calls/s")),
        ("REST 1,024 calls/s", (1024.0, "calls/s")),
        ("123,456 events/s (0.81 s)", (123456.0, "events/s")),
        ("bare 447 µs", (447.0, "µs")),
        ("", None),
    ],
)
def test_a_printed_figure_is_read_as_its_first_number_and_unit(text: str, parsed: Any) -> None:
    assert parse_figure(text) == parsed


def test_a_time_falls_when_it_rises_and_a_rate_when_it_drops() -> None:
    latency = figure("tool call via app, paced latency")
    assert judge(latency, 100, 105) == (pytest.approx(5.0), True)
    assert judge(latency, 100, 106)[1] is False
    assert judge(latency, 100, 50)[1] is True
    rate = figure("audit verify")
    assert judge(rate, 100, 95)[1] is True
    assert judge(rate, 100, 94)[1] is False
    assert judge(rate, 100, 200)[1] is True
    # the publish ratio (publish time over its checks) is better lower
    publish_ratio = figure("ratio publish/(200 × check)")
    assert judge(publish_ratio, 1.0, 1.1)[1] is False
    assert judge(publish_ratio, 1.0, 0.9)[1] is True
    # bare QuickJS is not ours: shown, never judged
    assert judge(figure("bare QuickJS paced latency"), 100, 200)[1] is None


def _rows(app_latency: str, ratio: float) -> dict[str, Any]:
    return {"rows": [
        {"figure": "(a) paced latency, EmbeddedSandbox.run", "ours": "500 µs", "baseline": "bare 400 µs", "ratio": 0.8},
        {"figure": "(a) paced latency, ModuleRepository.call_tool", "ours": app_latency, "baseline": "bare 400 µs", "ratio": ratio},
    ]}


def test_the_table_reads_the_application_row_not_the_sandbox_row_and_counts_each_verdict() -> None:
    results = {("tool_call", "old"): [_rows("600 µs", 0.67)], ("tool_call", "new"): [_rows("700 µs", 0.57)]}
    lines, judged, failures = compared(["tool_call"], results)
    by_label = {line[0].strip(): line for line in lines}
    latency = by_label["tool call via app, paced latency"]
    assert latency[2:5] == ("600 µs", "700 µs", "+16.7 %") and latency[5].startswith("NO")
    assert by_label["bare QuickJS paced latency"][5] == "ref"
    # the saturated rows are missing from these runs: judged figures without a value count as failures
    assert by_label["tool call via app, saturated"][5] == "no figure"
    assert (judged, failures) == (4, 4)


def test_the_median_of_several_runs_is_compared() -> None:
    old = [_rows("600 µs", 0.67), _rows("900 µs", 0.44), _rows("610 µs", 0.66)]
    new = [_rows("620 µs", 0.65), _rows("615 µs", 0.65), _rows("2,000 µs", 0.2)]
    lines, _, _ = compared(["tool_call"], {("tool_call", "old"): old, ("tool_call", "new"): new})
    latency = next(line for line in lines if line[0] == "tool call via app, paced latency")
    assert latency[2:4] == ("610 µs", "620 µs") and latency[5] == "yes"


def test_a_worktree_runs_the_commits_own_code_and_entry_point_and_is_removed(tmp_path: Path) -> None:
    tree = Tree(ROOT, "HEAD", "new", tmp_path)
    try:
        tree.add()
        entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["toolsmith"]
        module, _, function = entry.partition(":")
        assert f"from {module} import {function}" in (tree.venv / "bin" / "toolsmith").read_text()
        found = subprocess.run(
            [str(tree.python), "-c", "import domain, httpx, sys; print(domain.__file__); print(sys.prefix)"],
            env={"PYTHONPATH": str(tree.path), "PATH": "/usr/bin:/bin"}, cwd=tree.path, capture_output=True, text=True, check=True,
        ).stdout.split()
        assert found == [str(tree.path / "domain" / "__init__.py"), str(tree.venv)]
    finally:
        tree.remove()
    assert not tree.path.exists()
    listed = subprocess.run(["git", "-C", str(ROOT), "worktree", "list", "--porcelain"], capture_output=True, text=True, check=True).stdout
    assert str(tree.path) not in listed
