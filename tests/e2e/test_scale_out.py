"""The scale-out of docker-compose.yml, without Docker: two `toolsmith serve` processes on one
PostgreSQL store and one OpenSearch index, fed by one `toolsmith projections run` process. A write
through either API is listed at once by both, and the two keep one consistent read side.

The runner polls only once a minute here, longer than a write waits for it: a write is listed when
answered only because the store's NOTIFY woke the runner and the runner's announcement woke the API
(issue 15, 7). Writes that wait hold no worker thread, so reads go on while sixty of them wait."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import TOOLSMITH, Server
from tests.helpers import ADMIN_TOKEN, environment_without_settings

pytestmark = pytest.mark.e2e

BASE = "/api/v1/admin/code-modules"
HEADER = "Toolsmith-Read-Your-Writes"
# The runner's poll, and the bound of a write's wait: shorter, so only a notification ends it well.
POLL_SECONDS = 60
WAIT_SECONDS = 30
# The runner's heartbeat: a runner paused (SIGSTOP) for as long as a write waits is not yet counted
# dead (two silent heartbeats), so the writes waiting for it wait their bound.
HEARTBEAT_SECONDS = WAIT_SECONDS
# Three processes start here, on machines that CI shares: each gets longer than the usual 30 s.
STARTUP_SECONDS = 120
SOURCE = "exports.f = function (x) { return x + 1; }; exports.run = function (input) { return exports.f(input.x); };"


@pytest.fixture
def topology(postgres_store: dict[str, str], opensearch_url: str, opensearch_index: str,
             tmp_path: Path) -> Iterator[tuple[Server, Server, subprocess.Popen]]:
    env = {**postgres_store, "OPENSEARCH_URL": opensearch_url, "TOOLSMITH_OPENSEARCH_INDEX": opensearch_index,
           "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "TOOLSMITH_PROJECTION_RUNNER": "external",
           "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN, "CODESANDBOX_WORKERS": "1",
           "TOOLSMITH_PROJECTION_POLL_SECONDS": str(POLL_SECONDS), "TOOLSMITH_READ_YOUR_WRITES_SECONDS": str(WAIT_SECONDS),
           "TOOLSMITH_PROJECTION_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS)}
    one = Server(data_dir=tmp_path / "one", env=env, token=ADMIN_TOKEN).start(STARTUP_SECONDS)  # creates the tables
    runner_env = environment_without_settings()
    runner_env.update({k: v for k, v in env.items() if k != "TOOLSMITH_ADMIN_TOKEN"}, TOOLSMITH_DATA_DIR=str(tmp_path / "runner"))
    runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=runner_env,
                              stdout=(tmp_path / "runner.log").open("w"), stderr=subprocess.STDOUT)
    two = Server(data_dir=tmp_path / "two", env=env, token=ADMIN_TOKEN).start(STARTUP_SECONDS)
    _until_following(runner, tmp_path / "runner.log")
    yield one, two, runner
    for server in (one, two):
        server.stop()
    runner.terminate()
    assert runner.wait(timeout=30) == 0, (tmp_path / "runner.log").read_text()
    assert ADMIN_TOKEN not in (tmp_path / "runner.log").read_text() + one.output + two.output


def _until_following(runner: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while "following the event log" not in log.read_text():
        assert time.monotonic() < deadline and runner.poll() is None, log.read_text()
        time.sleep(0.1)


def test_two_apis_one_runner_share_one_read_side(topology: tuple[Server, Server, subprocess.Popen]) -> None:
    one, two, _ = topology
    with one.client() as first, two.client() as second:
        assert first.post(BASE, json={"id": "lib", "description": "A library", "draftContent": SOURCE}).status_code == 201
        assert first.post(f"{BASE}/lib/publish").status_code == 200
        # Written through the first API, listed by the second at once: the first answered only
        # after the runner had applied its write to the shared index.
        page = second.get(BASE, params={"state": "PUBLISHED"}).json()
        assert [m["id"] for m in page["collection"]] == ["lib"]

        for n in range(6):
            api = (first, second)[n % 2]
            body = {"id": f"user{n}", "description": f"Uses the library {n}", "draftContent": SOURCE,
                    "draftImports": ["lib"], "tool": {"tags": ["uses-lib"]}}
            assert api.post(BASE, json=body).status_code == 201
            listed = (second, first)[n % 2].get(BASE, params={"tag": "uses-lib"}).json()
            assert f"user{n}" in [m["id"] for m in listed["collection"]]
        assert second.get(f"{BASE}/lib/usage").json()["modules"] == [f"user{n}" for n in range(6)]
        assert first.delete(f"{BASE}/lib").status_code == 409  # R12, decided on the shared store

        for api in (first, second):
            page = api.get(BASE).json()
            assert page["total"] == 7
            assert page["facets"]["tags"] == {"uses-lib": 6}
            assert page["facets"]["state"] == {"PUBLISHED": 1, "DRAFT": 0, "UNPUBLISHED": 6}


def test_a_write_is_listed_by_the_other_api_when_answered_though_the_runner_polls_once_a_minute(
    topology: tuple[Server, Server, subprocess.Popen],
) -> None:
    one, two, _ = topology
    with one.client() as first, two.client() as second:
        for n in range(3):
            created = first.post(BASE, json={"id": f"woken{n}", "description": "d", "draftContent": SOURCE})
            # applied within the wait (30 s), long before the runner's next poll (60 s)
            assert created.status_code == 201 and HEADER not in created.headers, created.headers
            assert f"woken{n}" in [m["id"] for m in second.get(BASE).json()["collection"]]


def test_sixty_writes_waiting_for_a_paused_runner_leave_the_reads_their_threads(
    topology: tuple[Server, Server, subprocess.Popen],
) -> None:
    one, _, runner = topology
    os.kill(runner.pid, signal.SIGSTOP)  # the read side stops applying: every write waits its bound
    try:
        answers, read_while_waiting = asyncio.run(_sixty_writes_and_a_read(one, runner))
    finally:
        os.kill(runner.pid, signal.SIGCONT)
    assert read_while_waiting
    assert [a.status_code for a in answers] == [201] * 60
    # once the runner went on, each waiting write was answered as listed, none gave up
    assert [a.headers.get(HEADER) for a in answers] == [None] * 60


async def _sixty_writes_and_a_read(api: Server, runner: subprocess.Popen) -> tuple[list[httpx.Response], bool]:
    """Sixty writes in flight, all recorded and waiting for the paused runner; then a list and the
    health, answered while they all still wait (before, the writes held the API's 40 threads); then
    the runner goes on."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(base_url=api.url, headers=headers, timeout=WAIT_SECONDS * 3, limits=limits) as http:
        start = (await http.get("/healthz")).json()["eventStore"]["position"]
        writes = [asyncio.ensure_future(http.post(BASE, json={"id": f"waiting{n}", "description": "d", "draftContent": SOURCE}))
                  for n in range(60)]
        deadline = time.monotonic() + WAIT_SECONDS / 2
        while (await http.get("/healthz")).json()["eventStore"]["position"] < start + 60:
            assert time.monotonic() < deadline and not any(w.done() for w in writes), "the writes were not recorded"
            await asyncio.sleep(0.1)
        page = await http.get(BASE, params={"limit": 1})
        assert page.status_code == 200, page.text
        read_while_waiting = not any(w.done() for w in writes)
        os.kill(runner.pid, signal.SIGCONT)
        return list(await asyncio.gather(*writes)), read_while_waiting
