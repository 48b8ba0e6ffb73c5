"""An OTLP/HTTP traces endpoint for tests (docs/observability.md): a local HTTP server that decodes the
`ExportTraceServiceRequest` protobufs it is sent and keeps their raw bytes, for the span tree and
for the secrets scan of everything a service exported."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP traces endpoint: keeps each request's raw body and its decoded spans."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Receive)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.bodies: list[bytes] = []
        self.paths: list[str] = []
        self.spans: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    @property
    def text(self) -> str:
        """Everything received, as text (the protobufs' strings are UTF-8), for a secrets scan."""
        with self.lock:
            return b"".join(self.bodies).decode("utf-8", errors="replace")

    def wait_for(self, check: Callable[[list[dict[str, Any]]], bool], seconds: float = 20) -> list[dict[str, Any]]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with self.lock:
                found = list(self.spans)
            if check(found):
                return found
            time.sleep(0.1)
        raise AssertionError(f"the receiver did not get the spans wanted: {[s['name'] for s in found]}")


class _Receive(BaseHTTPRequestHandler):
    server: Receiver

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        request = ExportTraceServiceRequest.FromString(body)
        decoded = []
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}.get("service.name")
            for scope in resource.scope_spans:
                for span in scope.spans:
                    decoded.append({
                        "service": service, "name": span.name, "trace": span.trace_id.hex(), "id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(), "kind": span.kind,
                        "attributes": {a.key: _value(a.value) for a in span.attributes},
                    })
        with self.server.lock:
            self.server.bodies.append(body)
            self.server.paths.append(self.path)
            self.server.spans.extend(decoded)
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


def _value(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value")) if value.WhichOneof("value") else None


def receiving() -> Iterator[Receiver]:
    """A running receiver (a fixture's body), shut down afterwards."""
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
