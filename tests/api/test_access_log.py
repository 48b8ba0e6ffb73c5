"""The access log (issue 30): one line per request, written by the app's edge under uvicorn's logger
name, with its parts as fields (method, path, status, duration, client); never a query string or a
header (a token may be in either), no line at all while its level is off, and a line for a request
the app fails (the 500 it gets)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from infrastructure.logs import ACCESS
from tests.helpers import ADMIN_TOKEN

MODULES = "/api/v1/admin/code-modules"
LEAKED = "tsa_query-string-secret-0123456789"


@pytest.fixture(autouse=True)
def access_logger() -> Iterator[None]:
    """The access logger as the service leaves it (no level, handler or cut of its own: the root's
    decide). A test that runs uvicorn in this process with uvicorn's logging config (several do)
    leaves it at WARNING with a handler of its own, and no line would reach `caplog`."""
    # uvicorn's config also cuts its parent logger, "uvicorn", off the root (propagate False, a
    # handler of its own): a record would stop there too.
    loggers = (ACCESS, logging.getLogger("uvicorn"))
    saved = [(logger.level, logger.propagate, logger.handlers[:], logger.disabled) for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.NOTSET)
        logger.propagate, logger.handlers[:], logger.disabled = True, [], False
    yield
    for logger, (level, logger.propagate, logger.handlers[:], logger.disabled) in zip(loggers, saved):
        logger.setLevel(level)


def access_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "uvicorn.access"]


def test_each_request_is_one_line_with_its_fields_and_without_its_query_or_headers(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    assert client.get(MODULES, params={"access_token": LEAKED}).status_code == 200
    assert client.head(f"{MODULES}?token={LEAKED}").status_code == 200
    assert client.get(f"{MODULES}?search=%00{LEAKED}").status_code == 400  # refused at the edge: logged too
    assert client.post(f"/api/v1/tools/none/call?key={LEAKED}", json={}).status_code == 404
    assert client.post(MODULES, content=b"x" * (3 * 1024 * 1024), headers={"Content-Type": "application/json"}).status_code == 413
    lines = access_lines(caplog)
    assert [(r.method, r.path, r.status) for r in lines] == [  # type: ignore[attr-defined]
        ("GET", MODULES, 200), ("HEAD", MODULES, 200), ("GET", MODULES, 400), ("POST", "/api/v1/tools/none/call", 404),
        ("POST", MODULES, 413)]
    first = lines[0]
    # uvicorn's line, as log pipelines read it, without the query string
    assert first.getMessage() == f'{first.client} - "GET {MODULES} HTTP/1.1" 200'  # type: ignore[attr-defined]
    assert first.levelno == logging.INFO and first.durationMillis >= 0  # type: ignore[attr-defined]
    for record in lines:
        text = record.getMessage() + str(vars(record))
        assert LEAKED not in text and ADMIN_TOKEN not in text and "access_token" not in text, text


def test_no_line_is_made_while_the_access_log_is_off(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert client.get(MODULES).status_code == 200
    assert access_lines(caplog) == []


def test_a_request_the_app_fails_is_logged_with_the_500_it_gets(app: FastAPI, caplog: pytest.LogCaptureFixture) -> None:
    @app.get("/test-only/fails")
    def fails() -> None:
        raise RuntimeError("the route fails")

    caplog.set_level(logging.INFO)
    # (not `with`: the app's lifespan is the fixture's)
    answer = TestClient(app, raise_server_exceptions=False).get("/test-only/fails")
    assert answer.status_code == 500 and answer.json()["code"] == "internal-error"
    assert [(r.method, r.path, r.status) for r in access_lines(caplog)] == [("GET", "/test-only/fails", 500)]  # type: ignore[attr-defined]


def test_the_line_is_written_once_the_answer_is_sent_and_a_stream_is_logged_at_its_first_part(
        app: FastAPI, caplog: pytest.LogCaptureFixture) -> None:
    """The client does not wait for the access log: the line is written after the body went out
    (for a stream, after its first part, so an open stream is logged while it lasts), once."""
    import asyncio

    from starlette.responses import StreamingResponse

    @app.get("/test-only/stream")
    def stream() -> StreamingResponse:
        return StreamingResponse(iter([b"one", b"two"]), media_type="text/plain")

    caplog.set_level(logging.INFO)
    for path, parts in ((MODULES, 1), ("/test-only/stream", 2)):
        caplog.clear()
        events: list[str] = []

        class Order(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                if record.name == "uvicorn.access":
                    events.append("logged")

        order = Order()
        logging.getLogger().addHandler(order)
        try:
            scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
                     "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5000),
                     "server": ("testserver", 80), "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {ADMIN_TOKEN}".encode())]}

            asked = [{"type": "http.request", "body": b"", "more_body": False}]

            async def receive() -> dict[str, object]:
                if asked:
                    return asked.pop()
                await asyncio.Event().wait()  # the client stays
                raise AssertionError("unreachable")

            async def send(message: dict[str, object]) -> None:
                if message["type"] == "http.response.body" and message.get("body"):
                    events.append("body")

            asyncio.run(app(scope, receive, send))  # (the app's lifespan is the fixture's)
        finally:
            logging.getLogger().removeHandler(order)
        assert events.count("logged") == 1, events
        assert events.index("logged") == 1 and events.count("body") == parts, events  # after the first part went out
        assert [(r.path, r.status) for r in access_lines(caplog)] == [(path, 200)]  # type: ignore[attr-defined]
