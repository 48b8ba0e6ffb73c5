"""Traces (docs/observability.md): with the SDK's in-memory exporter, the span tree of a REST call,
of MCP calls of both eras carrying `traceparent` in `_meta`, of a plan's nodes and of an API URL
tool's outbound request; their attributes, the trace id in the call record and in the log lines;
and, with traces off, nothing made and no exporter thread."""

from __future__ import annotations

import gc
import io
import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from entrypoints.web import create_app
from infrastructure import logs, tracing
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect, unique_id
from tests.upstream import Upstream, running

MODULES = "/api/v1/admin/code-modules"
API_TOOLS = "/api/v1/admin/api-tools"
PLANS = "/api/v1/admin/plans"
URL = "http://127.0.0.1:8000"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HANDSHAKE = "2025-11-25"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
SECRET_ARGUMENT = "do-not-trace-this-value"
SECRET_QUERY = "querysecret123"

# One provider for the whole run: the API's tracers (and the MCP SDK's) keep the provider they
# first found, so each test lends this one to the process and takes it back.
_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", _PROVIDER)
    monkeypatch.setattr(tracing, "ON", True)
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()
    # The tracers that found this provider (the MCP SDK's, the service's) forget it: later tests
    # of this process run with traces off, as a service without the settings does.
    for found in gc.get_objects():
        if type(found) is trace.ProxyTracer:
            found._real_tracer = None


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def client(tmp_path: Path, upstream: Upstream, shared_sandbox: Any, spans: InMemorySpanExporter) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def publish(client: TestClient, source: str = "exports.run = function (i) { return {echo: i.text}; };") -> str:
    name = unique_id("tool")
    tool = {"inputParameters": [{"name": "text", "type": "string", "required": True, "description": "a text"}], "exposeInChat": True}
    expect(client.post(MODULES, json={"id": name, "description": "echoes", "draftContent": source, "tool": tool}), 201)
    expect(client.post(f"{MODULES}/{name}/publish"), 200)
    return name


def api_tool(client: TestClient, upstream: Upstream) -> str:
    name = unique_id("weather")
    expect(client.post(API_TOOLS, json={
        "id": name, "description": "weather", "urlTemplate": upstream.url + "/v1/weather/{city}{?units}",
        "parameters": [{"name": "city", "type": "string", "required": True, "location": "path", "description": "the city"},
                       {"name": "units", "type": "string", "location": "query", "default": "metric"}],
    }), 201)
    return name


