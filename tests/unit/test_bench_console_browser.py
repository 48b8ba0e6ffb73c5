"""bench.console_browser's table: each page's cold and warm load read against its goal, each action against its REST call."""

from __future__ import annotations

from bench.console_browser import ACTIONS, COLD_GOAL, PAGES, WARM_GOAL, table


def test_the_table_has_a_row_and_a_verdict_for_each_page_and_action() -> None:
    entry = {"responseEnd": 0.02, "domContentLoaded": 0.05, "load": 0.08}
    slow = {"responseEnd": 0.1, "domContentLoaded": 0.3, "load": 0.4}
    loads = {name: {"cold": [entry, slow, entry], "warm": [entry, entry, slow]} for name, _ in PAGES}
    loads[PAGES[0][0]]["cold"] = [slow, slow, slow]
    times = {name: {"ui": [0.03, 0.02, 0.04], "rest": [0.02, 0.02, 0.02]} for name, _ in ACTIONS}
    times[ACTIONS[0][0]]["ui"] = [0.5, 0.5, 0.5]
    rows, figures = table(loads, times)
    assert len(rows) == 2 * len(PAGES) + len(ACTIONS)
    first = rows[0]
    assert first.figure == f"{PAGES[0][0]} ({PAGES[0][1]}), cold: load" and first.ours == "400.0 ms"
    assert first.ratio == 0.4 / COLD_GOAL and first.meets is False and first.spread.endswith("misses the goal")
    assert rows[1].meets is True and rows[1].ratio == 0.08 / WARM_GOAL
    save, test = rows[2 * len(PAGES)], rows[2 * len(PAGES) + 1]
    assert save.ratio == 25 and save.meets is False and "over 200 ms" in save.spread
    assert test.ratio == 1.5 and test.meets is True and test.baseline == "REST 20.0 ms"
    assert figures["actions"][ACTIONS[1][0]] == {"pageMs": 30.0, "restMs": 20.0, "ratio": 1.5, "rounds": 3, "under200Ms": True}
