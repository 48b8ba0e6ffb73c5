"""The service's log lines (infrastructure/logs.py): one JSON object per line, secrets masked by
field name, and the access log written by the service, not by uvicorn (issue 30)."""

from __future__ import annotations

import io
import json
import re
import logging
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from infrastructure import logs
from infrastructure.logs import JsonFormatter


def record(message: str = "hello", **extra: object) -> logging.LogRecord:
    made = logging.makeLogRecord({"name": "toolsmith.test", "levelno": logging.INFO, "levelname": "INFO", "msg": message})
    made.__dict__.update(extra)
    return made


def test_a_line_is_json_with_the_time_the_level_the_logger_and_the_extra_fields() -> None:
    made = record("called %s", tool="addOne", durationMillis=1.5)
    made.args = ("addOne",)
    made.created = 1_700_000_000.9996
    line = json.loads(JsonFormatter().format(made))
    assert line == {"at": datetime.fromtimestamp(made.created, timezone.utc).isoformat(timespec="milliseconds"),
                    "level": "info", "logger": "toolsmith.test", "message": "called addOne", "tool": "addOne", "durationMillis": 1.5}


def test_a_field_named_as_a_secret_is_masked() -> None:
    line = json.loads(JsonFormatter().format(record(apiToken="tsa_x", Authorization="Bearer y", clientSecret="z", tokens=3)))
    assert line["apiToken"] == line["Authorization"] == line["clientSecret"] == line["tokens"] == "***"


def test_what_orjson_does_not_write_is_still_one_json_line() -> None:
    text = JsonFormatter().format(record("a lone \ud800 surrogate", big=2**70))
    assert "\n" not in text
    line = json.loads(text)
    assert line["message"] == "a lone \ud800 surrogate" and line["big"] == 2**70


@pytest.fixture
def restored() -> Iterator[None]:
    """The logging set up as it was after the test (`logs.configure` changes the process's)."""
    root, access = logging.getLogger(), logs.ACCESS
    kept = (root.handlers[:], root.level, access.handlers[:], access.propagate, access.filters[:],
            logging.logThreads, logging.logProcesses, logging.logMultiprocessing)
    yield
    (root.handlers[:], level, access.handlers[:], access.propagate, access.filters[:],
     logging.logThreads, logging.logProcesses, logging.logMultiprocessing) = kept
    root.setLevel(level)


def configured_into() -> io.StringIO:
    """`logs.configure("INFO")` with its handler writing to the buffer it returns (stderr's place)."""
    written, stderr = io.StringIO(), sys.stderr
    sys.stderr = written
    try:
        logs.configure("INFO")
    finally:
        sys.stderr = stderr
    return written


def flushed(written: io.StringIO) -> str:
    """What the configured handler wrote once it has written every line it keeps (as at exit)."""
    for handler in logging.getLogger().handlers:
        handler.flush()
    return written.getvalue()


def test_the_service_writes_the_access_log_and_uvicorn_does_not(restored: None) -> None:
    written = configured_into()
    # uvicorn writes its own line whenever its logger reaches a handler (it asks at each connection)
    assert not logs.ACCESS.hasHandlers()
    logs.log_access({"method": "GET", "path": "/api/v1/admin/code-modules", "client": ("127.0.0.1", 5000), "http_version": "1.1",
                     "query_string": b"access_token=tsa_secret", "headers": [(b"authorization", b"Bearer tsa_secret")]}, 200, 0.0015)
    (line,) = [json.loads(text) for text in flushed(written).splitlines()]
    assert line["logger"] == "uvicorn.access" and line["level"] == "info"
    assert line["message"] == '127.0.0.1:5000 - "GET /api/v1/admin/code-modules HTTP/1.1" 200'
    assert (line["method"], line["path"], line["status"], line["durationMillis"], line["client"]) == (
        "GET", "/api/v1/admin/code-modules", 200, 1.5, "127.0.0.1:5000")
    assert "tsa_secret" not in written.getvalue()


