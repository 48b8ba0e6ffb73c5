"""Benchmark of issue 29, 3: a list costs what it returns, whatever the store's size.

Every list route is read from a projection of the log (`application/projected.py`, the module
summaries' read model): a tenant's list must take the same time whether the store holds nothing
else or 50,000 records of other tenants. Two SQLite data dirs, each served by `bootstrap` (the
embedded read models) through an in-process client:

- **alone**: the tenant `default` with a few records of each kind: 3 API URL tools, 2 File Search
  tools, 3 code modules published in one changeset;
- **crowded**: the same records of `default`, after 50,000 records of 100 other tenants, written
  straight into the event store (20,000 API URL tools, 10,000 File Search tools, 20,000 code
  modules, each published in a changeset of its own).

Timed, in rounds in which the two services take turns (the order rotates, so a change in the
machine's load falls on both alike), after a warm-up that outlasts what the services do in the
background after their start: GET /api/v1/admin/api-tools, /admin/search-tools,
/admin/code-modules, /admin/tools (the catalog), /admin/changesets, and the tenant's usage
(GET /api/v1/operator/tenants/default, what the quotas count). The figure is each route's median
at 50,000 other-tenant records against its median alone (goal: ≤ 1.2×).

Run: `python -m bench.list_cost [--quick] [--others N] [--repeats N]`.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import Progress, Row, median, millis, quartiles, rotated, standalone

TITLE = "List cost: each list route of a tenant with a few records, with the store full of other tenants' records vs empty"
GOAL = 1.2
ALONE, CROWDED = "alone", "crowded"
OPERATOR = "bench-operator-token"
ROUTES = {
    "api-tools": "/api/v1/admin/api-tools",
    "search-tools": "/api/v1/admin/search-tools",
    "code-modules": "/api/v1/admin/code-modules",
    "tools (catalog)": "/api/v1/admin/tools",
    "changesets": "/api/v1/admin/changesets",
    "usage": "/api/v1/operator/tenants/default",
}
SOURCE = "exports.run = function (input) { return input; };"
BATCH = 1_000


def settings_of(data_dir: Path) -> Any:
    from infrastructure.settings import Settings

    os.environ.pop("SQLITE_DBNAME", None)
    # The rates are out of the way: the benchmark asks thousands of lists a minute of one token.
    return Settings(data_dir=data_dir, admin_token="x", operator_token=OPERATOR,
                    persistence_module="eventsourcing.sqlite", sandbox_url="embedded",
                    rate_per_second=1e6, rate_burst=1_000_000, tenant_rate_per_second=1e6, tenant_rate_burst=1_000_000)


def fill_others(data_dir: Path, others: int, progress: Progress) -> None:
    """`others` records of 100 other tenants, straight into the event store: two in five API URL
    tools, one in five File Search tools, two in five code modules published in a changeset each."""
    from application.store import Store
    from domain.model import CodeModule
    from toolkinds.api_tools.model import ApiTool
    from toolkinds.api_tools.model import normalise as api_config
    from toolkinds.search_tools.model import SearchTool
    from toolkinds.search_tools.model import normalise as search_config

    store = Store(settings_of(data_dir).event_store_env())
    try:
        chunk: list[Any] = []
        for i in range(others):
            tenant = f"other-{i % 100:03d}"
            if i % 5 in (0, 1):
                chunk.append(ApiTool(tenant=tenant, tool_id=f"api{i}", by="bench",
                                     config=api_config({"description": f"API {i}", "urlTemplate": "https://example.com/x"})))
            elif i % 5 == 2:
                chunk.append(SearchTool(tenant=tenant, tool_id=f"docs{i}", by="bench", config=search_config({"description": f"Docs {i}"})))
            else:
                module = CodeModule(tenant=tenant, module_id=f"mod{i}", by="bench", definition={
                    "description": f"Module {i}", "content": SOURCE, "imports": [],
                    "tool": {"tags": ["bench"], "exposeInChat": True, "timeout": 1000, "memoryMb": 64,
                             "inputParameters": [], "enabled": True}})
                module.publish("bench", changeset=f"cs_other_{i}", message=f"changeset {i}")
                chunk.append(module)
            if len(chunk) == BATCH:
                store.save(*chunk)
                chunk = []
            if (i + 1) % 10_000 == 0:
                progress(f"  {CROWDED}: {i + 1:,} other-tenant records written")
        if chunk:
            store.save(*chunk)
    finally:
        store.close()


def fill_tenant(client: Any) -> None:
    """The tenant's few records, through the API as a person makes them."""
    def ok(response: Any) -> None:
        if response.status_code >= 300:
            raise SystemExit(f"bench.list_cost: {response.request.method} {response.request.url}: "
                             f"{response.status_code} {response.text[:300]}")

    for name in ("a", "b", "c"):
        ok(client.post("/api/v1/admin/api-tools", json={"id": f"api_{name}", "description": f"API {name}",
                                                        "urlTemplate": "https://example.com/x"}))
        ok(client.post("/api/v1/admin/code-modules", json={
            "id": f"mod_{name}", "description": f"Module {name}", "draftContent": SOURCE, "draftImports": [],
            "tool": {"inputParameters": []}}))
    for name in ("a", "b"):
        ok(client.post("/api/v1/admin/search-tools", json={"id": f"docs_{name}", "description": f"Docs {name}"}))
    ok(client.post("/api/v1/admin/code-modules/publish", json={"ids": ["mod_a", "mod_b", "mod_c"], "message": "bench"}))


