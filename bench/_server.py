"""Serving a store written beforehand, for the benchmarks that measure a large one (bench.console,
bench.scale); the process itself is started by the shared launcher (testing/launcher.py)."""

from __future__ import annotations

import time

from testing.launcher import Server, launch


def serve_store(server: Server, modules: int, *, timeout: float, bench: str) -> float:
    """Starts `server` on a store written beforehand and waits until its read model holds every one
    of its `modules` (the rebuild at start, or a runner filling OpenSearch); answers the seconds it
    took. A benchmark cannot go on without it, so a failure ends the run naming `bench`."""
    started = time.perf_counter()
    try:
        server.process = launch(server.command(), url=server.url, log_path=server.log_path, env=server.environment(),
                                timeout=timeout, mode="w")
    except RuntimeError as failed:
        raise SystemExit(f"{bench}: {failed}") from None
    with server.client() as http:
        deadline = time.monotonic() + timeout
        while (total := http.get("/api/v1/admin/code-modules", params={"limit": 1}).json().get("total", 0)) < modules:
            if time.monotonic() > deadline:
                raise SystemExit(f"{bench}: the read model holds {total} of {modules} modules after {timeout:g} s")
            time.sleep(0.2)
    return time.perf_counter() - started
