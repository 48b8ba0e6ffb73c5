"""The one launcher for a real Toolsmith process (`toolsmith serve`, `toolsmith sandbox`), shared by
the benchmarks and the tests: free port, data dir, token, environment, readiness, shutdown, and the
process's own output when something goes wrong.

It lives in `testing/`, not in `bench/` or `tests/`: the benchmarks run without pytest and must not
import `tests/`, and the tests must not depend on the benchmarks. Failures raise `RuntimeError`
carrying the process's output; callers turn it into `SystemExit` (bench) or a test failure (tests).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
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


class Forked:
    """A `toolsmith` process that the fork server (testing/forkserver.py) forked: what the launcher's
    callers use of `subprocess.Popen` (pid, poll, wait, send_signal, terminate, kill, returncode).
    It is the fork server's child, so its exit code comes from there."""

    def __init__(self, forks: _ForkServer, pid: int, serial: int, args: list[str]) -> None:
        self._forks, self.pid, self._serial, self.args = forks, pid, serial, args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._forks.exit_code(self._serial, timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._forks.exit_code(self._serial, timeout=timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class _ForkServer:
    """This process's fork server, started at its first use; None from `get()` when forks are off
    (`use_fork_server` not called, or TOOLSMITH_TEST_FORKS=0) or the fork server could not start."""

    _instance: _ForkServer | None = None
    _refused = False
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> _ForkServer | None:
        if not FORKS or os.environ.get("TOOLSMITH_TEST_FORKS", "1") == "0":
            return None
        with cls._lock:
            if cls._instance is None and not cls._refused:
                try:
                    cls._instance = cls()
                except RuntimeError:
                    cls._refused = True
            return cls._instance

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self._process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("forkserver.py")), str(theirs.fileno())],
                                         pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        theirs.close()
        self._socket, self._buffer, self._exits, self._io = ours, b"", {}, threading.Lock()
        self._spawn = threading.Lock()
        self._replies: list[dict] = []
        self.cpu_seconds: list[float] = []  # of each child that has exited, with its children's
        ready = self._reply(timeout=120)
        if not ready or not ready.get("ready"):
            self._socket.close()
            stop(self._process)
            raise RuntimeError(f"the fork server did not start: {ready}")

    def _read(self, timeout: float | None) -> bool:
        """Reads what the fork server sent within `timeout` s (None: until something comes); False
        when nothing came. One thread reads at a time; another may send meanwhile."""
        with self._io:
            if not select.select([self._socket], [], [], timeout)[0]:
                return False
            data = self._socket.recv(1 << 16)
            if not data:
                raise RuntimeError("the fork server is gone")
            self._buffer += data
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                message = json.loads(line)
                if "exit" in message:
                    self._exits[message["serial"]] = message["code"]
                    self.cpu_seconds.append(message["cpu"])
                else:
                    self._replies.append(message)
            return True

    def _reply(self, timeout: float) -> dict | None:
        """The fork server's next answer to a command (or its readiness), within `timeout` s."""
        deadline = time.monotonic() + timeout
        while not self._replies:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._read(min(left, 0.1))
        return self._replies.pop(0)

    def spawn(self, command: Sequence[str], *, env: Mapping[str, str], cwd: Path | None, log_path: Path) -> Forked:
        request = {"argv": list(command), "env": dict(env), "cwd": str(cwd or os.getcwd()), "log": str(log_path)}
        with self._spawn:
            self._socket.sendall(json.dumps(request).encode() + b"\n")
            reply = self._reply(timeout=30)
        if not reply or "pid" not in reply:
            raise RuntimeError(f"the fork server did not start {command[1]}: {reply}")
        return Forked(self, reply["pid"], reply["serial"], list(command))

    def exit_code(self, serial: int, timeout: float | None) -> int | None:
        """The exit code of the child started `serial`-th, waiting up to `timeout` s for it (None:
        as long as it takes); None if it still runs."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while serial not in self._exits:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self._read(0)
                break
            self._read(0.1 if left is None else min(left, 0.1))
        return self._exits.pop(serial, None)


# Whether `launch` starts a `toolsmith` command from the fork server (the tests: tests/conftest.py)
# rather than as a new process (the benchmarks measure the real thing).
FORKS = False


def use_fork_server() -> None:
    """`launch` starts `toolsmith ...` commands from a fork server of this process's own
    (testing/forkserver.py) from now on, unless TOOLSMITH_TEST_FORKS=0."""
    global FORKS
    FORKS = True


def _python_settings(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith("PYTHON")}


def launch(command: Sequence[str], *, url: str, log_path: Path, env: Mapping[str, str], cwd: Path | None = None,
           name: str = "toolsmith serve", ready_path: str = "/healthz", timeout: float = 30, mode: str = "a") -> subprocess.Popen | Forked:
    """Starts `command` with its output appended to `log_path` (a file, so a full pipe can never
    block it) and waits until `url + ready_path` answers 200. Raises RuntimeError with the output
    if the process exits first or does not answer within `timeout` seconds (then it is stopped).
    A `toolsmith` command comes from the fork server when `use_fork_server` was called."""
    # The interpreter's own settings (PYTHON*) take effect at its start: a command that changes them is a new process.
    forks = (_ForkServer.get() if command and Path(command[0]) == TOOLSMITH and _python_settings(env) == _python_settings(os.environ)
             else None)
    with log_path.open(mode + "b") as log:
        if forks is not None:
            process = forks.spawn(command, env=env, cwd=cwd, log_path=log_path)
        else:
            process = subprocess.Popen(list(command), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    # One client for every poll: `httpx.get` builds one each time, with its TLS context (about 18 ms
    # of CPU, against 0.2 for a request).
    with httpx.Client(timeout=1, trust_env=False) as poller:
        while True:
            try:
                if poller.get(url + ready_path).status_code == 200:
                    return process
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with code {process.returncode}:\n{_read(log_path)}")
            if time.monotonic() > deadline:
                stop(process)
                raise RuntimeError(f"{name} did not answer {ready_path} within {timeout:g} s:\n{_read(log_path)}")
            time.sleep(0.05)


def stop(process: subprocess.Popen | Forked, timeout: float = 15) -> None:
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
    process: subprocess.Popen | Forked | None = None
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

