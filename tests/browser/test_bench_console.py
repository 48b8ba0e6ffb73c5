"""bench.console_browser, run small in Chromium: it seeds its tenant, loads every main page cold and
warm, does every action through the pages, as the console's own request sent again and by REST, and prints a
row with a verdict for each, the server's CPU time of the console's request and of the REST call among them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from bench._common import format_table
from bench.console_browser import ACTIONS, ACTION_GOAL, PAGES, TITLE, run


def test_a_small_run_prints_every_page_and_action_with_its_verdict() -> None:
    # In a thread of its own: the bench drives its own Playwright (sync API), which refuses to start
    # where another one (this session's browser fixture, in the same worker) already runs its loop.
    with ThreadPoolExecutor(max_workers=1) as pool:
        rows, info = pool.submit(run, ["--quick", "--rounds", "1", "--actions", "1"], quiet=True).result()
    printed = format_table(TITLE, rows)
    editors = 0
    for name, url in PAGES:
        for arm in ("cold", "warm"):
            assert f"{name} ({url}), {arm}: load" in printed
            figure = info["figures"]["pages"][name][arm]
            assert 0 < figure["responseEndMs"] <= figure["domContentLoadedMs"] <= figure["loadMs"]
            assert 0 < figure["mainThreadCpuMs"]
            if "editorReadyMs" in figure:  # a module's page: CodeMirror comes after the load event
                assert figure["editorReadyMs"] > figure["loadMs"] and f"{name}, {arm}: editor ready" in printed
                editors += 1
    assert editors == 2  # the module's page, cold and warm
    for name, _ in ACTIONS:
        assert f"{name}: through the page" in printed and f"{name}: the console's request" in printed
        figures = info["figures"]["actions"][name]
        assert figures["restMs"] > 0 and figures["pageMs"] > 0 and figures["consoleMs"] > 0
        # the goal's figure is the console's request against REST (timings are not compared here: one
        # round on a shared machine says nothing of which is faster)
        assert abs(figures["consoleRatio"] - figures["consoleMs"] / figures["restMs"]) < 1e-9
        # the server's own CPU time of each (its process and sandbox workers), and their ratio
        assert f"{name}: the server's CPU, the console's request" in printed
        assert figures["consoleServerCpuMs"] > 0 and figures["restServerCpuMs"] > 0
        assert abs(figures["serverCpuRatio"] - figures["consoleServerCpuMs"] / figures["restServerCpuMs"]) < 1e-9
        # the browser's own part (one round: the medians add up): the page's time less its request
        # without a browser; and the page's request as Chromium timed it
        assert f"{name}: through the page, the browser's own part" in printed
        assert abs(figures["browserOwnMs"] + figures["consoleMs"] - figures["pageMs"]) < 1e-6
        assert 0 < figures["onTheWireMs"] <= figures["pageMs"]
    assert len(rows) == 2 * len(PAGES) + editors + 4 * len(ACTIONS)
    for row in rows:
        if row.goal == "informative":
            assert row.meets is None and ("after the load event" in row.spread or "Resource Timing" in row.spread)
            continue
        assert row.meets is not None and row.spread.endswith(("meets the goal", "misses the goal", "× REST",
                                                              "(over 200 ms: the page shows progress)"))
        assert ("meets the goal" in row.spread) == row.meets
    assert all(row.goal in (f"≤ {ACTION_GOAL:g}× REST", "informative") for row in rows[-4 * len(ACTIONS):])
    assert sum(row.goal == "informative" for row in rows[-4 * len(ACTIONS):]) == len(ACTIONS)
