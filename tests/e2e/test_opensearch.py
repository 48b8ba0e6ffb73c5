"""A running `toolsmith serve` on OpenSearch: read-your-writes with the runner in the API process
and as its own process, and writes that keep working while OpenSearch is stopped for 30 s."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import engines
from tests.e2e.conftest import TOOLSMITH, Server, printed_tokens
from tests.helpers import ADMIN_TOKEN, environment_without_settings, free_port

pytestmark = pytest.mark.e2e

BASE = "/api/v1/admin/code-modules"
SOURCE = "exports.run = function () { return 1; };"


def _env(url: str, alias: str, **extra: str) -> dict[str, str]:
    return {"OPENSEARCH_URL": url, "TOOLSMITH_OPENSEARCH_INDEX": alias, "TOOLSMITH_OPENSEARCH_REPLICAS": "0",
            "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN, **extra}


def _start(tmp_path: Path, env: dict[str, str]) -> Server:
    server = Server(data_dir=tmp_path / "data", env=env).start()
    server.token = ADMIN_TOKEN
    return server


def _create(http: httpx.Client, module_id: str, description: str, **extra: object) -> httpx.Response:
    body = {"id": module_id, "description": description, "draftContent": SOURCE, "draftImports": [], **extra}
    return http.post(BASE, json=body)


def _ids(http: httpx.Client, **params: object) -> list[str]:
    answer = http.get(BASE, params={"limit": 100, **params})
    assert answer.status_code == 200, answer.text
    return [m["id"] for m in answer.json()["collection"]]


def _read_your_writes(http: httpx.Client) -> None:
    for n in range(15):
        assert _create(http, f"m{n}", f"Module {n}", tool={"tags": ["even" if n % 2 == 0 else "odd"]}).status_code == 201
        assert f"m{n}" in _ids(http), f"m{n} is not listed right after its create"
        assert http.put(f"{BASE}/m{n}", json={"description": f"Changed {n}"}).status_code == 200
        assert http.get(BASE, params={"search": f"changed {n}"}).json()["total"] >= 1
    assert http.post(f"{BASE}/m0/publish").status_code == 200
    page = http.get(BASE, params={"state": "PUBLISHED"}).json()
    assert [m["id"] for m in page["collection"]] == ["m0"]
    assert http.get(BASE).json()["facets"]["tags"] == {"even": 8, "odd": 7}
    assert http.delete(f"{BASE}/m14").status_code == 204
    assert "m14" not in _ids(http)


def test_read_your_writes_with_the_runner_in_the_api(tmp_path: Path, opensearch_url: str, opensearch_index: str) -> None:
    server = _start(tmp_path, _env(opensearch_url, opensearch_index))
    try:
        with server.client() as http:
            _read_your_writes(http)
            health = httpx.get(f"{server.url}/healthz").json()
            assert health["status"] == "ok" and health["readModel"]["lag"] == 0
    finally:
        server.stop()


def test_read_your_writes_with_the_runner_as_its_own_process(tmp_path: Path, opensearch_url: str, opensearch_index: str) -> None:
    # The runner's process starts beside the first write: a loaded machine took longer than the
    # default bound a write waits for its read model (5 s), which the API then answers without.
    env = _env(opensearch_url, opensearch_index, TOOLSMITH_PROJECTION_RUNNER="external", TOOLSMITH_READ_YOUR_WRITES_SECONDS="60")
    server = _start(tmp_path, env)
    runner_env = environment_without_settings()
    runner_env.update(env, TOOLSMITH_DATA_DIR=str(tmp_path / "data"))
    runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=runner_env,
                              stdout=(tmp_path / "runner.log").open("w"), stderr=subprocess.STDOUT)
    try:
        with server.client() as http:
            _read_your_writes(http)
    finally:
        runner.terminate()
        runner.wait(timeout=30)
        server.stop()


@pytest.fixture
def own_node(tmp_path: Path) -> Iterator[tuple[str, int, Path]]:
    """An OpenSearch node of this test's own, which it may stop and start again."""
    port, node_dir = free_port(), tmp_path / "node"
    try:
        url = engines.opensearch_node(port, node_dir)
    except RuntimeError as error:
        engines.engine_missing(f"cannot start an OpenSearch node of the test's own: {error}")
    yield url, port, node_dir
    engines.stop_opensearch_node(port, node_dir)


def test_writes_go_on_while_opensearch_is_stopped_and_the_read_model_catches_up(tmp_path: Path, own_node: tuple[str, int, Path]) -> None:
    url, port, node_dir = own_node
    server = _start(tmp_path, _env(url, "toolsmith-modules"))
    try:
        with server.client() as http:
            assert _create(http, "before", "Written before the outage").status_code == 201
            engines.stop_opensearch_node(port, node_dir)

            written, lists = [], []
            stopped_at = time.monotonic()
            n = 0
            while time.monotonic() - stopped_at < 30:
                created = _create(http, f"during{n}", f"Written during the outage {n}")
                assert created.status_code == 201, created.text
                assert created.json()["draft"]["description"] == f"Written during the outage {n}"
                changed = http.put(f"{BASE}/during{n}", json={"description": f"Changed during the outage {n}"})
                assert changed.status_code == 200, changed.text
                written.append(f"during{n}")
                lists.append(http.get(BASE))
                n += 1
                time.sleep(1)
            assert len(written) >= 10
            for answer in lists:
                assert answer.status_code == 503
                assert answer.headers["content-type"].startswith("application/problem+json")
                assert answer.json()["code"] == "read-model-unavailable" and "Retry-After" in answer.headers
            assert httpx.get(f"{server.url}/healthz").json()["status"] == "degraded"
            # The event store stays the truth: every module is there, read from it.
            assert http.get(f"{BASE}/{written[-1]}").status_code == 200

            engines.opensearch_node(port, node_dir)
            deadline = time.monotonic() + 60
            while True:
                answer = http.get(BASE, params={"limit": 100})
                if answer.status_code == 200 and answer.json()["total"] == len(written) + 1:
                    break
                assert time.monotonic() < deadline, f"the read model did not catch up: {answer.text[:300]}"
                time.sleep(0.5)
            listed = {m["id"]: m["description"] for m in answer.json()["collection"]}
            assert listed == {"before": "Written before the outage",
                              **{f"during{i}": f"Changed during the outage {i}" for i in range(len(written))}}
    finally:
        server.stop()
    assert not printed_tokens(server.output)  # the admin token came from the environment, never printed
