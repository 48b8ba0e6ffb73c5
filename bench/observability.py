"""Benchmark: what seeing every call costs a call (issue 35, docs/observability.md): REST tool-call throughput
(`POST /api/v1/tools/addOne/call`, the request path's tool) with the metrics and the call log on, against
both off, in one run; goal ≥ 0.95.

One service (`bootstrap` on a temporary SQLite data dir, the embedded sandbox, no request rate) is served
by uvicorn on a thread of this process, and wrk (Debian's, `make bench` installs it) loads it from its
own process, with the request path's Lua script (`bench.request_path.wrk_script`: every answer checked).
Between rounds the service is switched, in place, between the modes: "off" is the call log that keeps
nothing (`CallLog(None)`, no metrics hook) and the metrics' edge counting off (`Metrics.on`); "on" is
the call log writing to `calls.sqlite` with the metrics' hook, and the edge counting every request.
"traces" is "on" with traces exported too: every request sampled (the SDK's default sampler), its
spans handed by the service's `RelayProcessor` to its exporter process, which sends them by OTLP/HTTP
to a receiver in a process of its own (`bench.traces.Exporting`); goal ≥ 0.9 of "off". "sampled" is
the same with one trace in `SAMPLED` kept (`parentbased_traceidratio`). The rounds alternate (on,
off, traces, sampled, then backwards, ...), so that a drift of the machine falls on every mode.

Each mode's CPU per call is read too: the service's process (every thread: the call log's writer
too) and the exporter process, from the start of a round until what it queued was written and
sent, divided by its calls. A service that its CPU bounds keeps off/on of its throughput. Last, the
CPU of a call's three spans, in the service and in the exporter process, against the SDK making
them alone (`bench.traces.traces_cpu`), and from it the ceiling of "traces" with the SDK: the CPU
of a call all off over it plus the spans' making alone.

Run: `python -m bench.observability [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench._common import Progress, Row, bench_settings, median, quartiles, standalone
from bench.traces import traces_cpu

TITLE = "Benchmark — seeing every call (issue 35): REST tool-call throughput with metrics and the call log on, against off; medians"
GOAL = 0.95
TRACES_GOAL = 0.9
CONNECTIONS = 4
# The "sampled" mode keeps one trace in this many (the SDK's ParentBased(TraceIdRatioBased)).
SAMPLED = 10


def _serve(app: Any) -> tuple[Any, threading.Thread, int]:
    import uvicorn

    from testing.launcher import free_port

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, name="bench-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise SystemExit("bench.observability: the service did not start")
        time.sleep(0.05)
    return server, thread, port


def modes(services: Any, exporting: Any = None) -> dict[str, Callable[[], None]]:
    """Each mode of the run, as a switch of the running service; "traces" and "sampled" with
    `exporting` (`bench.traces.Exporting`: spans exported by OTLP/HTTP to a receiver of its own),
    every trace kept, or one in `SAMPLED` (the SDK's `parentbased_traceidratio`)."""
    from application.call_log import CallLog

    on_log, off_log = services.toolbox.call_log, CallLog(None)
    metrics = services.metrics

    def switch(log: Any, metrics_on: bool, traces_on: bool = False, one_in: int | None = None) -> Callable[[], None]:
        def apply() -> None:
            log.flush(timeout=30)  # what the last round queued is written before this one is timed
            services.toolbox.call_log = services.execution.call_log = log
            metrics.on = metrics_on
            if exporting is not None:
                exporting.sample(one_in)
                exporting.switch(traces_on)
        return apply

    switches = {"on": switch(on_log, True), "off": switch(off_log, False)}
    if exporting is not None:  # metrics, the call log and traces on
        switches["traces"] = switch(on_log, True, traces_on=True)
        switches["sampled"] = switch(on_log, True, traces_on=True, one_in=SAMPLED)
    return switches


def throughput(seconds: float, rounds: int, progress: Progress) -> dict[str, list[float]]:
    import httpx

    from bench.request_path import Variant, run_wrk, wrk_script
    from bench.traces import Exporting
    from entrypoints.compose import bootstrap
    from entrypoints.web import create_app

    figures: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as data:
        tmp = Path(data)
        settings = bench_settings(tmp / "data").model_copy(update={"rate_per_second": 0, "tenant_rate_per_second": 0})
        services = bootstrap(settings)
        server, thread, port = _serve(create_app(services))
        exporting = Exporting()
        try:
            url = f"http://127.0.0.1:{port}"
            headers = {"Authorization": "Bearer x", "Content-Type": "application/json"}
            with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
                made = client.post("/api/v1/admin/code-modules", json={
                    "id": "addOne", "description": "adds one", "draftContent": "exports.run = function (input) { return input.n + 1; };",
                    "tool": {"inputParameters": [{"name": "n", "type": "integer", "required": True}], "exposeInChat": True}})
                assert made.status_code == 201, made.text
                assert client.post("/api/v1/admin/code-modules/addOne/publish").status_code == 200
            script = tmp / "call.lua"
            script.write_text(wrk_script("POST", "/api/v1/tools/addOne/call", '{"n":41}', '"output":42', headers))
            variant = Variant("REST call", url, script, CONNECTIONS)
            switches = modes(services, exporting)
            names = list(switches)

            def settle(name: str) -> None:
                services.toolbox.call_log.flush(timeout=30)
                if name in ("traces", "sampled"):
                    exporting.flush()
            run_wrk(variant, 2)  # warm: the catalog, the sandbox's workers, the labelled children
            for k in range(rounds):
                for name in (names if k % 2 == 0 else names[::-1]):
                    switches[name]()
                    cpu = time.process_time() + exporting.relay_cpu()
                    done = run_wrk(variant, seconds)
                    settle(name)  # what this round queued (records, spans) is written and sent within its figure
                    figures.setdefault(name, []).append(done["rate"])
                    used = time.process_time() + exporting.relay_cpu() - cpu  # the exporter process's CPU is the service's too
                    figures.setdefault(name + " cpu", []).append(used / done["requests"])
                progress("round " + str(k + 1) + ": " + ", ".join(f"{n} {figures[n][-1]:,.0f}/s" for n in names))
            switches["on"]()
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            exporting.close()
    figures["exported"] = [float(exporting.exported_at_close)]
    return figures


def metrics_cpu(n: int) -> float:
    """CPU seconds of the calling thread per call that the metrics add: the tool call's counter and
    histogram (`Metrics.tool_called`) and the request's (`Metrics.request_done`), labelled children cached."""
    from infrastructure.metrics import Metrics

    metrics = Metrics()
    metrics.tool_called("t", "addOne", "CODE", "rest", "ok", 0.001, True)
    metrics.request_done("/api/v1/tools/{name}/call", "POST", 200, 0.001)
    figures = []
    for _ in range(5):
        started = time.thread_time()
        for _ in range(n // 5):
            metrics.tool_called("t", "addOne", "CODE", "rest", "ok", 0.001, True)
            metrics.request_done("/api/v1/tools/{name}/call", "POST", 200, 0.001)
        figures.append((time.thread_time() - started) / (n // 5))
    return median(figures)


def cpu_row(mode: str, on: list[float], off: list[float]) -> Row:
    """The service's CPU per call in `mode` (every thread of the process: the writer's and the exporter's
    too, each round's records written and spans sent within it) against all off; the ratio is off / on,
    the throughput a service bound by its CPU would keep."""
    ratio = median(off) / median(on)
    low, high = quartiles([b / a for a, b in zip(on, off)])
    return Row(f"CPU of the service per call (all its threads), {mode} / all off", f"{median(on) * 1e6:.0f} µs",
               f"{median(off) * 1e6:.0f} µs", ratio, "", None, f"{low:.2f}–{high:.2f}")


def run(argv: Sequence[str] | None = None, *, quiet: bool = False) -> tuple[list[Row], dict[str, object]]:
    parser = argparse.ArgumentParser(prog="python -m bench.observability")
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    progress = Progress("observability", quiet=quiet)
    if shutil.which("wrk") is None:
        raise SystemExit("bench.observability: wrk is missing (apt-get install -y wrk; make bench installs it when root)")
    quick = args.quick
    seconds, rounds = (2, 4) if quick else (4, 8)
    cpu = metrics_cpu(50_000 if args.quick else 200_000)
    progress(f"metrics per call: {cpu * 1e6:.2f} µs of CPU")
    figures = throughput(seconds, rounds, progress)
    on, off = figures["on"], figures["off"]
    ratio = median(on) / median(off)
    low, high = quartiles([a / b for a, b in zip(on, off)])
    rows = [Row(f"REST tool calls a second (wrk -c{CONNECTIONS}), metrics + call log on / both off", f"{median(on):,.0f} /s",
                f"{median(off):,.0f} /s", ratio, f"≥ {GOAL}", ratio >= GOAL, f"{low:.2f}–{high:.2f}")]
    rows.append(cpu_row("metrics + call log on", figures["on cpu"], figures["off cpu"]))
    rows.append(Row("CPU per call of the metrics (tool call + HTTP request counters and histograms)", f"{cpu * 1e6:.2f} µs", "",
                    None, "", None, "cached children"))
    traced = figures["traces"]
    assert figures["exported"][0] > 0, "no span reached the receiver"
    ratio = median(traced) / median(off)
    low, high = quartiles([a / b for a, b in zip(traced, off)])
    rows.append(Row(f"REST tool calls a second (wrk -c{CONNECTIONS}), metrics + call log + traces exported by OTLP/HTTP / all off",
                    f"{median(traced):,.0f} /s", f"{median(off):,.0f} /s", ratio, f"≥ {TRACES_GOAL}", ratio >= TRACES_GOAL,
                    f"{low:.2f}–{high:.2f}"))
    rows.append(cpu_row("metrics + call log + traces on", figures["traces cpu"], figures["off cpu"]))
    # The ceiling of every call traced: the SDK's making of a call's three spans alone, nothing
    # exported, added to the CPU of a call with everything off (a service bound by its CPU).
    here, there, alone = traces_cpu(5_000 if quick else 20_000)
    progress(f"traces per call: {here * 1e6:.1f} µs of CPU here, {there * 1e6:.1f} µs in the exporter process, "
             f"{alone * 1e6:.1f} µs to make the spans alone")
    off_cpu = median(figures["off cpu"])
    rows.append(Row("CPU per call of a call's 3 spans in the service: made and handed to the exporter process / made alone",
                    f"{here * 1e6:.1f} µs", f"{alone * 1e6:.1f} µs", here / alone, "", None, f"exporter process {there * 1e6:.0f} µs"))
    ceiling = off_cpu / (off_cpu + alone)
    rows.append(Row("ceiling with every call traced: all-off CPU per call / (it + the SDK's 3 spans alone)",
                    f"{(off_cpu + alone) * 1e6:.0f} µs", f"{off_cpu * 1e6:.0f} µs", ceiling, f"(the goal: ≥ {TRACES_GOAL})", None,
                    "nothing exported, no metrics, no log"))
    kept = figures["sampled"]
    ratio = median(kept) / median(off)
    low, high = quartiles([a / b for a, b in zip(kept, off)])
    rows.append(Row(f"REST tool calls a second (wrk -c{CONNECTIONS}), metrics + call log + traces, 1 trace in {SAMPLED} kept "
                    f"(parentbased_traceidratio) / all off", f"{median(kept):,.0f} /s", f"{median(off):,.0f} /s", ratio,
                    f"≥ {TRACES_GOAL}", ratio >= TRACES_GOAL, f"{low:.2f}–{high:.2f}"))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return rows, {"load": load}


main = standalone(run, TITLE)


if __name__ == "__main__":
    sys.exit(main())
