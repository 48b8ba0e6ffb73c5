"""Benchmark: traces (docs/observability.md, issue 35): tool-call throughput with traces exporting by
OTLP/HTTP to a local receiver, against traces off, in one run (goal: ≥ 0.9).

`POST /api/v1/tools/{name}/call` of a published code module (FastAPI's test client on `bootstrap`,
SQLite, the embedded sandbox), each call with a `traceparent` header, in rounds alternating traces
on and off. On: what `tracing.configure` installs, the SDK's tracer provider with the service's
`RelayProcessor` and its exporter process (the SDK's OTLP/HTTP exporter in it), sending to a
receiver in a process of its own (it decodes each export, counts its spans and answers 200), every
call sampled (the request's, the tool call's and the sandbox visit's spans); off: no provider, as a
service started without the `OTEL_*` settings. `bench.observability` uses the same switch
(`Exporting`) for its traces rows, under wrk, beside the metrics' and the call log's.

The CPU rows: a call's three spans made as the service makes them, their CPU in this process and
in the exporter process, against the SDK making them alone (no processor: its floor).

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

# The receiver: an OTLP/HTTP endpoint that decodes what it is sent, counts its spans (GET answers the
# count) and answers an empty ExportTraceServiceResponse.
_RECEIVER = r"""
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

