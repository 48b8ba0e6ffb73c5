"""What the server and an extraction worker say to each other over the worker's stdin and stdout.

A frame is four bytes of length (big-endian), then that many bytes. The server sends a job as one
JSON frame (`path`, `media_type`); the worker answers one JSON frame — `{"ok": true, "page_starts",
"title"}` followed by a frame of the text in UTF-8, or `{"ok": false, "reason", "memory"}` — and
says `{"ready": pid}` once when it has started. The text travels as raw UTF-8, never inside JSON:
ten million characters are not worth escaping, and no pickle from a process that has parsed a
hostile document is ever loaded by the server.
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from typing import Any

_LENGTH = struct.Struct("!I")
_READ_BYTES = 1024 * 1024


class Timeout(Exception):
    """No whole frame arrived before the deadline."""


def send(fd: int, data: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def send_json(fd: int, message: dict[str, Any]) -> None:
    send(fd, json.dumps(message).encode())


def receive(fd: int, limit: int, deadline: float | None = None) -> bytes:
    """The next frame's bytes; `EOFError` when the other end has closed, `Timeout` when the frame
    is not whole by `deadline` (a `time.monotonic()` instant), `ValueError` beyond `limit` bytes."""
    (length,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, deadline))
    if length > limit:
        raise ValueError(f"a frame of {length} bytes is beyond the limit of {limit}")
    return _read_exactly(fd, length, deadline)


def receive_json(fd: int, deadline: float | None = None, limit: int = 1024 * 1024) -> dict[str, Any]:
    message = json.loads(receive(fd, limit, deadline))
    if not isinstance(message, dict):
        raise ValueError("a message is not a JSON object")
    return message


def readable(fd: int, deadline: float) -> bool:
    """Whether something (a frame's start, or the end) can be read from `fd` before `deadline`
    (a `time.monotonic()` instant); reads nothing."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, math.ceil((deadline - time.monotonic()) * 1000))))


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    buffer = bytearray()
    poller = select.poll()  # not select(): a server's descriptors may number beyond 1024
    poller.register(fd, select.POLLIN)
    while len(buffer) < size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(math.ceil(remaining * 1000)):
                raise Timeout
        chunk = os.read(fd, min(size - len(buffer), _READ_BYTES))
        if not chunk:
            raise EOFError
        buffer += chunk
    return bytes(buffer)
