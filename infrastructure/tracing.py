"""Traces (docs/observability.md): OpenTelemetry spans, exported by OTLP/HTTP when the standard
`OTEL_*` settings ask for it, else nothing at all.

Traces are on when an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
`OTEL_EXPORTER_OTLP_ENDPOINT` to which `/v1/traces` is added), unless `OTEL_SDK_DISABLED=true` or
`OTEL_TRACES_EXPORTER` names no `otlp` exporter (`none`). `configure` then installs the SDK's tracer
provider (its resource's `service.name` is `OTEL_SERVICE_NAME`, `toolsmith` by default, its sampler
the SDK's, from `OTEL_TRACES_SAMPLER`) with one `RelayProcessor`: it batches the sampled spans as
the SDK's `BatchSpanProcessor` would (its `OTEL_BSP_*` settings), each as plain values, to an
exporter process (`infrastructure/otlp_relay.py`) in which the SDK's `OTLPSpanExporter` (with its
own `OTEL_EXPORTER_OTLP_*` settings: headers, timeout, compression) encodes and sends them, off this
process's CPU and interpreter lock. When they are off nothing is installed: no thread, no process,
no exporter, and the code's spans are not made (`ON` is False: the edge makes no request span, and
every other span is a child made only under a recording one).

The spans (each with `toolsmith.*` attributes that never hold a secret, an argument, a query string,
a header or a body):

- `HTTP <method> <route>`: each HTTP request (`entrypoints.web.Edge`), continuing the W3C
  `traceparent`/`tracestate` of its headers; its access-log line is written inside it;
- `<jsonrpc method> [tool]`: each MCP request (the MCP SDK's own span), continuing the trace of
  `params._meta` (`traceparent`, `tracestate`: the 2026-07-28 spec's place, accepted in both eras)
  or, without one there, the HTTP request's;
- `tool.call <tool>`: tool, kind, version, tenant, way in and outcome (`application.toolbox`);
- `sandbox.visit`: the code sandbox's session, with `toolsmith.sandbox.queue_wait_ms` (from the
  call's arrival at the pool to its program's being sent to a worker: a worker taken or started,
  the pool's first start) and `toolsmith.sandbox.run_ms` (from then to its answer) as attributes;
- `HTTP <method>` (client): each outbound request of an API URL tool and of `http.fetch`: host,
  method, status;
- `eventstore.write`: a command's events saved; `readmodel.apply`: the read model applying events.
"""

from __future__ import annotations

import logging
import marshal
import os
import select
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace

from infrastructure.otlp_relay import HEADER, fields, frame

log = logging.getLogger("toolsmith.tracing")

# The spans that may wait to be exported (OTEL_BSP_MAX_QUEUE_SIZE; the SDK's own default is 2,048).
QUEUE_SIZE = 20_000
# True once `configure` installed an exporting tracer provider in this process.
ON = False
_PROVIDER: Any = None
_RELAY: RelayExporter | None = None


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether the `OTEL_*` settings of `environ` ask for traces exported by OTLP."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = {name.strip().lower() for name in environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",")}
    if "otlp" not in exporters:
        return False  # `none`, or only exporters this service does not ship
    return bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())


def configure(environ: Mapping[str, str] | None = None) -> bool:
    """Installs the OTLP/HTTP exporting tracer provider when `environ` (the process's) asks for
    traces; answers whether traces are on. Once per process: a second call changes nothing."""
    if ON:
        return True
    environ = os.environ if environ is None else environ
    if not wanted(environ):
        return False
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()
    if protocol != "http/protobuf":
        log.warning("traces off: only the OTLP/HTTP protobuf protocol is exported", extra={"protocol": protocol})
        return False
    global _RELAY
    _RELAY = RelayExporter(environ)
    install(RelayProcessor(_RELAY, environ), environ)
    log.info("traces exported by OTLP/HTTP", extra={"serviceName": _service_name(environ)})
    return True


def _setting(environ: Mapping[str, str], name: str, default: int) -> int:
    try:
        value = int(environ.get(name, "").strip() or default)
    except ValueError:
        log.warning("traces: a setting is not a whole number, its default is used", extra={"setting": name})
        return default
    return value if value > 0 else default


def _plain(value: Any) -> Any:
    """`value` with every value in it as its plain type (`marshal` takes no subclass: an IntEnum's
    member, a str subclass); what no plain type holds becomes its text."""
    if value is None or type(value) in (str, int, float, bool, bytes):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    return str(value)