def measure(clients: dict[str, Any], repeats: int, settle: float, progress: Progress) -> dict[str, Any]:
    headers = {"Authorization": "Bearer x"}
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    def get(client: Any, route: str) -> Any:
        answer = client.get(route, headers=operator if route.startswith("/api/v1/operator") else headers)
        if answer.status_code != 200:
            raise SystemExit(f"bench.list_cost: GET {route}: {answer.status_code} {answer.text[:300]}")
        return answer

    sizes = {store: {name: len(get(client, route).content) for name, route in ROUTES.items()} for store, client in clients.items()}
    # Warm-up, until what each service does in the background after its start is done (the
    # crowded one resumes its 10,000 File Search tools' documents, reading each tool once).
    settled = time.perf_counter() + settle
    while time.perf_counter() < settled:
        for client in clients.values():
            for route in ROUTES.values():
                get(client, route)
    # The setup's objects (50,000 records' aggregates and read models) are out of the collector's
    # way: a full collection would walk them in whichever request it fell, alone or crowded.
    gc.collect()
    gc.freeze()
    times: dict[str, dict[str, list[float]]] = {store: {name: [] for name in ROUTES} for store in clients}
    for r in range(repeats):
        for n, (name, route) in enumerate(ROUTES.items()):
            for store in rotated(list(clients), r + n):
                t0 = time.perf_counter()
                get(clients[store], route)
                times[store][name].append(time.perf_counter() - t0)
        if (r + 1) % 20 == 0:
            progress(f"  {r + 1}/{repeats} rounds")
    return {"times": times, "sizes": sizes}


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    from fastapi.testclient import TestClient

    from entrypoints.compose import bootstrap
    from entrypoints.web import create_app

    args = parse_args(argv)
    progress = Progress("list_cost", quiet=quiet)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        folders = {ALONE: Path(tmp) / ALONE, CROWDED: Path(tmp) / CROWDED}
        for folder in folders.values():
            folder.mkdir()
        progress(f"{CROWDED}: writing {args.others:,} records of 100 other tenants")
        fill_others(folders[CROWDED], args.others, progress)
        services, clients = {}, {}
        try:
            for store, folder in folders.items():
                started = time.perf_counter()
                services[store] = bootstrap(settings_of(folder))
                clients[store] = TestClient(create_app(services[store])).__enter__()
                clients[store].headers["Authorization"] = "Bearer x"
                progress(f"{store}: started in {time.perf_counter() - started:.1f} s (the projections replayed)")
                fill_tenant(clients[store])
            progress(f"{args.repeats} rounds of the {len(ROUTES)} list routes on each service")
            measured = measure(clients, args.repeats, args.settle, progress)
        finally:
            for client in clients.values():
                client.__exit__(None, None, None)
    rows = []
    times, sizes = measured["times"], measured["sizes"]
    for name in ROUTES:
        ours, baseline = median(times[CROWDED][name]), median(times[ALONE][name])
        ratio = ours / baseline
        per_round = [c / a for c, a in zip(times[CROWDED][name], times[ALONE][name], strict=True)]
        q1, q3 = quartiles(per_round)
        same = "" if sizes[CROWDED][name] == sizes[ALONE][name] else f" (answers differ: {sizes[CROWDED][name]} vs {sizes[ALONE][name]} bytes)"
        rows.append(Row(f"GET {name}: p50 at {args.others:,} other-tenant records vs none{same}", millis(ours), millis(baseline),
                        ratio, f"≤ {GOAL}×", ratio <= GOAL, f"{q1:.2f}–{q3:.2f}"))
    return rows, {"args": vars(args), "load": " ".join(f"{figure:.1f}" for figure in os.getloadavg())}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.list_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (the store still holds 50,000 other records)")
    parser.add_argument("--others", type=int, default=50_000, help="records of other tenants (default 50,000)")
    parser.add_argument("--repeats", type=int, help="rounds of the list routes (default 60)")
    parser.add_argument("--settle", type=float, default=15.0, help="seconds of warm-up before the rounds (default 15)")
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (20 if args.quick else 60)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