def finished(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(exporter.get_finished_spans())


def named(found: list[ReadableSpan], prefix: str) -> list[ReadableSpan]:
    return [span for span in found if span.name.startswith(prefix)]


def parent_of(span: ReadableSpan, found: list[ReadableSpan]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next((other for other in found if other.context.span_id == span.parent.span_id), None)


def every_attribute_text(found: list[ReadableSpan]) -> str:
    return json.dumps([{**dict(span.attributes or {}), "name": span.name} for span in found], default=str)


def test_a_rest_call_continues_the_callers_trace_with_a_tool_and_a_sandbox_span(client: TestClient,
                                                                                 spans: InMemorySpanExporter) -> None:
    name = publish(client)
    spans.clear()
    answer = client.post(f"/api/v1/tools/{name}/call", json={"text": SECRET_ARGUMENT}, headers={"traceparent": TRACEPARENT})
    assert answer.status_code == 200, answer.text
    found = finished(spans)
    [request] = named(found, "HTTP POST /api/v1/tools/")
    assert request.name == "HTTP POST /api/v1/tools/{name}/call"
    assert format(request.context.trace_id, "032x") == TRACE and format(request.parent.span_id, "016x") == PARENT
    assert request.kind == trace.SpanKind.SERVER and request.attributes["http.response.status_code"] == 200
    assert request.attributes["http.route"] == "/api/v1/tools/{name}/call"
    [tool] = named(found, "tool.call")
    assert parent_of(tool, found) is request
    assert tool.attributes["toolsmith.tool"] == name and tool.attributes["toolsmith.kind"] == "CODE"
    assert tool.attributes["toolsmith.version"] == 1 and tool.attributes["toolsmith.tenant"] == "default"
    assert tool.attributes["toolsmith.via"] == "rest" and tool.attributes["toolsmith.outcome"] == "ok"
    [visit] = named(found, "sandbox.visit")
    assert parent_of(visit, found) is tool
    wait, run = visit.attributes["toolsmith.sandbox.queue_wait_ms"], visit.attributes["toolsmith.sandbox.run_ms"]
    assert wait >= 0 and run > 0
    assert (visit.end_time - visit.start_time) / 1e6 >= run
    assert SECRET_ARGUMENT not in every_attribute_text(found)
    # the call record names the trace
    [record] = expect(client.get("/api/v1/admin/calls", params={"tool": name}), 200).json()
    assert record["traceId"] == TRACE


def test_a_failing_call_says_its_outcome_and_a_write_and_the_read_models_apply_have_spans(client: TestClient,
                                                                                       spans: InMemorySpanExporter) -> None:
    failing = publish(client, "exports.run = function () { throw new Error('no'); };")
    found = finished(spans)
    writes = named(found, "eventstore.write")
    assert writes and all(parent_of(write, found) is not None for write in writes)
    assert any(parent_of(write, found).name == "HTTP POST /api/v1/admin/code-modules" for write in writes)
    assert all(write.attributes["toolsmith.events"] >= 1 for write in writes)
    assert named(found, "readmodel.apply")
    spans.clear()
    expect(client.post(f"/api/v1/tools/{failing}/call", json={"text": "x"}), 200)
    [tool] = named(finished(spans), "tool.call")
    assert tool.attributes["toolsmith.outcome"] == "runtime" and tool.attributes["error.type"] == "runtime"
    spans.clear()
    expect(client.post(f"/api/v1/tools/{unique_id('ghost')}/call", json={}), 404)
    [tool] = named(finished(spans), "tool.call")
    assert tool.attributes["toolsmith.outcome"] == "tool-not-found"


def test_mcp_calls_of_both_eras_continue_the_trace_of_their_meta(client: TestClient, spans: InMemorySpanExporter) -> None:
    name = publish(client)
    opened = client.post("/mcp", headers=ACCEPT, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    session = opened.headers["mcp-session-id"]
    client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**ACCEPT, "Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE})
    eras = {
        "session": ({"Mcp-Session-Id": session, "Mcp-Protocol-Version": HANDSHAKE}, {}),
        "2026": ({"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}, MODERN_META),
    }
    for era, (headers, meta) in eras.items():
        spans.clear()
        trace_id = format(hash(era) & ((1 << 128) - 1) | 1, "032x")
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": name, "arguments": {"text": SECRET_ARGUMENT},
            "_meta": {**meta, "traceparent": f"00-{trace_id}-{PARENT}-01", "tracestate": "vendor=value"}}}
        answered = client.post("/mcp", json=body, headers={**ACCEPT, **headers})
        assert answered.status_code == 200 and "isError" in answered.text, (era, answered.text)
        found = finished(spans)
        [method] = [span for span in found if span.name == f"tools/call {name}"]
        assert format(method.context.trace_id, "032x") == trace_id, era
        assert format(method.parent.span_id, "016x") == PARENT, era
        assert method.context.trace_state.get("vendor") == "value", era
        [tool] = named(found, "tool.call")
        assert parent_of(tool, found) is method and tool.attributes["toolsmith.via"] == "mcp", era
        # the HTTP request's span continues the same trace (its access-log line says it)
        [request] = [span for span in found if span.kind == trace.SpanKind.SERVER and span.name.startswith("HTTP POST")]
        assert request.name == "HTTP POST /mcp", era
        assert format(request.context.trace_id, "032x") == trace_id and format(request.parent.span_id, "016x") == PARENT, era
        [visit] = named(found, "sandbox.visit")
        assert parent_of(visit, found) is tool, era
        assert SECRET_ARGUMENT not in every_attribute_text(found), era
        records = expect(client.get("/api/v1/admin/calls", params={"tool": name}), 200).json()
        assert records[0]["traceId"] == trace_id, era


def test_an_api_url_tools_outbound_request_has_a_client_span_without_its_query(client: TestClient, upstream: Upstream,
                                                                                spans: InMemorySpanExporter) -> None:
    name = api_tool(client, upstream)
    spans.clear()
    answer = expect(client.post(f"/api/v1/tools/{name}/call", json={"city": "Bern", "units": SECRET_QUERY},
                                headers={"traceparent": TRACEPARENT}), 200).json()
    assert answer["error"] is None
    found = finished(spans)
    [tool] = named(found, "tool.call")
    assert tool.attributes["toolsmith.kind"] == "API_URL"
    [outbound] = [span for span in found if span.kind == trace.SpanKind.CLIENT]
    assert parent_of(outbound, found) is tool and outbound.name == "HTTP GET"
    assert outbound.attributes["server.address"] == "127.0.0.1" and outbound.attributes["server.port"] == upstream.port
    assert outbound.attributes["http.response.status_code"] == 200 and outbound.attributes["http.request.method"] == "GET"
    text = every_attribute_text(found)
    assert SECRET_QUERY not in text and "Bern" not in text and "/v1/weather" not in text
    assert upstream.last("/v1/weather/").headers.get("traceparent") is None  # the trace stays here


def test_a_plans_nodes_are_tool_spans_of_the_plans_call(client: TestClient, spans: InMemorySpanExporter) -> None:
    first = publish(client)
    plan = unique_id("plan")
    expect(client.post(PLANS, json={"id": plan, "description": "two steps", "nodes": [{"toolName": first}, {"toolName": first}],
                                    "exposeAsTool": True}), 201)
    spans.clear()
    expect(client.post(f"/api/v1/tools/{plan}/call", json={"text": "a"}), 200)
    found = finished(spans)
    tools = named(found, "tool.call")
    [outer] = [span for span in tools if span.attributes["toolsmith.tool"] == plan]
    nodes = [span for span in tools if span.attributes["toolsmith.tool"] == first]
    assert len(nodes) == 2 and all(parent_of(node, found) is outer for node in nodes)
    assert all(node.attributes["toolsmith.via"] == "plan" for node in nodes)


def quiet_access_logger(monkeypatch: pytest.MonkeyPatch) -> None:
    """The access logger as `logs.configure` leaves it: a uvicorn server started in this process
    before (its default log config) gives it a handler of its own and a level."""
    monkeypatch.setattr(logs.ACCESS, "handlers", [])
    monkeypatch.setattr(logs.ACCESS, "level", logging.NOTSET)
    monkeypatch.setattr(logs.ACCESS, "disabled", False)


def test_every_log_line_of_a_request_carries_its_trace_id(client: TestClient, spans: InMemorySpanExporter,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    quiet_access_logger(monkeypatch)
    name = publish(client, "exports.run = function (i) { log('hello'); return 1; };")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logs.ACCESS.propagate)
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    logs.ACCESS.propagate = False
    try:
        expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "a"}, headers={"traceparent": TRACEPARENT}), 200)
        logging.getLogger("toolsmith.test").info("outside any request")
    finally:
        root.handlers[:], level, logs.ACCESS.propagate = saved
        root.setLevel(level)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    access = [line for line in lines if line["logger"] == "uvicorn.access"]
    assert access and access[-1]["traceId"] == TRACE and access[-1]["status"] == 200
    module = [line for line in lines if line["message"] == "module log"]
    assert module and all(line["traceId"] == TRACE for line in module)
    assert "traceId" not in lines[-1]  # no trace outside a request


