"""The traces' exporter process (docs/observability.md): spans sent by OTLP/HTTP from a process of their own.

Encoding spans as OTLP protobuf costs the SDK's exporter more CPU than making them does (about
35 µs a span here), and in the API's process that CPU is taken under the interpreter's lock the
requests need. So the API's span processor (`infrastructure.tracing.RelayProcessor`) turns each
ended span into its fields, as plain values (`marshal`), and writes them in batches (through
`RelayExporter`) to the standard input of this process; this
process makes them spans of the SDK again and sends them with the SDK's own `OTLPSpanExporter`,
which reads its `OTEL_EXPORTER_OTLP_*` settings (endpoint, headers, timeout, compression) from the
environment the API gave it.

Frames on standard input: a 4-byte big-endian length, then a `marshal`led tuple: `("resource",
attributes, schema_url)` once first, then `("packed", [bytes, ...])`, each span's `fields`
`marshal`led on its own (or `("spans", [fields, ...])`), and `("flush",
k)`, answered by `k` on standard output once everything before it was sent. End of input: the last
spans are sent, and the process ends. Nothing but the spans' own fields crosses: the API already
left out what spans never hold (docs/observability.md).

Run by `RelayExporter` as `python -m infrastructure.otlp_relay`.
"""

from __future__ import annotations

import marshal
import struct
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO

HEADER = struct.Struct(">I")


def fields(span: Any) -> tuple[Any, ...]:
    """What the exporter needs of an SDK span (`ReadableSpan`), as values `marshal` takes: read from
    the span's own slots (its public properties copy them again, several microseconds a span)."""
    context, parent, status = span._context, span._parent, span._status  # noqa: SLF001
    attributes = span._attributes  # noqa: SLF001 - a BoundedAttributes, its values in `_dict`
    attributes = getattr(attributes, "_dict", None) if attributes is not None else None
    if type(attributes) is not dict:
        attributes = dict(span.attributes or {})
    state = context.trace_state
    scope = span._instrumentation_scope  # noqa: SLF001
    events, links = span._events, span._links  # noqa: SLF001
    return (
        span._name, context.trace_id, context.span_id, int(context.trace_flags), tuple(state.items()) if state else (),  # noqa: SLF001
        None if parent is None else (parent.span_id, parent.is_remote, int(parent.trace_flags)),
        span._kind._value_, span._start_time, span._end_time, status._status_code._value_, status._description,  # noqa: SLF001
        attributes,
        tuple((event.name, event.timestamp, dict(event.attributes or {})) for event in events) if events else (),
        tuple((link.context.trace_id, link.context.span_id, int(link.context.trace_flags), dict(link.attributes or {}))
              for link in links) if links else (),
        None if scope is None else (scope._name, scope._version, scope._schema_url),  # noqa: SLF001
    )


def frame(message: tuple[Any, ...]) -> bytes:
    data = marshal.dumps(message)
    return HEADER.pack(len(data)) + data


def _read(stream: BinaryIO, size: int) -> bytes | None:
    data = stream.read(size)
    return data if data is not None and len(data) == size else None


def spans_of(found: Sequence[tuple[Any, ...]], resource: Any) -> list[Any]:
    """The SDK's spans again, from `fields` (the values most spans share made once a batch)."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

    scopes: dict[Any, Any] = {}
    flags = {0: TraceFlags(0), 1: TraceFlags(1)}
    no_state = TraceState()
    kinds = {kind.value: kind for kind in SpanKind}
    statuses: dict[tuple[int, str | None], Any] = {}
    made = []
    for (name, trace_id, span_id, flag, state, parent, kind, start, end, code, description, attributes, events, links,
         scope) in found:
        if scope is not None and scope not in scopes:
            scopes[scope] = InstrumentationScope(*scope)
        status = statuses.get((code, description))
        if status is None:
            status = statuses[(code, description)] = Status(StatusCode(code), description)
        trace_flags = flags.get(flag) or TraceFlags(flag)
        made.append(ReadableSpan(
            name=name,
            context=SpanContext(trace_id, span_id, False, trace_flags, TraceState(list(state)) if state else no_state),
            parent=None if parent is None else SpanContext(trace_id, parent[0], parent[1], flags.get(parent[2]) or TraceFlags(parent[2])),
            resource=resource, attributes=attributes,
            events=[Event(event_name, attributes=event_attributes, timestamp=at) for event_name, at, event_attributes in events],
            links=[Link(SpanContext(t, s, True, TraceFlags(f)), attributes=a) for t, s, f, a in links],
            kind=kinds[kind], status=status, start_time=start, end_time=end, instrumentation_scope=scopes.get(scope)))
    return made


def main() -> int:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource

    exporter = OTLPSpanExporter()
    source, answers = sys.stdin.buffer, sys.stdout.buffer
    resource = Resource.create({})
    try:
        while True:
            head = _read(source, HEADER.size)
            if head is None:
                return 0
            data = _read(source, HEADER.unpack(head)[0])
            if data is None:
                return 0
            message = marshal.loads(data)
            if message[0] == "packed":  # each span its own marshalled fields
                exporter.export(spans_of([marshal.loads(one) for one in message[1]], resource))  # it logs what it could not send
            elif message[0] == "spans":
                exporter.export(spans_of(message[1], resource))
            elif message[0] == "resource":
                resource = Resource(message[1], message[2])
            elif message[0] == "flush":
                answers.write(HEADER.pack(message[1]))
                answers.flush()
    finally:
        exporter.shutdown()


if __name__ == "__main__":
    sys.exit(main())
