"""Traces (docs/observability.md): OpenTelemetry spans, exported by OTLP/HTTP when the standard
`OTEL_*` settings ask for it, else nothing at all.

Traces are on when an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
`OTEL_EXPORTER_OTLP_ENDPOINT` to which `/v1/traces` is added), unless `OTEL_SDK_DISABLED=true` or
`OTEL_TRACES_EXPORTER` names no `otlp` exporter (`none`). `configure` then installs the SDK's tracer
provider (its resource's `service.name` is `OTEL_SERVICE_NAME`, `toolsmith` by default) with one
`BatchSpanProcessor` and the OTLP/HTTP exporter (which reads its own `OTEL_EXPORTER_OTLP_*`
settings: headers, timeout, compression). When they are off nothing is installed: no thread, no
exporter, and the code's spans are not made (`ON` is False: the edge makes no request span, and
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
import os
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace

log = logging.getLogger("toolsmith.tracing")

# True once `configure` installed an exporting tracer provider in this process.
ON = False
_PROVIDER: Any = None


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
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    install(BatchSpanProcessor(OTLPSpanExporter()), environ)
    log.info("traces exported by OTLP/HTTP", extra={"serviceName": _service_name(environ)})
    return True


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
