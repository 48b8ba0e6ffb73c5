"""Benchmark: the console in a real browser — page loads cold and warm, and the common actions
through the pages against the same action's REST call (issue 31, point 11).

A real `toolsmith serve` (embedded defaults: SQLite event store, in-memory read model, embedded
sandbox) with a realistic tenant made through the REST API: 20 code modules (published; one in
five imports the first, so the publish review re-checks importers), 3 API URL tools, a File Search
tool with 3 documents, 3 MCP servers with tools attached, 2 usage profiles and 3 caller tokens (and
the audit events all that wrote). Debian's Chromium (`shutil.which("chromium")`, as the browser
tests run it) through Playwright, signed in once with the admin token; its session cookie is given
to every context.

- **cold**: a new browser context (its HTTP cache empty, the cookie only) opens the page;
- **warm**: the same context opens it again (static files from its cache, as `immutable` lets it).

Each page's figure is the Navigation Timing entry's `loadEventEnd` (from the navigation's start:
the page and every script and stylesheet it needs, run), with `responseEnd` (the HTML's last
byte) and `domContentLoadedEventEnd` beside it; goal: cold ≤ 300 ms, warm ≤ 100 ms. Beside them,
the CPU time the page's main thread spent from the navigation to the load event (Chromium's
`ThreadTime` metric, through CDP): what the browser did for the page, which a loaded machine
stretches less than the wall-clock figures. On a module's page, **editor ready** too: when
CodeMirror is mounted on the Source (the page's `toolsmith:editor-ready` mark), which comes after
the load event (console/assets/editor.js: the Source is its textarea until then).

Then the actions, each as a person does it on the page and as its REST call, alternating:

- **save** a module's draft (a new description; the page's "Save draft") against `PUT /api/v1/admin/code-modules/{id}`;
- **test** it (the Test panel's Run) against `POST /api/v1/admin/code-modules/test`;
- **publish review** of a library five modules import (the Publish button, until the review dialog
  shows its checks) against `POST /api/v1/admin/code-modules/{id}/publish?dryRun=true`;
- **attach** a tool to a server (check it, Attach, until the attached list is swapped in) against
  `PUT /api/v1/admin/mcp-servers/{id}/tools/{name}` (detached again between rounds, not measured).

Each action has these figures, in rounds that go through the six orders of the three arms in turn:

- **the console's request**: the very request the page sent for the action (captured from the page: method,
  path and query, the HX headers, the CSRF token, the session cookie and the form's body; a save's version
  field set to the module's current one), sent again with httpx on a keep-alive client: the server-side
  figure the goal is about (console ≤ 1.5 × REST);
- **the server's CPU** of that request and of the REST call: the CPU time the server's process and its
  sandbox workers spent from the request sent to its answer read (the sum of their threads'
  `/proc/<pid>/task/<tid>/schedstat`, in ns), the same ratio measured in what a loaded machine stretches
  least (wall-clock figures there also hold the waits for a core);
- **through the page**: from the click to the page settled, by the page's own clock (`performance.now()`
  at the click event and at the last `htmx:afterSettle`: the answer swapped in), so with the browser's
  own work (the same goal, printed beside it);
- **the browser's own part** of it: the page's time less the console's request of the same round (the
  same request without a browser), which no server can take out: the click's event, htmx building the
  request, Chromium's network stack, the swap and layout: what the page would take if the server answered
  in no time. When it alone is over the goal, the through-the-page row says the goal is out of reach
  there. Beside it, the page's request as Chromium timed it (Resource Timing: the XMLHttpRequests htmx
  sent since the click, from their start to their answer's last byte);
- **REST**: the REST call doing the same work, on a keep-alive client.
Before each console request and REST call the bench waits a moment (QUIET), so that neither is measured
while the browser still draws the previous action's answer or the server still projects the previous
write (the detach between attach rounds, the library's new draft before a review). Medians of N rounds.
Run: `python -m bench.console_browser [--quick] [--rounds N]` (or, with the server-side figures,
`python -m bench.console`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx

from bench._common import Progress, Row, format_table, machine_line, median, millis, quartiles
from testing.launcher import Server

TITLE = "The console in Chromium: page loads (cold: empty cache; warm: second visit) and actions through the pages against their REST call; medians"
TOKEN = "tsa_bench-console-browser-admin-token"
COLD_GOAL = 0.300
WARM_GOAL = 0.100
ACTION_GOAL = 1.5
MODULES = 20
LIBRARY = "money0"  # imported by one module in five
SETTLED = "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
NAVIGATION = ("() => { const n = performance.getEntriesByType('navigation')[0];"
              " return {responseEnd: n.responseEnd, domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd}; }")
# The editor's mark (console/assets/module_editor.js), on the pages whose Source CodeMirror takes.
EDITOR = "document.querySelector('textarea[data-editor]:not([readonly])') !== null"
EDITOR_READY = "() => performance.getEntriesByName('toolsmith:editor-ready').length > 0"
EDITOR_AT = "() => performance.getEntriesByName('toolsmith:editor-ready')[0].startTime"
# The pause before a measured console request or REST call (see the module's note).
QUIET = 0.03
# The arms' orders, one a round in turn: each arm comes first, second and third as often, and right
# after the page's action as often as the others.
ORDERS = tuple(itertools.permutations(("ui", "console", "rest")))


def module_body(i: int) -> dict[str, Any]:
    """A tool module; one in five (not the first) imports the library."""
    imports = [LIBRARY] if i % 5 == 0 and i else []
    call = f"{LIBRARY}.fixed(input.amount)" if imports else "input.amount.toFixed(2)"
    source = (f"// Formats an amount, one of the tenant's {MODULES} modules\n"
              f"exports.fixed = function (n) {{ return n.toFixed(2); }};\n"
              f"exports.run = function (input) {{\n  return {{ text: {call} + ' EUR', at: {i} }};\n}};\n")
    return {"id": f"money{i}", "description": f"Formats an amount as money ({i})", "draftContent": source, "draftImports": imports,
            "tool": {"inputParameters": [{"name": "amount", "type": "decimal", "required": True}], "exposeInChat": True,
                     "tags": ["money", f"t{i % 4}"]}}


def seed(api: httpx.Client) -> None:
    """The tenant, through the REST API as an admin would script it."""
    def made(answer: httpx.Response, *statuses: int) -> httpx.Response:
        if answer.status_code not in (statuses or (200, 201, 202)):
            raise SystemExit(f"bench.console_browser: {answer.request.method} {answer.request.url.path} answered "
                             f"{answer.status_code}: {answer.text[:300]}")
        return answer

    for i in range(MODULES):
        made(api.post("/api/v1/admin/code-modules", json=module_body(i)))
        made(api.post(f"/api/v1/admin/code-modules/money{i}/publish"))
    for i, city in enumerate(("paris", "oslo", "lima")):
        made(api.post("/api/v1/admin/api-tools", json={
            "id": f"weather_{city}", "description": f"Current weather in {city.title()}",
            "urlTemplate": "https://api.example.invalid/v1/weather/" + city + "{?units}",
            "parameters": [{"name": "units", "type": "string", "location": "query", "default": "metric"}], "tags": ["weather"]}))
    made(api.post("/api/v1/admin/search-tools", json={"id": "handbook", "description": "The staff handbook"}))
    made(api.post("/api/v1/admin/search-tools/handbook/documents", files=[
        ("files", (f"chapter{n}.txt", (f"Chapter {n}. " + "Opening hours, holidays and expenses are explained here. " * 40).encode()))
        for n in range(1, 4)]))
    for i in range(3):
        made(api.post("/api/v1/admin/mcp-servers", json={
            "id": f"server{i}", "description": f"Team {i}'s tools", "tools": [f"money{j}" for j in range(i, MODULES, 4)] + ["weather_paris"]}))
    for name, tools in (("accounting", [f"money{j}" for j in range(5)]), ("travel", ["weather_oslo", "weather_lima"])):
        made(api.post("/api/v1/admin/usage-profiles", json={"id": name, "description": f"The {name} team", "allowedTools": tools,
                                                           "allowedTags": ["money"] if name == "accounting" else []}))
    for name, profile in (("alice", "accounting"), ("bob", "travel"), ("carol", "accounting")):
        made(api.post("/api/v1/admin/tokens", json={"name": name, "role": "caller", "usageProfile": profile}))


PAGES = (
    ("modules list", "/console/modules"),
    ("a module", "/console/modules/money5"),
    ("tools", "/console/tools"),
    ("servers", "/console/servers"),
    ("a server", "/console/servers/server1"),
    ("tokens", "/console/tokens"),
    ("audit", "/console/audit"),
)


def start(tmp: Path) -> Server:
    server = Server(data_dir=tmp / "data", token=TOKEN, inherit_settings=False, log_file=tmp / "serve.log", log_mode="w",
                    env={"TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING"})
    try:
        return server.start()
    except RuntimeError as failed:
        raise SystemExit(f"bench.console_browser: {failed}") from None


def thread_time(cdp: Any) -> float:
    """The CPU time of the page's main thread so far (Chromium's ThreadTime metric), in seconds."""
    return next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"] if m["name"] == "ThreadTime")


def load(page: Any, url: str, cdp: Any) -> dict[str, float]:
    """Opens `url` in `page`: its Navigation Timing in seconds, the main thread's CPU time to the load
    event (`cpu`), and on a page with an editor when CodeMirror was mounted (`editorReady`)."""
    before = thread_time(cdp)
    answer = page.goto(url, wait_until="load")
    if answer is None or answer.status != 200:
        raise SystemExit(f"bench.console_browser: {url} answered {answer.status if answer else None}")
    page.wait_for_function("() => performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
    cpu = thread_time(cdp) - before  # a few ms after the load event at most (the two round trips above)
    figures = {k: v / 1e3 for k, v in page.evaluate(NAVIGATION).items()} | {"cpu": cpu}
    if page.evaluate(EDITOR):
        page.wait_for_function(EDITOR_READY, polling=5)
        figures["editorReady"] = page.evaluate(EDITOR_AT) / 1e3
    return figures


def page_loads(browser: Any, base: str, state: dict[str, Any], rounds: int, progress: Progress) -> dict[str, dict[str, list[dict[str, float]]]]:
    loads: dict[str, dict[str, list[dict[str, float]]]] = {name: {"cold": [], "warm": []} for name, _ in PAGES}
    for r in range(rounds + 1):  # the first round warms the server up and is not counted
        for name, url in PAGES:
            context = browser.new_context(base_url=base, storage_state=state, viewport={"width": 1440, "height": 900})
            try:
                page = context.new_page()
                page.goto("about:blank")  # the tab (its renderer) exists before the clock starts
                cdp = context.new_cdp_session(page)
                cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
                cold = load(page, url, cdp)
                page.goto("about:blank")
                warm = load(page, url, cdp)  # the same tab opens it again: its cache, as a second visit
            finally:
                context.close()
            if r:
                loads[name]["cold"].append(cold)
                loads[name]["warm"].append(warm)
    for name, arms in loads.items():
        progress(f"{name}: cold {millis(median([x['load'] for x in arms['cold']]))} (CPU {millis(median([x['cpu'] for x in arms['cold']]))}), "
                 f"warm {millis(median([x['load'] for x in arms['warm']]))} (CPU {millis(median([x['cpu'] for x in arms['warm']]))})")
    return loads


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


class ServerCpu:
    """The CPU time of a process and its descendants (the server and its sandbox workers), in seconds:
    the sum of their threads' run time (the first field of /proc/<pid>/task/<tid>/schedstat, in ns)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def _tree(self, pid: int) -> list[int]:
        pids = [pid]
        for tid in self._tasks(pid):
            try:
                children = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
            except OSError:
                continue  # the thread ended
            for child in children:
                pids.extend(self._tree(int(child)))
        return pids

    @staticmethod
    def _tasks(pid: int) -> list[str]:
        try:
            return os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []  # the process ended

    def read(self) -> dict[tuple[int, str], int]:
        """Each thread's run time so far, in ns."""
        times: dict[tuple[int, str], int] = {}
        for pid in self._tree(self.pid):
            for tid in self._tasks(pid):
                try:
                    times[(pid, tid)] = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
                except (OSError, ValueError, IndexError):
                    continue  # the thread ended
        return times

    @staticmethod
    def spent(before: dict[tuple[int, str], int], after: dict[tuple[int, str], int]) -> float:
        """The CPU time, in seconds, the threads of `after` spent since `before`: a thread started
        since counts whole; one that ended since (a sandbox worker retired) takes nothing off the sum
        (a difference of totals went below zero then, and the action's figure was lost)."""
        return sum(max(0, ns - before.get(key, 0)) for key, ns in after.items()) / 1e9


