"""Benchmark: traces (docs/observability.md, issue 35): tool-call throughput with traces exporting by
OTLP/HTTP to a local receiver, against traces off, in one run (goal: ≥ 0.9).

`POST /api/v1/tools/{name}/call` of a published code module (FastAPI's test client on `bootstrap`,
SQLite, the embedded sandbox), each call with a `traceparent` header, in rounds alternating traces
on and off. On: the SDK's tracer provider with a `BatchSpanProcessor` and the OTLP/HTTP exporter,
sending to a receiver in a process of its own (it reads each export and answers 200), every call
sampled (the request's, the tool call's and the sandbox visit's spans); off: no provider, as a
service started without the `OTEL_*` settings. The row is `traces_row`, which `bench.observability`
reports beside the metrics' and the call log's.

Run: `python -m bench.traces [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench._common import Progress, Row, bench_settings, median, quartiles, standalone

TITLE = "Benchmark — traces: tool-call throughput with spans exported by OTLP/HTTP to a local receiver, against traces off; medians"

# The receiver: an OTLP/HTTP endpoint that reads what it is sent and answers an empty ExportTraceServiceResponse.
_RECEIVER = r"""
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _receiver() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", _RECEIVER], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}/v1/traces"


def throughput(calls: int, rounds: int, progress: Progress) -> tuple[list[float], list[float], int]:
    """Calls a second with traces on and off, each round of `calls` calls; and the spans exported."""
    from fastapi.testclient import TestClient
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    from entrypoints.compose import bootstrap
    from entrypoints.web import create_app
    from infrastructure import tracing

    receiver, endpoint = _receiver()
    exported = 0

    class Counting(OTLPSpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            nonlocal exported
            result = super().export(spans)
            exported += len(spans) if result == SpanExportResult.SUCCESS else 0
            return result

    provider = TracerProvider(resource=Resource.create({"service.name": "toolsmith-bench"}))
    provider.add_span_processor(BatchSpanProcessor(Counting(endpoint=endpoint)))
    traceparent = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}

    def traces(on: bool) -> None:
        # What `tracing.configure` installs, lent to the process for a round and taken back.
        trace._TRACER_PROVIDER = provider if on else None  # type: ignore[attr-defined]
        tracing.ON = on

    try:
        with tempfile.TemporaryDirectory() as data:
            settings = bench_settings(Path(data) / "data").model_copy(update={"rate_per_second": 0, "tenant_rate_per_second": 0})
            services = bootstrap(settings)
            app = create_app(services)
            figures: dict[str, list[float]] = {"on": [], "off": []}
            with TestClient(app, headers={"Authorization": "Bearer x"}) as client:
                made = client.post("/api/v1/admin/code-modules", json={
                    "id": "echo", "description": "echoes", "draftContent": "exports.run = function (i) { return i; };",
                    "tool": {"inputParameters": [{"name": "text", "type": "string"}], "exposeInChat": True}})
                assert made.status_code == 201, made.text
                assert client.post("/api/v1/admin/code-modules/echo/publish").status_code == 200
                for on in (True, False):  # warm: the catalog, the sandbox's workers, the exporter's connection
                    traces(on)
                    for _ in range(50):
                        client.post("/api/v1/tools/echo/call", json={"text": "warm"}, headers=traceparent)
                for k in range(rounds):
                    for name in (("on", "off") if k % 2 == 0 else ("off", "on")):
                        traces(name == "on")
                        started = time.perf_counter()
                        for _ in range(calls):
                            answer = client.post("/api/v1/tools/echo/call", json={"text": "hello"}, headers=traceparent)
                        figures[name].append(calls / (time.perf_counter() - started))
                        assert answer.status_code == 200, answer.text
                    progress(f"throughput round {k + 1}: {figures['on'][-1]:,.0f} traced, {figures['off'][-1]:,.0f} off calls/s")
                traces(False)
        provider.force_flush(10_000)
    finally:
        traces(False)
        provider.shutdown()
        receiver.terminate()
        receiver.wait(10)
    return figures["on"], figures["off"], exported


def traces_row(calls: int, rounds: int, progress: Progress) -> Row:
    """The traces row: REST tool calls a second, traces exporting to a local receiver / all off."""
    traced, off, exported = throughput(calls, rounds, progress)
    assert exported >= calls * (rounds + 1), f"only {exported} spans reached the receiver"  # three a call were made
    ratio = median(traced) / median(off)
    low, high = quartiles([a / b for a, b in zip(traced, off)])
    return Row("REST tool calls a second, traces exported by OTLP/HTTP / off", f"{median(traced):,.0f} /s",
               f"{median(off):,.0f} /s", ratio, "≥ 0.9", ratio >= 0.9, f"{low:.2f}–{high:.2f}")


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    parser = argparse.ArgumentParser(prog="python -m bench.traces")
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    progress = Progress("traces", quiet=quiet)
    calls, rounds = (100, 4) if args.quick else (300, 8)
    rows = [traces_row(calls, rounds, progress)]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return rows, {"load": load}


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