def test_the_access_logs_fast_path_writes_the_trace_id(spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet_access_logger(monkeypatch)
    stream = io.StringIO()
    handler = logs.Lines(stream)
    handler.setFormatter(logs.JsonFormatter())
    monkeypatch.setattr(logs, "_CONFIGURED", handler)
    monkeypatch.setattr(logging.root, "handlers", [handler])
    monkeypatch.setattr(logs.ACCESS, "propagate", False)
    scope = {"method": "GET", "path": "/healthz", "client": ("127.0.0.1", 5000), "http_version": "1.1"}
    with trace.get_tracer("test").start_as_current_span("request") as span:
        logs.log_access(scope, 200, 0.001)
    logs.log_access(scope, 200, 0.001)
    handler.flush()
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["traceId"] == format(span.get_span_context().trace_id, "032x")
    assert "traceId" not in second


# -- off ------------------------------------------------------------------------------------------


def test_the_otel_settings_decide_whether_traces_are_on() -> None:
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert not tracing.wanted({})
    assert tracing.wanted(endpoint)
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"})
    assert not tracing.wanted({**endpoint, "OTEL_TRACES_EXPORTER": "none"})
    assert not tracing.wanted({**endpoint, "OTEL_SDK_DISABLED": "true"})
    assert tracing.wanted({**endpoint, "OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"})
    assert not tracing.wanted({**endpoint, "OTEL_TRACES_EXPORTER": "console"})


def test_configure_installs_the_batch_exporter_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.util._once import Once

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    monkeypatch.setattr(tracing, "ON", False)
    monkeypatch.setattr(tracing, "_PROVIDER", None)
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    assert not tracing.configure({**endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})  # not sent: traces stay off
    assert not tracing.configure({})
    assert not tracing.ON and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert not exporter_threads()
    assert tracing.configure({**endpoint, "OTEL_SERVICE_NAME": "toolsmith-test"})
    provider = trace.get_tracer_provider()
    try:
        assert tracing.ON and isinstance(provider, TracerProvider)
        assert provider.resource.attributes["service.name"] == "toolsmith-test"
        assert [thread.name for thread in exporter_threads()] == ["otel-span-relay"]  # tracing.RelayProcessor's
    finally:
        provider.shutdown()


def exporter_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.is_alive() and thread.name.lower().startswith("otel")]


