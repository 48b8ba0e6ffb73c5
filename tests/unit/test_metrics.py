"""The metrics' pieces alone (docs/observability.md): the engines' error counters, the token check, the
route labels of routes FastAPI does not name, and the call log's hook when the log keeps nothing."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from opensearchpy import OpenSearch
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from starlette.routing import Mount, Route

from application.call_log import CallLog
from application.context import REST, CallContext
from application.principals import Principal
from domain.catalog import ToolEntry
from domain.ports import ExecutionResult
from entrypoints import metrics_sources
from entrypoints.metrics_sources import CountingTransport, count_postgres_errors
from infrastructure.metrics import Metrics


def test_a_failed_opensearch_request_is_counted() -> None:
    before = metrics_sources.ENGINE_ERRORS["opensearch"]
    client = OpenSearch(hosts=["http://127.0.0.1:9"], max_retries=0, timeout=2, transport_class=CountingTransport)
    with pytest.raises(OpenSearchConnectionError):
        client.info()
    assert metrics_sources.ENGINE_ERRORS["opensearch"] == before + 1


def test_a_failed_postgresql_read_is_counted_and_raised() -> None:
    class Recorder:
        def max_notification_id(self) -> int:
            raise psycopg.OperationalError("the server is gone")

        def select_events(self, *_: Any) -> list[Any]:
            return []

    recorder = Recorder()
    count_postgres_errors(recorder)
    before = metrics_sources.ENGINE_ERRORS["postgresql"]
    with pytest.raises(psycopg.OperationalError):
        recorder.max_notification_id()
    assert recorder.select_events("a") == []
    assert metrics_sources.ENGINE_ERRORS["postgresql"] == before + 1


def test_the_metrics_token_matches_itself_only() -> None:
    metrics = Metrics(token="right-token")
    assert metrics.token_matches("right-token")
    assert not metrics.token_matches("right-token ") and not metrics.token_matches("") and not metrics.token_matches(None)
    assert not Metrics().token_matches("anything")


def test_routes_found_by_their_endpoint_are_labelled_by_template() -> None:
    async def endpoint(*_: Any) -> None: ...

    static = object()
    routes = [Route("/mcp", endpoint), Route("/mcp/{server_id}", endpoint), Mount("/console/static", app=static)]  # type: ignore[arg-type]
    metrics = Metrics()
    metrics.routes = lambda: routes
    assert metrics.route_label({"endpoint": endpoint, "path_params": {}}, "") == "/mcp"
    assert metrics.route_label({"endpoint": endpoint, "path_params": {"server_id": "s1"}}, "") == "/mcp/{server_id}"
    assert metrics.route_label({"endpoint": static, "root_path": "/console/static"}, "") == "/console/static/{path}"
    assert metrics.route_label({"toolsmith.route": "/api/v1/tools/{name}/call"}, "") == "/api/v1/tools/{name}/call"
    assert metrics.route_label({"path": "/a/secret"}, "") == "(unmatched)"


def test_the_call_logs_hook_counts_calls_even_when_the_log_keeps_nothing() -> None:
    seen: list[tuple[Any, ...]] = []
    log = CallLog(None)
    log.observe = lambda *args: seen.append(args)
    context = CallContext(Principal("admin", "admin", "t1", token_id="k"), REST)
    entry = ToolEntry(name="echo", description="echoes", call_type="CODE", version=1)
    log.called("t1", "echo", entry, context, {"a": 1}, ExecutionResult(output=1), None, 0.0, 0.25)
    log.called("t1", "ghost", None, context, {}, None, "tool-not-found", 0.0, 0.0)
    assert seen == [("t1", "echo", "CODE", "rest", "ok", 0.25, True), ("t1", "ghost", None, "rest", "tool-not-found", 0.0, False)]
