"""`kill -9` of a `toolsmith serve` in the middle of a burst of writes (issue 12, family 5), and in
the middle of a single publish with dependents (issue 28, finding 12).

Eight clients create and publish modules as fast as they can; the server is killed with SIGKILL
(its sandbox workers with it) while they write, then started again on the same store. Every write
that was acknowledged (a 2xx received) must be there, `toolsmith audit verify` must exit 0, and
the store must take new writes. On the embedded SQLite store and on PostgreSQL.

A library with 24 importers is published again and again by one client (each publish checks every
importer in the sandbox) until the server is killed during one. After the restart the library's
published version is the last acknowledged one or the one in flight, whole; every importer runs
against it; the hash chain verifies; the read model (the embedded one, and OpenSearch) lists the
library at that version and the importers as importing it; and the next publish goes through.
On SQLite, PostgreSQL, and PostgreSQL with OpenSearch.
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
ACKNOWLEDGED_WITHIN = 120.0  # the longest a kill waits for a first acknowledged write


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
        # A loaded machine may not have answered a write yet: the kill waits for the first (or the
        # bound, after which the check names the miss).
        until = time.monotonic() + ACKNOWLEDGED_WITHIN
        while not created and time.monotonic() < until:
            time.sleep(0.05)
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


# -- kill -9 during a single publish with dependents (issue 28, finding 12) ---------------------------

IMPORTERS = 24
LIBRARY = "lib"


def library(value: int) -> str:
    return f"exports.value = function () {{ return {value}; }};"


def published_value(probe: Probe) -> tuple[int, int]:
    """The library's published version and the value its published source returns."""
    module = probe.send("GET", f"{CODE_MODULES}/{LIBRARY}").json()
    return module["published"]["version"], int(module["published"]["content"].split("return ")[1].split(";")[0])


def library_with_importers(probe: Probe) -> None:
    """`lib` published, and IMPORTERS tools that import it, each published (every publish of `lib`
    then checks all of them in the sandbox with the new version in place)."""
    assert probe.send("POST", CODE_MODULES, json={"id": LIBRARY, "description": "the library", "draftContent": library(0)}).status_code == 201
    assert probe.send("POST", f"{CODE_MODULES}/{LIBRARY}/publish").status_code == 200
    for k in range(IMPORTERS):
        source = f"exports.run = function (input) {{ return {{lib: lib.value(), me: {k}}}; }};"
        made = probe.send("POST", CODE_MODULES, json={"id": f"imp_{k}", "description": f"importer {k}", "draftContent": source,
                                                      "draftImports": [LIBRARY], "tool": {}})
        assert made.status_code == 201, made.text
        assert probe.send("POST", f"{CODE_MODULES}/imp_{k}/publish").status_code == 200


