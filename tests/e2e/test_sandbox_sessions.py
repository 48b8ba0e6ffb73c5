"""The session cap over HTTP (docs/sandbox.md): with `CODESANDBOX_MAX_ACTIVE_SESSIONS=4`, twenty parallel
one-second tool calls: four run, and every other one is refused at once with 429, `Retry-After`
and "try again later". Nothing queues.

The callers are plain sockets, connected and with their request written out before the start, so
the time measured is the server's and not a Python HTTP client's.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

from tests.e2e.conftest import Server, printed_tokens

BASE = "/api/v1/admin/code-modules"
ONE_SECOND = "exports.run = function () { var end = Date.now() + 1000; while (Date.now() < end) {} return 'done'; };"


def _response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    while len(body) < int(headers.get("content-length", "0")):
        body += sock.recv(65536)
    return int(lines[0].split()[1]), headers, body


def test_beyond_the_session_cap_every_call_is_refused_at_once_not_queued(tmp_path: Path) -> None:
    # The global cap, alone: one tenant may hold all four sessions here (its share is half by default).
    server = Server(data_dir=tmp_path / "data", env={"CODESANDBOX_MAX_ACTIVE_SESSIONS": "4", "TOOLSMITH_TENANT_MAX_SESSIONS": "4"}).start()
    try:
        server.token = printed_tokens(server.output)[0]
        with server.client() as http:
            created = http.post(BASE, json={"id": "oneSecond", "description": "Busy for one second", "draftContent": ONE_SECOND, "tool": {"timeoutMillis": 5000}})
            assert created.status_code == 201, created.text
            assert http.post(f"{BASE}/oneSecond/publish").status_code == 200
            assert http.post("/api/v1/tools/oneSecond/call", json={}).json()["output"] == "done"  # the pool is warm

        request = (
            f"POST /api/v1/tools/oneSecond/call HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {server.token}\r\n"
            "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        ).encode()
        sockets = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(20)]
        for sock in sockets:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        outcomes: list[tuple[int, float, dict[str, str], bytes]] = []
        start = threading.Barrier(20)

        def call(sock: socket.socket) -> None:
            start.wait()
            asked = time.monotonic()
            sock.sendall(request)
            status, headers, body = _response(sock)
            outcomes.append((status, time.monotonic() - asked, headers, body))

        callers = [threading.Thread(target=call, args=(sock,)) for sock in sockets]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(30)
        for sock in sockets:
            sock.close()

        assert len(outcomes) == 20
        statuses = sorted(status for status, *_ in outcomes)
        assert set(statuses) == {200, 429}, statuses
        assert statuses.count(200) >= 4, statuses
        refusals = sorted(round(elapsed * 1000) for status, elapsed, *_ in outcomes if status == 429)
        for status, elapsed, headers, body in outcomes:
            if status == 200:
                assert json.loads(body)["output"] == "done"
                continue
            # refused at once, not queued: a queued call would wait a second for a session (how soon
            # a refusal comes is bench's to measure; a bound near it here failed on busy machines)
            assert elapsed < 0.5, f"a 429 took {elapsed * 1000:.0f} ms (all of them, ms: {refusals})"
            assert headers["retry-after"].isdigit()
            assert headers["content-type"].startswith("application/problem+json")
            assert "try again later" in json.loads(body)["detail"]
    finally:
        server.stop()
