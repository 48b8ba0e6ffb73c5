"""The one launcher for a real Toolsmith process (`toolsmith serve`, `toolsmith sandbox`), shared by
the benchmarks and the tests: free port, data dir, token, environment, readiness, shutdown, and the
process's own output when something goes wrong.

It lives in `testing/`, not in `bench/` or `tests/`: the benchmarks run without pytest and must not
import `tests/`, and the tests must not depend on the benchmarks. Failures raise `RuntimeError`
carrying the process's output; callers turn it into `SystemExit` (bench) or a test failure (tests).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

TOOLSMITH = Path(sys.executable).parent / "toolsmith"
# Settings a child process must not inherit from the runner when it should get only its own.
SETTING_PREFIXES = ("TOOLSMITH_", "OPENSEARCH_", "POSTGRES_", "CODESANDBOX_")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(command: Sequence[str], *, url: str, log_path: Path, env: Mapping[str, str], cwd: Path | None = None,
           name: str = "toolsmith serve", ready_path: str = "/healthz", timeout: float = 30, mode: str = "a") -> subprocess.Popen:
    """Starts `command` with its output appended to `log_path` (a file, so a full pipe can never
    block it) and waits until `url + ready_path` answers 200. Raises RuntimeError with the output
    if the process exits first or does not answer within `timeout` seconds (then it is stopped)."""
    with log_path.open(mode + "b") as log:
        process = subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(url + ready_path, timeout=1, trust_env=False).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with code {process.returncode}:\n{_read(log_path)}")
        if time.monotonic() > deadline:
            stop(process)
            raise RuntimeError(f"{name} did not answer {ready_path} within {timeout:g} s:\n{_read(log_path)}")
        time.sleep(0.1)


def stop(process: subprocess.Popen, timeout: float = 15) -> None:
    """SIGTERM, as a service manager would; SIGKILL if it has not exited within `timeout` s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Server:
    """A real `toolsmith serve` on a free port with its own data dir, driven over HTTP.

    `env` is added to the runner's environment, minus its admin token and data dir, or, with
    `inherit_settings=False`, minus every Toolsmith, OpenSearch, PostgreSQL and sandbox setting."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    token: str | None = None
    # Extra environment (settings) for the server process.
    env: dict[str, str] = field(default_factory=dict)
    inherit_settings: bool = True
    # Where its output goes; by default `serve-<port>.log` beside the data dir.
    log_file: Path | None = None
    log_mode: str = "a"

    @property
    def log_path(self) -> Path:
        return self.log_file or self.data_dir.parent / f"serve-{self.port}.log"

    @property
    def output(self) -> str:
        """Everything the server printed so far."""
        return _read(self.log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        if self.inherit_settings:
            env = {k: v for k, v in os.environ.items() if k not in ("TOOLSMITH_ADMIN_TOKEN", "TOOLSMITH_DATA_DIR")}
        else:
            env = {k: v for k, v in os.environ.items() if not k.startswith(SETTING_PREFIXES) and k != "SQLITE_DBNAME"}
        # A benchmark's one client token measures what the service can do, not a token's (or its
        # tenant's) request rate, nor its address's failed authentications (docs/tenants.md): unlimited,
        # unless the benchmark sets a rate of its own.
        return {"TOOLSMITH_RATE_PER_SECOND": "0", "TOOLSMITH_TENANT_RATE_PER_SECOND": "0",
                "TOOLSMITH_AUTH_FAILURES_PER_MINUTE": "0"} | env | self.env

    def command(self) -> list[str]:
        return [str(TOOLSMITH), "serve", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", str(self.data_dir)]

    def start(self, timeout: float = 30) -> Server:
        """`timeout`: seconds to answer /healthz (a topology of several processes starts slower)."""
        self.process = launch(self.command(), url=self.url, log_path=self.log_path, env=self.environment(), mode=self.log_mode,
                              timeout=timeout)
        return self

    def stop(self) -> None:
        """Stops the server with SIGTERM, as a service manager would."""
        assert self.process is not None
        stop(self.process)

    def client(self, token: str | None = None) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token or self.token}"}, timeout=30)