# Headers of a captured request that the replaying client sets itself.
UNSENT = {"host", "content-length", "connection", "accept-encoding"}


@dataclass(frozen=True)
class Captured:
    """The console's own request of an action, as the page sent it."""

    method: str
    path: str  # with its query
    headers: dict[str, str]  # HX-Request, HX-Target, HX-Current-URL, the CSRF header, the session cookie, …
    body: bytes


# The page's own clock: from the click (its event, in the capture phase) to the last htmx swap
# settled, so that the figure holds no Playwright round trip. Armed before each click.
ARM = """() => {
  performance.clearResourceTimings();
  const t = window.__benchAction = {start: null, end: null};
  document.addEventListener('click', () => { if (t.start === null) t.start = performance.now(); }, {capture: true, once: true});
  document.body.addEventListener('htmx:afterSettle', () => { t.end = performance.now(); });
}"""
READ = "() => { const t = window.__benchAction; return t && t.start !== null && t.end !== null ? (t.end - t.start) / 1e3 : null; }"
# The page's requests of the action as Chromium timed them (Resource Timing: htmx's XMLHttpRequests since
# the click, from their start to their answer's last byte), shown beside the browser's own part (the
# page's time less the same request sent without a browser, `table`).
ON_THE_WIRE = """() => {
  const t = window.__benchAction;
  if (!t || t.start === null) return null;
  const sent = performance.getEntriesByType('resource').filter(e => e.initiatorType === 'xmlhttprequest' && e.startTime >= t.start);
  return sent.length ? sent.reduce((sum, e) => sum + (e.responseEnd - e.startTime), 0) / 1e3 : null;
}"""


