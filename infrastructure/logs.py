"""Structured logs: one JSON object per line, with the record's `extra` fields; and the access log,
one line per request (`log_access`, written by the application's edge, `entrypoints.web.Edge`).

Nothing secret is ever passed to a logger (tokens are hashed before anything sees them); as a second
line of defence, a field whose name says it holds a secret is masked. Request lines are logged
without their query string: a client may put a token there (`?access_token=…`), and the access log
would otherwise keep it; nor with any header (the `Authorization` header is a token).

A request pays for its line only when the access log's level is on (issue 30: a call costs what its
work costs). While the logging is as `configure` set it (its one handler on the root, nothing added
since: no other handler, filter or level of its own), the line is written to that handler's stream
at once, the same JSON `JsonFormatter` writes for the record (a record, its handlers' lookups and
the formatter's walk over the record cost a tenth of a small tool call); under any other set-up
(a test's capture, an embedding application's handlers) a record goes through `logging` as ever.
"""

from __future__ import annotations

import json
import logging
import sys
from functools import lru_cache
from time import gmtime, strftime, time
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
        self._second: int | None = None
        self._second_text = ""

    def at(self, created: float) -> str:
        """`created` as ISO 8601 in UTC to the millisecond (`2026-01-02T03:04:05.678+00:00`); the
        text of the second is kept for the lines that follow within it."""
        second = int(created)
        if second != self._second:
            self._second_text = strftime("%Y-%m-%dT%H:%M:%S", gmtime(second))
            self._second = second
        return f"{self._second_text}.{int((created - second) * 1000):03d}+00:00"

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


# The handler `configure` installed (None until it runs): the one the access log may write to directly.
_CONFIGURED: logging.StreamHandler | None = None


def _configured_handler() -> logging.StreamHandler | None:
    """`configure`'s handler while the logging is as it left it, else None (a record must then go
    through `logging`: someone added a handler, a filter or a level that may want it)."""
    handler = _CONFIGURED
    if handler is None or ACCESS.propagate or ACCESS.handlers or ACCESS.disabled or ACCESS.level != logging.NOTSET:
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
        # under the handler's lock as a record's formatting and writing are.
        with handler.lock:  # type: ignore[union-attr]
            try:
                handler.stream.write(orjson.dumps({
                    "at": handler.formatter.at(time()), "level": "info", "logger": ACCESS.name,
                    "message": _ACCESS_LINE % (address, method, path, version, status), **fields,
                }).decode() + handler.terminator)
                handler.flush()
                return
            except Exception:  # noqa: BLE001 - the record below goes through logging, which says its error and goes on
                pass
    record = ACCESS.makeRecord(ACCESS.name, logging.INFO, "", 0, _ACCESS_LINE, (address, method, path, version, status), None,
                               extra=fields)
    # Where the logger leads (`configure` leaves it no handler and no parent: uvicorn's own line is off), else the root's handlers.
    (ACCESS if ACCESS.propagate or ACCESS.handlers else logging.getLogger()).handle(record)


def configure(level: str = "INFO") -> None:
    global _CONFIGURED
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
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