class RelayProcessor:
    """The span processor of an exporting process (the SDK's `SpanProcessor` interface), batching as
    the SDK's `BatchSpanProcessor` does, with its `OTEL_BSP_*` settings: each ended span that was
    sampled is turned at once into bytes (its fields, `marshal`led: the SDK's span objects are let
    go then, so that no thousands of them wait for the garbage collector's passes), queued, and
    written by the thread `otel-span-relay` in batches to the exporter process (`RelayExporter`),
    at least every `OTEL_BSP_SCHEDULE_DELAY` ms and whenever a batch is full. Past the queue's size
    a span is dropped and counted (`dropped`), never waited for."""

    def __init__(self, exporter: RelayExporter, environ: Mapping[str, str]) -> None:
        self.exporter = exporter
        self.max_queue = _setting(environ, "OTEL_BSP_MAX_QUEUE_SIZE", QUEUE_SIZE)
        self.batch = min(_setting(environ, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), self.max_queue)
        self.delay = _setting(environ, "OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000
        self.dropped = 0
        self._queue: deque[bytes] = deque()
        self._wake = threading.Event()
        self._send_lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="otel-span-relay", daemon=True)
        self._thread.start()

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def _on_ending(self, span: Any) -> None:
        pass

    def on_end(self, span: Any) -> None:
        if self._stopped or not span.context.trace_flags.sampled:
            return
        queue = self._queue
        if len(queue) >= self.max_queue:
            self.dropped += 1
            return
        try:
            queue.append(marshal.dumps(fields(span)))
        except ValueError:  # a value of a subclass (an enum's member, a str of its own): as the plain value it stands for
            try:
                queue.append(marshal.dumps(_plain(fields(span))))
            except Exception:  # noqa: BLE001 - a span never fails the request it ends in: dropped, counted
                self.dropped += 1
                return
        if len(queue) >= self.batch and not self._wake.is_set():
            self._wake.set()

    def _run(self) -> None:
        while not self._stopped:
            self._wake.wait(self.delay)
            self._wake.clear()
            self._send()

    def _send(self) -> None:
        with self._send_lock:
            queue = self._queue
            while queue:
                taken = []
                while queue and len(taken) < self.batch:
                    taken.append(queue.popleft())
                self.exporter.send(taken)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Writes what is queued, then waits until the exporter process has sent it."""
        self._send()
        return self.exporter.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._stopped = True
        self._wake.set()
        self._thread.join(10)
        self._send()
        self.exporter.shutdown()


class RelayExporter:
    """The SDK's `SpanExporter` that the API's `BatchSpanProcessor` exports to: each batch's spans
    written, as plain values, to the exporter process (`infrastructure/otlp_relay.py`), which
    encodes them and sends them by OTLP/HTTP with the SDK's `OTLPSpanExporter`, off this process's
    CPU and its interpreter's lock. Started with the first batch (and again if it ended); its
    environment is the process's with `environ`'s `OTEL_*` settings."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = {**os.environ, **{k: v for k, v in environ.items() if k.startswith("OTEL_")}}
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._flushes = 0
        self._warned = False

    def _started(self) -> subprocess.Popen[bytes]:
        process = self._process
        if process is not None and process.poll() is None:
            return process
        from opentelemetry.sdk.trace import TracerProvider

        process = subprocess.Popen([sys.executable, "-m", "infrastructure.otlp_relay"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   env=self._environ, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        provider = trace.get_tracer_provider()
        resource = provider.resource if isinstance(provider, TracerProvider) else None
        assert process.stdin is not None
        process.stdin.write(frame(("resource", dict(resource.attributes) if resource is not None else {},
                                   resource.schema_url if resource is not None else "")))
        self._process = process
        return process

    def send(self, packed: Sequence[bytes]) -> bool:
        """Writes spans, each its `marshal`led fields (`otlp_relay.fields`), to the exporter
        process as one batch; False when it could not take them (they are lost, not retried)."""
        data = frame(("packed", list(packed)))
        with self._lock:
            try:
                process = self._started()
                assert process.stdin is not None
                process.stdin.write(data)
                process.stdin.flush()
            except (OSError, ValueError) as error:
                if not self._warned:
                    self._warned = True
                    log.warning("traces: the exporter process took no spans", extra={"error": type(error).__name__})
                return False
        return True

    def export(self, spans: Sequence[Any]) -> Any:
        """The SDK's `SpanExporter.export`, for a processor of the SDK's own (`BatchSpanProcessor`)."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        sent = self.send([marshal.dumps(fields(span)) for span in spans])
        return SpanExportResult.SUCCESS if sent else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Waits until the exporter process has sent every span written to it so far."""
        with self._lock:
            process = self._process
            if process is None or process.poll() is not None:
                return True
            self._flushes += 1
            try:
                assert process.stdin is not None and process.stdout is not None
                process.stdin.write(frame(("flush", self._flushes)))
                process.stdin.flush()
                deadline = time.monotonic() + timeout_millis / 1000
                while True:  # answers to flushes that timed out before come first
                    ready, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
                    answer = os.read(process.stdout.fileno(), HEADER.size) if ready else b""
                    if len(answer) != HEADER.size:
                        return False
                    if HEADER.unpack(answer)[0] == self._flushes:
                        return True
            except (OSError, ValueError):
                return False

    def shutdown(self) -> None:
        """Ends the exporter process once it has sent what it was given."""
        with self._lock:
            process, self._process = self._process, None
            if process is None:
                return
            try:
                assert process.stdin is not None
                process.stdin.close()
                process.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()


def install(processor: Any, environ: Mapping[str, str] | None = None) -> Any:
    """Installs a tracer provider with `processor` (tests: the SDK's in-memory exporter) as the
    process's; answers the provider."""
    global ON, _PROVIDER
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    environ = os.environ if environ is None else environ
    provider = TracerProvider(resource=Resource.create({"service.name": _service_name(environ)}))
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    _PROVIDER = trace.get_tracer_provider()
    ON = _PROVIDER is provider
    return _PROVIDER


def shutdown() -> None:
    """Sends what is batched and stops the exporter (the service's stop)."""
    provider = _PROVIDER
    if ON and provider is not None:
        try:
            provider.force_flush(5_000)
            if _RELAY is not None:
                _RELAY.force_flush(5_000)  # and the exporter process has sent them
        except Exception:  # noqa: BLE001 - a receiver gone: its spans are lost, the stop goes on
            log.warning("traces: the last spans could not be sent")


def _service_name(environ: Mapping[str, str]) -> str:
    return environ.get("OTEL_SERVICE_NAME", "").strip() or "toolsmith"


def trace_id() -> str | None:
    """The current trace's id (32 hex digits), None outside a trace or with traces off."""
    if not ON:
        return None
    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None
