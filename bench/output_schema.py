"""Benchmark (issue 33): `tools/call` of a code module whose tool section declares an `outputSchema`
(every result checked against it, then sent as `structuredContent`) against `tools/call` of the same
module without one, over one MCP session of one `toolsmith serve` (goal: ≥ 0.95).

One server process (SQLite, embedded sandbox) on a throwaway data dir serves two published tool
modules with the same source, which returns a small object (a total and a list of names); one has an
outputSchema (types, a required key, an item schema, a maximum), the other none. wrk POSTs, on 4
connections of ONE handshake-era session, `tools/call` of each; each answer is checked (status 200
and the structured value in the body). Rounds rotate the order; a variant's figure is the median of
its per-round calls/s, the ratio checked/unchecked of those medians. The validator is compiled once
per tool version (domain.schemas.validator), so a call pays only the check.

Run: `python -m bench.output_schema [--quick]` (wrk from Debian: `apt-get install -y wrk`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence

from bench._common import Progress, Row, median, quartiles, standalone
from bench.mcp_call import HANDSHAKE_VERSION, TOKEN, WRK_CONNECTIONS, ensure_wrk, open_session, start_server, wrk_rounds, wrk_script

SOURCE = "exports.run = function (input) { return {total: input.names.length, names: input.names, first: input.names[0]}; };"
ARGUMENTS = {"names": ["ada", "grace", "edsger"]}
EXPECTED = '"total":3'
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"total": {"type": "integer", "minimum": 0, "maximum": 1000},
                   "names": {"type": "array", "items": {"type": "string", "minLength": 1}},
                   "first": {"type": "string"}},
    "required": ["total", "names"],
    "additionalProperties": False,
}
CHECKED, UNCHECKED = "withSchema", "withoutSchema"
GOAL = 0.95

TITLE = "Benchmark — tools/call with an outputSchema check vs without, one MCP session, wrk; medians"


def publish(server) -> None:  # type: ignore[no-untyped-def]
    parameters = [{"name": "names", "type": "array", "required": True, "description": "the names"}]
    with server.client() as http:
        for name, extra in ((CHECKED, {"outputSchema": OUTPUT_SCHEMA}), (UNCHECKED, {})):
            tool = {"inputParameters": parameters, "exposeInChat": True, **extra}
            created = http.post("/api/v1/admin/code-modules", json={"id": name, "description": "Counts names.", "draftContent": SOURCE, "tool": tool})
            published = http.post(f"/api/v1/admin/code-modules/{name}/publish")
            if created.status_code != 201 or published.status_code != 200:
                raise SystemExit(f"bench.output_schema: could not publish {name}: {created.text} {published.text}")


def variants(session: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE_VERSION}

    def call(name: str) -> tuple[str, str]:
        params = {"name": name, "arguments": ARGUMENTS}
        return ('{"jsonrpc":"2.0","method":"tools/call","params":' + json.dumps(params, separators=(",", ":")) + ',"id":', "}")

    return {name: wrk_script("/mcp", call(name), EXPECTED, headers) for name in (CHECKED, UNCHECKED)}


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("output_schema", quiet=quiet)
    ensure_wrk()
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        progress("starting toolsmith serve")
        server = start_server(tmp)
        try:
            publish(server)
            runs = wrk_rounds(server.url, tmp, variants(open_session(server.url)), args.rounds, args.seconds, args.warmup, progress)
        finally:
            server.stop()
    checked, unchecked = ([run["rate"] for run in runs[name]] for name in (CHECKED, UNCHECKED))
    wrong = int(sum(run["wrong"] for name in runs for run in runs[name]))
    q1, q3 = quartiles([c / u for c, u in zip(checked, unchecked)])
    p50 = {name: median([run["p50"] for run in runs[name]]) for name in runs}
    ratio = median(checked) / median(unchecked)
    row = Row(f"tools/call, outputSchema checked vs none, wrk, one session, {WRK_CONNECTIONS} connections",
              f"checked {median(checked):,.0f}/s (p50 {p50[CHECKED] * 1e3:.1f} ms)",
              f"unchecked {median(unchecked):,.0f}/s (p50 {p50[UNCHECKED] * 1e3:.1f} ms)",
              ratio, f"≥ {GOAL} (checked/unchecked)", ratio >= GOAL and not wrong, f"IQR {q1:.2f}–{q3:.2f}")
    if wrong:
        progress(f"WARNING: {wrong} answers were not 200 with the structured value")
    alone, added = check_alone()
    # Under a shared machine's load the wrk ratio swings by more than the check costs; the check's
    # own cost against the same run's call latency says what it takes of a call, whatever the load.
    share = p50[UNCHECKED] / (p50[UNCHECKED] + added)
    derived = Row("tools/call's latency with the check's own cost added (this run's p50 / (p50 + the check))",
                  f"{(p50[UNCHECKED] + added) * 1e3:.3f} ms", f"{p50[UNCHECKED] * 1e3:.3f} ms", share,
                  f"≥ {GOAL} (without/with)", share >= GOAL, "")
    return [row, alone, derived], {"wrong": wrong, "args": vars(args)}


def check_alone(calls: int = 20_000) -> tuple[Row, float]:
    """What the check adds to each result, in this process: `answered` of the module's result for an
    entry with the outputSchema against one without (the validator compiled once, as a call has it)."""
    import time

    from application.toolbox import answered
    from domain.catalog import ToolEntry
    from domain.ports import ExecutionResult

    result = ExecutionResult(output={"total": 3, "names": ARGUMENTS["names"], "first": "ada"})
    entries = {CHECKED: ToolEntry(name=CHECKED, description="", call_type="CODE", output_schema=OUTPUT_SCHEMA),
               UNCHECKED: ToolEntry(name=UNCHECKED, description="", call_type="CODE")}
    took = {}
    for name, entry in entries.items():
        answered(result, entry)
        t0 = time.perf_counter()
        for _ in range(calls):
            answered(result, entry)
        took[name] = (time.perf_counter() - t0) / calls
    added = max(0.0, took[CHECKED] - took[UNCHECKED])
    return Row("the check alone, per result (answered with the schema vs without, in process)",
               f"{took[CHECKED] * 1e6:.1f} µs", f"{took[UNCHECKED] * 1e6:.1f} µs", None, "",
               None, f"adds {added * 1e6:.1f} µs a call"), added


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.output_schema", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 10 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 6, quick 2)")
    parser.add_argument("--seconds", type=float, help="wrk's time per variant per round, whole seconds (default 3, quick 1)")
    parser.add_argument("--warmup", type=float, default=1.0, help="untimed seconds per variant first (default 1)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 6)
    args.seconds = args.seconds or (1.0 if args.quick else 3.0)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
