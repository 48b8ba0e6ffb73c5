"""A local HTTP API for the API URL tool tests (issue 16): it records every request it sees (method,
raw path, headers, body) and answers as a weather API, an echo, an OAuth token endpoint, a server
that answers any status, a huge or slow answer.

It listens on 127.0.0.1, which API URL tools reach only through `TOOLSMITH_EGRESS_ALLOW`: a test
allows `127.0.0.1:<port>` (its `allow` property)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str  # the raw request target, as it came on the wire
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.path).query)


class Upstream(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.port = self.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.tokens_issued: list[str] = []
        self.token_lifetime: int | None = 3600
        self.revoked: set[str] = set()
        self.big_bytes_written = 0

    @property
    def allow(self) -> str:
        return f"127.0.0.1:{self.port}"

    def paths(self) -> list[str]:
        return [s.path for s in self.seen]

    def last(self, prefix: str = "") -> Seen:
        return [s for s in self.seen if s.path.startswith(prefix)][-1]


class _Handler(BaseHTTPRequestHandler):
    server: Upstream
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _record(self) -> Seen:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.server.lock:
            self.server.seen.append(seen)
        return seen

    def _send(self, status: int, body: Any, content_type: str = "application/json", headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else (json.dumps(body) if content_type == "application/json" else str(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self._route()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET  # noqa: N815

    def _route(self) -> None:
        seen = self._record()
        path = urlsplit(seen.path).path
        if path.startswith("/v1/weather/"):
            city = path.removeprefix("/v1/weather/")
            units = seen.query.get("units", ["metric"])[0]
            self._send(200, {"city": city, "units": units, "current": {"temp": 21.5, "wind": 3}, "days": [1, 2, 3]})
        elif path == "/echo" or path.startswith("/echo/"):
            body: Any = None
            if seen.body:
                try:
                    body = json.loads(seen.body)
                except ValueError:
                    body = seen.body.decode(errors="replace")
            self._send(200, {"method": seen.method, "path": seen.path, "headers": seen.headers, "body": body})
        elif path.startswith("/status/"):
            self._send(int(path.removeprefix("/status/").split("/")[0]), {"error": "nope", "detail": "x" * 2_000})
        elif path == "/text":
            self._send(200, "plain " * 10_000, content_type="text/plain; charset=utf-8")
        elif path == "/token":
            self._token(seen)
        elif path == "/protected":
            token = seen.headers.get("authorization", "").removeprefix("Bearer ")
            if token not in self.server.tokens_issued or token in self.server.revoked:
                self._send(401, {"error": "invalid_token"})
            else:
                self._send(200, {"ok": True, "token": "issued"})
        elif path == "/big":
            self._big()
        elif path == "/slow":
            time.sleep(float(seen.query.get("seconds", ["3"])[0]))
            self._send(200, {"slow": True})
        elif path == "/deep":
            depth = int(seen.query.get("n", ["5000"])[0])
            self._send(200, b"[" * depth + b"]" * depth)
        elif path == "/invalid-utf8":
            self._send(200, b'{"text": "\xff\xfe\xc3\x28"}', content_type="application/json; charset=utf-8")
        elif path == "/unknown-charset":
            self._send(200, b"caf\xe9", content_type="text/plain; charset=x-no-such-charset")
        elif path == "/gzip-bomb":
            import gzip

            self._send(200, gzip.compress(b"0" * 30_000_000), headers={"Content-Encoding": "gzip"})
        elif path == "/redirect":
            target = seen.query["to"][0]
            self._send(302, b"", headers={"Location": target})
        else:
            self._send(404, {"error": "no route"})

    def _token(self, seen: Seen) -> None:
        form = parse_qs(seen.body.decode())
        if form.get("grant_type") != ["client_credentials"]:
            self._send(400, {"error": "unsupported_grant_type"})
            return
        with self.server.lock:
            token = f"token-{len(self.server.tokens_issued) + 1}"
            self.server.tokens_issued.append(token)
        answer: dict[str, Any] = {"access_token": token, "token_type": "Bearer"}
        if self.server.token_lifetime is not None:
            answer["expires_in"] = self.server.token_lifetime
        self._send(200, answer)

    def _big(self) -> None:
        """50 MB, streamed in 64 KiB chunks; `big_bytes_written` says how far it got."""
        total, chunk = 50 * 1_048_576, b"x" * 65_536
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(total))
        self.end_headers()
        try:
            while self.server.big_bytes_written < total:
                self.wfile.write(chunk)
                self.server.big_bytes_written += len(chunk)
        except OSError:
            pass


def running() -> Iterator[Upstream]:
    server = Upstream()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
