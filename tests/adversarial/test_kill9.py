"""`kill -9` of a `toolsmith serve` in the middle of a burst of writes (issue 12, family 5).

Eight clients create and publish modules as fast as they can; the server is killed with SIGKILL
(its sandbox workers with it) while they write, then started again on the same store. Every write
that was acknowledged (a 2xx received) must be there, `toolsmith audit verify` must exit 0, and
the store must take new writes. On the embedded SQLite store and on PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests import engines
from tests.adversarial.conftest import ADMIN_TOKEN, CODE_MODULES, TOOLSMITH, Probe, descendants, start_probe

CLIENTS = 8
BURST_SECONDS = 2.0


def burst_then_kill(probe: Probe) -> tuple[set[str], set[str]]:
    """Writes from CLIENTS threads until the server dies; the ids whose create, and whose publish,
    were acknowledged."""
    created: set[str] = set()
    published: set[str] = set()
    lock = threading.Lock()
    stop = threading.Event()

    def client(n: int) -> None:
        with httpx.Client(base_url=probe.server.url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=10) as http:
            i = 0
            while not stop.is_set():
                id = f"k{n}_{i}"
                i += 1
                try:
                    made = http.post(CODE_MODULES, json={"id": id, "description": f"burst {n}", "draftContent": f"exports.run = function () {{ return {i}; }};", "tool": {}})
                    if made.status_code == 201:
                        with lock:
                            created.add(id)
                    else:
                        assert made.status_code < 500, made.text
                        continue
                    done = http.post(f"{CODE_MODULES}/{id}/publish")
                    if done.status_code == 200:
                        with lock:
                            published.add(id)
                    else:
                        assert done.status_code < 500, done.text
                except httpx.TransportError:
                    return  # the server is gone

    assert probe.server.process is not None
    with ThreadPoolExecutor(CLIENTS) as pool:
        futures = [pool.submit(client, n) for n in range(CLIENTS)]
        time.sleep(BURST_SECONDS)
        family = [probe.server.process.pid, *descendants(probe.server.process.pid)]
        for pid in family:  # the server and its sandbox processes, as a machine crash would
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        probe.server.process.wait(10)
        stop.set()
        for future in futures:
            future.result(30)
    return created, published


def audit_verify(probe: Probe) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSMITH_")}
    env.update(probe.server.env)
    return subprocess.run([str(TOOLSMITH), "audit", "verify", "--data-dir", str(probe.server.data_dir)], capture_output=True, text=True, timeout=300, env=env)


def check_after_restart(probe: Probe, created: set[str], published: set[str]) -> None:
    assert created, "no write was acknowledged before the kill"
    print(f"acknowledged before the kill: {len(created)} creates, {len(published)} publishes")
    probe.server.start()
    verified = audit_verify(probe)
    assert verified.returncode == 0, verified.stdout[-2000:] + verified.stderr[-2000:]
    missing = [id for id in sorted(created) if probe.send("GET", f"{CODE_MODULES}/{id}").status_code != 200]
    assert not missing, f"{len(missing)} of {len(created)} acknowledged creates are gone: {missing[:10]}"
    unpublished = [id for id in sorted(published) if probe.send("GET", f"{CODE_MODULES}/{id}").json()["published"] is None]
    assert not unpublished, f"{len(unpublished)} of {len(published)} acknowledged publishes are gone: {unpublished[:10]}"
    listed = probe.send("GET", CODE_MODULES, params={"limit": 1}).json()["total"]
    assert listed >= len(created)
    # the store takes writes again
    assert probe.send("POST", CODE_MODULES, json={"id": "after_the_kill", "description": "d", "draftContent": "exports.x = 1;"}).status_code == 201
    probe.assert_alive()
    probe.assert_no_secret_anywhere()


def test_kill_9_during_a_burst_of_writes_on_sqlite_loses_no_acknowledged_write(tmp_path: Path) -> None:
    probe = start_probe(tmp_path / "data")
    try:
        created, published = burst_then_kill(probe)
        check_after_restart(probe, created, published)
    finally:
        probe.close()


@pytest.fixture
def postgres_store() -> Iterator[dict[str, str]]:
    with engines.postgres_schema(engines.postgres()) as store:
        yield store


def test_kill_9_during_a_burst_of_writes_on_postgres_loses_no_acknowledged_write(tmp_path: Path, postgres_store: dict[str, str]) -> None:
    probe = start_probe(tmp_path / "data", **postgres_store)
    try:
        created, published = burst_then_kill(probe)
        check_after_restart(probe, created, published)
    finally:
        probe.close()
