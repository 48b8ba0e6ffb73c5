"""Benchmark: the cost of the tenant filter on the faceted list (issue 19, docs/tenants.md).

Every read-model query carries its tenant's filter, and every tenant's modules share one index.
This measures what that costs the faceted list (`ModuleReadModel.list`, the query of
`GET /api/v1/admin/code-modules` and of the console's list: a page of 20 with its total and its
state, role and tag facets) on two stores of the same size:

- **many tenants**: 100,000 modules spread across 100 tenants of 1,000 modules each, every tenant
  with the same ids (`mod0` … `mod999`); each query names one of the 100 tenants at random;
- **one tenant**: 100,000 modules in one tenant (`mod0` … `mod99999`).

The figure is a tenant's list in the many-tenant store against the single tenant's list, p50 and
p95 (goal: ≤ 1.2×). Beside it, outside the goal, the tenant's list against the same 1,000
modules in a store of their own: what the other 99 tenants' documents cost the filtered query.

The queries are read_side's mix of six first pages (all, a state, tools only, a tag, a search
word, ordered by description), run in rounds in which the stores take turns (the order rotates),
so that a change in the machine's load falls on every store alike. The modules are those of
read_side (three in four tools, two tags each, half published, a fifth of those drafted again),
written with the read model's own bulk writes, with the production view's event-store filter.

Both read models: OpenSearch (the production one; `OPENSEARCH_URL`, else `scripts/opensearch.sh`;
each store is an index of its own, force-merged to one segment so that segment layouts do not
differ, and deleted at the end) and the in-memory one.

Run: `python -m bench.tenant_filter [--quick] [--modules N] [--tenants N] [--repeats N]
[--skip-memory] [--skip-opensearch]`.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from bench._common import Progress, Row, median, millis, quartiles, rotated, standalone
from bench.read_side import QUERIES, TOPICS, definition, opensearch_url, percentile

TITLE = "Tenant filter: the faceted list of one tenant among many against one tenant holding as many modules"
GOAL = 1.2
STORE = "bench-tenant-filter"
BATCH = 5_000
MANY, ONE, ALONE = "many tenants", "one tenant", "the tenant alone"


def tenant_name(k: int) -> str:
    return f"tenant-{k:03d}"


def documents(tenants: Sequence[str], per_tenant: int) -> Iterator[dict[str, Any]]:
    """Each tenant's modules `mod0` … as read_side's projection makes them: half published, a
    fifth of those drafted again, the rest never published."""
    from projections.documents import derive, new_document, part

    at = datetime(2025, 1, 1, tzinfo=UTC).isoformat()
    for tenant in tenants:
        for i in range(per_tenant):
            document = new_document(tenant, f"mod{i}")
            current = part(definition(i))
            if i % 2 == 0:
                document.update(published=current, publishedVersion=1)
                if i % 10 == 0:
                    document["draft"] = part({**definition(i), "description": f"Draft {i} of {TOPICS[i % 6]}"})
            else:
                document["draft"] = current
            document.update(updatedBy="bench", updatedAt=at)
            yield derive(document)


def fill(view: Any, tenants: Sequence[str], per_tenant: int, label: str, progress: Progress) -> None:
    """Writes the documents through the view's own buffered writes, `BATCH` to a flush."""
    from eventsourcing.persistence import Tracking

    position = 0
    for document in documents(tenants, per_tenant):
        position += 1
        view.put(document, Tracking("bench", position))
        if position % BATCH == 0:
            view.flush()
            if position % 20_000 == 0:
                progress(f"  {label}: {position:,} modules written")
    view.flush()


# -- the stores ------------------------------------------------------------------------------------

def opensearch_stores(client: Any, prefix: str, modules: int, tenants: int, progress: Progress) -> dict[str, Any]:
    from projections.opensearch import OpenSearchModuleReadModel

    per_tenant = modules // tenants
    shapes = {MANY: ([tenant_name(k) for k in range(tenants)], per_tenant),
              ONE: ([tenant_name(0)], modules),
              ALONE: ([tenant_name(0)], per_tenant)}
    views = {}
    for name, (names, size) in shapes.items():
        alias = f"{prefix}-{name.replace(' ', '-')}"
        view = OpenSearchModuleReadModel(client, index=alias, replicas=0, refresh=False, fresh=True, store=STORE)
        view.open()
        client.indices.put_settings(index=alias, body={"index": {"refresh_interval": "-1"}})
        fill(view, names, size, name, progress)
        client.indices.put_settings(index=alias, body={"index": {"refresh_interval": None}})
        client.indices.refresh(index=alias)
        client.indices.forcemerge(index=alias, max_num_segments=1, request_timeout=600)
        client.indices.refresh(index=alias)
        view.refresh = True
        views[name] = view
        progress(f"  {name}: {len(names) * size:,} modules in {len(names)} tenant(s), indexed and merged")
    return views


def memory_stores(modules: int, tenants: int, progress: Progress) -> dict[str, Any]:
    from projections.memory import InMemoryModuleReadModel

    per_tenant = modules // tenants
    views = {}
    for name, names, size in ((MANY, [tenant_name(k) for k in range(tenants)], per_tenant),
                              (ONE, [tenant_name(0)], modules), (ALONE, [tenant_name(0)], per_tenant)):
        views[name] = InMemoryModuleReadModel()
        fill(views[name], names, size, f"in memory, {name}", progress)
    return views


# -- the measure -----------------------------------------------------------------------------------

