"""The scale-out of docker-compose.yml, without Docker: two `toolsmith serve` processes on one
PostgreSQL store and one OpenSearch index, fed by one `toolsmith projections run` process. A write
through either API is listed at once by both, and the two keep one consistent read side."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import TOOLSMITH, Server
from tests.helpers import ADMIN_TOKEN, environment_without_settings

pytestmark = pytest.mark.e2e

BASE = "/api/v1/admin/code-modules"
SOURCE = "exports.f = function (x) { return x + 1; }; exports.run = function (input) { return exports.f(input.x); };"


@pytest.fixture
def topology(postgres_store: dict[str, str], opensearch_url: str, opensearch_index: str,
             tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    env = {**postgres_store, "OPENSEARCH_URL": opensearch_url, "TOOLSMITH_OPENSEARCH_INDEX": opensearch_index,
           "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "TOOLSMITH_PROJECTION_RUNNER": "external",
           "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN, "CODESANDBOX_WORKERS": "1"}
    one = Server(data_dir=tmp_path / "one", env=env, token=ADMIN_TOKEN).start()  # creates the tables
    runner_env = environment_without_settings()
    runner_env.update({k: v for k, v in env.items() if k != "TOOLSMITH_ADMIN_TOKEN"}, TOOLSMITH_DATA_DIR=str(tmp_path / "runner"))
    runner = subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=runner_env,
                              stdout=(tmp_path / "runner.log").open("w"), stderr=subprocess.STDOUT)
    two = Server(data_dir=tmp_path / "two", env=env, token=ADMIN_TOKEN).start()
    yield one, two
    for server in (one, two):
        server.stop()
    runner.terminate()
    assert runner.wait(timeout=30) == 0, (tmp_path / "runner.log").read_text()
    assert ADMIN_TOKEN not in (tmp_path / "runner.log").read_text() + one.output + two.output


def test_two_apis_one_runner_share_one_read_side(topology: tuple[Server, Server]) -> None:
    one, two = topology
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
