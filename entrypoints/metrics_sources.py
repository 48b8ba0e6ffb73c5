"""The metrics' wiring (docs/observability.md): the call log's hook feeds the tool-call counters, and
what the other parts keep (the sandbox pool, the rate limiters, the read model, the call log's
queue, the extraction queue, a publish's checks, the engines' errors) is read at each scrape.

The engines' errors are counted where the service talks to them: OpenSearch by the client's
transport (`CountingTransport`, every request that raised), PostgreSQL by the event store's
recorder (`count_postgres_errors`: every error of the server out of its reads and writes).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from typing import Any

from opensearchpy import Transport
from prometheus_client.core import Metric

from application.call_log import CallLog
from application.execution import Execution
from infrastructure.metrics import Metrics, counter, gauge
from projections.runner import health

# Errors of each engine in this process (`CountingTransport`, `count_postgres_errors`).
ENGINE_ERRORS: dict[str, int] = {"opensearch": 0, "postgresql": 0}
_COUNTING = threading.Lock()


def _engine_error(engine: str) -> None:
    with _COUNTING:
        ENGINE_ERRORS[engine] += 1


class CountingTransport(Transport):
    """opensearch-py's transport, counting each request that raised (a refusal of the engine, a
    timeout, a connection lost) in `toolsmith_engine_errors_total{engine="opensearch"}`."""

    def perform_request(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().perform_request(*args, **kwargs)
        except Exception:
            _engine_error("opensearch")
            raise


_RECORDER_CALLS = ("insert_events", "select_events", "select_notifications", "max_notification_id", "max_tracking_id",
                   "insert_tracking", "has_tracking_id")


def count_postgres_errors(recorder: Any) -> None:
    """Wraps the PostgreSQL recorder's reads and writes so that each error of the server they raise
    is counted: psycopg's, or eventsourcing's translation of it (`PersistenceError`), but for an
    `IntegrityError` (a conflict of concurrent writers, which the store answers itself)."""
    import psycopg  # loaded only with a PostgreSQL event store (libpq)
    from eventsourcing.persistence import IntegrityError, PersistenceError

    def counted(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except IntegrityError:
                raise
            except (psycopg.Error, PersistenceError):
                _engine_error("postgresql")
                raise
        return call

    for name in _RECORDER_CALLS:
        function = getattr(recorder, name, None)
        if callable(function):
            setattr(recorder, name, counted(function))


def wire_metrics(metrics: Metrics, *, call_log: CallLog, execution: Execution, sandbox: Any, admission: Any,
                 store: Any, runner: Any, toolbox: Any, max_lag_seconds: float) -> None:
    """Every tool call counted once (the call log's one hook), and the scrape-time sources."""
    call_log.observe = metrics.tool_called

    def sandbox_pool() -> Iterable[Metric]:
        sessions = execution._sessions  # noqa: SLF001 - the share the composition root built for it
        if sessions is not None:
            yield gauge("toolsmith_sandbox_sessions_in_use", "Sandbox sessions each tenant holds now.", ("tenant",),
                        (((tenant,), held) for tenant, held in sessions.held_now().items()))
            yield counter("toolsmith_sandbox_tenant_refusals", "Sandbox sessions refused because the tenant held its share "
                          "(TOOLSMITH_TENANT_MAX_SESSIONS): nothing queues, a call past it is refused at once.", ("tenant",),
                          (((tenant,), count) for tenant, count in dict(sessions.refused).items()))
        stats = getattr(sandbox, "stats", None)
        if callable(stats):
            pool = stats()
            yield gauge("toolsmith_sandbox_workers", "Live sandbox worker processes.", values=[((), pool["workers"])])
            yield gauge("toolsmith_sandbox_workers_busy", "Sandbox workers running a program now.", values=[((), pool["busy"])])
            yield gauge("toolsmith_sandbox_sessions_active", "Sandbox sessions held now, every tenant together.",
                        values=[((), pool["sessions"])])
            yield counter("toolsmith_sandbox_workers_recycled", "Sandbox workers replaced: their calls done, killed "
                          "(timeout, memory) or lowered.", values=[((), pool["recycled"])])
            yield counter("toolsmith_sandbox_refusals", "Sandbox sessions refused because every session of the pool "
                          "was held (sandbox-busy).", values=[((), pool["refused"])])

    def limiters() -> Iterable[Metric]:
        yield counter("toolsmith_rate_limited", "Requests refused by a rate limiter: a token's rate, its tenant's, or "
                      "an address past its failed authentications.", ("limit",),
                      (((limit,), count) for limit, count in dict(admission.refused).items()))

    def read_side() -> Iterable[Metric]:
        read = health(store, runner, max_lag_seconds=max_lag_seconds)["readModel"]
        yield gauge("toolsmith_read_model_lag_events", "Events of the store not yet applied, by projection.", ("projection",),
                    (((name,), figures["lag"]) for name, figures in read["projections"].items() if figures["lag"] is not None))
        yield gauge("toolsmith_read_model_lag_seconds", "Age of the oldest event the read model has not applied.",
                    values=[((), read["lagSeconds"])])

    def call_records() -> Iterable[Metric]:
        yield gauge("toolsmith_call_log_queued", "Call records waiting to be written.", values=[((), len(call_log._queue))])  # noqa: SLF001
        yield counter("toolsmith_call_log_written", "Call records written.", values=[((), call_log.written)])
        yield counter("toolsmith_call_log_dropped", "Call records dropped for want of room in the queue (the calls "
                      "were answered; only counted).", values=[((), call_log.dropped)])
        yield counter("toolsmith_call_log_failed", "Call records a failing store could not take.", values=[((), call_log.failed)])

    def extraction() -> Iterable[Metric]:
        ingests = [ingest for kind in toolbox.kinds if (ingest := getattr(kind, "ingest", None)) is not None]
        yield gauge("toolsmith_extraction_queue", "Documents queued for text extraction or being extracted now.",
                    values=[((), sum(ingest.pending for ingest in ingests))])
        tenants: dict[str, tuple[int, int]] = {}
        for ingest in ingests:
            for tenant, (waiting, running) in ingest.extractions_by_tenant().items():
                was = tenants.get(tenant, (0, 0))
                tenants[tenant] = (was[0] + waiting, was[1] + running)
        yield gauge("toolsmith_extractions_queued", "Each tenant's extractions waiting for a worker.", ("tenant",),
                    (((tenant,), figures[0]) for tenant, figures in tenants.items()))
        yield gauge("toolsmith_extractions_running", "Each tenant's extractions running now.", ("tenant",),
                    (((tenant,), figures[1]) for tenant, figures in tenants.items()))

    def checks() -> Iterable[Metric]:
        yield counter("toolsmith_publish_checks", "A publish's checks (R10 with its examples) run, dry runs and "
                      "changesets included.", values=[((), execution.checks_run)])
        yield counter("toolsmith_publish_checks_refused", "A publish's checks that failed (and refused it).",
                      values=[((), execution.checks_refused)])

    def engines() -> Iterable[Metric]:
        yield counter("toolsmith_engine_errors", "Requests to OpenSearch and PostgreSQL that failed.", ("engine",),
                      (((engine,), count) for engine, count in dict(ENGINE_ERRORS).items()))

    for source in (sandbox_pool, limiters, read_side, call_records, extraction, checks, engines):
        metrics.add_source(source)
