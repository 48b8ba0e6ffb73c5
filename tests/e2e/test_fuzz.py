"""Property-based requests against every documented route: never a 5xx, only documented answers.

Schemathesis reads the service's own OpenAPI document and sends generated requests, valid and
invalid, to a running `toolsmith serve`, including sequences that create, publish and delete.
The seed is fixed so that CI is repeatable; run `schemathesis run` with other seeds to explore.

The routes are fuzzed in shards, each against a server of its own, so that the suite's workers
share the run; a shard holds whole collections (a collection's create, publish and delete stay
together for the stateful phase), and a test checks that the shards cover every route.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adversarial.test_auth_matrix import ROUTES
from tests.e2e.conftest import Server

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


# path regexes, each a shard of about the same size
SHARDS = {
    "modules": r"^/api/v1/admin/(code-modules|changesets)(/|$)",
    "prompts-resources": r"^/api/v1/admin/(prompts|resources)(/|$)",
    "file-search-and-api-tools": r"^/api/v1/admin/(search-tools|api-tools|secrets)(/|$)",
    "callers": r"^/api/v1/admin/(plans|agents|mcp-servers|usage-profiles|tools)(/|$)|^/api/v1/tools/",
    "people-tokens-calls-audit": r"^/api/v1/admin/(users|tokens|calls|audit)(/|$)|^/api/v1/operator/|^/healthz$",
}


def test_the_shards_cover_every_route_once() -> None:
    for _, path in ROUTES:
        shards = [name for name, pattern in SHARDS.items() if re.search(pattern, path)]
        assert len(shards) == 1, f"{path} is in {shards or 'no shard'}: give it one in SHARDS"


@pytest.mark.parametrize("shard", SHARDS)
def test_generated_requests_get_documented_answers_and_never_a_server_error(server: Server, shard: str) -> None:
    command = [
        str(SCHEMATHESIS),
        "run",
        f"{server.url}/openapi.json",
        "--include-path-regex",
        SHARDS[shard],
        "--header",
        f"Authorization: Bearer {server.token}",
        "--checks",
        CHECKS,
        "--max-examples",
        "30",
        "--seed",
        "20261130",
        "--workers",
        "1",  # one worker keeps a seed's run repeatable (and clear of the generator's own thread races)
        "--no-color",
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=600)
    report = finished.stdout[-6000:] + finished.stderr[-2000:]
    assert finished.returncode == 0, report
    assert "generated" in finished.stdout, report
    assert '"level": "error"' not in server.output, "the server logged an error during the run"
