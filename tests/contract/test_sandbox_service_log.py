"""An execution whose module's log lines the sandbox must not write to its own log
(`Execution.service_log`, issue 28: an API URL tool's post-processing reads an answer that may echo
the tool's secrets, and writes the lines itself once redacted) still gives them back in its
result, from either sandbox; only the sandbox's own log differs. The remote client says so with a
header, which the service reads."""

from __future__ import annotations

import dataclasses
import logging
import secrets

import pytest

from domain.ports import Execution, SourceUnit
from sandbox.config import SandboxConfig
from sandbox.embedded import EmbeddedSandbox
from tests.sandbox_service import SandboxService, remote


def logging_line(line: str) -> Execution:
    return Execution(units=(SourceUnit("echoes", f"exports.run = function () {{ log({line!r}); return 1; }};"),), input={})


def test_the_embedded_runner_leaves_the_lines_out_of_its_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolsmith.sandbox")
    quiet, heard = f"quiet-{secrets.token_hex(8)}", f"heard-{secrets.token_hex(8)}"
    pool = EmbeddedSandbox(SandboxConfig())
    try:
        assert pool.run(dataclasses.replace(logging_line(quiet), service_log=False)).logs == (quiet,)
        assert pool.run(logging_line(heard)).logs == (heard,)
    finally:
        pool.close()
    written = [getattr(record, "logLine", None) for record in caplog.records if record.getMessage() == "module log"]
    assert heard in written and quiet not in written


def test_the_sandbox_service_leaves_the_lines_out_of_its_log(sandbox_service: SandboxService) -> None:
    quiet, heard = f"quiet-{secrets.token_hex(8)}", f"heard-{secrets.token_hex(8)}"
    client = remote(sandbox_service)
    try:
        assert client.run(dataclasses.replace(logging_line(quiet), service_log=False)).logs == (quiet,)
        checked, runs = client.check_then_run(dataclasses.replace(logging_line(quiet), service_log=False), [{}])
        assert checked.error is None and runs[0].logs == (quiet,)
        assert client.run(logging_line(heard)).logs == (heard,)
    finally:
        client.close()
    assert heard in sandbox_service.output
    assert quiet not in sandbox_service.output