def test_the_access_line_written_directly_is_the_line_the_formatter_writes_for_its_record(restored: None) -> None:
    """While the logging is as `configure` left it, the access log writes its line itself; the line
    is the one JsonFormatter writes for the access record (every field, in its order), and a handler
    added since (a capture, an application's own) gets the record as before."""
    written = configured_into()
    scope = {"method": "POST", "path": "/api/v1/tools/déjà/call", "client": ("127.0.0.1", 5000), "http_version": "1.1"}
    logs.log_access(scope, 201, 0.0123456)
    (direct,) = flushed(written).splitlines()
    record = logs.ACCESS.makeRecord(logs.ACCESS.name, logging.INFO, "", 0, '%s - "%s %s HTTP/%s" %d',
                                    ("127.0.0.1:5000", "POST", "/api/v1/tools/d%C3%A9j%C3%A0/call", "1.1", 201), None,
                                    extra={"method": "POST", "path": "/api/v1/tools/d%C3%A9j%C3%A0/call", "status": 201,
                                           "durationMillis": 12.346, "client": "127.0.0.1:5000"})
    formatted = JsonFormatter().format(record)
    ours, theirs = json.loads(direct), json.loads(formatted)
    assert list(ours) == list(theirs) and {**ours, "at": ""} == {**theirs, "at": ""}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", ours["at"])

    captured: list[logging.LogRecord] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            captured.append(record)

    capture = Capture()
    logging.getLogger().addHandler(capture)
    logs.log_access(scope, 200, 0.001)
    assert [(r.path, r.status) for r in captured] == [("/api/v1/tools/d%C3%A9j%C3%A0/call", 200)]  # type: ignore[attr-defined]
    assert len(written.getvalue().splitlines()) == 2  # the configured handler wrote it too, through logging


def test_an_access_line_is_written_within_the_flush_interval_and_in_the_order_of_the_lines(restored: None) -> None:
    """The access log's lines are written together by the handler's thread, within FLUSH_SECONDS of
    being made, with no one flushing; a record logged after a line is written after it."""
    written = configured_into()
    scope = {"method": "GET", "path": "/healthz", "client": ("127.0.0.1", 5000), "http_version": "1.1"}
    logs.log_access(scope, 200, 0.001)
    deadline = time.monotonic() + 5  # FLUSH_SECONDS is 0.05: the margin is for a loaded machine
    while not written.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [json.loads(text)["path"] for text in written.getvalue().splitlines()] == ["/healthz"]

    logs.log_access({**scope, "path": "/api/v1/tools/addOne/call"}, 200, 0.001)
    logging.getLogger("toolsmith.test").warning("after the call")  # written at once, the kept line first
    lines = [json.loads(text) for text in written.getvalue().splitlines()]
    assert [line.get("path", line["message"]) for line in lines] == ["/healthz", "/api/v1/tools/addOne/call", "after the call"]


def test_the_lines_kept_at_exit_are_written(restored: None) -> None:
    """`logging.shutdown` (at the interpreter's exit) flushes and closes the handler: what it kept is written."""
    written = configured_into()
    scope = {"method": "POST", "path": "/mcp", "client": ("127.0.0.1", 5000), "http_version": "1.1"}
    for status in (200, 202, 400):
        logs.log_access(scope, status, 0.001)
    (handler,) = logging.getLogger().handlers
    handler.close()  # what logging.shutdown does to each handler, after its flush
    assert [json.loads(text)["status"] for text in written.getvalue().splitlines()] == [200, 202, 400]


def test_a_line_after_the_writing_thread_went_idle_is_written_too(restored: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread that writes the kept lines ends once it finds none for IDLE_ROUNDS rounds; the
    next line starts another, and is written within the interval as the first was."""
    monkeypatch.setattr(logs, "FLUSH_SECONDS", 0.01)
    monkeypatch.setattr(logs, "IDLE_ROUNDS", 1)
    written = configured_into()
    (handler,) = logging.getLogger().handlers
    scope = {"method": "GET", "path": "/healthz", "client": ("127.0.0.1", 5000), "http_version": "1.1"}

    def lines_within(count: int, seconds: float = 5) -> int:
        deadline = time.monotonic() + seconds
        while len(written.getvalue().splitlines()) < count and time.monotonic() < deadline:
            time.sleep(0.005)
        return len(written.getvalue().splitlines())

    logs.log_access(scope, 200, 0.001)
    assert lines_within(1) == 1
    deadline = time.monotonic() + 5
    while handler._writer is not None and time.monotonic() < deadline:  # noqa: SLF001 - the thread's end is what is tested
        time.sleep(0.005)
    assert handler._writer is None  # noqa: SLF001
    logs.log_access(scope, 204, 0.001)
    assert lines_within(2) == 2
    assert [json.loads(text)["status"] for text in written.getvalue().splitlines()] == [200, 204]
