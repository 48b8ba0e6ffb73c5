"""The API with `CODESANDBOX_URL` naming a `toolsmith sandbox` service (docs/sandbox.md): tests, publishes
and tool calls run there, and a sandbox that refuses the API's secret is a 503, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from entrypoints.compose import bootstrap
from infrastructure.settings import Settings
from sandbox.remote import RemoteSandbox
from tests.sandbox_service import SECRET, SandboxService, running_service, service_log_on_failure
from tests.helpers import ADMIN_TOKEN, expect, unique_id

BASE = "/api/v1/admin/code-modules"


@pytest.fixture(scope="module")
def sandbox_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxService]:
    with running_service(tmp_path_factory.mktemp("sandbox-service"), CODESANDBOX_SECRET=SECRET) as service:
        yield service


@pytest.fixture(autouse=True)
def _print_service_log_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    with service_log_on_failure(request):
        yield


def api_client(tmp_path: Path, service: SandboxService, secret: str) -> TestClient:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, sandbox_url=service.url, sandbox_secret=secret)
    return TestClient(create_app(bootstrap(settings)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


def test_the_api_runs_tests_publishes_and_tool_calls_in_the_remote_sandbox(tmp_path: Path, sandbox_service: SandboxService) -> None:
    with api_client(tmp_path, sandbox_service, SECRET) as client:
        assert isinstance(client.app.state.services.sandbox, RemoteSandbox)
        # publish a library and a tool that imports it: publish checks both in the sandbox
        lib, greet = unique_id("lib"), unique_id("greet")
        expect(client.post(BASE, json={"id": lib, "description": "d", "draftContent": "exports.hello = function (n) { return 'Hello ' + n; };"}), 201)
        assert client.post(f"{BASE}/{lib}/publish").status_code == 200
        source = f"exports.run = function (input) {{ log('greeting ' + input.name); return {lib}.hello(input.name); }};"
        tool = {"inputParameters": [{"name": "name", "required": True}]}
        created = client.post(BASE, json={"id": greet, "description": "greets", "draftContent": source, "draftImports": [lib], "tool": tool})
        assert created.status_code == 201, created.text
        assert client.post(f"{BASE}/{greet}/publish").status_code == 200
        # the Test window
        tested = client.post(f"{BASE}/test", json={"draftContent": source, "draftImports": [lib], "tool": tool, "input": {"name": "Ada"}})
        assert tested.status_code == 200, tested.text
        assert tested.json() | {"durationMillis": 0} == {"output": "Hello Ada", "error": None, "logs": ["greeting Ada"], "durationMillis": 0}
        # a failure of the code is a result, as with the embedded sandbox
        failed = client.post(f"{BASE}/test", json={"draftContent": "exports.run = function () { throw new Error('boom'); };"})
        assert failed.status_code == 200 and failed.json()["error"] == {"type": "runtime", "message": "Error: boom"}
        # the tool call (a plan's DIRECT_TOOL path)
        called = client.post(f"/api/v1/tools/{greet}/call", json={"name": "Grace"})
        assert called.status_code == 200, called.text
        assert called.json()["output"] == "Hello Grace"


def test_a_publish_that_would_break_an_importer_is_refused_by_the_remote_check(tmp_path: Path, sandbox_service: SandboxService) -> None:
    with api_client(tmp_path, sandbox_service, SECRET) as client:
        lib, report = unique_id("dates"), unique_id("report")
        expect(client.post(BASE, json={"id": lib, "description": "d", "draftContent": "exports.year = function (d) { return d.slice(0, 4); };"}), 201)
        expect(client.post(f"{BASE}/{lib}/publish"), 200)
        expect(client.post(BASE, json={"id": report, "description": "d", "draftContent": f"exports.run = function (i) {{ return {lib}.year(i.day); }};",
                                       "draftImports": [lib], "tool": {}}), 201)
        assert client.post(f"{BASE}/{report}/publish").status_code == 200
        # the library renames year: its importer would break
        expect(client.put(f"{BASE}/{lib}", json={"draftContent": "exports.yearOf = function (d) { return d.slice(0, 4); };"}), 200)
        refused = client.post(f"{BASE}/{lib}/publish")
        assert refused.status_code == 422, refused.text
        assert refused.json()["failingModule"] == report and refused.json()["error"]["type"] == "link"


def test_with_a_wrong_secret_the_api_answers_503_not_500(tmp_path: Path, sandbox_service: SandboxService) -> None:
    with api_client(tmp_path, sandbox_service, "not-the-sandbox-secret") as client:
        module = unique_id()
        assert client.post(BASE, json={"id": module, "description": "d", "draftContent": "exports.run = () => 1;", "tool": {}}).status_code == 201
        for response in (client.post(f"{BASE}/test", json={"draftContent": "exports.run = () => 1;"}), client.post(f"{BASE}/{module}/publish")):
            assert response.status_code == 503, response.text
            assert response.headers["content-type"] == "application/problem+json"
            assert response.json()["code"] == "sandbox-unavailable"
            assert "refused the shared secret" in response.json()["detail"]
            assert "not-the-sandbox-secret" not in response.text
        # nothing was published
        assert client.get(f"{BASE}/{module}").json()["state"] == "UNPUBLISHED"