counted, lock = [0], threading.Lock()

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        request = ExportTraceServiceRequest.FromString(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        with lock:
            counted[0] += sum(len(scope.spans) for spans in request.resource_spans for scope in spans.scope_spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):  # how many spans it was sent
        body = str(counted[0]).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def _receiver() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", _RECEIVER], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}/v1/traces"


class Exporting:
    """Traces exported by OTLP/HTTP to a receiver in a process of its own, switched on and off in
    place: what `tracing.configure` installs (`RelayProcessor` and its exporter process, the SDK's
    `OTLPSpanExporter` in it), lent to the process while on; `sample`: which traces are kept (the
    SDK's default, every one, or one in n); `exported`: the spans the receiver took."""

    def __init__(self) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.sampling import DEFAULT_ON, Sampler

        from infrastructure.tracing import RelayExporter, RelayProcessor

        class Switched(Sampler):  # the SDK's tracers keep their provider's sampler: this one's choice is switched
            def __init__(self) -> None:
                self.inner: Any = DEFAULT_ON

            def should_sample(self, *args: Any, **kwargs: Any) -> Any:
                return self.inner.should_sample(*args, **kwargs)

            def get_description(self) -> str:
                return self.inner.get_description()

        self.sampler = Switched()
        self.receiver, self.endpoint = _receiver()
        self.relay = RelayExporter({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": self.endpoint})
        self.provider = TracerProvider(resource=Resource.create({"service.name": "toolsmith-bench"}), sampler=self.sampler)
        self.provider.add_span_processor(RelayProcessor(self.relay, {}))  # type: ignore[arg-type]

    def sample(self, one_in: int | None) -> None:
        """Keeps every trace (None: the SDK's default, `parentbased_always_on`), or one in `one_in`
        (`parentbased_traceidratio`)."""
        from opentelemetry.sdk.trace.sampling import DEFAULT_ON, ParentBased, TraceIdRatioBased

        self.sampler.inner = DEFAULT_ON if one_in is None else ParentBased(TraceIdRatioBased(1 / one_in))

    def flush(self) -> None:
        """Every span ended so far is sent and received."""
        self.provider.force_flush(30_000)
        self.relay.force_flush(30_000)

    @property
    def exported(self) -> int:
        import httpx

        return int(httpx.get(self.endpoint, timeout=10).text)

    def relay_cpu(self) -> float:
        """CPU seconds the exporter process has used (0 before it started)."""
        process = self.relay._process  # noqa: SLF001 - the bench reads its CPU
        if process is None:
            return 0.0
        fields = open(f"/proc/{process.pid}/stat").read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def switch(self, on: bool) -> None:
        from opentelemetry import trace

        from infrastructure import tracing

        trace._TRACER_PROVIDER = self.provider if on else None  # type: ignore[attr-defined]
        tracing.ON = on

    def close(self) -> None:
        self.switch(False)
        self.flush()
        self.exported_at_close = self.exported
        self.provider.shutdown()
        self.receiver.terminate()
        self.receiver.wait(10)


def throughput(calls: int, rounds: int, progress: Progress) -> tuple[list[float], list[float], int]:
    """Calls a second with traces on and off, each round of `calls` calls; and the spans exported."""
    from fastapi.testclient import TestClient

    from entrypoints.compose import bootstrap
    from entrypoints.web import create_app

    exporting = Exporting()
    traceparent = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
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
                    exporting.switch(on)
                    for _ in range(50):
                        client.post("/api/v1/tools/echo/call", json={"text": "warm"}, headers=traceparent)
                for k in range(rounds):
                    for name in (("on", "off") if k % 2 == 0 else ("off", "on")):
                        exporting.switch(name == "on")
                        started = time.perf_counter()
                        for _ in range(calls):
                            answer = client.post("/api/v1/tools/echo/call", json={"text": "hello"}, headers=traceparent)
                        figures[name].append(calls / (time.perf_counter() - started))
                        assert answer.status_code == 200, answer.text
                    progress(f"throughput round {k + 1}: {figures['on'][-1]:,.0f} traced, {figures['off'][-1]:,.0f} off calls/s")
                exporting.switch(False)
    finally:
        exporting.close()
    return figures["on"], figures["off"], exporting.exported_at_close


def traces_cpu(n: int) -> tuple[float, float, float]:
    """CPU seconds per call that traces add, a call's three spans as the service makes them (the
    request's, continuing a `traceparent`; the tool call's; the sandbox visit's): in this process
    (its threads together: the batch processor's handing them to the exporter process included),
    in the exporter process (their OTLP encoding and sending), and, the floor of the first, the
    SDK's making of the spans alone (a provider with no processor: nothing exported)."""
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import SpanKind

    exporting = Exporting()
    exporting.switch(True)
    tracer = trace.get_tracer("toolsmith")
    carrier = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}

    def call() -> None:
        request = tracer.start_span("HTTP POST", context=propagate.extract(carrier), kind=SpanKind.SERVER, attributes={
            "http.request.method": "POST", "url.path": "/api/v1/tools/addOne/call", "url.scheme": "http",
            "network.protocol.version": "1.1"})
        token = otel_context.attach(trace.set_span_in_context(request))
        tool = tracer.start_span("tool.call addOne", attributes={
            "toolsmith.tool": "addOne", "toolsmith.tenant": "default", "toolsmith.via": "rest", "toolsmith.kind": "CODE",
            "toolsmith.version": 1})
        inner = otel_context.attach(trace.set_span_in_context(tool))
        visit = tracer.start_span("sandbox.visit", attributes={"toolsmith.sandbox": "embedded"})
        visit.set_attribute("toolsmith.sandbox.queue_wait_ms", 0.01)
        visit.set_attribute("toolsmith.sandbox.run_ms", 0.2)
        visit.set_attribute("toolsmith.sandbox.programs", 1)
        visit.end()
        tool.set_attribute("toolsmith.outcome", "ok")
        otel_context.detach(inner)
        tool.end()
        request.update_name("HTTP POST /api/v1/tools/{name}/call")
        request.set_attribute("http.route", "/api/v1/tools/{name}/call")
        request.set_attribute("http.response.status_code", 200)
        otel_context.detach(token)
        request.end()

    try:
        for _ in range(1000):
            call()
        exporting.flush()
        here, there = [], []
        for _ in range(5):
            started, relayed = time.process_time(), exporting.relay_cpu()
            for _ in range(n // 5):
                call()
            exporting.flush()  # the export of these spans is their cost too
            here.append((time.process_time() - started) / (n // 5))
            there.append((exporting.relay_cpu() - relayed) / (n // 5))
        assert exporting.exported >= n + 1000 * 3, "the spans did not reach the receiver"
        exporting.switch(False)
        trace._TRACER_PROVIDER = TracerProvider()  # type: ignore[attr-defined]  # spans made, none processed
        tracer = trace.get_tracer("toolsmith")
        alone = []
        for _ in range(5):
            started = time.process_time()
            for _ in range(n // 5):
                call()
            alone.append((time.process_time() - started) / (n // 5))
    finally:
        exporting.close()
    return median(here), median(there), median(alone)


def traces_row(calls: int, rounds: int, progress: Progress) -> Row:
    """The traces row: REST tool calls a second, traces exporting to a local receiver / all off."""
    traced, off, exported = throughput(calls, rounds, progress)
    assert exported >= calls * (rounds + 1), f"only {exported} spans reached the receiver"  # three a call were made
    ratio = median(traced) / median(off)
    low, high = quartiles([a / b for a, b in zip(traced, off)])
    return Row("REST tool calls a second, traces exported by OTLP/HTTP / off", f"{median(traced):,.0f} /s",
               f"{median(off):,.0f} /s", ratio, "≥ 0.9", ratio >= 0.9, f"{low:.2f}–{high:.2f}")


def traces_cpu_rows(n: int, progress: Progress) -> list[Row]:
    here, there, alone = traces_cpu(n)
    progress(f"traces per call: {here * 1e6:.1f} µs of CPU here, {there * 1e6:.1f} µs in the exporter process, "
             f"{alone * 1e6:.1f} µs to make the spans alone")
    return [Row("CPU per call of the traces in the service (3 spans made, handed to the exporter process)", f"{here * 1e6:.1f} µs",
                f"{alone * 1e6:.1f} µs", here / alone, "", None, "baseline: the SDK making them alone"),
            Row("CPU per call of the traces in the exporter process (OTLP protobuf encoding, HTTP)", f"{there * 1e6:.1f} µs", "",
                None, "", None, "")]


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    parser = argparse.ArgumentParser(prog="python -m bench.traces")
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    progress = Progress("traces", quiet=quiet)
    calls, rounds = (100, 4) if args.quick else (300, 8)
    rows = traces_cpu_rows(5_000 if args.quick else 20_000, progress)
    rows.insert(0, traces_row(calls, rounds, progress))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return rows, {"load": load}


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