def measure(views: dict[str, Any], tenants: int, repeats: int, progress: Progress, label: str) -> dict[str, Any]:
    """Rounds of the six queries; in each query's turn, every store answers it once (in an order
    that rotates). The many-tenant store is asked for a random tenant each time."""
    from projections.interface import ListQuery

    queries = {name: ListQuery(**query) for name, query in QUERIES.items()}
    pick = random.Random(19)
    asked: Callable[[str], str] = lambda store: tenant_name(pick.randrange(tenants)) if store == MANY else tenant_name(0)
    totals = {store: views[store].list(tenant_name(0), ListQuery()).total for store in views}
    for store, view in views.items():  # warm-up
        for query in queries.values():
            for _ in range(5):
                view.list(asked(store), query)
    times: dict[str, list[float]] = {store: [] for store in views}
    by_query: dict[str, dict[str, list[float]]] = {store: {name: [] for name in queries} for store in views}
    rounds: dict[str, list[float]] = {store: [] for store in views}  # each round's median
    for r in range(repeats):
        this_round: dict[str, list[float]] = {store: [] for store in views}
        for n, name in enumerate(pick.sample(list(queries), len(queries))):
            for store in rotated(list(views), r + n):
                tenant = asked(store)
                t0 = time.perf_counter()
                views[store].list(tenant, queries[name])
                this_round[store].append(time.perf_counter() - t0)
                by_query[store][name].append(this_round[store][-1])
        for store, values in this_round.items():
            times[store] += values
            rounds[store].append(median(values))
        if (r + 1) % 20 == 0:
            progress(f"  {label}: {r + 1}/{repeats} rounds")
    return {"totals": totals, "times": times, "rounds": rounds, "by_query": by_query}


def rows_of(label: str, measured: dict[str, Any], modules: int, tenants: int) -> list[Row]:
    times, rounds, totals = measured["times"], measured["rounds"], measured["totals"]
    per_tenant = modules // tenants
    rows = []
    for p, pick in (("p50", median), ("p95", lambda values: percentile(values, 95))):
        ours, baseline = pick(times[MANY]), pick(times[ONE])
        ratio = ours / baseline
        spread = ""
        if p == "p50":
            q1, q3 = quartiles([m / o for m, o in zip(rounds[MANY], rounds[ONE], strict=True)])
            spread = f"{q1:.2f}–{q3:.2f}"
        rows.append(Row(f"{label}: list {p}, a tenant of {per_tenant:,} among {tenants} ({modules:,} modules) "
                        f"vs one tenant of {totals[ONE]:,}", millis(ours), millis(baseline), ratio,
                        f"≤ {GOAL}×", ratio <= GOAL, spread))
    for name in QUERIES:
        many, one, alone = (median(measured["by_query"][store][name]) for store in (MANY, ONE, ALONE))
        rows.append(Row(f"  {label}: list, {name}: p50 among {tenants} vs one tenant (and alone)", millis(many),
                        f"{millis(one)} ({millis(alone)})", many / one))
    for p, pick in (("p50", median), ("p95", lambda values: percentile(values, 95))):
        ours, baseline = pick(times[MANY]), pick(times[ALONE])
        rows.append(Row(f"  (outside the goal) {label}: list {p}, the same tenant among {tenants} vs alone "
                        f"({totals[ALONE]:,} modules)", millis(ours), millis(baseline), ours / baseline))
    return rows


# -- the report ------------------------------------------------------------------------------------

def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, Any]]:
    args = parse_args(argv)
    progress = Progress("tenant_filter", quiet=quiet)
    rows: list[Row] = []
    if not args.skip_opensearch:
        from opensearchpy import OpenSearch

        url = opensearch_url(progress)
        client = OpenSearch(hosts=[url], timeout=120)
        prefix = f"bench-tenant-filter-{os.getpid()}"
        try:
            progress(f"OpenSearch: writing {args.modules:,} modules in {args.tenants} tenants, {args.modules:,} in one, "
                     f"{args.modules // args.tenants:,} alone")
            views = opensearch_stores(client, prefix, args.modules, args.tenants, progress)
            progress(f"OpenSearch: {args.repeats} rounds of the six list queries on each store")
            rows += rows_of("OpenSearch", measure(views, args.tenants, args.repeats, progress, "OpenSearch"),
                            args.modules, args.tenants)
        finally:
            client.indices.delete(index=f"{prefix}*", ignore_unavailable=True, allow_no_indices=True,
                                  expand_wildcards="all")
            client.close()
    if not args.skip_memory:
        progress(f"in memory: writing {args.modules:,} modules in {args.tenants} tenants, {args.modules:,} in one")
        views = memory_stores(args.modules, args.tenants, progress)
        progress(f"in memory: {args.repeats} rounds of the six list queries on each store")
        rows += rows_of("in memory", measure(views, args.tenants, args.repeats, progress, "in memory"),
                        args.modules, args.tenants)
    return rows, {"args": vars(args)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.tenant_filter", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 modules in 20 tenants, fewer rounds")
    parser.add_argument("--modules", type=int, help="modules in each store (default 100,000)")
    parser.add_argument("--tenants", type=int, help="tenants sharing the many-tenant store (default 100)")
    parser.add_argument("--repeats", type=int, help="rounds of the six list queries (default 60)")
    parser.add_argument("--skip-memory", action="store_true", help="OpenSearch only")
    parser.add_argument("--skip-opensearch", action="store_true", help="the in-memory read model only")
    args = parser.parse_args(argv)
    args.modules = args.modules or (20_000 if args.quick else 100_000)
    args.tenants = args.tenants or (20 if args.quick else 100)
    args.repeats = args.repeats or (20 if args.quick else 60)
    if args.modules % args.tenants:
        parser.error("--modules must be a multiple of --tenants")
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