def test_with_traces_off_nothing_is_made_and_no_exporter_thread_runs(tmp_path: Path, shared_sandbox: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    assert not tracing.ON
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        name = publish(client)
        expect(client.post(f"/api/v1/tools/{name}/call", json={"text": "a"}, headers={"traceparent": TRACEPARENT}), 200)
        assert not tracing.ON and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
        assert not exporter_threads() and not [thread for thread in threading.enumerate() if "otel" in thread.name.lower()]
        [record] = expect(client.get("/api/v1/admin/calls", params={"tool": name}), 200).json()
        assert record["traceId"] is None


def test_http_fetch_from_a_module_is_a_client_span_of_the_sandbox_visit(upstream: Upstream, spans: InMemorySpanExporter) -> None:
    from domain.ports import Execution, SourceUnit
    from sandbox.embedded import EmbeddedSandbox

    pool = EmbeddedSandbox(allowed_domains=upstream.allow, workers=1)
    source = ("exports.run = async function (input) {\n"
              "  const a = await http.fetch(input.url + '/v1/weather/Bern?units=" + SECRET_QUERY + "');\n"
              "  const b = await http.fetch(input.url + '/status/503');\n"
              "  return [a.status, b.status];\n"
              "};")
    try:
        with trace.get_tracer("test").start_as_current_span("call"):
            result = pool.run(Execution(units=(SourceUnit("fetcher", source),), input={"url": upstream.url}))
    finally:
        pool.close()
    assert result.error is None and result.output == [200, 503], result
    found = finished(spans)
    [visit] = named(found, "sandbox.visit")
    fetches = [span for span in found if span.kind == trace.SpanKind.CLIENT]
    assert [span.attributes["http.response.status_code"] for span in fetches] == [200, 503]
    assert all(parent_of(span, found) is visit for span in fetches)
    assert all(span.attributes["server.address"] == "127.0.0.1" and span.attributes["server.port"] == upstream.port
               and span.attributes["toolsmith.fetch"] == "http.fetch" for span in fetches)
    assert visit.start_time <= fetches[0].start_time <= fetches[0].end_time <= fetches[1].start_time <= visit.end_time
    text = every_attribute_text(found)
    assert SECRET_QUERY not in text and "/v1/weather" not in text and "/status" not in text


def test_a_remote_sandboxs_visit_is_one_span_of_its_round_trip(tmp_path: Path, spans: InMemorySpanExporter) -> None:
    from domain.ports import Execution, SourceUnit
    from tests.sandbox_service import SECRET, remote, running_service

    with running_service(tmp_path, CODESANDBOX_SECRET=SECRET) as service:
        sandbox = remote(service)
        try:
            with trace.get_tracer("test").start_as_current_span("call"):
                result = sandbox.run(Execution(units=(SourceUnit("adder", "exports.run = (i) => i.n + 1;"),), input={"n": 41}))
            sandbox.run(Execution(units=(SourceUnit("adder", "exports.run = (i) => i.n + 1;"),), input={"n": 1}))  # no trace: no span
        finally:
            sandbox.close()
    assert result.error is None and result.output == 42, result
    found = finished(spans)
    [visit] = named(found, "sandbox.visit")
    assert parent_of(visit, found).name == "call"
    assert visit.attributes["toolsmith.sandbox"] == "remote" and visit.attributes["http.response.status_code"] == 200
    assert visit.attributes["toolsmith.sandbox.run_ms"] > 0


def test_a_modules_test_run_is_a_tool_span_via_test(client: TestClient, spans: InMemorySpanExporter) -> None:
    name = unique_id("draft")
    draft = {"id": name, "draftContent": "exports.run = function (i) { return 1; };", "draftImports": [],
             "tool": {"inputParameters": [{"name": "text", "type": "string", "required": True}], "exposeInChat": True},
             "input": {"text": SECRET_ARGUMENT}}
    expect(client.post(f"{MODULES}/test", json=draft, headers={"traceparent": TRACEPARENT}), 200)
    found = finished(spans)
    [tool] = named(found, "tool.call")
    assert tool.attributes["toolsmith.via"] == "test" and tool.attributes["toolsmith.kind"] == "CODE"
    assert tool.attributes["toolsmith.outcome"] == "ok" and format(tool.context.trace_id, "032x") == TRACE
    [visit] = named(found, "sandbox.visit")
    assert parent_of(visit, found) is tool
    assert SECRET_ARGUMENT not in every_attribute_text(found)
