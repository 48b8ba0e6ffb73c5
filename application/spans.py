"""The tool call's span (docs/observability.md, traces): made only inside a recording span (a
request's, when traces are on), so that with traces off a call pays one look at the current span.

Its attributes name the tool, its kind and version, the tenant, the way in and the outcome (`ok`
or the error's type, as the call log says it): never an argument, a result or a secret."""

from __future__ import annotations

from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, StatusCode

from application.context import CONSOLE, MCP, REST, CallContext
from domain import calls
from domain.catalog import ToolEntry
from domain.ports import ExecutionResult

_TRACER = trace.get_tracer("toolsmith")
_VIA = {REST: calls.REST, MCP: calls.MCP, CONSOLE: calls.PLAYGROUND}


def tool_call(tenant: str, name: str, entry: ToolEntry | None, context: CallContext, *, via: str | None = None,
              kind: str | None = None) -> tuple[Span, object] | None:
    """The started and current span of a call of `name`, with the token that ends its being
    current; None when no recording span is current (traces off). `via` and `kind` for a run of
    what is no tool of the catalog (a module's Test of its draft)."""
    if not trace.get_current_span().is_recording():
        return None
    attributes: dict[str, Any] = {
        "toolsmith.tool": name, "toolsmith.tenant": tenant,
        "toolsmith.via": via or (calls.PLAN if context.plan_step is not None else _VIA.get(context.way_in, context.way_in)),
    }
    if kind is not None:
        attributes["toolsmith.kind"] = kind
    if entry is not None:
        attributes["toolsmith.kind"] = entry.call_type
        version = getattr(entry, "version", None)
        if version is not None:
            attributes["toolsmith.version"] = version
    span = _TRACER.start_span(f"tool.call {name}", attributes=attributes)
    return span, otel_context.attach(trace.set_span_in_context(span))


def ended(traced: tuple[Span, object], result: ExecutionResult | None, error: BaseException | None) -> None:
    """Ends the span of `tool_call` with the call's outcome."""
    span, token = traced
    if result is not None:
        outcome = calls.OK if result.error is None else result.error.type
    elif error is not None:
        outcome = getattr(error, "code", None) or type(error).__name__
    else:
        outcome = "cancelled"
    span.set_attribute("toolsmith.outcome", str(outcome))
    if outcome != calls.OK:
        span.set_attribute("error.type", str(outcome))
        span.set_status(StatusCode.ERROR)
    otel_context.detach(token)  # type: ignore[arg-type]
    span.end()
