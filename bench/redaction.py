"""Benchmark: the cost of an API URL tool call's one redaction (issue 28) on a call with a 64 KB
output and the most logs a call keeps (50 lines of 500 characters, 25 KB); goal ≤ 5 % of the call.

In-process, through `bootstrap` on a temporary SQLite data dir and the embedded sandbox: a local API
(a thread of this process) answers 64 KB of JSON records, and an API URL tool with an API key in a
header sends it there, its answer post-processed by a published module that logs the records (4
to a line, 50 lines) and returns them all. Two answers: `clean` (no secret in it, what almost every
call is) and `echoed` (every 20th record echoes the API key, so the redaction replaces it in the
output and the logs).

The call is timed whole through the app (`POST /api/v1/tools/{name}/call` with FastAPI's test
client), and in the same calls the redaction pass itself (`_redacted`, timed where `perform` calls
it: the call's `Redactor` built from what it used, then applied to the real result, the trace and
the module's log lines): the ratio is the pass's share of the call. The same calls with the pass
replaced by nothing give the call without redaction, each call of a variant in turn with the
others' (informative: the call's spread on a busy machine is larger than the pass).

Run: `python -m bench.redaction [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench._common import Progress, Row, bench_settings, median, micros, millis, quartiles, rotated, standalone

TITLE = "Benchmark — one redaction of an API URL tool call (64 KB output, 25 KB logs) against the whole call; medians"
GOAL = 0.05
OUTPUT_BYTES = 65_536
KEY = "sk-bench/redaction+key 0123456789abcdef"
ECHO_EVERY = 20
TOKEN = "x"  # bench_settings' admin token
MODULE = """exports.run = (r) => {
  const records = r.body.records;
  for (let i = 0; i < 50; i++) log(JSON.stringify(records.slice(4 * i, 4 * i + 4)).slice(0, 500));
  return records;
};"""


def _records(echoed: bool) -> bytes:
    """About `OUTPUT_BYTES` of JSON records, every `ECHO_EVERY`th echoing the key when `echoed`."""
    records, size, n = [], 0, 0
    while size < OUTPUT_BYTES:
        note = f"record {n}: " + ("echo of the request's key " + KEY if echoed and n % ECHO_EVERY == 0 else "x" * 50)
        record = {"id": n, "name": f"item-{n}", "note": note, "tags": ["a", "b"]}
        records.append(record)
        size += len(json.dumps(record))
        n += 1
    return json.dumps({"records": records}).encode()


class _Api(BaseHTTPRequestHandler):
    bodies: dict[str, bytes] = {}
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        body = self.bodies[self.path.strip("/")]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def _local_api() -> Iterator[str]:
    _Api.bodies = {"clean": _records(False), "echoed": _records(True)}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Timed:
    """`_redacted` as `perform` calls it, timing each pass (or, `off`, skipping it)."""

    def __init__(self, redacted: Any) -> None:
        self.redacted = redacted
        self.seconds: list[float] = []
        self.off = False

    def __call__(self, result: Any, used: Any, *args: Any) -> Any:
        if self.off:
            return result
        started = time.perf_counter()
        try:
            return self.redacted(result, used, *args)
        finally:
            self.seconds.append(time.perf_counter() - started)


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    args = parse_args(argv)
    progress = Progress("redaction", quiet=quiet)
    from fastapi.testclient import TestClient

    import toolkinds.api_tools.kind as api_tools
    from entrypoints.compose import bootstrap
    from entrypoints.web import create_app

    timed = _Timed(api_tools._redacted)
    with tempfile.TemporaryDirectory(prefix="toolsmith-bench-") as tmp, _local_api() as allow:
        settings = bench_settings(tmp).model_copy(update={"egress_allow": allow})
        api_tools._redacted = timed
        try:
            with TestClient(create_app(bootstrap(settings)), headers={"Authorization": f"Bearer {TOKEN}"}) as api:
                _setup(api, allow)
                rows, info = _measure(api, timed, args, progress)
        finally:
            api_tools._redacted = timed.redacted
    return rows, info


def _setup(api: Any, allow: str) -> None:
    def made(answer: Any, status: int) -> None:
        if answer.status_code != status:
            raise SystemExit(f"bench.redaction: {answer.request.method} {answer.request.url}: {answer.status_code} {answer.text}")

    made(api.post("/api/v1/admin/secrets", json={"id": "key", "value": KEY, "description": "the API key"}), 201)
    made(api.post("/api/v1/admin/code-modules", json={"id": "records", "description": "logs every record",
                                                      "draftContent": MODULE, "tool": {"inputParameters": [], "timeoutMillis": 10_000}}), 201)
    made(api.post("/api/v1/admin/code-modules/records/publish"), 200)
    for name in ("clean", "echoed"):
        made(api.post("/api/v1/admin/api-tools", json={
            "id": name, "description": name, "urlTemplate": f"http://{allow}/{name}",
            "auth": {"type": "apiKey", "in": "header", "name": "X-Api-Key", "secret": "key"},
            "response": {"module": "records", "maxOutputChars": 1_000_000, "maxBytes": 1_048_576}}), 201)


def _call(api: Any, name: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    answer = api.post(f"/api/v1/tools/{name}/call", json={})
    elapsed = time.perf_counter() - started
    if answer.status_code != 200 or answer.json()["error"] is not None:
        raise SystemExit(f"bench.redaction: the call of {name} failed: {answer.text[:500]}")
    return elapsed, answer.json()


def _measure(api: Any, timed: _Timed, args: argparse.Namespace, progress: Progress) -> tuple[list[Row], dict[str, object]]:
    for name in ("clean", "echoed"):
        _, answer = _call(api, name)
        text = json.dumps(answer)
        output_bytes, log_bytes = len(json.dumps(answer["output"])), sum(len(line) for line in answer["logs"])
        if KEY in text or (name == "echoed") != ("[secret]" in text):
            raise SystemExit(f"bench.redaction: the {name} call is not redacted as expected")
        progress(f"{name}: output {output_bytes:,} B, logs {log_bytes:,} B in {len(answer['logs'])} lines")
    for _ in range(args.warmup):
        for name in ("clean", "echoed"):
            _call(api, name)
    calls: dict[str, list[float]] = {"clean": [], "echoed": [], "clean, no redaction": [], "echoed, no redaction": []}
    passes: dict[str, list[float]] = {"clean": [], "echoed": []}
    shares: dict[str, list[float]] = {"clean": [], "echoed": []}
    progress(f"{args.rounds} rounds × {args.calls} calls per variant")
    for r in range(args.rounds):
        # one call of each variant in turn, so that what else the machine does falls on all alike
        for variant in (v for k in range(args.calls) for v in rotated(list(calls), r + k)):
            name = variant.split(",")[0]
            timed.off = variant.endswith("no redaction")
            before = len(timed.seconds)
            elapsed, _ = _call(api, name)
            calls[variant].append(elapsed)
            if not timed.off:
                spent = sum(timed.seconds[before:])
                passes[name].append(spent)
                shares[name].append(spent / elapsed)
        timed.off = False
        progress(f"  round {r + 1}/{args.rounds}: " + ", ".join(f"{n} {millis(median(calls[n][-args.calls:]))}" for n in calls))
    rows = []
    for name, what in (("clean", "no secret in the answer"), ("echoed", f"the key echoed in every {ECHO_EVERY}th record")):
        share = median(shares[name])
        q1, q3 = quartiles(shares[name])
        rows.append(Row(
            f"the redaction pass, {what}",
            f"{micros(median(passes[name]))} per call",
            f"the call {millis(median(calls[name]))}",
            share, f"≤ {GOAL:.0%}", share <= GOAL, f"IQR {q1:.3f}–{q3:.3f}",
        ))
        bare = median(calls[f"{name}, no redaction"])
        rows.append(Row(
            f"the call with and without the redaction, {what}",
            f"with {millis(median(calls[name]))}",
            f"without {millis(bare)}",
            median(calls[name]) / bare, "(informative)", None, "",
        ))
    return rows, {"args": vars(args)}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.redaction", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about 15 s)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 5, quick 2)")
    parser.add_argument("--calls", type=int, help="calls per variant and round (default 20, quick 8)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed calls of each answer first (default 3)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.calls = args.calls or (8 if args.quick else 20)
    return args


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
