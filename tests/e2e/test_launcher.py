"""The launcher's two ways of starting `toolsmith serve` (testing/launcher.py): a new process, and a
child of the fork server (testing/forkserver.py) that the tests use. A test sees no difference: the
process's own settings, working directory and output, its exit code after SIGTERM, and a refusal's
line and exit code are the same either way."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from testing.launcher import TOOLSMITH, Forked, Server, free_port, launch

WAYS = {"forked": "1", "new process": "0"}
TOKEN = "tsa_launcher-admin-token-0123456789abcdefghij"


@pytest.mark.parametrize("way", list(WAYS))
def test_a_server_has_its_own_settings_directory_output_and_exit_code(way: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSMITH_TEST_FORKS", WAYS[way])
    work = tmp_path / "work"
    work.mkdir()
    port = free_port()
    command = [str(TOOLSMITH), "serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", "relative-data"]
    env = Server(data_dir=tmp_path / "unused", env={"TOOLSMITH_ADMIN_TOKEN": TOKEN}).environment()
    process = launch(command, url=f"http://127.0.0.1:{port}", log_path=tmp_path / "serve.log", env=env, cwd=work)
    try:
        assert isinstance(process, Forked) == (way == "forked")
        # its own admin token (the environment it was given), its data dir relative to its own directory
        listed = httpx.get(f"http://127.0.0.1:{port}/api/v1/admin/code-modules", headers={"Authorization": f"Bearer {TOKEN}"})
        assert listed.status_code == 200, listed.text
        assert (work / "relative-data").is_dir()
        assert process.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(0.2)
    finally:
        process.terminate()
    assert process.wait(15) == -15  # uvicorn ends by the signal it was stopped with, as a new process does
    assert process.poll() == -15
    output = (tmp_path / "serve.log").read_text()
    assert f"serving on http://127.0.0.1:{port}" in output and "Finished server process" in output, output


@pytest.mark.parametrize("way", list(WAYS))
def test_a_refusal_is_the_same_line_and_exit_code(way: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLSMITH_TEST_FORKS", WAYS[way])
    server = Server(data_dir=tmp_path / "data", env={"TOOLSMITH_RATE_PER_SECOND": "fast"})
    with pytest.raises(RuntimeError) as refused:
        server.start(timeout=60)
    assert "toolsmith serve exited with code 2" in str(refused.value)
    assert "toolsmith serve: TOOLSMITH_RATE_PER_SECOND: " in server.output, server.output
