"""bench.console_browser's table: each page's cold and warm load read against its goal, each action's console request
(the server-side figure) and its time through the page against its REST call."""

from __future__ import annotations

import os

from bench.console_browser import ACTIONS, COLD_GOAL, PAGES, WARM_GOAL, table


def test_the_table_has_a_row_and_a_verdict_for_each_page_and_action() -> None:
    entry = {"responseEnd": 0.02, "domContentLoaded": 0.05, "load": 0.08, "cpu": 0.03}
    slow = {"responseEnd": 0.1, "domContentLoaded": 0.3, "load": 0.4, "cpu": 0.2}
    loads = {name: {"cold": [entry, slow, entry], "warm": [entry, entry, slow]} for name, _ in PAGES}
    loads[PAGES[0][0]]["cold"] = [slow, slow, slow]
    times = {name: {"ui": [0.03, 0.02, 0.04], "console": [0.004, 0.003, 0.005], "rest": [0.002, 0.002, 0.002]} for name, _ in ACTIONS}
    times[ACTIONS[0][0]]["ui"] = [0.5, 0.5, 0.5]
    times[ACTIONS[1][0]]["console"] = [0.003, 0.003, 0.003]
    rows, figures = table(loads, times)
    assert len(rows) == 2 * len(PAGES) + 3 * len(ACTIONS)
    first = rows[0]
    assert first.figure == f"{PAGES[0][0]} ({PAGES[0][1]}), cold: load" and first.ours == "400.0 ms"
    assert first.baseline == "HTML 100.0 ms, DOM ready 300.0 ms, main thread CPU 200.0 ms"
    assert first.ratio == 0.4 / COLD_GOAL and first.meets is False and first.spread.endswith("misses the goal")
    assert rows[1].meets is True and rows[1].ratio == 0.08 / WARM_GOAL
    # each action: its console request against REST (the goal's figure), the browser's own part (the page
    # less the console's request), then through the page against REST
    save_console, save_own, save_page, test_console, test_own, test_page = rows[2 * len(PAGES):2 * len(PAGES) + 6]
    assert save_own.ours == "496.0 ms" and test_own.ours == "27.0 ms" and test_own.meets is None
    assert save_console.figure == f"{ACTIONS[0][0]}: the console's request" and save_console.ours == "4.0 ms"
    assert save_console.ratio == 2 and save_console.meets is False and save_console.baseline == "REST 2.0 ms"
    assert save_page.figure == f"{ACTIONS[0][0]}: through the page" and save_page.ratio == 250 and "over 200 ms" in save_page.spread
    assert test_console.ratio == 1.5 and test_console.meets is True and test_console.spread.endswith("meets the goal")
    assert test_page.ratio == 15 and test_page.meets is False
    assert figures["actions"][ACTIONS[1][0]] == {"pageMs": 30.0, "restMs": 2.0, "ratio": 15.0, "rounds": 3, "under200Ms": True,
                                                 "consoleMs": 3.0, "consoleRatio": 1.5, "browserOwnMs": 27.0,
                                                 "browserOwnRatio": 13.5}


def test_the_servers_cpu_counts_threads_started_since_and_loses_nothing_to_threads_ended_since() -> None:
    from bench.console_browser import ServerCpu

    before = {(1, "1"): 5_000_000, (2, "2"): 900_000_000}  # (2, "2"): a sandbox worker retired since
    after = {(1, "1"): 7_000_000, (3, "3"): 1_000_000}  # (3, "3"): a worker started since
    assert ServerCpu.spent(before, after) == 0.003
    # this process's own threads, read twice: time goes forward
    cpu = ServerCpu(os.getpid())
    first = cpu.read()
    sum(i * i for i in range(200_000))
    assert cpu.spent(first, cpu.read()) > 0


def test_an_actions_page_time_less_its_request_without_a_browser_is_the_browsers_own_part_which_says_when_the_goal_is_out_of_reach() -> None:
    from bench.console_browser import ACTIONS

    entry = {"responseEnd": 0.02, "domContentLoaded": 0.05, "load": 0.08, "cpu": 0.03}
    loads = {name: {"cold": [entry], "warm": [entry]} for name, _ in PAGES}
    name = ACTIONS[0][0]
    # 30 ms through the page whose request, replayed without a browser, took 10 ms: the browser's own
    # 20 ms is 10x REST's 2 ms; Chromium timed the request at 12 ms
    times = {name: {"ui": [0.03, 0.03, 0.03], "console": [0.01, 0.01, 0.01], "uiWire": [0.012, 0.012, 0.012],
                    "rest": [0.002, 0.002, 0.002]}}
    rows, figures = table(loads, times)
    own, page = rows[-2:]
    assert own.figure == f"{name}: through the page, the browser's own part" and own.ours == "20.0 ms"
    assert own.meets is None and own.goal == "informative" and abs(own.ratio - 10) < 1e-9
    assert "(Resource Timing) 12.0 ms" in own.spread
    assert page.meets is False and "out of reach: the browser's own part alone is 10.00× REST" in page.spread
    assert abs(figures["actions"][name]["browserOwnMs"] - 20) < 1e-9 and abs(figures["actions"][name]["onTheWireMs"] - 12) < 1e-9
    # a page whose own part is within the goal does not say "out of reach", even when the whole misses
    times[name]["console"] = [0.0285, 0.0285, 0.0285]
    rows, _ = table(loads, times)
    assert rows[-1].meets is False and "out of reach" not in rows[-1].spread
