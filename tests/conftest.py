"""Shared fixtures: settings on a temporary data dir, the wired services, an authenticated client,
and a PostgreSQL store of a test's own.

`make test` runs the tests on several pytest-xdist workers (processes) at once, so a test never
assumes it runs alone: its files go under `tmp_path` (each worker has its own), what listens takes
`free_port()`, ids come from `unique_id()`, a PostgreSQL store is a schema of its own
(`postgres_store`), an OpenSearch index an alias of its own (`opensearch_index`), and no test reads
or changes what other tests may hold at the same time (every schema or index of the server, an
engine setting that other tests depend on). Test ids are the same in every worker's collection: a
parameter is never made of the time, a pid or a random value."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as `toolsmith` sets it (entrypoints/cli.py), before NumPy loads

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from opensearchpy import OpenSearch

from entrypoints.web import create_app
from entrypoints.compose import Services, bootstrap
from infrastructure.settings import Settings
from sandbox.config import sandbox_config
from sandbox.embedded import EmbeddedSandbox

from testing import launcher
from tests import compiled_routes, engines

# The browser tests run in their own pytest invocation (`make test` runs it; see tests/browser).
collect_ignore = [] if os.environ.get("TOOLSMITH_BROWSER_TESTS") == "1" else ["browser"]
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, unique_id

# Every app a test builds shares one compilation of each route (see tests/compiled_routes.py).
compiled_routes.share()
# A real `toolsmith serve` (sandbox, projections run) is forked from a process that imported it
# once (testing/forkserver.py): its start costs no imports, which were the most of its CPU
# (TOOLSMITH_TEST_FORKS=0 starts each as a new process, as the benchmarks do).
launcher.use_fork_server()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN)


@pytest.fixture(scope="session")
def shared_sandbox() -> Iterator[EmbeddedSandbox]:
    """One pool of worker processes for every app the tests build with the default sandbox
    settings: starting a pool (its zygote imports QuickJS, Babel and httpx) takes a while."""
    pool = EmbeddedSandbox(sandbox_config(Settings(data_dir=Path("/nonexistent"))))
    yield pool
    pool.close()


def wire(settings: Settings, shared: EmbeddedSandbox) -> Services:
    """`bootstrap`, sharing the session's pool when the settings ask for exactly that sandbox."""
    if settings.sandbox_url == "embedded" and sandbox_config(settings) == shared.config:
        return bootstrap(settings, sandbox=shared)
    return bootstrap(settings)


@pytest.fixture
def services(settings: Settings, shared_sandbox: EmbeddedSandbox) -> Iterator[Services]:
    wired = wire(settings, shared_sandbox)
    wired.start()
    yield wired
    wired.close()


@pytest.fixture
def client(settings: Settings, shared_sandbox: EmbeddedSandbox) -> Iterator[TestClient]:
    """An HTTP client for a whole app (lifespan included), authenticated as the admin."""
    app = create_app(wire(settings, shared_sandbox))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


@pytest.fixture
def app(settings: Settings, shared_sandbox: EmbeddedSandbox) -> Iterator[FastAPI]:
    """An app started once (one lifespan, which every client of it shares: two lifespans would close
    one store twice), for tests that need clients of their own: the console's and the REST API's."""
    application = create_app(wire(settings, shared_sandbox))
    with TestClient(application):
        yield application


@pytest.fixture
def api(app: FastAPI) -> TestClient:
    """The REST API of `app` with the admin's bearer token."""
    return TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


@pytest.fixture(scope="session")
def opensearch_url() -> Iterator[str]:
    """A running OpenSearch (see tests/engines.py); the tests share it, each with its own indices."""
    yield from engines.opensearch_url()


@pytest.fixture(scope="session")
def opensearch(opensearch_url: str) -> Iterator[OpenSearch]:
    client = OpenSearch(hosts=[opensearch_url], timeout=30)
    yield client
    client.close()


@pytest.fixture
def opensearch_index(opensearch: OpenSearch) -> Iterator[str]:
    """An alias name of the test's own; its indices are deleted afterwards."""
    alias = unique_id("ts-test").lower().replace("_", "-")
    yield alias
    opensearch.indices.delete(index=f"{alias}*", ignore_unavailable=True, allow_no_indices=True, expand_wildcards="all")


@pytest.fixture(scope="session")
def postgres() -> dict[str, str]:
    """eventsourcing's POSTGRES_* settings of a running server; fails in CI, skips elsewhere, without one."""
    return engines.postgres()


@pytest.fixture
def postgres_store(postgres: dict[str, str]) -> Iterator[dict[str, str]]:
    """The settings (PERSISTENCE_MODULE, POSTGRES_*) of an empty store of this test's own."""
    with engines.postgres_schema(postgres) as store:
        yield store


@pytest.fixture(scope="session")
def keycloak() -> "testing.keycloak.Keycloak":
    """A running Keycloak with the realm `toolsmith` (testing/keycloak.py); fails in CI, skips elsewhere, without one."""
    from testing import keycloak as found

    try:
        return found.find()
    except found.KeycloakMissing as missing:
        engines.engine_missing(f"Keycloak: {missing}; {found.HOW_TO_START}")
