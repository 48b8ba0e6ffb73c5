"""A real Prometheus (Debian's package, scripts/prometheus.sh) scrapes a running `toolsmith serve`: with
TOOLSMITH_METRICS_TOKEN as its bearer token on the service's port, and without one on
TOOLSMITH_METRICS_ADDRESS; a PromQL query through its HTTP API returns the calls the test made. A
scrape job with a tenant's admin token gets nothing (the target is down: 403).

Without a Prometheus server the test skips, saying why; in CI (`CI=true`) it fails."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from testing.launcher import Server, free_port, launch, stop
from tests.e2e.conftest import printed_tokens

ROOT = Path(__file__).resolve().parents[2]
METRICS_TOKEN = "prometheus-scraper-token-0123456789"
CALLS = 7


def prometheus_binary() -> str:
    found = subprocess.run([str(ROOT / "scripts" / "prometheus.sh"), "binary"], capture_output=True, text=True)
    if found.returncode != 0:
        why = found.stderr.strip() or "no Prometheus server"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{why} (make test installs it when root: scripts/prometheus.sh install)")
        pytest.skip(f"{why} (scripts/prometheus.sh install)")
    return found.stdout.strip()


@pytest.fixture
def toolsmith(tmp_path: Path) -> Iterator[tuple[Server, int]]:
    metrics_port = free_port()
    running = Server(data_dir=tmp_path / "data", env={
        "TOOLSMITH_METRICS_TOKEN": METRICS_TOKEN, "TOOLSMITH_METRICS_ADDRESS": f"127.0.0.1:{metrics_port}"}).start()
    running.token = printed_tokens(running.output)[0]
    yield running, metrics_port
    if running.process is not None and running.process.poll() is None:
        running.stop()


def config(target: str, metrics_target: str, admin_token: str) -> str:
    return f"""
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: toolsmith
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: {METRICS_TOKEN}
    static_configs:
      - targets: ["{target}"]
  - job_name: toolsmith-address
    static_configs:
      - targets: ["{metrics_target}"]
  - job_name: tenant-token
    authorization:
      type: Bearer
      credentials: {admin_token}
    static_configs:
      - targets: ["{target}"]
"""


@pytest.fixture
def prometheus(tmp_path: Path, toolsmith: tuple[Server, int]) -> Iterator[str]:
    binary = prometheus_binary()
    server, metrics_port = toolsmith
    home = tmp_path / "prometheus"
    home.mkdir()
    (home / "prometheus.yml").write_text(config(f"127.0.0.1:{server.port}", f"127.0.0.1:{metrics_port}", server.token or ""))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = launch([binary, f"--config.file={home / 'prometheus.yml'}", f"--storage.tsdb.path={home / 'data'}",
                      f"--web.listen-address=127.0.0.1:{port}"], url=url, log_path=home / "prometheus.log",
                     env=dict(os.environ), ready_path="/-/ready", timeout=60)
    yield url
    stop(process)


def query(prometheus: str, promql: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": promql}, timeout=10)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "success", body
    return body["data"]["result"]


def eventually(prometheus: str, promql: str, wanted: Any, seconds: float = 45) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while True:
        result = query(prometheus, promql)
        if wanted(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{promql}: {result}")
        time.sleep(0.5)


def test_prometheus_scrapes_the_calls_the_test_made(toolsmith: tuple[Server, int], prometheus: str) -> None:
    server, _ = toolsmith
    with server.client() as client:
        made = client.post("/api/v1/admin/code-modules", json={
            "id": "addOne", "description": "adds one", "draftContent": "exports.run = function (i) { return i.n + 1; };",
            "tool": {"inputParameters": [{"name": "n", "type": "integer", "required": True}], "exposeInChat": True}})
        assert made.status_code == 201, made.text
        assert client.post("/api/v1/admin/code-modules/addOne/publish").status_code == 200
        for n in range(CALLS):
            answer = client.post("/api/v1/tools/addOne/call", json={"n": n})
            assert answer.status_code == 200 and answer.json()["output"] == n + 1, answer.text
        assert client.post("/api/v1/tools/addOne/call", json={"n": "x"}).status_code == 400
        assert client.post("/api/v1/tools/nothing-here/call", json={}).status_code == 404

    def value(result: list[dict[str, Any]]) -> float:
        return float(result[0]["value"][1]) if result else -1.0

    # both jobs, the token's and the address's, see the same process's calls
    ok = 'toolsmith_tool_calls_total{tool="addOne",via="rest",outcome="ok",kind="CODE",tenant="default"}'
    for job in ("toolsmith", "toolsmith-address"):
        result = eventually(prometheus, f'sum({ok[:-1]},job="{job}"}})', lambda r: value(r) == CALLS)
        assert value(result) == CALLS
    refused = eventually(prometheus, 'sum by (outcome) (toolsmith_tool_calls_total{job="toolsmith",outcome!="ok"})',
                         lambda r: len(r) == 2)
    assert {r["metric"]["outcome"]: float(r["value"][1]) for r in refused} == {"invalid-input": 1, "tool-not-found": 1}
    durations = eventually(prometheus, 'sum(toolsmith_tool_call_duration_seconds_count{job="toolsmith",tool="addOne"})',
                           lambda r: value(r) == CALLS + 1)
    assert value(durations) == CALLS + 1
    requests = eventually(prometheus, 'sum(toolsmith_http_requests_total{job="toolsmith",route="/api/v1/tools/{name}/call",status="200"})',
                          lambda r: value(r) == CALLS)
    assert value(requests) == CALLS
    # the tenant's token is refused: that target is down, its scrape failed
    assert value(eventually(prometheus, 'up{job="tenant-token"}', lambda r: bool(r))) == 0
    assert value(query(prometheus, 'up{job="toolsmith"}')) == 1
    assert query(prometheus, 'toolsmith_tool_calls_total{job="tenant-token"}') == []
