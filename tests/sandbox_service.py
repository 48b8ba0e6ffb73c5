"""A `toolsmith sandbox` process for tests: start it on a free port, read what it logged, stop it.

Used by the sandbox contract suite (tests/contract) and the API tests against a remote sandbox.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandbox.remote import RemoteSandbox
from testing.launcher import launch, stop
from tests.helpers import free_port

SECRET = "contract-test-sandbox-secret"
PROJECT = Path(__file__).resolve().parents[1]


@dataclass
class SandboxService:
    """A `toolsmith sandbox` process; everything it prints goes to `log_path`."""

    url: str
    log_path: Path
    process: subprocess.Popen

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_records(self) -> list[dict[str, Any]]:
        records = []
        for line in self.output.splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                pass  # the banner and warnings are plain text
        return records


_RUNNING: list[SandboxService] = []


def service_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "entrypoints.cli", "sandbox", *args]


def service_env(**settings: str) -> dict[str, str]:
    """The test runner's environment without its own sandbox settings, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODESANDBOX_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(settings)
    return env


@contextmanager
def running_service(log_dir: Path, *args: str, **settings: str) -> Iterator[SandboxService]:
    """Starts `toolsmith sandbox` on a free port, waits for /healthz, and stops it with SIGTERM."""
    port = free_port()
    log_path = log_dir / f"sandbox-{port}.log"
    url = f"http://127.0.0.1:{port}"
    try:
        process = launch(service_command("--host", "127.0.0.1", "--port", str(port), *args), url=url, log_path=log_path,
                         env=service_env(**settings), cwd=PROJECT, name="toolsmith sandbox")
    except RuntimeError as failed:
        pytest.fail(str(failed))
    service = SandboxService(url=url, log_path=log_path, process=process)
    try:
        _RUNNING.append(service)
        yield service
    finally:
        if service in _RUNNING:
            _RUNNING.remove(service)
        stop(process)


@contextmanager
def service_log_on_failure(request: pytest.FixtureRequest) -> Iterator[None]:
    """Prints what each running service logged during the test, when the test failed."""
    offsets = {id(s): len(s.output) for s in _RUNNING}
    failures = request.session.testsfailed
    yield
    if request.session.testsfailed == failures:
        return
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else _nothing():
        for service in _RUNNING:
            print(f"\n---- {service.url} logged during {request.node.name} ({service.log_path}) ----")
            print(service.output[offsets.get(id(service), 0):] or "(nothing)")


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def remote(service: SandboxService, *, secret: str | None = SECRET, **options: Any) -> RemoteSandbox:
    options.setdefault("caller_name", "contract-tests")
    options.setdefault("capability_profile", "default")
    return RemoteSandbox(service.url, secret=secret, **options)
