"""Metrics (docs/observability.md): the process's counters and histograms, in Prometheus' text format.

One `Metrics` per API process, its own `CollectorRegistry` (never prometheus_client's global one,
so that two apps in one process, as the tests make them, do not mix their counts):

- `toolsmith_tool_calls_total{tenant,tool,kind,via,outcome}` and
  `toolsmith_tool_call_duration_seconds{tenant,tool,kind,via}`, fed by the call log's one hook
  (`application.call_log.CallLog.observe`), which every way in passes once per call;
- `toolsmith_http_requests_total{route,method,status}` and
  `toolsmith_http_request_duration_seconds{route,method}`, fed by the edge (`entrypoints.web.Edge`)
  with the route's template (`route_label`), never the raw path;
- the gauges and counters other parts keep (the sandbox pool, the read model's lag, the call log's
  queue, ...), read at scrape time from the sources the composition root adds (`add_source`):
  nothing is updated per call for them.

The per-call cost is a dict lookup of the labelled children, then their `inc` and `observe`. The
labels are bounded: a tenant's tools beyond `max_tools` fold into `tool="other"`, a name the
catalog does not know (a 404) is `tool="(unknown)"`, a path no route matches is
`route="(unmatched)"`, a method outside HTTP's usual ones is `method="other"`.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, disable_created_metrics, generate_latest, start_http_server,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.routing import Mount

log = logging.getLogger("toolsmith.metrics")

CONTENT_TYPE = CONTENT_TYPE_LATEST
DEFAULT_MAX_TOOLS = 200
OTHER = "other"
UNKNOWN_TOOL = "(unknown)"
UNMATCHED = "(unmatched)"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Tool calls: from a fraction of a millisecond (a small code module) to the longest timeouts.
CALL_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
HTTP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

Source = Callable[[], Iterable[Metric]]

# No `_created` series beside each counter and histogram: they double what a scrape carries, and
# Prometheus' rate() does not need them.
disable_created_metrics()


class _Sources(Collector):
    """The metrics other parts keep, read when Prometheus scrapes (a failing source is skipped, and logged)."""

    def __init__(self) -> None:
        self.sources: list[Source] = []

    def collect(self) -> Iterable[Metric]:
        for source in list(self.sources):
            try:
                yield from list(source())
            except Exception as error:  # noqa: BLE001 - one source out of reach leaves the others' figures
                log.warning("a metrics source failed", extra={"source": getattr(source, "__name__", "?"),
                                                              "error": type(error).__name__})

    def describe(self) -> Iterable[Metric]:
        return ()  # collected at scrape time only: the registry does not ask them at registration


class Metrics:
    def __init__(self, *, max_tools: int = DEFAULT_MAX_TOOLS, token: str | None = None) -> None:
        """`max_tools`: the tools of one tenant that get a label of their own; `token`: the
        `TOOLSMITH_METRICS_TOKEN` that may read them besides the operator's (only its digest is kept)."""
        self.on = True  # the edge and the call log's hook skip their work while it is False (the benchmark's "off")
        self.max_tools = max_tools
        self._token_digest = hashlib.sha256(token.encode()).digest() if token else None
        self.registry = CollectorRegistry(auto_describe=False)
        self._calls = Counter("toolsmith_tool_calls", "Tool calls, by tenant, tool, kind, way in and outcome (ok or the error's type).",
                              ("tenant", "tool", "kind", "via", "outcome"), registry=self.registry)
        self._call_seconds = Histogram("toolsmith_tool_call_duration_seconds", "How long tool calls took in the service, in seconds.",
                                       ("tenant", "tool", "kind", "via"), buckets=CALL_BUCKETS, registry=self.registry)
        self._requests = Counter("toolsmith_http_requests", "HTTP requests answered, by route template, method and status.",
                                 ("route", "method", "status"), registry=self.registry)
        self._request_seconds = Histogram("toolsmith_http_request_duration_seconds",
                                          "Seconds from a request's arrival to its response's head, by route template and method.",
                                          ("route", "method"), buckets=HTTP_BUCKETS, registry=self.registry)
        self._sources = _Sources()
        self.registry.register(self._sources)
        # The labelled children, by their labels as the call gives them (a tool's name before its fold).
        self._call_children: dict[tuple[str, str, str, str, str], tuple[Any, Any]] = {}
        self._http_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._labelled: dict[str, set[str]] = {}  # each tenant's tools with a label of their own
        self._lock = threading.Lock()
        self._listener: Any = None
        self.address: tuple[str, int] | None = None  # where `listen` serves them
        # The app's routes (set by the app factory): a route FastAPI does not name in the scope (a
        # Starlette `Route`, a `Mount`) is found by its endpoint, which the scope holds.
        self.routes: Callable[[], Sequence[Any]] = tuple
        self._by_endpoint: dict[Any, list[Any]] | None = None

    # -- the call path ------------------------------------------------------------------------

    def tool_called(self, tenant: str, tool: str, kind: str | None, via: str, outcome: str, seconds: float, known: bool) -> None:
        """One tool call (`known`: the catalog knew the tool; else its name is the caller's, not a label)."""
        if not self.on:
            return
        children = self._call_children.get((tenant, tool, kind or "", via, outcome)) if known else None
        if children is None:
            children = self._call_labels(tenant, tool if known else None, kind or "", via, outcome)
        children[0].inc()
        children[1].observe(seconds)

    def _call_labels(self, tenant: str, tool: str | None, kind: str, via: str, outcome: str) -> tuple[Any, Any]:
        label = UNKNOWN_TOOL if tool is None else self._tool_label(tenant, tool)
        key = (tenant, label, kind, via, outcome)
        children = self._call_children.get(key)
        if children is None:
            with self._lock:
                children = self._call_children.get(key)
                if children is None:
                    children = (self._calls.labels(tenant, label, kind, via, outcome), self._call_seconds.labels(tenant, label, kind, via))
                    self._call_children[key] = children
        return children

    def _tool_label(self, tenant: str, tool: str) -> str:
        labelled = self._labelled.get(tenant)
        if labelled is not None:
            if tool in labelled:
                return tool
            if len(labelled) >= self.max_tools:  # full: the calls of the tenant's other tools take no lock
                return OTHER
        with self._lock:
            labelled = self._labelled.setdefault(tenant, set())
            if tool in labelled or len(labelled) < self.max_tools:
                labelled.add(tool)
                return tool
        return OTHER

    def request_done(self, route: str, method: str, status: int, seconds: float) -> None:
        """One HTTP request answered: `route` its template (`route_label`)."""
        key = (route, method, status)
        children = self._http_children.get(key)
        if children is None:
            label = method if method in METHODS else OTHER
            with self._lock:
                children = self._http_children.get(key)
                if children is None:
                    children = (self._requests.labels(route, label, str(status)), self._request_seconds.labels(route, label))
                    self._http_children[key] = children
        children[0].inc()
        children[1].observe(seconds)

    def route_label(self, scope: dict[str, Any], root: str) -> str:
        """The template of the route that answered `scope` (`/api/v1/tools/{name}/call`), with the
        prefix of the mounts it passed (`root`: the root path before the app saw it); a path no
        route took is `(unmatched)`."""
        template = scope.get("toolsmith.route")  # a hot route's (`api.direct`)
        if template is not None:
            return template
        route = scope.get("route")
        if route is None:
            endpoint = scope.get("endpoint")
            route = self._route_of(endpoint, scope) if endpoint is not None else None
        path = getattr(route, "path", None)
        if path is None:
            return UNMATCHED
        mounted = scope.get("root_path", "")[len(root):]
        if isinstance(route, Mount):  # an app of its own under the mount (static files): one label for all it serves
            return f"{mounted.removesuffix(path)}{path}/{{path}}"
        return f"{mounted}{path}"

    def _route_of(self, endpoint: Any, scope: dict[str, Any]) -> Any:
        by_endpoint = self._by_endpoint
        if by_endpoint is None:
            by_endpoint = {}
            for route in self.routes():
                target = getattr(route, "endpoint", None) or getattr(route, "app", None)
                if target is not None:
                    by_endpoint.setdefault(target, []).append(route)
            self._by_endpoint = by_endpoint
        candidates = by_endpoint.get(endpoint)
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        given = set(scope.get("path_params") or ())  # one endpoint on several paths (MCP's two): by their parameters
        for route in candidates:
            if set(getattr(route, "param_convertors", {})) == given:
                return route
        return None

    # -- scraping -----------------------------------------------------------------------------

    def add_source(self, source: Source) -> None:
        """A function answering metric families (`gauge`, `counter`), called at each scrape."""
        self._sources.sources.append(source)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def token_matches(self, presented: str | None) -> bool:
        """Whether `presented` is `TOOLSMITH_METRICS_TOKEN` (digests compared in constant time)."""
        if self._token_digest is None or not presented:
            return False
        return hmac.compare_digest(hashlib.sha256(presented.encode()).digest(), self._token_digest)

    def listen(self, address: str) -> tuple[str, int]:
        """Serves the metrics without a token on `address` (`host:port`): prometheus_client's own
        HTTP server, on a daemon thread of its own, off the event loop. Answers where it listens."""
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "0.0.0.0"
        server, _thread = start_http_server(int(port), addr=host, registry=self.registry)
        self._listener = server
        bound = server.server_address
        self.address = (str(bound[0]), int(bound[1]))
        return self.address

    def close(self) -> None:
        server, self._listener = self._listener, None
        self.address = None
        if server is not None:
            server.shutdown()
            server.server_close()


def gauge(name: str, documentation: str, labels: Iterable[str] = (), values: Iterable[tuple[Iterable[str], float]] = ()) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=list(labels))
    for label_values, value in values:
        family.add_metric(list(label_values), value)
    return family


def counter(name: str, documentation: str, labels: Iterable[str] = (), values: Iterable[tuple[Iterable[str], float]] = ()) -> CounterMetricFamily:
    """A counter kept elsewhere (`name` without `_total`: the exposition adds it)."""
    family = CounterMetricFamily(name, documentation, labels=list(labels))
    for label_values, value in values:
        family.add_metric(list(label_values), value)
    return family
