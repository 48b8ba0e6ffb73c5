"""Issue 12, finding 11b, with the runner as its own process (`toolsmith projections run`) on the
real OpenSearch node: killed, its death shows in /healthz (the oldest unapplied event ages past
TOOLSMITH_READ_MODEL_MAX_LAG_SECONDS) and each write's answer carries `Toolsmith-Read-Your-Writes`.
Before, /healthz stayed `ok` and every write waited 5 s, then answered 2xx with no sign.

Issue 28, finding 11: the runner proves it is alive by a heartbeat in the index, so its death shows
in /healthz with nothing written, and a write waiting for it stops waiting once it is known dead."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import TOOLSMITH, Server
from tests.helpers import ADMIN_TOKEN, environment_without_settings

pytestmark = pytest.mark.e2e

BASE = "/api/v1/admin/code-modules"
HEADER = "Toolsmith-Read-Your-Writes"
MAX_LAG = 2.0


def _start_runner(env: dict[str, str], tmp_path: Path) -> subprocess.Popen:
    runner_env = environment_without_settings()
    runner_env.update(env, TOOLSMITH_DATA_DIR=str(tmp_path / "data"))
    log = tmp_path / "runner.log"
    runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=runner_env,
                              stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while "following the event log" not in log.read_text():
        assert time.monotonic() < deadline and runner.poll() is None, log.read_text()
        time.sleep(0.1)
    return runner


def _health_until(server: Server, alive: bool) -> dict:
    """/healthz, asked until it says the runner is `alive` (a minute at most: a machine's speed
    decides how soon, the heartbeat's rule whether)."""
    deadline = time.monotonic() + 60
    while (health := httpx.get(f"{server.url}/healthz").json())["readModel"]["runner"]["alive"] is not alive:
        assert time.monotonic() < deadline, health
        time.sleep(0.1)
    return health


def _create(http: httpx.Client, module_id: str) -> httpx.Response:
    created = http.post(BASE, json={"id": module_id, "description": module_id, "draftContent": "exports.x = 1;"})
    assert created.status_code == 201, created.text
    return created


def test_a_killed_projections_runner_shows_in_health_and_in_each_writes_answer(
    tmp_path: Path, opensearch_url: str, opensearch_index: str
) -> None:
    env = {"OPENSEARCH_URL": opensearch_url, "TOOLSMITH_OPENSEARCH_INDEX": opensearch_index,
           "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN,
           "TOOLSMITH_PROJECTION_RUNNER": "external", "TOOLSMITH_READ_YOUR_WRITES_SECONDS": "3",
           "TOOLSMITH_READ_MODEL_MAX_LAG_SECONDS": str(MAX_LAG),
           # The lag tells of the death here: the heartbeat's silence would, at its own pace, only later.
           "TOOLSMITH_PROJECTION_HEARTBEAT_SECONDS": "120"}
    server = Server(data_dir=tmp_path / "data", env=env, token=ADMIN_TOKEN).start()
    runner_env = environment_without_settings()
    runner_env.update(env, TOOLSMITH_DATA_DIR=str(tmp_path / "data"))
    runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=runner_env,
                              stdout=(tmp_path / "runner.log").open("w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while "following the event log" not in (tmp_path / "runner.log").read_text():
            assert time.monotonic() < deadline and runner.poll() is None, (tmp_path / "runner.log").read_text()
            time.sleep(0.1)
        with server.client() as http:
            # alive: the write is listed when answered, nothing is marked, health is ok
            created = _create(http, "alive")
            assert HEADER not in created.headers
            assert [m["id"] for m in http.get(BASE).json()["collection"]] == ["alive"]
            health = httpx.get(f"{server.url}/healthz").json()
            assert health["status"] == "ok", health
            assert health["readModel"]["runner"] == {"mode": "external", "alive": True}

            runner.send_signal(signal.SIGKILL)
            runner.wait(timeout=30)
            # dead: the write still succeeds, but its answer says the list may not show it
            created = _create(http, "dead")
            assert created.headers[HEADER] == "timeout"
            assert [m["id"] for m in http.get(BASE).json()["collection"]] == ["alive"]
            time.sleep(MAX_LAG + 0.5)
            health = httpx.get(f"{server.url}/healthz").json()
            assert health["status"] == "degraded", health
            read_model = health["readModel"]
            assert read_model["lag"] == 1 and read_model["lagSeconds"] > MAX_LAG
            assert read_model["runner"] == {"mode": "external", "alive": False}
            assert "is the projection runner running?" in read_model["problems"][0]
            # known dead: the next write does not wait for it at all
            created = _create(http, "dead2")
            assert created.headers[HEADER] == "unavailable"  # answered before its bound: it did not wait
    finally:
        if runner.poll() is None:
            runner.terminate()
            runner.wait(timeout=30)
        server.stop()


HEARTBEAT = 2.0


@pytest.fixture
def heartbeat_env(opensearch_url: str, opensearch_index: str) -> dict[str, str]:
    # The lag's limit and the write's bound far beyond the heartbeat's two intervals: only the
    # heartbeat can tell of the death, and a write that stops waiting stops before its bound.
    return {"OPENSEARCH_URL": opensearch_url, "TOOLSMITH_OPENSEARCH_INDEX": opensearch_index,
            "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN,
            "TOOLSMITH_PROJECTION_RUNNER": "external", "TOOLSMITH_READ_YOUR_WRITES_SECONDS": "20",
            "TOOLSMITH_READ_MODEL_MAX_LAG_SECONDS": "600", "TOOLSMITH_PROJECTION_HEARTBEAT_SECONDS": str(HEARTBEAT)}


@pytest.fixture
def api(tmp_path: Path, heartbeat_env: dict[str, str]) -> Iterator[Server]:
    server = Server(data_dir=tmp_path / "data", env=heartbeat_env, token=ADMIN_TOKEN).start()
    yield server
    server.stop()


def test_a_killed_runner_shows_dead_in_health_by_its_silent_heartbeat_with_nothing_written(
    tmp_path: Path, heartbeat_env: dict[str, str], api: Server
) -> None:
    runner = _start_runner(heartbeat_env, tmp_path)
    try:
        health = _health_until(api, alive=True)
        assert health["status"] == "ok", health
        time.sleep(3 * HEARTBEAT)  # nothing written for three heartbeats: still alive, by its beats
        health = httpx.get(f"{api.url}/healthz").json()
        assert health["status"] == "ok" and health["readModel"]["runner"] == {"mode": "external", "alive": True}, health

        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
        # nothing is written, and yet the death shows (before, /healthz said ok for as long as no write came)
        health = _health_until(api, alive=False)
        assert health["status"] == "degraded", health
        assert health["eventStore"]["position"] == 0 and health["readModel"]["lag"] == 0
        assert f"its heartbeat comes every {HEARTBEAT:g} s" in health["readModel"]["problems"][0], health
        with api.client() as http:
            # known dead: a write does not wait its 20 s for it
            assert _create(http, "dead").headers[HEADER] == "unavailable"

        # a new runner beats again (and applies the write); then a write in flight when it dies
        runner = _start_runner(heartbeat_env, tmp_path)
        health = _health_until(api, alive=True)
        assert health["status"] == "ok" and health["readModel"]["lag"] == 0, health
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
        with api.client() as http, ThreadPoolExecutor(1) as background:
            waiting = background.submit(_create, http, "in_flight")
            # it stops waiting once the heartbeat is stale, before its bound: `unavailable`, not `timeout`
            assert waiting.result(timeout=60).headers[HEADER] == "unavailable"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(timeout=30)
