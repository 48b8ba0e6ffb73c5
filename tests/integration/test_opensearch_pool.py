"""Issue 12, finding 11c: the OpenSearch client keeps as many connections as threads use it.

With urllib3's default pool of one connection, every concurrent request opened a connection of
its own and the pool dropped it afterwards, logging "Connection pool is full" each time (about
3,600 warnings a minute under load). A burst of concurrent list requests must log none.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from sandbox.embedded import EmbeddedSandbox
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN

BASE = "/api/v1/admin/code-modules"
THREADS = 32
REQUESTS = 320


def test_a_burst_of_concurrent_lists_logs_no_dropped_connection(
    tmp_path: Path, opensearch_url: str, opensearch_index: str, shared_sandbox: EmbeddedSandbox, caplog: pytest.LogCaptureFixture
) -> None:
    # The burst is one token's and one tenant's, sent as fast as the machine can: without their
    # request rate limits off, a fast machine gets 429s past the burst (issue 28, finding 10).
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, opensearch_url=opensearch_url,
                        opensearch_index=opensearch_index, opensearch_replicas=0,
                        rate_per_second=0, tenant_rate_per_second=0)
    app = create_app(wire(settings, shared_sandbox))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as http:
        for n in range(5):
            created = http.post(BASE, json={"id": f"m{n}", "description": f"Module {n}", "draftContent": "exports.x = 1;"})
            assert created.status_code == 201, created.text
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="urllib3"), ThreadPoolExecutor(THREADS) as pool:
            answers = list(pool.map(lambda n: http.get(BASE, params={"search": f"module {n % 5}"}), range(REQUESTS)))
    assert [a.status_code for a in answers] == [200] * REQUESTS
    assert all(a.json()["total"] == 1 for a in answers)
    dropped = [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()]
    assert dropped == [], f"{len(dropped)} connections dropped, the first: {dropped[:1]}"
