"""Structured logs: one JSON object per line, with the record's `extra` fields; and the access log,
one line per request (`log_access`, written by the application's edge, `entrypoints.web.Edge`).

Nothing secret is ever passed to a logger (tokens are hashed before anything sees them); as a second
line of defence, a field whose name says it holds a secret is masked. Request lines are logged
without their query string: a client may put a token there (`?access_token=…`), and the access log
would otherwise keep it; nor with any header (the `Authorization` header is a token).

A request pays for its line only when the access log's level is on (issue 30: a call costs what its
work costs). While the logging is as `configure` set it (its one handler on the root, nothing added
since: no other handler, filter or level of its own), the line is made directly, the same JSON
`JsonFormatter` writes for the record (a record, its handlers' lookups and the formatter's walk over
the record cost a tenth of a small tool call), and handed to the handler (`Lines`), which keeps it
for at most `FLUSH_SECONDS` and writes what it keeps in one write and one flush from a thread of its
own (a write and a flush per line were a request's largest cost after its work); any other record
writes the lines kept before it first, so the stream keeps the order they were made in, and
`logging.shutdown` (at exit) writes the rest. Under any other set-up (a test's capture, an embedding
application's handlers) a record goes through `logging` as ever.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from functools import lru_cache
from time import gmtime, sleep, strftime, time
from typing import Any
from urllib.parse import quote

import orjson

from infrastructure import tracing

_STANDARD = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}
_SECRET_WORDS = ("token", "secret", "password", "authorization")
# The logger of the access log: uvicorn's name, which its users and their log pipelines know.
ACCESS = logging.getLogger("uvicorn.access")
_ACCESS_LINE = '%s - "%s %s HTTP/%s" %d'


@lru_cache(maxsize=1024)  # a field's name is the code's, one of a few hundred: asked once each
def _is_secret(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_WORDS)


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._second: tuple[int, str] = (-1, "")

    def at(self, created: float) -> str:
        """`created` as ISO 8601 in UTC to the millisecond (`2026-01-02T03:04:05.678+00:00`); the
        text of the second is kept for the lines that follow within it (the second and its text in
        one tuple: a thread never reads one second's text for another)."""
        second = int(created)
        kept = self._second
        if kept[0] != second:
            kept = self._second = (second, strftime("%Y-%m-%dT%H:%M:%S", gmtime(second)))
        return f"{kept[1]}.{int((created - second) * 1000):03d}+00:00"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "at": self.at(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = vars(record)
        for key in [key for key in fields if key not in _STANDARD and not key.startswith("_")]:
            entry[key] = "***" if _is_secret(key) else fields[key]
        if tracing.ON and "traceId" not in entry:
            trace_id = tracing.trace_id()  # the request's, or the span's the record was made in
            if trace_id is not None:
                entry["traceId"] = trace_id
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        try:
            return orjson.dumps(entry, default=str).decode()
        except (TypeError, orjson.JSONEncodeError):
            # What orjson does not write (a lone surrogate in a string, an integer over 64 bits): Python's encoder, escaped.
            return json.dumps(entry, default=str)


class WithoutQuery(logging.Filter):
    """Drops the query string from the request path of an access-log line (uvicorn logs the path
    with its query as the third argument: client, method, path, HTTP version, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str) and "?" in args[2]:
            record.args = (*args[:2], args[2].split("?", 1)[0], *args[3:])
        return True


# How long an access-log line may wait before it is written, and how many lines may wait at most
# (more are written at once, by the request that adds one).
FLUSH_SECONDS = 0.05
MOST_KEPT = 1024
IDLE_ROUNDS = 20  # a second with no line: the writing thread ends


class Lines(logging.StreamHandler):
    """`configure`'s handler: a StreamHandler that also takes whole lines already made (`keep`, the
    access log's) and writes them within `FLUSH_SECONDS`, together, from a daemon thread that the
    first line kept starts and that ends after `IDLE_ROUNDS` rounds with nothing to write (a line
    costs a lock and an append: no event to set, no thread woken per line); a record it emits, a
    `flush` and a `close` write the kept lines first."""

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._kept: list[str] = []
        self._kept_lock = threading.Lock()  # the kept lines and whether a thread writes them
        self._writer: threading.Thread | None = None
        self._closed = False

    def keep(self, line: str) -> None:
        """`line` (with its terminator) to be written within `FLUSH_SECONDS`."""
        writer = None
        with self._kept_lock:
            kept = self._kept
            kept.append(line)
            count = len(kept)
            if self._writer is None and not self._closed:
                writer = self._writer = threading.Thread(target=self._write_when_due, name="toolsmith-log-lines", daemon=True)
        if writer is not None:
            writer.start()
        elif self._closed or count >= MOST_KEPT:  # closed: no thread writes any more (at exit, after logging.shutdown)
            self.flush()

    def _write_when_due(self) -> None:
        idle = 0
        while True:
            sleep(FLUSH_SECONDS)
            with self._kept_lock:
                if not self._kept:
                    idle += 1
                    if idle >= IDLE_ROUNDS or self._closed:
                        self._writer = None  # the next line kept starts another
                        return
                    continue
            idle = 0
            try:
                self.flush()
            except Exception:  # noqa: BLE001 - a stream that fails is the stream's to report; the thread goes on
                pass

    def _write_kept(self) -> None:
        """The kept lines, in one write (the caller holds the handler's lock)."""
        with self._kept_lock:
            lines, self._kept = self._kept, []
        if lines and self.stream is not None:
            self.stream.write("".join(lines))

    def emit(self, record: logging.LogRecord) -> None:
        if self._kept:
            self._write_kept()
        super().emit(record)

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._write_kept()
            super().flush()

    def close(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            try:
                self._write_kept()
            finally:
                self._closed = True  # its thread ends at its next round
                super().close()

    def _forked(self) -> None:
        """In a child made by fork: the parent's thread is not there, nor its lines to write."""
        self._kept = []
        self._kept_lock = threading.Lock()
        self._writer = None


# The handler `configure` installed (None until it runs): the one the access log may write to directly.
_CONFIGURED: Lines | None = None


def _after_fork() -> None:
    if _CONFIGURED is not None:
        _CONFIGURED._forked()


os.register_at_fork(after_in_child=_after_fork)


def _configured_handler() -> Lines | None:
    """`configure`'s handler while the logging is as it left it, else None (a record must then go
    through `logging`: someone added a handler, a filter or a level that may want it)."""
    handler = _CONFIGURED
    if not isinstance(handler, Lines) or ACCESS.propagate or ACCESS.handlers or ACCESS.disabled or ACCESS.level != logging.NOTSET:
        return None
    root = logging.root
    if root.handlers != [handler] or root.filters or handler.filters or handler.level > logging.INFO:
        return None
    if any(not isinstance(f, WithoutQuery) for f in ACCESS.filters):
        return None
    return handler


def log_access(scope: dict[str, Any], status: int, seconds: float) -> None:
    """The access-log line of a request as the client asked it (`scope`), answered `status` after
    `seconds` (to the response's head): uvicorn's line (`127.0.0.1:5000 - "GET /path HTTP/1.1" 200`)
    without the query string, and its parts as fields. The caller checks the level is on."""
    client = scope.get("client")
    address = "%s:%d" % tuple(client) if client else ""
    method, path, version = scope["method"], quote(scope["path"]), scope.get("http_version", "1.1")
    handler = _configured_handler()
    fields = {"method": method, "path": path, "status": status, "durationMillis": round(seconds * 1000, 3), "client": address}
    if tracing.ON:
        trace_id = tracing.trace_id()
        if trace_id is not None:
            fields["traceId"] = trace_id
    if handler is not None and isinstance(handler.formatter, JsonFormatter):
        # What JsonFormatter writes for the record below, field for field (tests/unit/test_logs.py),
        # kept by the handler to be written within FLUSH_SECONDS.
        try:
            handler.keep(orjson.dumps({
                "at": handler.formatter.at(time()), "level": "info", "logger": ACCESS.name,
                "message": _ACCESS_LINE % (address, method, path, version, status), **fields,
            }).decode() + handler.terminator)
            return
        except Exception:  # noqa: BLE001 - the record below goes through logging, which says its error and goes on
            pass
    record = ACCESS.makeRecord(ACCESS.name, logging.INFO, "", 0, _ACCESS_LINE, (address, method, path, version, status), None,
                               extra=fields)
    # Where the logger leads (`configure` leaves it no handler and no parent: uvicorn's own line is off), else the root's handlers.
    (ACCESS if ACCESS.propagate or ACCESS.handlers else logging.getLogger()).handle(record)


def configure(level: str = "INFO") -> None:
    global _CONFIGURED
    handler = Lines(sys.stderr)
    handler.setFormatter(JsonFormatter())
    if _CONFIGURED is not None and _CONFIGURED is not handler:
        _CONFIGURED.flush()  # the lines the handler it replaces still keeps
    _CONFIGURED = handler
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # No line shows the thread or the process a record was made in (JsonFormatter writes neither):
    # a record is made without looking them up.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    # uvicorn writes its own access line whenever its logger reaches a handler (it asks at each
    # connection): the service writes its own (`log_access`) under that name, so the logger is cut
    # off (uvicorn writes nothing) and `log_access` hands its records to the root's handlers.
    ACCESS.propagate = False
    if not any(isinstance(f, WithoutQuery) for f in ACCESS.filters):
        ACCESS.addFilter(WithoutQuery())
