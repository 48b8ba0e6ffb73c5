"""A real `toolsmith serve` process on a free port, driven over HTTP."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from tests.helpers import free_port

import httpx
import pytest

TOOLSMITH = Path(sys.executable).parent / "toolsmith"



@dataclass
class Server:
    data_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    token: str | None = None
    # Extra environment (settings) for the server process.
    env: dict[str, str] = field(default_factory=dict)

    @property
    def log_path(self) -> Path:
        return self.data_dir.parent / f"serve-{self.port}.log"

    @property
    def output(self) -> str:
        """Everything the server printed so far (a file, so a full pipe can never block it)."""
        return self.log_path.read_text() if self.log_path.exists() else ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        env = {k: v for k, v in os.environ.items() if k not in ("TOOLSMITH_ADMIN_TOKEN", "TOOLSMITH_DATA_DIR")}
        env.update(self.env)
        self.process = subprocess.Popen(
            [str(TOOLSMITH), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", str(self.data_dir)],
            stdout=self.log_path.open("a"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                if self.process.poll() is not None:
                    raise RuntimeError(f"toolsmith serve exited:\n{self.output}") from None
                time.sleep(0.1)
        else:
            raise RuntimeError("toolsmith serve did not answer /healthz within 30 s")
        return self

    def stop(self) -> None:
        """Stops the server with SIGTERM, as a service manager would."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token or self.token}"}, timeout=30)


def printed_tokens(output: str) -> list[str]:
    return re.findall(r"tsa_[A-Za-z0-9_-]+", output)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(data_dir=tmp_path / "data").start()
    tokens = printed_tokens(running.output)
    assert tokens, f"no admin token printed on first start:\n{running.output}"
    running.token = tokens[0]
    yield running
    if running.process and running.process.poll() is None:
        running.stop()
