"""Benchmark (issue 33): `resources/read` of a resource rendered by a code module against
`tools/call` of the same module, over one MCP session of one `toolsmith serve` (goal: ≥ 0.9).

One server process (SQLite, embedded sandbox) on a throwaway data dir serves a published tool module
that renders a text, and a published resource template (`code://reviews/{code}`) rendered by that
module (its one variable is the module's one parameter). wrk POSTs, on 4 connections of ONE
handshake-era session, `resources/read` of `code://reviews/x1` against `tools/call` of the module
with `code` "x1"; both run the same module once per request, so the ratio is what serving a resource
costs over serving a tool call. Each answer is checked (status 200 and the rendered text in the
body). Rounds rotate the order; a variant's figure is the median of its per-round calls/s, the ratio
resources/tools of those medians.

Run: `python -m bench.resources_read [--quick]` (wrk from Debian: `apt-get install -y wrk`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence

from bench._common import Progress, Row, median, quartiles, standalone
from bench.mcp_call import HANDSHAKE_VERSION, TOKEN, WRK_CONNECTIONS, ensure_wrk, open_session, start_server, wrk_rounds, wrk_script

MODULE = "renderReview"
RESOURCE = "review"
SOURCE = "exports.run = function (input) { return 'Review this code: ' + input.code; };"
ARGUMENTS = {"code": "x1"}
URI = "code://reviews/x1"
EXPECTED = "Review this code: x1"
GOAL = 0.9

TITLE = "Benchmark — resources/read of a module-rendered resource vs tools/call of the same module, one MCP session, wrk; medians"


def publish(server) -> None:  # type: ignore[no-untyped-def]
    tool = {"inputParameters": [{"name": "code", "type": "string", "required": True, "description": "the code"}], "exposeInChat": True}
    module = {"id": MODULE, "description": "Renders a review request.", "draftContent": SOURCE, "tool": tool}
    resource = {"id": RESOURCE, "description": "A review request", "module": MODULE, "uriTemplate": "code://reviews/{code}",
                "mimeType": "text/plain"}
    with server.client() as http:
        for collection, body in (("/api/v1/admin/code-modules", module), ("/api/v1/admin/resources", resource)):
            created = http.post(collection, json=body)
            published = http.post(f"{collection}/{body['id']}/publish")
            if created.status_code != 201 or published.status_code != 200:
                raise SystemExit(f"bench.resources_read: could not publish {body['id']}: {created.text} {published.text}")


def variants(session: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE_VERSION}

    def call(method: str, params: dict[str, object]) -> tuple[str, str]:
        return ('{"jsonrpc":"2.0","method":"' + method + '","params":' + json.dumps(params, separators=(",", ":")) + ',"id":', "}")

    return {
        "resources/read": wrk_script("/mcp", call("resources/read", {"uri": URI}), EXPECTED, headers),
        "tools/call": wrk_script("/mcp", call("tools/call", {"name": MODULE, "arguments": ARGUMENTS}), EXPECTED, headers),
    }


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("resources_read", quiet=quiet)
    ensure_wrk()
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp:
        progress("starting toolsmith serve")
        server = start_server(tmp)
        try:
            publish(server)
            runs = wrk_rounds(server.url, tmp, variants(open_session(server.url)), args.rounds, args.seconds, args.warmup, progress)
        finally:
            server.stop()
    resources, tools = ([run["rate"] for run in runs[name]] for name in ("resources/read", "tools/call"))
    wrong = int(sum(run["wrong"] for name in runs for run in runs[name]))
    q1, q3 = quartiles([r / t for r, t in zip(resources, tools)])
    p50 = {name: median([run["p50"] for run in runs[name]]) for name in runs}
    ratio = median(resources) / median(tools)
    row = Row(f"resources/read vs tools/call of its module, wrk, one session, {WRK_CONNECTIONS} connections",
              f"resources/read {median(resources):,.0f}/s (p50 {p50['resources/read'] * 1e3:.1f} ms)",
              f"tools/call {median(tools):,.0f}/s (p50 {p50['tools/call'] * 1e3:.1f} ms)",
              ratio, f"≥ {GOAL} (resources/tools)", ratio >= GOAL and not wrong, f"IQR {q1:.2f}–{q3:.2f}")
    if wrong:
        progress(f"WARNING: {wrong} answers were not 200 with the rendered text")
    return [row], {"wrong": wrong, "args": vars(args)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.resources_read", description=__doc__.split("\n\n")[0])
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
