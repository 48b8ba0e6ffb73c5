"""Benchmark 4: the read side on a real OpenSearch (`OPENSEARCH_URL`, else `scripts/opensearch.sh`).

Three figures, each against its goal:

- **Projection lag** from a committed write to searchable in OpenSearch, p50 and p95 (goal p95
  ≤ 1.2 s). The API wires itself as `toolsmith serve` does (SQLite event store, OpenSearch read
  model, runner in the process). A module is created, and from the moment the command returns
  (the event is committed) a separate client polls `_search` every 5 ms until it finds the id.
  Two cases: writes made through this API process (it pokes its runner, as every API write does),
  and writes made by another process on the same event store (the runner finds them by polling,
  every 0.5 s). The goal is read against the worse of the two.
- **Rebuild** (`toolsmith projections rebuild`'s code) from 100,000 events in a SQLite event store:
  50,000 modules, each created then published, as 1,000 modules per transaction, written by
  another process and read by a new application, as the command does. Baseline: a raw
  `_bulk` of the same final documents into an index with the same mapping and settings, in
  2,000-document requests whose NDJSON bodies are built before the clock starts (OpenSearch's own
  indexing time, nothing of ours). Ratio = raw seconds / rebuild seconds (goal ≥ 0.5), median over
  rounds that alternate which runs first; before each, the node finishes its merges. The old
  index's deletion after the swap is outside the clock, as the raw bulk has none.
- **Faceted list** over 100,000 modules (the read model's `list`, as the API's list route calls
  it, with its three facets and total): a mix of six first-page queries (all, a state, tools
  only, a tag, a search word, ordered by description), p50 and p95 (goal p95 ≤ 50 ms). A page at
  offset 50,000 is reported beside it, outside the mix. The documents come from the real
  projection applied to 100,000 modules' events.

Run: `python -m bench.read_side [--quick]`.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from bench._common import Progress, Row, median, millis, quartiles, standalone

TITLE = "Read side on OpenSearch: projection lag, rebuild against a raw _bulk, faceted list"
SOURCE = "exports.run = function (input) { return input; };"
TOPICS = ("dates", "text", "numbers", "reports", "weather", "money")


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def opensearch_url(progress: Progress) -> str:
    url = os.environ.get("OPENSEARCH_URL")
    if url:
        return url
    progress("OPENSEARCH_URL is unset: starting the project's node (scripts/opensearch.sh start)")
    root = Path(__file__).resolve().parent.parent
    started = subprocess.run([str(root / "scripts" / "opensearch.sh"), "start"], capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"bench.read_side: no OpenSearch: {started.stderr.strip()[-500:]}")
    return started.stdout.strip().splitlines()[-1]


def definition(i: int) -> dict[str, Any]:
    tool = None
    if i % 4 != 0:  # three in four are tools
        tool = {"tags": [f"t{i % 50}", TOPICS[i % len(TOPICS)]], "exposeInChat": i % 2 == 0, "timeout": 1000,
                "memoryMb": 64, "inputParameters": [], "enabled": True}
    return {"description": f"Module {i} helps with {TOPICS[i % len(TOPICS)]} and more", "content": SOURCE,
            "imports": [], "tool": tool}


# -- rebuild ---------------------------------------------------------------------------------------

def build_event_store(path: Path, modules: int, progress: Progress) -> Any:
    from application.store import Store
    from domain.model import CodeModule

    from bench._common import bench_settings

    # The event store as `toolsmith projections rebuild` opens it (the settings' transcoder too).
    env = bench_settings(path.parent).event_store_env()
    app = Store(env)
    chunk = []
    for i in range(modules):
        module = CodeModule(tenant="default", module_id=f"mod{i}", definition=definition(i), by="bench")
        module.publish(by="bench")
        chunk.append(module)
        if len(chunk) == 1_000:
            app.save(*chunk)
            chunk = []
            if (i + 1) % 10_000 == 0:
                progress(f"  event store: {app.position():,} events")
    if chunk:
        app.save(*chunk)
    return app


def _write_event_store(folder: str, modules: int, progress: Progress) -> None:
    build_event_store(Path(folder) / "events.sqlite", modules, progress).close()


def bulk_bodies(client: Any, index: str) -> list[bytes]:
    """The index's documents as NDJSON `_bulk` bodies of 2,000 documents (bytes: nothing that the
    garbage collector would have to walk during the next rebuild)."""
    from opensearchpy.helpers import scan

    bodies, lines = [], []
    for hit in scan(client, index=index, size=5_000):
        lines.append(orjson.dumps({"index": {"_id": hit["_id"]}}) + b"\n" + orjson.dumps(hit["_source"]) + b"\n")
        if len(lines) == 2_000:
            bodies.append(b"".join(lines))
            lines = []
    if lines:
        bodies.append(b"".join(lines))
    return bodies


def settle(client: Any) -> None:
    """Lets the node finish what the previous run left (merges, deletes) before the clock starts,
    and collects this process's garbage."""
    gc.collect()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        merges = client.nodes.stats(metric="indices", index_metric="merge")["nodes"]
        if all(node["indices"]["merges"]["current"] == 0 for node in merges.values()):
            break
        time.sleep(0.5)
    time.sleep(2)


