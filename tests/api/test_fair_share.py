"""Fair share of the sandbox between tenants (issue 19; docs/tenants.md): tenant alpha floods the
service with infinite loops while tenant beta goes about its work. Every one of beta's calls, tests
and publishes succeeds; alpha holds at most its share of sessions and is refused beyond it at once
with 429 `tenant-busy`. (Latency is the benchmark's, `python -m bench.tenants`: a shared test
machine is too noisy to assert it.)"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from api.services import Services
from entrypoints.web import create_app
from infrastructure.settings import Settings
from sandbox.embedded import EmbeddedSandbox
from tests.conftest import wire
from tests.helpers import expect

OPERATOR_TOKEN = "tso_fair-share-operator"
SHARE = 2
MODULES = "/api/v1/admin/code-modules"
SPIN = "exports.run = function () { for (;;) {} };"
COUNT = "exports.run = function (input) { return input.text.split('\\n').length; };"
TEXT = {"inputParameters": [{"name": "text", "type": "string", "required": True, "description": "a text"}]}


@dataclass
class Tenants:
    client: TestClient
    services: Services
    alpha: dict[str, str]
    beta: dict[str, str]


@pytest.fixture
def tenants(settings: Settings, shared_sandbox: EmbeddedSandbox) -> Iterator[Tenants]:
    # no request rate limit, a token's or a tenant's: the share of sandbox sessions is what is under
    # test, and refused calls come back as fast as the machine can send them (issue 28, finding 10)
    settings = settings.model_copy(update={"operator_token": SecretStr(OPERATOR_TOKEN), "tenant_max_sessions": SHARE,
                                           "rate_per_second": 0, "tenant_rate_per_second": 0})
    services = wire(settings, shared_sandbox)
    with TestClient(create_app(services)) as client:
        headers = {}
        for tenant in ("alpha", "beta"):
            made = expect(client.post("/api/v1/operator/tenants", json={"id": tenant, "name": tenant.title()},
                                      headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}), 201).json()
            headers[tenant] = {"Authorization": f"Bearer {made['adminToken']}"}
        # alpha's tool never ends; beta's counts lines
        expect(client.post(MODULES, json={"id": "spin", "description": "Spins", "draftContent": SPIN,
                                          "tool": {"timeoutMillis": 1000}}, headers=headers["alpha"]), 201)
        expect(client.post(f"{MODULES}/spin/publish", headers=headers["alpha"]), 200)
        expect(client.post(MODULES, json={"id": "count", "description": "Counts lines", "draftContent": COUNT, "tool": TEXT},
                           headers=headers["beta"]), 201)
        expect(client.post(f"{MODULES}/count/publish", headers=headers["beta"]), 200)
        yield Tenants(client, services, headers["alpha"], headers["beta"])


class Flood:
    """Threads of alpha's calling its infinite loop again and again (after a short pause when refused)."""

    def __init__(self, tenants: Tenants, threads: int) -> None:
        self.tenants = tenants
        self.answers: Counter[str] = Counter()
        self.retry_after: set[str | None] = set()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(threads)]

    def __enter__(self) -> Flood:
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + 10
        while not self.tenants.services.execution.tenant_busy("alpha"):
            assert time.monotonic() < deadline, "alpha's flood never took its share"
            time.sleep(0.01)
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self._threads:
            thread.join(10)

    def _loop(self) -> None:
        while not self.stop.is_set():
            answer = self.tenants.client.post("/api/v1/tools/spin/call", json={}, headers=self.tenants.alpha)
            body = answer.json()
            outcome = f"{answer.status_code} {body.get('code') or (body.get('error') or {}).get('type')}"
            with self._lock:
                self.answers[outcome] += 1
                if answer.status_code == 429:
                    self.retry_after.add(answer.headers.get("retry-after"))
            if answer.status_code == 429:
                time.sleep(0.02)


def test_one_tenant_flooding_the_sandbox_never_fails_another_tenant_calls(tenants: Tenants) -> None:
    client, beta = tenants.client, tenants.beta
    with Flood(tenants, threads=3 * SHARE) as flood:
        # beta's tool calls all answer, and right
        for n in range(1, 31):
            answer = expect(client.post("/api/v1/tools/count/call", json={"text": "\n".join("x" * n)}, headers=beta), 200).json()
            assert answer["error"] is None and answer["output"] == n
        # so do its tests of a draft and its publishes (each check a session of beta's own)
        tested = expect(client.post(f"{MODULES}/test", json={"draftContent": COUNT, "tool": TEXT, "input": {"text": "a\nb"}},
                                    headers=beta), 200).json()
        assert tested["output"] == 2
        expect(client.put(f"{MODULES}/count", json={"description": "Counts lines", "draftContent": COUNT + " // v2", "tool": TEXT},
                          headers=beta), 200)
        expect(client.post(f"{MODULES}/count/publish", headers=beta), 200)
        # alpha, meanwhile, is at its share, and a publish of its own is refused with it
        assert tenants.services.execution.tenant_busy("alpha")
        expect(client.put(f"{MODULES}/spin", json={"description": "Spins again", "draftContent": SPIN, "tool": {"timeoutMillis": 1000}},
                          headers=tenants.alpha), 200)
        refused = client.post(f"{MODULES}/spin/publish", headers=tenants.alpha)
        # (unless one of its loops just ended: then the publish takes that session, and passes)
        assert refused.status_code in (200, 429)
        if refused.status_code == 429:
            assert refused.json()["code"] == "tenant-busy"
        time.sleep(1.2)  # long enough for alpha's first loops to reach their timeout
    # alpha's calls beyond its share were refused at once, the others ran until their timeout
    assert set(flood.answers) <= {"429 tenant-busy", "200 timeout"}, flood.answers
    assert flood.answers["429 tenant-busy"] > 0 and flood.answers["200 timeout"] >= SHARE
    assert flood.retry_after == {"1"}


def test_a_tenant_share_is_its_own_whatever_the_other_holds(tenants: Tenants) -> None:
    execution = tenants.services.execution
    with Flood(tenants, threads=SHARE + 1):
        assert execution.tenant_busy("alpha") and not execution.tenant_busy("beta")
        # beta may take its whole share at once, beside alpha's
        answers: list[int] = []

        def call() -> None:
            answers.append(tenants.client.post("/api/v1/tools/count/call", json={"text": "a"}, headers=tenants.beta).status_code)

        callers = [threading.Thread(target=call) for _ in range(SHARE)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        assert answers == [200] * SHARE
