"""The engines that integration and e2e tests need, found through their settings or started here.

An engine is never silently missing (STYLE, Tests): in CI (`CI` set) a test that needs one fails
when it cannot be reached; elsewhere it skips, saying why and how to start the engine.

PostgreSQL: eventsourcing's own `POSTGRES_*` variables name the server (`make test` exports them);
without them, `scripts/postgres.sh start` starts the project's development server and prints them.
Each test gets a store of its own, a fresh schema (`POSTGRES_SCHEMA`) dropped afterwards, so tests
can share one server.

OpenSearch: `OPENSEARCH_URL` when set (`make test` exports it after starting the project's node);
else, where a Docker engine answers, testcontainers' OpenSearch; else the project's own node from
Maven Central (`scripts/opensearch.sh start`). The variable is taken out of the environment at
import, so only tests that ask for OpenSearch use it; each of them gets indices of its own.

Under pytest-xdist every worker asks for the engines itself; both scripts hold a lock while they
start one, so the first worker starts it and the others reuse the one that answers.
"""

from __future__ import annotations

import functools
import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    import psycopg

PROJECT = Path(__file__).resolve().parents[1]
POSTGRES_KEYS = ("POSTGRES_HOST", "POSTGRES_PORT", "POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DBNAME")
HOW_TO_START_POSTGRES = "start one with `make postgres` (Debian: apt-get install postgresql), or set POSTGRES_*"
# Taken out of the environment, so that only the tests that ask for OpenSearch (through the
# fixtures) use it: every other app and server of the suite keeps its in-memory read model.
GIVEN_OPENSEARCH_URL = os.environ.pop("OPENSEARCH_URL", None)


def engine_missing(reason: str) -> NoReturn:
    """Fails the test in CI, where every engine must be there; skips it elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (in CI every engine must run)", pytrace=False)
    pytest.skip(reason)


def postgres() -> dict[str, str]:
    """eventsourcing's POSTGRES_* settings of a server that answers (started if need be)."""
    settings, reason = _find_postgres()
    if settings is None:
        engine_missing(f"{reason}; {HOW_TO_START_POSTGRES}")
    return settings


@contextmanager
def postgres_schema(settings: dict[str, str]) -> Iterator[dict[str, str]]:
    """The settings of a fresh, empty store on the server: a schema of its own, dropped afterwards."""
    from psycopg import sql

    schema = f"test_{uuid.uuid4().hex[:16]}"
    with _connect(settings) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        yield {"PERSISTENCE_MODULE": "eventsourcing.postgres", **settings, "POSTGRES_SCHEMA": schema}
    finally:
        with _connect(settings) as connection:
            connection.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@functools.cache
def _find_postgres() -> tuple[dict[str, str] | None, str]:
    """Once per test session: the settings, or None and why there are none."""
    if os.environ.get("POSTGRES_HOST"):
        settings = {key: os.environ.get(key, "") for key in POSTGRES_KEYS}
        settings["POSTGRES_PORT"] = settings["POSTGRES_PORT"] or "5432"
        where = "the server that POSTGRES_* name"
    else:
        try:
            started = subprocess.run(
                [str(PROJECT / "scripts" / "postgres.sh"), "start"], capture_output=True, text=True, timeout=180
            )
        except subprocess.TimeoutExpired:
            return None, "scripts/postgres.sh start did not finish within 180 s"
        if started.returncode != 0:
            said = " / ".join(started.stderr.strip().splitlines()[-3:])
            return None, f"scripts/postgres.sh could not start PostgreSQL ({said})"
        settings = dict(word.split("=", 1) for word in started.stdout.strip().splitlines()[-1].split())
        where = "the server that scripts/postgres.sh started"
    try:
        with _connect(settings) as connection:
            connection.execute("SELECT 1")
    except Exception as error:  # noqa: BLE001 - any reason the server cannot be used is the reason to report
        why = " ".join(str(error).split())
        return None, f"{where} ({settings['POSTGRES_HOST']}:{settings['POSTGRES_PORT']}) does not answer: {why}"
    return settings, ""


def _connect(settings: dict[str, str]) -> psycopg.Connection:
    """Imports psycopg late: without libpq it cannot load, and that is a reason to report, not a crash."""
    import psycopg

    return psycopg.connect(
        host=settings["POSTGRES_HOST"],
        port=settings["POSTGRES_PORT"],
        user=settings["POSTGRES_USER"],
        password=settings["POSTGRES_PASSWORD"],
        dbname=settings["POSTGRES_DBNAME"],
        connect_timeout=5,
        autocommit=True,
    )


def docker_available() -> bool:
    try:
        import docker  # noqa: PLC0415 - only where the tests ask for a container

        docker.from_env().ping()
    except Exception:  # noqa: BLE001 - no engine, no socket, no permission: all mean "no Docker"
        return False
    return True


def opensearch_node(port: int | None = None, node_dir: Path | None = None) -> str:
    """Starts (or reuses) a node with the project's script; answers its URL."""
    env = dict(os.environ)
    if port is not None:
        env["OPENSEARCH_PORT"] = str(port)
    if node_dir is not None:
        env["OPENSEARCH_NODE_DIR"] = str(node_dir)
    started = subprocess.run([str(PROJECT / "scripts" / "opensearch.sh"), "start"], env=env, capture_output=True, text=True, timeout=600)
    if started.returncode != 0:
        raise RuntimeError(f"scripts/opensearch.sh start failed: {started.stderr.strip()[-2000:]}")
    return started.stdout.strip().splitlines()[-1]


def stop_opensearch_node(port: int, node_dir: Path) -> None:
    env = dict(os.environ, OPENSEARCH_PORT=str(port), OPENSEARCH_NODE_DIR=str(node_dir))
    subprocess.run([str(PROJECT / "scripts" / "opensearch.sh"), "stop"], env=env, capture_output=True, timeout=120, check=True)


def opensearch_url() -> Iterator[str]:
    """Session fixture body: yields the URL of a running OpenSearch."""
    if GIVEN_OPENSEARCH_URL:
        yield GIVEN_OPENSEARCH_URL
        return
    if docker_available():
        from testcontainers.opensearch import OpenSearchContainer  # noqa: PLC0415

        with OpenSearchContainer("opensearchproject/opensearch:2.19.1") as container:
            config = container.get_config()
            yield f"http://{config['host']}:{config['port']}"
        return
    try:
        yield opensearch_node()
    except RuntimeError as error:
        engine_missing(f"no OpenSearch: OPENSEARCH_URL is unset, no Docker engine, and the node did not start: {error}")
