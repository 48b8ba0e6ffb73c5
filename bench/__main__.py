"""`python -m bench`: every benchmark, then one table of every figure and its ratio against the goal."""

from __future__ import annotations

import argparse
import sys
import time

from bench import (
    audit, changesets, cold_load, console, mcp_call, memory_bound, publish, read_side, scale, search_index, search_tools, tool_call,
    workers,
)
from bench import tenant_filter, tenants
from bench import asset_cache, extraction_fairness, jmespath_bound, rate_replicas, redaction, runner_heartbeat
from bench import list_cost
from bench import console_browser
from bench import request_path
from bench import call_log, oauth
from bench import prompts_get, resources_read
from bench import output_schema
from bench import hybrid_search, hybrid_search_opensearch
from bench import tool_search
from bench import observability, traces
from bench._common import format_table, machine_line


def _load(load: object) -> str:
    """A load average as the benchmarks give it: a line already, or the three figures."""
    return load if isinstance(load, str) else " ".join(f"{figure:.1f}" for figure in load)  # type: ignore[union-attr]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Runs every Toolsmith benchmark.")
    parser.add_argument("--quick", action="store_true", help="a short run of each benchmark (about a minute in all)")
    parser.add_argument("--only", choices=("tool_call", "publish", "workers", "read_side", "mcp_call", "audit", "memory_bound", "cold_load", "console", "console_browser", "scale", "search_tools", "search_index", "changesets", "tenant_filter", "tenants", "redaction", "jmespath_bound", "extraction_fairness", "rate_replicas", "runner_heartbeat", "asset_cache", "list_cost", "request_path", "oauth", "call_log", "observability", "traces", "prompts_get", "output_schema", "resources_read", "hybrid_search", "hybrid_search_opensearch", "tool_search"), help="run one benchmark only")
    args = parser.parse_args(argv)
    common = ["--quick"] if args.quick else []
    started = time.perf_counter()
    tables = []
    if args.only in (None, "tool_call"):
        rows, _ = tool_call.run(common)
        tables.append(format_table(tool_call.TITLE, rows))
    if args.only in (None, "publish"):
        rows, info = publish.run(common)
        tables.append(
            format_table(publish.title(info["args"]["importers"]), rows)
            + "\n(the publish also loads each importer's published definition from the event store, orders each bundle, and saves)"
        )
    if args.only in (None, "changesets"):
        rows, info = changesets.run(common)
        tables.append(format_table(changesets.title(info["args"]["importers"], info["args"]["changeset"]), rows)
                      + f"\n{changesets.NOTES}\n(load average {info['load']})")
    if args.only in (None, "workers"):
        rows, info = workers.run(common)
        tables.append(format_table(workers.TITLE, rows) + f"\n{workers.NOTES}\n(load average {info['load']})")
    if args.only in (None, "memory_bound"):
        rows, info = memory_bound.run(common)
        tables.append(format_table(memory_bound.TITLE, rows) + f"\n{memory_bound.NOTES}\n(load average {info['load']})")
    if args.only in (None, "read_side"):
        rows, _ = read_side.run(common)
        tables.append(format_table(read_side.TITLE, rows))
    if args.only in (None, "mcp_call"):
        rows, _ = mcp_call.run(common)
        tables.append(format_table(mcp_call.TITLE, rows))
    if args.only in (None, "audit"):
        rows, _ = audit.run(common)
        tables.append(format_table(audit.TITLE, rows))
    if args.only in (None, "cold_load"):
        rows, _ = cold_load.run(common)
        tables.append(format_table(cold_load.TITLE, rows) + f"\n{cold_load.NOTES}")
    if args.only in (None, "console"):
        rows, info = console.run(common)
        tables.append(format_table(console.TITLE.format(modules=info["args"]["modules"]), rows)
                      + f"\n{console.NOTES}\n(read model: {info['readModel']})")
    if args.only in (None, "console_browser"):
        # issue 31: the console in Chromium, page loads and actions against their REST call
        rows, info = console_browser.run(common)
        tables.append(format_table(console_browser.TITLE, rows) + f"\n{console_browser.NOTES}\n(load average {info['load']})")
    if args.only in (None, "search_tools"):
        rows, _ = search_tools.run(common)
        tables.append(format_table(search_tools.TITLE, rows))
    if args.only in (None, "search_index"):
        rows, _ = search_index.run(common)
        tables.append(format_table(search_index.TITLE, rows))
    if args.only in (None, "tenant_filter"):
        rows, _ = tenant_filter.run(common)
        tables.append(format_table(tenant_filter.TITLE, rows))
    if args.only in (None, "tenants"):
        rows, info = tenants.run(common)
        tables.append(format_table(tenants.TITLE, rows) + f"\n{tenants.NOTES}\n(load average {info['load']})")
    # issue 28: the hardening's costs and guarantees
    for bench_module, name in ((redaction, "redaction"), (jmespath_bound, "jmespath_bound"), (extraction_fairness, "extraction_fairness"),
                               (rate_replicas, "rate_replicas"), (runner_heartbeat, "runner_heartbeat"), (asset_cache, "asset_cache"),
                               # issue 29: every list is a projection
                               (list_cost, "list_cost"),
                               # issue 32: an OAuth access token's cost; issue 35: the call log's
                               (oauth, "oauth"), (call_log, "call_log"), (observability, "observability"),
                               (traces, "traces"),
                               # issue 33: a prompt rendered by a module against a call of the module
                               (prompts_get, "prompts_get"), (output_schema, "output_schema"),
                               # issue 33: a resource rendered by a module against a call of the module
                               (resources_read, "resources_read"),
                               # issue 36: File Search's lexical, semantic and hybrid retrieval
                               (hybrid_search, "hybrid_search"), (hybrid_search_opensearch, "hybrid_search_opensearch"),
                               # issue 36: tool search for large catalogs over MCP
                               (tool_search, "tool_search")):
        if args.only in (None, name):
            rows, info = bench_module.run(common)
            notes = getattr(bench_module, "NOTES", None)
            tables.append(format_table(bench_module.TITLE, rows) + (f"\n{notes}" if notes else "")
                          + (f"\n(load average {_load(info['load'])})" if "load" in info else ""))
    if args.only in (None, "request_path"):
        # issue 30: the request path against the floor of its work, and where its time goes
        rows, info = request_path.run(common)
        tables.append(format_table(request_path.TITLE, rows) + f"\n{request_path.notes(info)}\n(load average {info['load']})")
    if args.only in (None, "scale"):
        # bench.publish and bench.mcp_call ran above; alone, scale runs them with its own sizes.
        rows, info = scale.run(common + ([] if args.only == "scale" else ["--skip-others"]))
        tables.append(scale.table(rows, info))
    print()
    print("\n\n".join(tables))
    print(f"\n({machine_line()}; {'quick' if args.quick else 'full'} run, {time.perf_counter() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