def raw_bulk(client: Any, index: str, bodies: list[bytes]) -> float:
    from projections.opensearch import MAPPINGS, index_settings

    client.indices.create(index=index, body={"settings": index_settings(0, rebuilding=True), "mappings": MAPPINGS})
    t0 = time.perf_counter()
    for body in bodies:
        answer = client.bulk(body=body, index=index)
        if answer["errors"]:
            raise SystemExit("bench.read_side: the raw _bulk had failed items")
    client.indices.put_settings(index=index, body={"index": {"refresh_interval": None}})
    client.indices.refresh(index=index)
    return time.perf_counter() - t0


def measure_rebuild(client: Any, modules: int, rounds: int, progress: Progress) -> dict[str, Any]:
    from projections.rebuild import rebuild

    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        from bench._common import bench_settings
        from application.store import Store

        # Written by another process, and read here by a new application, as the command would:
        # 50,000 aggregates made and freed in this process slowed its rebuilds by a fifth.
        writer = multiprocessing.get_context("spawn").Process(target=_write_event_store, args=(tmp, modules, progress))
        writer.start()
        writer.join()
        if writer.exitcode != 0:
            raise SystemExit("bench.read_side: writing the event store failed")
        app = Store(bench_settings(tmp).event_store_env())
        events = app.position()
        alias = f"bench-rebuild-{os.getpid()}"
        bodies: list[bytes] = []
        rebuild_s, raw_s, ratios = [], [], []
        try:
            for r in range(rounds):
                order = ("rebuild", "raw") if r % 2 == 0 else ("raw", "rebuild")
                for what in order:
                    settle(client)
                    if what == "rebuild":
                        t0 = time.perf_counter()
                        done = rebuild(app, client, alias, replicas=0, keep_old=True)
                        rebuild_s.append(time.perf_counter() - t0)
                        for old in done.replaced:  # as the rebuild would, outside the clock
                            client.indices.delete(index=old)
                        progress(f"  round {r + 1}: rebuild of {done.events:,} events in {rebuild_s[-1]:.1f} s")
                        if not bodies:
                            bodies = bulk_bodies(client, alias)
                    else:
                        raw_index = f"{alias}-raw-{r}"
                        raw_s.append(raw_bulk(client, raw_index, bodies))
                        client.indices.delete(index=raw_index)
                        progress(f"  round {r + 1}: raw _bulk of the same documents in {raw_s[-1]:.1f} s")
                if len(raw_s) == len(rebuild_s) == r + 1:
                    ratios.append(raw_s[-1] / rebuild_s[-1])
        finally:
            client.indices.delete(index=f"{alias}*", ignore_unavailable=True, expand_wildcards="all")
            app.close()
    documents = sum(body.count(b"\n") // 2 for body in bodies)
    return {"events": events, "documents": documents, "rebuild": rebuild_s, "raw": raw_s, "ratios": ratios}


# -- faceted list ----------------------------------------------------------------------------------

def load_modules(client: Any, index: str, modules: int, progress: Progress) -> Any:
    """`modules` modules' events (created; half published; a fifth of those drafted again),
    applied by the real projection, without an event store."""
    from eventsourcing.persistence import Tracking

    from domain.model import CodeModule
    from projections.modules import ModuleSummaries
    from projections.opensearch import OpenSearchModuleReadModel

    view = OpenSearchModuleReadModel(client, index=index, replicas=0, refresh=False, fresh=True)
    view.open()
    projection = ModuleSummaries(view=view)
    position = 0
    for start in range(0, modules, 2_000):
        events = []
        for i in range(start, min(modules, start + 2_000)):
            module = CodeModule(tenant="default", module_id=f"mod{i}", definition=definition(i), by="bench")
            if i % 2 == 0:
                module.publish(by="bench")
                if i % 10 == 0:
                    module.change_draft({**definition(i), "description": f"Draft {i} of {TOPICS[i % 6]}"}, by="bench")
            events.extend(module.collect_events())
        projection.prepare(events)
        for event in events:
            position += 1
            projection.process_event(event, Tracking("bench", position))
        view.flush()
        if (start + 2_000) % 20_000 == 0:
            progress(f"  list: {start + 2_000:,} modules indexed")
    client.indices.refresh(index=index)
    view.refresh = True
    return view


QUERIES: dict[str, dict[str, Any]] = {
    "all": {},
    "state": {"state": "PUBLISHED"},
    "tools": {"tool": True},
    "tag": {"tags": ("t7",)},
    "search": {"search": "weather"},
    "by description": {"order_by": "description", "ascending": False},
}
# Reported on its own, outside the goal's mix: an admin pages through the first pages, and an
# offset deep into 100,000 modules makes OpenSearch sort that many hits whatever the index.
DEEP_PAGE: dict[str, Any] = {"offset": 50_000, "limit": 20}


def measure_list(client: Any, modules: int, repeats: int, progress: Progress) -> dict[str, Any]:
    from projections.interface import ListQuery

    index = f"bench-list-{os.getpid()}"
    try:
        view = load_modules(client, index, modules, progress)
        total = view.list("default", ListQuery()).total
        for name, query in QUERIES.items():  # warm-up
            for _ in range(5):
                view.list("default", ListQuery(**query))
        times: dict[str, list[float]] = {name: [] for name in QUERIES}
        deep: list[float] = []
        for _ in range(repeats):
            for name in random.sample(list(QUERIES), len(QUERIES)):
                t0 = time.perf_counter()
                view.list("default", ListQuery(**QUERIES[name]))
                times[name].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            view.list("default", ListQuery(**DEEP_PAGE))
            deep.append(time.perf_counter() - t0)
    finally:
        client.indices.delete(index=f"{index}*", ignore_unavailable=True, expand_wildcards="all")
    return {"total": total, "times": times, "deep": deep}


# -- projection lag --------------------------------------------------------------------------------

def measure_lag(url: str, writes: int, progress: Progress) -> dict[str, list[float]]:
    from opensearchpy import OpenSearch

    from bench._common import bench_settings
    from application.store import Store
    from entrypoints.compose import bootstrap, build_application

    alias = f"bench-lag-{os.getpid()}"
    probe = OpenSearch(hosts=[url], timeout=30)
    lags: dict[str, list[float]] = {"this process": [], "another process": []}
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        settings = bench_settings(tmp).model_copy(update={"opensearch_url": _secret(url), "opensearch_index": alias,
                                                           "opensearch_replicas": 0, "sandbox_url": ""})
        services = bootstrap(settings)
        services.start()
        other = Store(settings.event_store_env())
        other_modules = build_application(other, sandbox=services.execution.sandbox).modules
        try:
            for n in range(writes):
                for case, app in (("this process", services.modules), ("another process", other_modules)):
                    module_id = f"lag_{case[0]}_{n}"
                    app.create("default", module_id, description="Lag probe", content=SOURCE, imports=[], tool=None, by="bench")
                    committed = time.perf_counter()
                    if app is services.modules:
                        services.runner.poke()  # what every API write does
                    while not probe.search(index=alias, body={"query": {"term": {"id": module_id}}, "size": 0})["hits"]["total"]["value"]:
                        if time.perf_counter() - committed > 10:
                            raise SystemExit(f"bench.read_side: {module_id} not searchable after 10 s")
                        time.sleep(0.005)
                    lags[case].append(time.perf_counter() - committed)
                    time.sleep(random.uniform(0.05, 0.25))
                if (n + 1) % 20 == 0:
                    progress(f"  lag: {n + 1}/{writes} writes of each kind")
        finally:
            other.close()
            services.close()
            probe.indices.delete(index=f"{alias}*", ignore_unavailable=True, expand_wildcards="all")
            probe.close()
    return lags


def _secret(value: str) -> Any:
    from pydantic import SecretStr

    return SecretStr(value)


# -- the report ------------------------------------------------------------------------------------

def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    from opensearchpy import OpenSearch

    args = parse_args(argv)
    progress = Progress("read_side", quiet=quiet)
    url = opensearch_url(progress)
    client = OpenSearch(hosts=[url], timeout=120)
    progress(f"projection lag: {args.writes} writes of each kind")
    lags = measure_lag(url, args.writes, progress)
    progress(f"rebuild: {args.events // 2:,} modules, {args.events:,} events, {args.rounds} rounds")
    rebuilt = measure_rebuild(client, args.events // 2, args.rounds, progress)
    progress(f"faceted list over {args.modules:,} modules")
    listed = measure_list(client, args.modules, args.repeats, progress)
    client.close()

    rows = []
    for case, values in lags.items():
        p95 = percentile(values, 95)
        rows.append(Row(f"lag, write in {case}: p50 / p95", f"{millis(median(values))} / {millis(p95)}", "goal 1.2 s",
                        p95 / 1.2, "p95 ≤ 1.2 s", p95 <= 1.2))
    ratio = median(rebuilt["ratios"])
    q1, q3 = quartiles(rebuilt["ratios"])
    rows.append(Row(
        f"rebuild from {rebuilt['events']:,} events ({rebuilt['documents']:,} documents)",
        f"{rebuilt['events'] / median(rebuilt['rebuild']):,.0f} events/s ({median(rebuilt['rebuild']):.1f} s)",
        f"raw _bulk {median(rebuilt['raw']):.1f} s", ratio, "≥ 0.5 × raw", ratio >= 0.5, f"{q1:.2f}–{q3:.2f}"))
    every = [t for values in listed["times"].values() for t in values]
    p95 = percentile(every, 95)
    rows.append(Row(f"faceted list over {listed['total']:,} modules: p50 / p95", f"{millis(median(every))} / {millis(p95)}",
                    "goal 50 ms", p95 / 0.050, "p95 ≤ 50 ms", p95 <= 0.050))
    for name, values in listed["times"].items():
        rows.append(Row(f"  list, {name}: p50 / p95", f"{millis(median(values))} / {millis(percentile(values, 95))}", ""))
    deep = listed["deep"]
    rows.append(Row("  (outside the mix) list at offset 50,000: p50 / p95",
                    f"{millis(median(deep))} / {millis(percentile(deep, 95))}", ""))
    return rows, {"args": vars(args)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.read_side", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller data (20,000 events and modules), fewer rounds")
    parser.add_argument("--events", type=int, help="events in the rebuild's event store (default 100,000)")
    parser.add_argument("--rounds", type=int, help="rebuild rounds, each a rebuild and a raw bulk (default 4)")
    parser.add_argument("--modules", type=int, help="modules for the faceted list (default 100,000)")
    parser.add_argument("--repeats", type=int, help="rounds of the six list queries and the deep page (default 60)")
    parser.add_argument("--writes", type=int, help="lag probes of each kind (default 60)")
    args = parser.parse_args(argv)
    quick = args.quick
    args.events = args.events or (20_000 if quick else 100_000)
    args.rounds = args.rounds or (2 if quick else 4)
    args.modules = args.modules or (20_000 if quick else 100_000)
    args.repeats = args.repeats or (20 if quick else 60)
    args.writes = args.writes or (15 if quick else 60)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
