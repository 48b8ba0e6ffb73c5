"""Benchmark: what every write and read costs at 1,000 modules and at 50,000 (issue 15), in one run.

For each size, a store is written straight into a fresh SQLite event store (no server, no checks:
`CodeModule` aggregates and the tenant's `ImportGraph` links, saved in batches, then one snapshot
of the graph): 90 % of the modules published, three in four of them tools (half of those exposed
in chat, each with two parameters), one in ten importing a library. Then a real `toolsmith serve`
on it (embedded defaults: SQLite, in-memory read model rebuilt at start, embedded sandbox), driven
as a client drives it, over HTTP with the admin's token:

- writes: a publish of one module nobody imports (after an untimed save of a new draft), a save
  that adds an import, a save that changes only the description (`PUT`/`POST`, each answered once
  the read model has the change, as the API answers);
- reads: the list's first page of 20 with its facets, one module;
- `GET /api/v1/admin/tools` first after a publish (first page, `limit=100`, when the endpoint pages;
  the whole list when it does not yet);
- MCP `tools/list` first after a publish: one SDK session open (`mcp.client.streamable_http`),
  timed from the publish's answer to the first page's answer; then every page once.

Meanwhile another process sends `GET /healthz` every 10 ms and times each answer: its largest time
is the longest any request waited for the server's event loop (or its thread pool) during the
workload: the "loop stall". After the workload, the API process's RSS (`/proc/PID/status`), and
RSS per module: (RSS at the large size − RSS at the small one) / (difference in modules).

Goals (issue 15): at the large size each latency's p50 ≤ 2× its p50 at the small size and ≤ 30 ms;
the stall ≤ 50 ms; RSS < 400 MB. The publish with 1,000 importers (`bench.publish`) and MCP
`tools/call` against REST (`bench.mcp_call`) run after, by their own `run` functions.

Run: `python -m bench.scale [--quick] [--sizes 1000,50000] [--skip-others]`.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

from bench._common import Progress, Row, bench_settings, format_table, machine_line, millis
from bench._server import serve_store
from testing.launcher import Server

TITLE = "Scale: each write and read at {small:,} and {large:,} modules, one toolsmith serve each (embedded defaults); p50 / p95"
TOKEN = "tsa_bench-scale-admin-token"
TENANT = "default"
TOPICS = ("dates", "text", "numbers", "reports", "weather", "money")
BATCH = 1_000
GOAL_RATIO = 2.0
GOAL_MS = 30.0
GOAL_STALL_MS = 50.0
GOAL_RSS_MB = 400.0
CATALOG_PAGE = 100
PROBE_SECONDS = 0.010


# -- the store ---------------------------------------------------------------------------------


def source(i: int) -> str:
    """A small module of its own (a few hundred bytes, as a real helper is)."""
    return (
        f"// module {i}: formats what it is given\n"
        "exports.run = function (input) {\n"
        f"  var label = 'm{i}';\n"
        "  var text = String(input.text || '');\n"
        "  var times = Number(input.times || 1);\n"
        "  var out = [];\n"
        "  for (var k = 0; k < times; k++) { out.push(label + ': ' + text); }\n"
        "  return out.join('\\n');\n"
        "};\n"
    )


def definition(i: int) -> dict[str, Any]:
    """Three in four are tools (i % 4 ≠ 0), half of all exposed in chat (i % 4 in 1, 2), each
    described in its own words (no two input schemas alike, as in a real tenant); one in ten
    (i % 10 = 5) imports the library five before it (i % 10 = 0, always published)."""
    from domain.rules import normalise_tool

    tool = None
    if i % 4 != 0:
        tool = normalise_tool({
            "tags": [f"t{i % 50}", TOPICS[i % len(TOPICS)]], "exposeInChat": i % 4 in (1, 2),
            "inputParameters": [
                {"name": "text", "type": "string", "required": True, "description": f"the text module {i} formats"},
                {"name": "times", "type": "integer", "required": False, "description": f"how many times module {i} repeats it"},
            ],
        })
    imports = [f"mod{i - 5}"] if i % 10 == 5 else []
    return {"description": f"Module {i} helps with {TOPICS[i % len(TOPICS)]} and more", "content": source(i),
            "imports": imports, "tool": tool}


def published(i: int) -> bool:
    return i % 10 != 9


def seed(data_dir: Path, modules: int, progress: Progress) -> float:
    """`modules` modules and their graph links, written straight into the event store, `BATCH` to
    a save; the graph snapshotted once at the end (a store that grew through the API has one too)."""
    from application.store import Store
    from domain.model import CodeModule, ImportGraph

    started = time.perf_counter()
    data_dir.mkdir(parents=True, exist_ok=True)
    # No snapshot at every 200th graph event while seeding: one at the end instead.
    store = Store(bench_settings(data_dir).event_store_env() | {"IS_SNAPSHOTTING_ENABLED": "n"})
    try:
        graph = ImportGraph(tenant=TENANT)
        for first in range(0, modules, BATCH):
            batch = []
            for i in range(first, min(first + BATCH, modules)):
                d = definition(i)
                module = CodeModule(tenant=TENANT, module_id=f"mod{i}", definition=d, by="bench")
                if published(i):
                    module.publish(by="bench")
                    graph.link(module.module_id, published=d["imports"], draft=None)
                elif d["imports"]:
                    graph.link(module.module_id, published=None, draft=d["imports"])
                batch.append(module)
            store.save(*batch, graph)
            if (first // BATCH) % 10 == 9 or first + BATCH >= modules:
                progress(f"  seeded {min(first + BATCH, modules):,} of {modules:,} modules")
    finally:
        store.close()
    snapshots = Store(bench_settings(data_dir).event_store_env())
    try:
        snapshots.take_snapshot(graph.id)
    finally:
        snapshots.close()
    return time.perf_counter() - started


# -- the server --------------------------------------------------------------------------------


def start(folder: Path, modules: int, progress: Progress, settings: dict[str, str]) -> tuple[Server, float]:
    """`toolsmith serve` on the store, once its read model holds every module; `settings` are
    added to its environment (`--set`)."""
    server = Server(data_dir=folder / "data", token=TOKEN, inherit_settings=False, log_file=folder / "serve.log", log_mode="w",
                    env={"TOOLSMITH_ADMIN_TOKEN": TOKEN, "TOOLSMITH_LOG_LEVEL": "WARNING"} | settings)
    ready = serve_store(server, modules, timeout=600, bench="bench.scale")
    progress(f"  serve ready with {modules:,} modules in its read model in {ready:.1f} s")
    return server, ready


def rss_bytes(pid: int) -> int:
    """The resident set of process `pid` (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


# -- the loop probe ----------------------------------------------------------------------------


def probe(url: str, stop: Any, results: Any) -> None:
    """In its own process (so this one's work never delays it): `GET /healthz` every 10 ms until
    `stop` is set; sends back (wall-clock start, seconds) of each."""
    times: list[tuple[float, float]] = []
    with httpx.Client(base_url=url, timeout=60, trust_env=False) as http:
        while not stop.is_set():
            wall, t0 = time.time(), time.perf_counter()
            http.get("/healthz")
            elapsed = time.perf_counter() - t0
            times.append((wall, elapsed))
            time.sleep(max(0.0, PROBE_SECONDS - elapsed))
    results.put(times)


class Probe:
    def __init__(self, url: str) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._results = context.Queue()
        self._process = context.Process(target=probe, args=(url, self._stop, self._results), daemon=True)

    def __enter__(self) -> Probe:
        self._process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.is_alive():
            self._stop.set()
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.kill()

    def finish(self) -> list[tuple[float, float]]:
        self._stop.set()
        times = self._results.get(timeout=120)
        self._process.join(timeout=10)
        return times


# -- the workload ------------------------------------------------------------------------------


@dataclass
class Figures:
    """Every latency (seconds) by figure name, and what the run learned on the way."""

    times: dict[str, list[float]] = field(default_factory=dict)
    phases: list[tuple[float, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    catalog_unpaged: bool = False

    def phase(self, name: str) -> None:
        self.phases.append((time.time(), name))

    def phase_at(self, wall: float) -> str:
        found = "setup"
        for started, name in self.phases:
            if started <= wall:
                found = name
        return found


FIGURES = (
    ("publish", "publish one module (no importers)"),
    ("save_import", "save that adds an import"),
    ("save_description", "save that changes only the description"),
    ("list", "list, first page of 20 with facets"),
    ("read", "a module read"),
    ("catalog", "GET /api/v1/admin/tools, first page after a publish"),
    ("mcp", "MCP tools/list, first page after a publish"),
)


class Targets:
    """Modules each sample writes, never the same one twice for a write that must change it: a
    publish takes i % 10 = 1, 2, 3 (nobody imports them), a new import i % 10 = 6 (it imports
    i − 6, a published library), a description i % 10 = 7."""

    def __init__(self, modules: int) -> None:
        self.modules = modules
        self.used: dict[int, int] = {}

    def next(self, residue: int) -> str:
        k = self.used.get(residue, 0)
        self.used[residue] = k + 1
        i = (k * 10 + residue) % self.modules
        return f"mod{i}"


def ok(answer: httpx.Response, what: str) -> httpx.Response:
    if answer.status_code >= 300:
        raise SystemExit(f"bench.scale: {what} answered {answer.status_code}: {answer.text[:500]}")
    return answer


async def workload(url: str, modules: int, args: argparse.Namespace, progress: Progress) -> Figures:
    """Each figure's samples, until `args.samples` or `args.budget` seconds (at least 3, or 1 when
    the warm-up alone took more than a third of the budget)."""
    figures = Figures()
    targets = Targets(modules)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    base = "/api/v1/admin/code-modules"
    revision = [0]
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=600, trust_env=False) as http:

        async def sample(name: str, once: Callable[[], Awaitable[float]]) -> None:
            figures.phase(name)
            times = figures.times.setdefault(name, [])
            warmup = await once()  # not counted
            # At least 3 samples, unless one costs more than the budget (a figure in seconds).
            least = 1 if warmup > args.budget / 3 else 3
            started = time.perf_counter()
            while len(times) < args.samples and (len(times) < least or time.perf_counter() - started < args.budget):
                times.append(await once())
            progress(f"  {name}: p50 {millis(statistics.median(times))} ({len(times)} samples)")

        async def new_draft(module_id: str) -> None:
            revision[0] += 1
            ok(await http.put(f"{base}/{module_id}", json={"draftContent": source(revision[0]) + f"// r{revision[0]}\n"}), "a save")

        async def publish_one() -> float:
            module_id = targets.next(1)
            await new_draft(module_id)
            return await _timed_ok(http.post, f"{base}/{module_id}/publish", "a publish")

        async def save_import() -> float:
            module_id = targets.next(6)
            i = int(module_id[3:])
            return await _timed_ok(http.put, f"{base}/{module_id}", "a save adding an import", json={"draftImports": [f"mod{i - 6}"]})

        async def save_description() -> float:
            revision[0] += 1
            return await _timed_ok(http.put, f"{base}/{targets.next(7)}", "a description save",
                                   json={"description": f"Formats text, revision {revision[0]}"})

        async def first_page() -> float:
            return await _timed_ok(http.get, base, "the list", params={"limit": 20})

        async def read() -> float:
            return await _timed_ok(http.get, f"{base}/mod{(modules // 2) - (modules // 2) % 10}", "a module read")

        async def publish_untimed(residue: int) -> None:
            module_id = targets.next(residue)
            await new_draft(module_id)
            ok(await http.post(f"{base}/{module_id}/publish"), "a publish")

        async def catalog_after_publish() -> float:
            await publish_untimed(2)
            t0 = time.perf_counter()
            answer = ok(await http.get("/api/v1/admin/tools", params={"limit": CATALOG_PAGE}), "the catalog")
            elapsed = time.perf_counter() - t0
            listed = answer.json()  # a list, or a page object holding one
            if isinstance(listed, dict):
                listed = next((value for value in listed.values() if isinstance(value, list)), [])
            count = len(listed)
            if count > CATALOG_PAGE and not figures.catalog_unpaged:
                figures.catalog_unpaged = True
                figures.notes.append(f"GET /api/v1/admin/tools answered {count:,} tools for limit={CATALOG_PAGE}: it does not page yet (the figure is the whole list)")
            return elapsed

        await sample("list", first_page)
        await sample("read", read)
        await sample("save_description", save_description)
        await sample("save_import", save_import)
        await sample("publish", publish_one)
        await sample("catalog", catalog_after_publish)
        await mcp_workload(url, headers, figures, sample, publish_untimed, progress)
    return figures


async def _timed_ok(method: Callable[..., Awaitable[httpx.Response]], path: str, what: str, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    answer = await method(path, **kwargs)
    elapsed = time.perf_counter() - t0
    ok(answer, what)
    return elapsed


async def mcp_workload(url: str, headers: dict[str, str], figures: Figures, sample: Callable[..., Awaitable[None]],
                       publish_untimed: Callable[[int], Awaitable[None]], progress: Progress) -> None:
    """One MCP session: the first page after a publish, then every page once."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(600, read=600)) as mcp_http,
        # No limit on one answer's size: an unpaged tools/list of 50,000 tools is many megabytes.
        Client(streamable_http_client(f"{url}/mcp", http_client=mcp_http, max_sse_event_size=None), mode="legacy") as session,
    ):
        async def first_page_after_publish() -> float:
            await publish_untimed(3)
            t0 = time.perf_counter()
            await session.list_tools(cache_mode="bypass")
            return time.perf_counter() - t0

        await sample("mcp", first_page_after_publish)
        figures.phase("mcp_all_pages")
        t0 = time.perf_counter()
        pages = tools = 0
        cursor = None
        while True:
            answer = await session.list_tools(cursor=cursor, cache_mode="bypass")
            pages += 1
            tools += len(answer.tools)
            cursor = answer.next_cursor
            if not cursor:
                break
        elapsed = time.perf_counter() - t0
        figures.times["mcp_all"] = [elapsed]
        every = f"MCP tools/list, every page: {tools:,} tools in {pages:,} page{'s' if pages > 1 else ''}, {millis(elapsed)}"
        figures.notes.append(every)
        progress(f"  {every}")


# -- one size ----------------------------------------------------------------------------------


@dataclass
class Size:
    modules: int
    seed_seconds: float
    ready_seconds: float
    figures: Figures
    stall: float  # the probe's longest answer, seconds
    probe_p50: float
    stall_phase: str
    rss: int
    rss_ready: int  # before the workload, once the read model is built


def measure_size(modules: int, args: argparse.Namespace, progress: Progress) -> Size:
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-scale-") as folder:
        tmp = Path(folder)
        progress(f"{modules:,} modules: writing the store")
        seeded = seed(tmp / "data", modules, progress)
        progress(f"  store written in {seeded:.1f} s; starting toolsmith serve")
        server, ready = start(tmp, modules, progress, args.set)
        try:
            assert server.process is not None
            rss_ready = rss_bytes(server.process.pid)
            with Probe(server.url) as watch:
                figures = anyio.run(workload, server.url, modules, args, progress)
                figures.phase("done")
                times = watch.finish()
            rss = rss_bytes(server.process.pid)
        except BaseException:
            sys.stderr.write(server.output[-3000:])
            raise
        finally:
            server.stop()
    worst = max(times, key=lambda t: t[1])
    progress(f"  loop probe: {len(times):,} GETs, p50 {millis(statistics.median(t for _, t in times))}, "
             f"max {millis(worst[1])} (during {figures.phase_at(worst[0])}); RSS {rss / 2**20:,.0f} MB")
    return Size(modules, seeded, ready, figures, worst[1], statistics.median(t for _, t in times),
                figures.phase_at(worst[0]), rss, rss_ready)


# -- the table ---------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def rows(small: Size, large: Size) -> list[Row]:
    found: list[Row] = []
    for key, label in FIGURES:
        a, b = small.figures.times.get(key), large.figures.times.get(key)
        if not a or not b:
            continue
        a50, b50 = statistics.median(a), statistics.median(b)
        ratio = b50 / a50
        meets = ratio <= GOAL_RATIO and b50 * 1e3 <= GOAL_MS
        found.append(Row(
            label,
            f"{large.modules:,}: {millis(b50)} / {millis(percentile(b, 95))} ({len(b)})",
            f"{small.modules:,}: {millis(a50)} / {millis(percentile(a, 95))} ({len(a)})",
            ratio, f"≤ {GOAL_RATIO:g}× and ≤ {GOAL_MS:g} ms", meets,
        ))
    for size in (small, large):
        found.append(Row(
            f"loop stall at {size.modules:,} (longest GET /healthz, polled every 10 ms)",
            millis(size.stall), f"its p50 {millis(size.probe_p50)}", None, f"≤ {GOAL_STALL_MS:g} ms",
            size.stall * 1e3 <= GOAL_STALL_MS, f"during {size.stall_phase}",
        ))
    per_module = (large.rss - small.rss) / (large.modules - small.modules)
    found.append(Row(
        "API process RSS at start (read model built, before the workload)", f"{large.modules:,}: {large.rss_ready / 2**20:,.0f} MB",
        f"{small.modules:,}: {small.rss_ready / 2**20:,.0f} MB", large.rss_ready / small.rss_ready,
    ))
    found.append(Row(
        "API process RSS after the workload", f"{large.modules:,}: {large.rss / 2**20:,.0f} MB",
        f"{small.modules:,}: {small.rss / 2**20:,.0f} MB", large.rss / small.rss, f"< {GOAL_RSS_MB:g} MB at {large.modules:,}",
        large.rss / 2**20 < GOAL_RSS_MB,
    ))
    found.append(Row("RSS per module (difference / modules)", f"{per_module / 1024:,.1f} KB", ""))
    return found


def others(args: argparse.Namespace, progress: Progress) -> list[tuple[str, list[Row]]]:
    """The two goals of issue 15 that other benchmarks measure, by their own `run`."""
    from bench import mcp_call, publish

    tables = []
    progress(f"bench.publish with {args.importers:,} importers")
    publish_rows, _ = publish.run(["--importers", str(args.importers)] + (["--quick"] if args.quick else []), quiet=False)
    tables.append((publish.title(args.importers) + " (goal: ≤ 0.6 × the checks, with two workers)", publish_rows))
    progress("bench.mcp_call")
    call_rows, _ = mcp_call.run(["--quick"] if args.quick else [], quiet=False)
    tables.append((mcp_call.TITLE + " (goal: MCP ≥ 0.8 × REST)", call_rows))
    return tables


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    args = parse_args(argv)
    progress = Progress("scale", quiet=quiet)
    small, large = (measure_size(n, args, progress) for n in args.sizes)
    info: dict[str, Any] = {
        "args": vars(args),
        "sizes": {size.modules: {
            "seedSeconds": size.seed_seconds, "readySeconds": size.ready_seconds, "rssBytes": size.rss,
            "rssAtStartBytes": size.rss_ready,
            "stallMs": size.stall * 1e3, "stallDuring": size.stall_phase,
            "p50Ms": {k: statistics.median(v) * 1e3 for k, v in size.figures.times.items()},
            "notes": size.figures.notes,
        } for size in (small, large)},
        "others": [] if args.skip_others else others(args, progress),
    }
    return rows(small, large), info


NOTES = (
    "Writes answer once the read model has them (the API's read-your-writes wait). A figure after a publish is "
    "timed from the publish's answer. MCP: one SDK session (legacy mode), cache bypassed. The loop stall is the "
    "longest answer of GET /healthz sent every 10 ms by another process during the whole workload: what any "
    "request waited for the event loop or the thread pool. RSS: VmRSS of the serve process (not its sandbox workers)."
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 5,000 modules, fewer samples")
    parser.add_argument("--sizes", help="two store sizes, comma-separated (default 1000,50000; quick 1000,5000)")
    parser.add_argument("--samples", type=int, help="samples per figure (default 30; quick 10)")
    parser.add_argument("--budget", type=float, help="seconds per figure after which sampling stops (default 20, quick 8)")
    parser.add_argument("--importers", type=int, help="importers of the bench.publish run (default 1,000; quick 200)")
    parser.add_argument("--skip-others", action="store_true", help="skip bench.publish and bench.mcp_call")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for the server (a setting to compare), repeatable")
    args = parser.parse_args(argv)
    sizes = args.sizes or ("1000,5000" if args.quick else "1000,50000")
    args.sizes = [int(s.replace("_", "")) for s in sizes.split(",")]
    if len(args.sizes) != 2 or args.sizes[0] >= args.sizes[1] or args.sizes[0] < 100:
        parser.error("--sizes takes two sizes, the smaller first, at least 100")
    args.samples = args.samples or (10 if args.quick else 30)
    args.importers = args.importers or (200 if args.quick else 1_000)
    if any("=" not in item for item in args.set):
        parser.error("--set takes NAME=VALUE")
    args.set = dict(item.split("=", 1) for item in args.set)
    args.budget = args.budget or (8.0 if args.quick else 20.0)
    return args


def table(rows_: Sequence[Row], info: dict[str, Any]) -> str:
    """The table, its notes, and the tables of the benchmarks it ran."""
    small, large = info["args"]["sizes"]
    out = [format_table(TITLE.format(small=small, large=large), rows_), NOTES]
    if info["args"]["set"]:
        out.append("(server environment: " + ", ".join(f"{k}={v}" for k, v in info["args"]["set"].items()) + ")")
    for n, size in info["sizes"].items():
        extra = "; ".join(size["notes"])
        out.append(f"({n:,} modules: store written in {size['seedSeconds']:.0f} s, serve ready in {size['readySeconds']:.0f} s"
                   f"{'; ' + extra if extra else ''})")
    for title, others_rows in info["others"]:
        out += ["", format_table(title, others_rows)]
    if info["args"]["skip_others"]:
        out.append("(bench.publish and bench.mcp_call not run here: --skip-others)")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    rows_, info = run(argv)
    print(table(rows_, info))
    print(f"({machine_line()}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {time.perf_counter() - started:.0f} s)")
    print(json.dumps({"sizes": info["sizes"]}, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
