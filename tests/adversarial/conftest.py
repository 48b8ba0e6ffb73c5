"""The adversarial suite's probe: a real `toolsmith serve` per module, driven as an attacker would.

Every request goes through `Probe.send`, which holds each answer to what the whole suite asserts
(issue 12, "A standing adversarial suite"): never a 5xx, an answer within the request's deadline,
a problem+json body for every 4xx, and nothing of a secret in it. `Probe.assert_alive` is the
"service alive after each case" check; `Probe.assert_no_secret_anywhere` reads the server's log
and the event store's export (`toolsmith audit export`) for the secrets the server was given.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest

from tests.e2e.conftest import Server

TOOLSMITH = Path(sys.executable).parent / "toolsmith"
CODE_MODULES = "/api/v1/admin/code-modules"
PROBLEM = "application/problem+json"

# The secrets every adversarial server is given; none of them may ever be seen again.
ADMIN_TOKEN = "tsa_adversarial-admin-" + secrets.token_urlsafe(12)
OPERATOR_TOKEN = "tso_adversarial-operator-" + secrets.token_urlsafe(12)
SANDBOX_SECRET = "sandbox-secret-" + secrets.token_urlsafe(12)
# A secret the operator configures through the environment: an external MCP tool's header value.
TOOL_SECRET = "tool-secret-" + secrets.token_urlsafe(12)
SECRET_ENV = {"TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN, "TOOLSMITH_OPERATOR_TOKEN": OPERATOR_TOKEN, "CODESANDBOX_SECRET": SANDBOX_SECRET, "ADVERSARIAL_TOOL_TOKEN": TOOL_SECRET}
TOOLS_FILE = {
    "mcp": [
        {"name": "weather", "description": "Today's weather (a server that does not exist)", "url": "https://weather.invalid/mcp",
         "headers": {"Authorization": "Bearer ${ADVERSARIAL_TOOL_TOKEN}"}, "inputSchema": {"type": "object"}, "exposeInChat": True}
    ]
}

PLAIN_SOURCE = "exports.run = function (input) { return input.n * 2; };"


@dataclass
class Probe:
    """A running server, the secrets it knows, and the checks every case makes."""

    server: Server
    secrets: list[str] = field(default_factory=lambda: [ADMIN_TOKEN, SANDBOX_SECRET, TOOL_SECRET])
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.server.url, timeout=60)

    def send(self, method: str, path: str, *, token: str | None = ADMIN_TOKEN, deadline: float = 30.0, headers: dict[str, str] | None = None, **kw: Any) -> httpx.Response:
        """One request, held to the suite's rules: no 5xx, answered within `deadline` seconds,
        a 4xx is problem+json, and no secret in the answer."""
        sent = dict(headers or {})
        if "json" in kw:  # escaped ASCII, so that lone surrogates travel as `\\ud800` escapes
            kw["content"] = json.dumps(kw.pop("json")).encode()
            sent.setdefault("Content-Type", "application/json")
        if token is not None:
            sent.setdefault("Authorization", f"Bearer {token}")
        started = time.monotonic()
        try:
            answer = self.http.request(method, path, headers=sent, timeout=deadline + 5, **kw)
        except httpx.TimeoutException:
            pytest.fail(f"{method} {path}: no answer within {deadline + 5} s (deadline {deadline} s)")
        except httpx.TransportError as error:
            pytest.fail(f"{method} {path}: the server dropped the connection without an answer ({error!r})")
        elapsed = time.monotonic() - started
        if answer.status_code >= 500:
            # a 500 may close the keep-alive connection: a fresh pool, so the next case is not blamed
            self.http.close()
            self.http = httpx.Client(base_url=self.server.url, timeout=60)
        assert answer.status_code < 500, f"{method} {path}: {answer.status_code} {answer.text[:500]}"
        assert elapsed <= deadline, f"{method} {path}: answered after {elapsed:.1f} s, past its {deadline} s deadline"
        if 400 <= answer.status_code < 500 and method != "HEAD":
            assert answer.headers.get("content-type", "").startswith(PROBLEM), f"{method} {path}: {answer.status_code} not problem+json: {answer.headers.get('content-type')} {answer.text[:300]}"
            body = answer.json()
            assert body.get("status") == answer.status_code and body.get("detail"), body
        self.assert_no_secret_in(answer.text, f"the answer to {method} {path}")
        return answer

    def test_call(self, source: str, *, input: Any = None, timeout_millis: int = 1000, memory_mb: int | None = None, deadline: float | None = None) -> httpx.Response:
        """`POST /test` of a module-style source: the embedded sandbox runs it, nothing is saved."""
        tool: dict[str, Any] = {"timeoutMillis": timeout_millis}
        if memory_mb is not None:
            tool["memoryLimitMb"] = memory_mb
        body = {"draftContent": source, "tool": tool, "input": input}
        return self.send("POST", f"{CODE_MODULES}/test", json=body, deadline=deadline or timeout_millis / 1000 + 5)

    def assert_alive(self) -> None:
        """The service answers its health check and runs a plain call correctly."""
        assert self.server.process is not None and self.server.process.poll() is None, "the server process died"
        health = self.http.get("/healthz", timeout=10)
        assert health.status_code == 200, health.text
        # a liveness check, not a deadline's: a first call after a start may wait for the sandbox's
        # pool (6.4 s once on a loaded CI machine, past the 6 s a 1 s call is held to)
        plain = self.test_call(PLAIN_SOURCE, input={"n": 21}, deadline=30.0)
        assert plain.status_code == 200 and plain.json()["output"] == 42 and plain.json()["error"] is None, plain.text

    def assert_no_secret_in(self, text: str, where: str) -> None:
        leaks = []
        for secret in self.secrets:
            for kind, form in encoded_forms(secret).items():
                at = text.find(form)
                if at >= 0:
                    line_start = text.rfind("\n", 0, at) + 1
                    line = text[line_start : text.find("\n", at) if "\n" in text[at:] else len(text)]
                    leaks.append(f"{secret[:10]}… ({kind}) in: {line.replace(form, '<SECRET>')[:300]}")
        assert not leaks, f"secrets in {where}:\n" + "\n".join(leaks)

    def audit_export(self) -> str:
        """Every stored event, as `toolsmith audit export` writes them (the server may be running)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLSMITH_")}
        env.update(self.server.env)
        done = subprocess.run(
            [str(TOOLSMITH), "audit", "export", "--data-dir", str(self.server.data_dir)], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout + done.stderr

    def assert_no_secret_anywhere(self) -> None:
        """Nothing of a secret in any log line of the server, in any event, or in the API's export."""
        self.assert_no_secret_in(self.server.output, "the server's log")
        self.assert_no_secret_in(self.audit_export(), "the event store's export")
        exported = self.send("GET", "/api/v1/admin/audit/export")
        assert exported.status_code == 200
        self.assert_no_secret_in(exported.text, "GET /api/v1/admin/audit/export")
        # the metrics' labels (docs/observability.md): never a token, an argument or a query string
        scraped = self.send("GET", "/metrics", token=OPERATOR_TOKEN)
        assert scraped.status_code == 200, scraped.text
        self.assert_no_secret_in(scraped.text, "GET /metrics")

    def issue_token(self, role: str, usage_profile: str | None = None) -> str:
        body: dict[str, Any] = {"name": f"{role}-{secrets.token_hex(3)}", "role": role}
        if usage_profile is not None:
            body["usageProfile"] = usage_profile
        issued = self.send("POST", "/api/v1/admin/tokens", json=body)
        assert issued.status_code == 201, issued.text
        token = issued.json()["token"]
        self.secrets.append(token)
        return token

    def close(self) -> None:
        self.http.close()
        if self.server.process and self.server.process.poll() is None:
            self.server.stop()


def encoded_forms(secret: str) -> dict[str, str]:
    """`secret` in every form it may be sent or echoed in (issue 28): raw, JSON-escaped (once, and
    twice: a log line's JSON within an answer's), percent-encoded (quote and quote_plus, upper- and
    lower-case hex), and base64 at each of the three byte alignments it can start at within a longer
    text (the characters that depend on it alone: the base64 of `user:secret` holds one of them)."""
    escaped = json.dumps(secret)[1:-1]
    forms = {"raw": secret, "JSON-escaped": escaped, "JSON-escaped twice": json.dumps(escaped)[1:-1],
             "percent-encoded": quote(secret, safe=""), "form-encoded": quote_plus(secret, safe="")}
    forms["percent-encoded, lower-case hex"] = re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), forms["percent-encoded"])
    raw = secret.encode()
    for k in (0, 1, 2):
        encoded = base64.b64encode(bytes(k) + raw + bytes(3)).decode()
        fragment = encoded[-(-8 * k // 6) : 8 * (k + len(raw)) // 6]
        if len(fragment) >= 8:
            forms[f"base64, {k} bytes in"] = fragment
    return forms


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (a server's sandbox zygote and its workers), from /proc."""
    found, stack = [], [pid]
    while stack:
        parent = stack.pop()
        for children in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                kids = [int(c) for c in children.read_text().split()]
            except OSError:
                continue
            found += kids
            stack += kids
    return found


def start_probe(data_dir: Path, tools_file: dict[str, Any] | None = None, **env: str) -> Probe:
    """A server on `data_dir` with the suite's secrets, `env`, and `tools_file` (else TOOLS_FILE)."""
    tools = data_dir.parent / "tools.json"
    tools.write_text(json.dumps(TOOLS_FILE if tools_file is None else tools_file))
    server = Server(data_dir=data_dir, env={**SECRET_ENV, "TOOLSMITH_TOOLS_FILE": str(tools), **env})
    server.token = ADMIN_TOKEN
    return Probe(server.start())


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Probe]:
    """One server per module, shared by its cases (each case checks the service is alive after it)."""
    running = start_probe(tmp_path_factory.mktemp("adversarial") / "data")
    yield running
    running.close()


class Listener:
    """A TCP listener on 127.0.0.1 that records each connection and closes it."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.connections: list[tuple[str, int]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, peer = self.socket.accept()
            except OSError:
                return
            self.connections.append(peer)
            connection.close()

    def close(self) -> None:
        self.socket.close()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    running = Listener()
    yield running
    running.close()


@pytest.fixture(scope="module")
def forbidden(listener: Listener) -> Listener:
    """The listener no request of an egress probe may reach: a connection to it shows."""
    return listener


@pytest.fixture(scope="module")
def dns(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A test DNS server (tests/dns_server.py) answering the module's `NAMES`, for the probes whose
    server resolves by it (`TOOLSMITH_EGRESS_NAMESERVER`)."""
    from tests.dns_server import DnsServer

    server = DnsServer(request.module.NAMES)
    yield server
    server.close()


def nested(depth: int, leaf: Any = 1) -> Any:
    """`depth` arrays nested in one another around `leaf` (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_json(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def dumps(value: Any) -> str:
    return json.dumps(value)
