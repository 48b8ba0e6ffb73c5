"""The traces' exporter process (infrastructure/otlp_relay.py): what the API hands it of a span is
the span, whole: encoded as OTLP, the span made again there is the span the SDK made here."""

from __future__ import annotations

import marshal
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, StatusCode, TraceFlags, TraceState

from infrastructure.otlp_relay import HEADER, fields, frame, spans_of


def made_spans() -> tuple[list[Any], Resource]:
    resource = Resource.create({"service.name": "relay-test", "deployment.environment": "test"})
    provider = TracerProvider(resource=resource)
    kept = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("toolsmith", "1.2.3", schema_url="https://opentelemetry.io/schemas/1.21.0")
    remote = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, is_remote=True,
                         trace_flags=TraceFlags(1), trace_state=TraceState([("vendor", "value")]))
    linked = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(1))
    parent = trace.set_span_in_context(trace.NonRecordingSpan(remote))
    with tracer.start_as_current_span("HTTP POST /api/v1/tools/{name}/call", context=parent, kind=SpanKind.SERVER,
                                      attributes={"http.route": "/api/v1/tools/{name}/call", "http.response.status_code": 200},
                                      links=[Link(linked, {"why": "batch"})]):
        with tracer.start_as_current_span("tool.call addOne", attributes={"toolsmith.version": 3, "toolsmith.tags": ("a", "b")}) as span:
            span.add_event("retry", {"attempt": 2, "ratio": 0.5, "last": True})
            span.set_status(StatusCode.ERROR, "tool-error")
    return list(kept.get_finished_spans()), resource


def test_a_span_made_again_from_its_fields_encodes_as_the_sdk_span_did() -> None:
    spans, resource = made_spans()
    assert len(spans) == 2
    sent = marshal.loads(frame(("spans", [fields(span) for span in spans]))[HEADER.size:])
    assert sent[0] == "spans"
    again = spans_of(sent[1], resource)
    assert encode_spans(again) == encode_spans(spans)
    tool = next(span for span in again if span.name == "tool.call addOne")
    assert tool.status.status_code is StatusCode.ERROR and tool.status.description == "tool-error"
    assert [event.name for event in tool.events] == ["retry"] and tool.events[0].attributes["attempt"] == 2
    request = next(span for span in again if span.kind is SpanKind.SERVER)
    assert request.parent is not None and request.parent.is_remote and request.parent.span_id == 0xB7AD6B7169203331
    assert request.context.trace_state.get("vendor") == "value"
    assert request.links[0].attributes == {"why": "batch"}


def test_a_frame_is_its_length_then_the_message() -> None:
    data = frame(("flush", 7))
    assert HEADER.unpack(data[:HEADER.size])[0] == len(data) - HEADER.size
    assert marshal.loads(data[HEADER.size:]) == ("flush", 7)


class Taking:
    """What the exporter process would be sent, kept here."""

    def __init__(self) -> None:
        self.batches: list[list[bytes]] = []
        self.closed = False

    def send(self, packed: list[bytes]) -> bool:
        self.batches.append(list(packed))
        return True

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        self.closed = True


def test_the_processor_sends_sampled_spans_in_batches_and_drops_past_its_queue() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    from infrastructure.tracing import RelayProcessor

    taking = Taking()
    processor = RelayProcessor(taking, {"OTEL_BSP_MAX_QUEUE_SIZE": "3", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2",
                                        "OTEL_BSP_SCHEDULE_DELAY": "60000"})  # type: ignore[arg-type]
    provider = TracerProvider()
    provider.add_span_processor(processor)  # type: ignore[arg-type]
    unsampled = TracerProvider(sampler=ALWAYS_OFF)
    unsampled.add_span_processor(processor)  # type: ignore[arg-type]
    try:
        # The relay's thread, woken by a full batch, waits to send while the test holds its send lock
        # (on a loaded machine it could take the first batch out before the fourth span ended).
        with processor._send_lock:
            unsampled.get_tracer("t").start_span("not kept").end()
            for k in range(4):
                provider.get_tracer("t").start_span(f"span {k}", attributes={"k": k}).end()
            assert processor.dropped == 1  # the queue held 3
        assert processor.force_flush()
        sent = [marshal.loads(one) for batch in taking.batches for one in batch]
        assert [len(batch) for batch in taking.batches] == [2, 1]
        assert [fields[0] for fields in sent] == ["span 0", "span 1", "span 2"]
        assert [fields[11] for fields in sent] == [{"k": 0}, {"k": 1}, {"k": 2}]
    finally:
        provider.shutdown()
    assert taking.closed and not processor._thread.is_alive()  # noqa: SLF001


def test_a_span_with_values_of_subclasses_is_sent_as_their_plain_values() -> None:
    from enum import IntEnum

    from infrastructure.tracing import RelayProcessor

    class Status(IntEnum):
        OK = 200

    class Text(str):
        pass

    taking = Taking()
    processor = RelayProcessor(taking, {"OTEL_BSP_SCHEDULE_DELAY": "60000"})  # type: ignore[arg-type]
    provider = TracerProvider()
    provider.add_span_processor(processor)  # type: ignore[arg-type]
    try:
        provider.get_tracer("t").start_span(Text("HTTP POST"), attributes={"http.response.status_code": Status.OK,
                                                                           "route": Text("/mcp")}).end()
        assert processor.force_flush()
        [[packed]] = taking.batches
        sent = marshal.loads(packed)
        assert sent[0] == "HTTP POST" and sent[11] == {"http.response.status_code": 200, "route": "/mcp"}
    finally:
        provider.shutdown()