class Actions:
    """Each action once through the page and once through REST; the page is set up before the clock starts."""

    def __init__(self, page: Any, api: httpx.Client, console: httpx.Client, cpu: ServerCpu) -> None:
        self.page = page
        self.api = api
        self.console = console  # the console's own requests, replayed (keep-alive, as the REST client)
        self.captured: dict[str, Captured] = {}
        self.n = 0
        self.cpu = cpu
        self.last_cpu = 0.0  # the server's CPU time of the last console request or REST call measured
        self.last_wire: float | None = None  # of the last action through the page: its requests' time (ON_THE_WIRE)

    def _server_timed(self, action: Callable[[], Any]) -> float:
        """`action` (one request) after a quiet moment: its wall-clock time, and the server's CPU time
        for it in `last_cpu`."""
        time.sleep(QUIET)
        before = self.cpu.read()
        took = timed(action)
        self.last_cpu = self.cpu.spent(before, self.cpu.read())
        return took

    def _settle(self) -> None:
        self.page.wait_for_function(SETTLED, polling=5)

    def _click_and_wait(self, click: Callable[[], None], url_part: str, method: str, key: str) -> None:
        with self.page.expect_response(lambda r: url_part in r.url and r.request.method == method) as answer:
            click()
        self._settle()
        self._capture(key, answer.value.request)

    def _capture(self, key: str, request: Any) -> None:
        """Keeps the console's own request of an action as the page sent it (its method, path and query,
        its headers with the HX ones, the CSRF token and the session cookie, its body), for `console_*`."""
        if key in self.captured:
            return
        headers = {k: v for k, v in request.all_headers().items() if k.lower() not in UNSENT and not k.startswith(":")}
        url = httpx.URL(request.url)
        self.captured[key] = Captured(request.method, url.raw_path.decode(), headers, request.post_data_buffer or b"")

    def replay(self, key: str, **fields: str) -> float:
        """The console's request of `key` again, as the page sent it (a form field changed by `fields`),
        on the keep-alive console client: its time, and a refusal stops the run."""
        sent = self.captured[key]
        body = sent.body
        if fields:
            form = dict(parse_qsl(body.decode(), keep_blank_values=True))
            form.update(fields)
            body = urlencode(form).encode()
        return self._server_timed(lambda: self._ok(self.console.request(sent.method, sent.path, headers=sent.headers, content=body or None)))

    def on_page(self, action: Callable[[], None]) -> float:
        """`action`'s time by the page's clock (click to settled), or by ours when no htmx swap was seen."""
        self.page.evaluate(ARM)
        took = timed(action)
        measured = self.page.evaluate(READ)
        self.last_wire = self.page.evaluate(ON_THE_WIRE) if measured is not None else None
        return measured if measured is not None else took

    # -- save
    def ui_save(self) -> float:
        page = self.page
        page.goto("/console/modules/money3")  # afresh: the REST arm moved the module on
        self.n += 1
        page.get_by_label("Description", exact=True).fill(f"Formats an amount as money, take {self.n}")
        return self.on_page(lambda: self._click_and_wait(lambda: page.get_by_role("button", name="Save draft").click(),
                                                  "/console/modules/money3", "POST", "save"))

    def console_save(self) -> float:
        self.n += 1
        # the version the page would have read (If-Match), as the editor's form sends it
        version = self._ok(self.api.get("/api/v1/admin/code-modules/money3")).headers["ETag"].strip('W/"')
        return self.replay("save", version=version, description=f"Formats an amount as money, take {self.n}")

    def rest_save(self) -> float:
        self.n += 1
        return self._server_timed(lambda: self._ok(self.api.put("/api/v1/admin/code-modules/money3",
                                                   json={"description": f"Formats an amount as money, take {self.n}"})))

    # -- test
    def ui_test(self) -> float:
        page = self.page
        page.goto("/console/modules/money3")  # afresh: the REST arm moved the module on
        run = page.locator("#test-run")
        if not run.is_visible():
            page.get_by_role("button", name="Test", exact=True).click()
        field = page.locator("#test-panel").get_by_label("amount")
        if field.count() and field.first.is_visible():
            field.first.fill("12.5")
        return self.on_page(lambda: self._click_and_wait(lambda: run.click(), "/console/modules/money3/test", "POST", "test"))

    def console_test(self) -> float:
        return self.replay("test")

    def rest_test(self) -> float:
        body = module_body(3) | {"input": {"amount": 12.5}}
        body.pop("description")
        return self._server_timed(lambda: self._ok(self.api.post("/api/v1/admin/code-modules/test", json=body)))

    # -- publish review
    def ui_review(self) -> float:
        page = self.page
        self._draft_of_library()
        page.goto(f"/console/modules/{LIBRARY}")
        dialog = page.locator("dialog[open]")

        def review() -> None:
            with page.expect_response(lambda r: f"/console/modules/{LIBRARY}/publish-review" in r.url) as answer:
                page.get_by_role("button", name="Publish", exact=True).click()
            dialog.first.wait_for(state="visible")
            self._settle()
            self._capture("review", answer.value.request)

        took = self.on_page(review)
        page.keyboard.press("Escape")
        return took

    def console_review(self) -> float:
        self._draft_of_library()
        return self.replay("review")

    def rest_review(self) -> float:
        self._draft_of_library()
        return self._server_timed(lambda: self._ok(self.api.post(f"/api/v1/admin/code-modules/{LIBRARY}/publish", params={"dryRun": "true"})))

    def _draft_of_library(self) -> None:
        self.n += 1
        self._ok(self.api.put(f"/api/v1/admin/code-modules/{LIBRARY}", json={"description": f"The library, take {self.n}"}))

    # -- attach
    def ui_attach(self) -> float:
        page = self.page
        self._detach()
        page.goto("/console/servers/server0")
        page.get_by_role("checkbox", name="weather_oslo").check()
        return self.on_page(lambda: self._click_and_wait(lambda: page.get_by_role("button", name="Attach").click(),
                                                  "/console/servers/server0/tools", "POST", "attach"))

    def console_attach(self) -> float:
        self._detach()
        return self.replay("attach")

    def rest_attach(self) -> float:
        self._detach()
        return self._server_timed(lambda: self._ok(self.api.put("/api/v1/admin/mcp-servers/server0/tools/weather_oslo")))

    def _detach(self) -> None:
        answer = self.api.delete("/api/v1/admin/mcp-servers/server0/tools/weather_oslo")
        if answer.status_code != 404:  # 404: not attached (the first round)
            self._ok(answer)

    @staticmethod
    def _ok(answer: httpx.Response) -> httpx.Response:
        if answer.status_code >= 400:
            raise SystemExit(f"bench.console_browser: {answer.request.method} {answer.request.url.path} answered "
                             f"{answer.status_code}: {answer.text[:300]}")
        return answer


