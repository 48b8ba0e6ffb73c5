"""Fixtures of the contract suites: every sandbox backend, and a running sandbox service."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from domain.ports import Sandbox
from sandbox.config import SandboxConfig
from sandbox.factory import embedded_sandbox
from tests.sandbox_service import SECRET, SandboxService, remote, running_service, service_log_on_failure


@pytest.fixture(autouse=True)
def _print_service_log_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    with service_log_on_failure(request):
        yield


@pytest.fixture(scope="session")
def sandbox_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxService]:
    with running_service(tmp_path_factory.mktemp("sandbox-service"), CODESANDBOX_SECRET=SECRET) as service:
        yield service


@pytest.fixture(scope="module", params=["embedded", "remote"])
def sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """Each contract case runs against the embedded runner and against a `toolsmith sandbox`."""
    if request.param == "embedded":
        backend = embedded_sandbox(SandboxConfig())
    else:
        backend = remote(request.getfixturevalue("sandbox_service"))
    yield backend
    backend.close()  # type: ignore[attr-defined]