def kill_family(probe: Probe) -> None:
    """SIGKILL to the server and its sandbox processes at once, as a machine crash would."""
    assert probe.server.process is not None
    for pid in [probe.server.process.pid, *descendants(probe.server.process.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    probe.server.process.wait(10)


def publishes_then_kill(probe: Probe) -> tuple[int, int, int]:
    """One client publishing new versions of the library, one at a time, until the server is
    killed in the middle of one (BURST_SECONDS in, while a publish is checking the importers).
    Answers the last acknowledged (version, value) and the value of the publish in flight."""
    acknowledged = published_value(probe)
    in_flight = acknowledged[1]
    publishing = threading.Event()
    stop = threading.Event()

    def client() -> None:
        nonlocal acknowledged, in_flight
        with httpx.Client(base_url=probe.server.url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30) as http:
            value = acknowledged[1]
            while not stop.is_set():
                value += 1
                try:
                    changed = http.put(f"{CODE_MODULES}/{LIBRARY}", json={"draftContent": library(value)})
                    assert changed.status_code == 200, changed.text
                    in_flight = value
                    publishing.set()
                    done = http.post(f"{CODE_MODULES}/{LIBRARY}/publish")
                    publishing.clear()
                    assert done.status_code == 200, done.text
                    acknowledged = (done.json()["published"]["version"], value)
                except httpx.TransportError:
                    return  # the server is gone

    first = acknowledged[0]
    thread = threading.Thread(target=client)
    thread.start()
    time.sleep(BURST_SECONDS)
    until = time.monotonic() + ACKNOWLEDGED_WITHIN  # a loaded machine: the kill follows a first acknowledged publish
    while acknowledged[0] == first and thread.is_alive() and time.monotonic() < until:
        time.sleep(0.05)
    assert publishing.wait(30), "no publish started"
    kill_family(probe)
    stop.set()
    thread.join(30)
    return acknowledged[0], acknowledged[1], in_flight


def check_publish_after_restart(probe: Probe, version: int, value: int, in_flight: int) -> None:
    assert version > 1, "no publish was acknowledged before the kill"
    print(f"acknowledged before the kill: version {version} (value {value}); in flight: value {in_flight}")
    probe.server.start()
    verified = audit_verify(probe)
    assert verified.returncode == 0, verified.stdout[-2000:] + verified.stderr[-2000:]
    # nothing acknowledged is lost; the publish in flight landed whole or not at all
    now_version, now_value = published_value(probe)
    assert (now_version, now_value) in ((version, value), (version + 1, in_flight)), (now_version, now_value, version, value, in_flight)
    # every importer runs against that one published version
    outputs = [probe.send("POST", f"/api/v1/tools/imp_{k}/call", json={}).json() for k in range(IMPORTERS)]
    assert [(o["error"], o["output"]) for o in outputs] == [(None, {"lib": now_value, "me": k}) for k in range(IMPORTERS)], outputs
    # the read model catches up: it lists the library at that version, and every importer as importing it
    deadline = time.monotonic() + 60
    while True:
        listed = probe.send("GET", CODE_MODULES, params={"search": "imp_", "limit": 100})
        found = probe.send("GET", CODE_MODULES, params={"search": LIBRARY, "limit": 100})
        importers = [m for m in listed.json()["collection"] if m["imports"] == [LIBRARY]] if listed.status_code == 200 else []
        summary = next((m for m in found.json()["collection"] if m["id"] == LIBRARY), None) if found.status_code == 200 else None
        if len(importers) == IMPORTERS and summary and summary["publishedVersion"] == now_version:
            break
        assert time.monotonic() < deadline, f"the read model did not catch up: {len(importers)} importers listed, {summary}"
        time.sleep(0.5)
    used_by = probe.send("GET", f"{CODE_MODULES}/{LIBRARY}").json()["usedBy"]
    assert sorted(used_by) == sorted(f"imp_{k}" for k in range(IMPORTERS)), used_by
    # the store takes the next publish, and the importers see it
    assert probe.send("PUT", f"{CODE_MODULES}/{LIBRARY}", json={"draftContent": library(now_value + 100)}).status_code == 200
    assert probe.send("POST", f"{CODE_MODULES}/{LIBRARY}/publish").status_code == 200
    assert probe.send("POST", "/api/v1/tools/imp_0/call", json={}).json()["output"] == {"lib": now_value + 100, "me": 0}
    probe.assert_alive()
    probe.assert_no_secret_anywhere()


def test_kill_9_during_a_publish_with_dependents_on_sqlite(tmp_path: Path) -> None:
    probe = start_probe(tmp_path / "data")
    try:
        library_with_importers(probe)
        check_publish_after_restart(probe, *publishes_then_kill(probe))
    finally:
        probe.close()


def test_kill_9_during_a_publish_with_dependents_on_postgres(tmp_path: Path, postgres_store: dict[str, str]) -> None:
    probe = start_probe(tmp_path / "data", **postgres_store)
    try:
        library_with_importers(probe)
        check_publish_after_restart(probe, *publishes_then_kill(probe))
    finally:
        probe.close()


def test_kill_9_during_a_publish_with_dependents_on_postgres_and_opensearch(tmp_path: Path, postgres_store: dict[str, str],
                                                                            opensearch_url: str, opensearch_index: str) -> None:
    probe = start_probe(tmp_path / "data", **postgres_store, OPENSEARCH_URL=opensearch_url,
                        TOOLSMITH_OPENSEARCH_INDEX=opensearch_index, TOOLSMITH_OPENSEARCH_REPLICAS="0")
    try:
        library_with_importers(probe)
        check_publish_after_restart(probe, *publishes_then_kill(probe))
    finally:
        probe.close()
