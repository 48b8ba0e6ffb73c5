"""`toolsmith serve` and the tools file: a bad file stops the start in one line that names the
file and each problem; a good one lets the service start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from testing.launcher import launch, stop
from tests.helpers import ADMIN_TOKEN, environment_without_settings, free_port
from tests.sandbox_service import PROJECT


def serve(tmp_path: Path, tools: object, port: int) -> tuple[list[str], dict[str, str]]:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    env = environment_without_settings() | {"TOOLSMITH_TOOLS_FILE": str(path), "TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN,
                                            "PYTHONUNBUFFERED": "1"}
    # `-m` from the project root: the checkout under test, and its `tests.native_tools`, are importable.
    return [sys.executable, "-m", "entrypoints.cli", "serve", "--port", str(port), "--data-dir", str(tmp_path / "data")], env


def test_serve_refuses_a_bad_tools_file_in_one_line_naming_each_problem(tmp_path: Path) -> None:
    command, env = serve(tmp_path, {"native": [{"name": "add", "description": "Adds", "entrypoint": "nowhere:add"}],
                                    "mcp": [{"name": "weather", "description": "Weather", "url": "ftp://x", "inputSchema": {"type": "object"}}]},
                         free_port())
    finished = subprocess.run(command, cwd=PROJECT, env=env, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    lines = finished.stderr.strip().splitlines()
    assert len(lines) == 1, finished.stderr
    assert lines[0].startswith(f"toolsmith serve: TOOLSMITH_TOOLS_FILE {tmp_path / 'tools.json'}: ")
    assert "native[0].entrypoint: no module named 'nowhere'" in lines[0]
    assert "mcp[0].url: must be an http(s) URL" in lines[0]
    assert "Traceback" not in finished.stderr + finished.stdout


def test_serve_starts_with_a_good_tools_file(tmp_path: Path) -> None:
    port = free_port()
    command, env = serve(tmp_path, {"native": [{"name": "add", "description": "Adds", "entrypoint": "tests.native_tools:add"}]}, port)
    # Raises, with the server's output, if it exits or does not answer /healthz within 30 s.
    process = launch(command, url=f"http://127.0.0.1:{port}", log_path=tmp_path / "serve.log", env=env, cwd=PROJECT, mode="w")
    stop(process)