ACTIONS = (("save a module's draft", "save"), ("test a module", "test"),
           ("open the publish review (5 importers)", "review"), ("attach a tool to a server", "attach"))


def actions(browser: Any, base: str, state: dict[str, Any], api: httpx.Client, rounds: int, cpu: ServerCpu,
            progress: Progress) -> dict[str, dict[str, list[float]]]:
    context = browser.new_context(base_url=base, storage_state=state, viewport={"width": 1440, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    console = httpx.Client(base_url=base, timeout=60, trust_env=False)
    try:
        run = Actions(page, api, console, cpu)
        times: dict[str, dict[str, list[float]]] = {}
        for name, key in ACTIONS:
            times[name] = {"ui": [], "console": [], "rest": [], "consoleCpu": [], "restCpu": [], "uiWire": []}
            for r in range(rounds + 1):  # the first of each is a warm-up (and captures the page's request)
                for arm in ORDERS[r % len(ORDERS)]:
                    took = getattr(run, f"{arm}_{key}")()
                    if r:
                        times[name][arm].append(took)
                        if arm != "ui":
                            times[name][f"{arm}Cpu"].append(run.last_cpu)
                        elif run.last_wire is not None:
                            times[name]["uiWire"].append(run.last_wire)
            progress(f"{name}: page {millis(median(times[name]['ui']))}, the console's request "
                     f"{millis(median(times[name]['console']))} (server CPU {millis(median(times[name]['consoleCpu']))}), "
                     f"REST {millis(median(times[name]['rest']))} (server CPU {millis(median(times[name]['restCpu']))})")
        return times
    finally:
        console.close()
        context.close()


def signed_in_state(browser: Any, base: str) -> dict[str, Any]:
    context = browser.new_context(base_url=base)
    try:
        page = context.new_page()
        page.goto("/console/modules")
        page.get_by_label("Token", exact=True).fill(TOKEN)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/console/modules*")
        return context.storage_state()
    finally:
        context.close()


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    args = parse_args(argv)
    progress = Progress("console_browser", quiet=quiet)
    executable = shutil.which("chromium")
    if executable is None:
        raise SystemExit("bench.console_browser: Debian's chromium is not installed (apt-get install -y chromium)")
    info: dict[str, Any] = {"args": vars(args), "chromium": executable}
    with tempfile.TemporaryDirectory() as folder:
        server = start(Path(folder))
        try:
            api = httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, trust_env=False)
            started = time.perf_counter()
            seed(api)
            info["seedSeconds"] = time.perf_counter() - started
            progress(f"seeded {MODULES} modules, 3 API URL tools, a File Search tool, 3 servers, 2 profiles, 3 tokens "
                     f"in {info['seedSeconds']:.1f} s")
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=executable, args=["--disable-gpu", "--disable-dev-shm-usage"])
                info["browserVersion"] = browser.version
                try:
                    state = signed_in_state(browser, server.url)
                    loads = page_loads(browser, server.url, state, args.rounds, progress)
                    assert server.process is not None
                    times = actions(browser, server.url, state, api, args.actions, ServerCpu(server.process.pid), progress)
                finally:
                    browser.close()
            api.close()
        finally:
            server.stop()
    rows, figures = table(loads, times)
    info["figures"] = figures
    info["load"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return rows, info


def table(loads: dict[str, dict[str, list[dict[str, float]]]], times: dict[str, dict[str, list[float]]]) -> tuple[list[Row], dict[str, Any]]:
    rows: list[Row] = []
    figures: dict[str, Any] = {"pages": {}, "actions": {}}
    for name, url in PAGES:
        for arm, goal in (("cold", COLD_GOAL), ("warm", WARM_GOAL)):
            entries = loads[name][arm]
            loaded = median([e["load"] for e in entries])
            response = median([e["responseEnd"] for e in entries])
            ready = median([e["domContentLoaded"] for e in entries])
            cpu = median([e["cpu"] for e in entries])
            low, high = quartiles([e["load"] for e in entries])
            meets = loaded <= goal
            figures["pages"].setdefault(name, {"url": url})[arm] = {
                "loadMs": loaded * 1e3, "responseEndMs": response * 1e3, "domContentLoadedMs": ready * 1e3,
                "mainThreadCpuMs": cpu * 1e3, "rounds": len(entries)}
            rows.append(Row(f"{name} ({url}), {arm}: load", millis(loaded),
                            f"HTML {millis(response)}, DOM ready {millis(ready)}, main thread CPU {millis(cpu)}", loaded / goal,
                            f"≤ {goal * 1e3:.0f} ms", meets, f"IQR {millis(low)}–{millis(high)}; {'meets the goal' if meets else 'misses the goal'}"))
            if all("editorReady" in e for e in entries):
                editor = median([e["editorReady"] for e in entries])
                figures["pages"][name][arm]["editorReadyMs"] = editor * 1e3
                rows.append(Row(f"{name}, {arm}: editor ready (CodeMirror, after the load event)", millis(editor), "", None,
                                "informative", None, f"{millis(editor - loaded)} after the load event"))
    for name, arms in times.items():
        ui, rest = median(arms["ui"]), median(arms["rest"])
        ratio = ui / rest
        meets = ratio <= ACTION_GOAL
        ratios = [u / r for u, r in zip(arms["ui"], arms["rest"])]
        low, high = quartiles(ratios)
        figures["actions"][name] = {"pageMs": ui * 1e3, "restMs": rest * 1e3, "ratio": ratio, "rounds": len(arms["ui"]),
                                    "under200Ms": ui <= 0.2}
        if arms.get("console"):
            # The server-side figure the goal is about: the console's own request (as the page sends it) against REST.
            own = median(arms["console"])
            own_ratio = own / rest
            own_low, own_high = quartiles([c / r for c, r in zip(arms["console"], arms["rest"])])
            own_meets = own_ratio <= ACTION_GOAL
            figures["actions"][name] |= {"consoleMs": own * 1e3, "consoleRatio": own_ratio}
            rows.append(Row(f"{name}: the console's request", millis(own), f"REST {millis(rest)}", own_ratio,
                            f"≤ {ACTION_GOAL:g}× REST", own_meets,
                            f"ratio IQR {own_low:.2f}–{own_high:.2f}; {'meets the goal' if own_meets else 'misses the goal'}"))
        if arms.get("consoleCpu") and arms.get("restCpu") and median(arms["restCpu"]) > 0:  # 0: no schedstat here
            own_cpu, rest_cpu = median(arms["consoleCpu"]), median(arms["restCpu"])
            cpu_ratio = own_cpu / rest_cpu
            cpu_low, cpu_high = quartiles([c / r for c, r in zip(arms["consoleCpu"], arms["restCpu"])])
            cpu_meets = cpu_ratio <= ACTION_GOAL
            figures["actions"][name] |= {"consoleServerCpuMs": own_cpu * 1e3, "restServerCpuMs": rest_cpu * 1e3,
                                         "serverCpuRatio": cpu_ratio}
            rows.append(Row(f"{name}: the server's CPU, the console's request", millis(own_cpu), f"REST {millis(rest_cpu)}",
                            cpu_ratio, f"≤ {ACTION_GOAL:g}× REST", cpu_meets,
                            f"ratio IQR {cpu_low:.2f}–{cpu_high:.2f}; {'meets the goal' if cpu_meets else 'misses the goal'}"))
        ceiling = ""
        if arms.get("console") and len(arms["console"]) == len(arms["ui"]):
            # The browser's own part of each round: the page's time less the same request's time without
            # a browser (the console's request, replayed in the same round): what the page would still
            # take if the server answered in no time.
            own_parts = [u - c for u, c in zip(arms["ui"], arms["console"])]
            browser = median(own_parts)
            browser_ratio = browser / rest
            browser_low, browser_high = quartiles([b / r for b, r in zip(own_parts, arms["rest"])])
            figures["actions"][name] |= {"browserOwnMs": browser * 1e3, "browserOwnRatio": browser_ratio}
            wire = ""
            if arms.get("uiWire"):
                figures["actions"][name]["onTheWireMs"] = median(arms["uiWire"]) * 1e3
                wire = f"; the page's request in Chromium (Resource Timing) {millis(median(arms['uiWire']))}"
            rows.append(Row(f"{name}: through the page, the browser's own part", millis(browser),
                            f"REST {millis(rest)}", browser_ratio, "informative", None,
                            f"ratio IQR {browser_low:.2f}–{browser_high:.2f}{wire}"))
            if not meets and browser_ratio > ACTION_GOAL:
                ceiling = f"; out of reach: the browser's own part alone is {browser_ratio:.2f}× REST"
        rows.append(Row(f"{name}: through the page", millis(ui), f"REST {millis(rest)}", ratio, f"≤ {ACTION_GOAL:g}× REST", meets,
                        f"ratio IQR {low:.2f}–{high:.2f}; {'meets the goal' if meets else 'misses the goal'}{ceiling}"
                        f"{'' if ui <= 0.2 else ' (over 200 ms: the page shows progress)'}"))
    return rows, figures


NOTES = (
    "cold: a new browser context (empty HTTP cache, the session cookie) opens the page; warm: the same context opens it "
    "again. load = Navigation Timing's loadEventEnd (HTML = responseEnd, DOM ready = domContentLoadedEventEnd), from the "
    "navigation's start; main thread CPU = the page's main thread's CPU time to the load event (Chromium's ThreadTime); "
    "editor ready = CodeMirror mounted on a module's Source, after the load event. ratio of a page = load / goal. An action's console request is the request the page sent for it "
    "(captured from the page: its method, path, HX headers, CSRF token, session cookie and body), sent again on a keep-alive "
    "client; ratio = console request / REST, the server-side figure the goal is about; the server's CPU = the CPU time of "
    "the server's process and its sandbox workers (their threads' schedstat) from the request to its answer, the same "
    "ratio in what a loaded machine stretches least. An action through the page runs from "
    "the click to the last htmx swap settled (the page's performance.now()); ratio = page / REST. The browser's own part = "
    "the page's time less the console's request in the same round (the same request without a browser): the event, htmx "
    "building the request, Chromium's network stack, the swap, layout, which the page takes even if the server answered in "
    "no time; when it alone is over the goal, the through-the-page row says the goal is out of reach. The page's request "
    "in Chromium = Resource Timing's start to responseEnd of htmx's requests since the click. Every REST call is on a keep-alive client."
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.console_browser", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (3 rounds of pages, 3 of each action)")
    parser.add_argument("--rounds", type=int, help="measured loads of each page, cold and warm (default 15; quick 3)")
    parser.add_argument("--actions", type=int, help="measured rounds of each action (default 15; quick 3)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (3 if args.quick else 15)
    args.actions = args.actions or (3 if args.quick else 15)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    rows, info = run(argv)
    print(format_table(TITLE, rows))
    print(NOTES)
    print(f"(Chromium {info['browserVersion']}; {machine_line()}; load average {info['load']}; {time.perf_counter() - started:.0f} s)")
    print(json.dumps(info, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
