"""A real `toolsmith serve` process on a free port, driven over HTTP."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
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



@asynccontextmanager
async def mcp_client(
    server: Server, token: str | None = None, path: str = "/mcp", *, mode: str = "legacy", on_message: Callable[[Any], Awaitable[None]] | None = None
) -> AsyncIterator[Any]:
    """The MCP SDK's client, connected to `path` of `server` with a bearer token (the admin's by
    default). `mode` is "legacy" (initialize handshake, session id, GET stream) or a 2026 version."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token or server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(server.url + path, http_client=http)
        async with Client(transport, mode=mode, message_handler=on_message, read_timeout_seconds=30) as client:
            yield client
