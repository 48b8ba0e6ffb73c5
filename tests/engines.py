"""The real engines the integration tests need, found or started once per session.

OpenSearch: `OPENSEARCH_URL` when set (`make test` sets it after `make opensearch`); else, where a
Docker engine answers, testcontainers' OpenSearch; else the project's own node from Maven Central
(`scripts/opensearch.sh start`). In CI a missing engine fails the tests that need it; elsewhere
they are skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Taken out of the environment, so that only the tests that ask for OpenSearch (through the
# fixtures) use it: every other app and server of the suite keeps its in-memory read model.
GIVEN_OPENSEARCH_URL = os.environ.pop("OPENSEARCH_URL", None)


def missing(reason: str) -> None:
    """An engine a test needs is not there: a failure in CI, a skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI needs every engine)", pytrace=False)
    pytest.skip(reason)


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
    started = subprocess.run([str(ROOT / "scripts" / "opensearch.sh"), "start"], env=env, capture_output=True, text=True, timeout=600)
    if started.returncode != 0:
        raise RuntimeError(f"scripts/opensearch.sh start failed: {started.stderr.strip()[-2000:]}")
    return started.stdout.strip().splitlines()[-1]


def stop_opensearch_node(port: int, node_dir: Path) -> None:
    env = dict(os.environ, OPENSEARCH_PORT=str(port), OPENSEARCH_NODE_DIR=str(node_dir))
    subprocess.run([str(ROOT / "scripts" / "opensearch.sh"), "stop"], env=env, capture_output=True, timeout=120, check=True)


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
        missing(f"no OpenSearch: OPENSEARCH_URL is unset, no Docker engine, and the node did not start: {error}")
