"""A call's notifications (api/mcp_progress.py): what each request asked for is what it gets, and a
client that reads slowly never makes the call wait: past the queue's bound, notifications drop."""

from __future__ import annotations

import threading

import anyio
import orjson

from api import mcp_progress
from api.mcp_progress import MAX_QUEUED, CallNotifications


def frames(notes: CallNotifications) -> list[dict]:
    found = []
    while True:
        try:
            frame = notes.receiver.receive_nowait()
        except anyio.WouldBlock:
            return found
        assert frame.startswith(b"event: message\r\ndata: ") and frame.endswith(b"\r\n\r\n")
        found.append(orjson.loads(frame[len(b"event: message\r\ndata: "):-4]))


def test_levels_a_token_and_what_each_asked_for() -> None:
    assert [level for level in mcp_progress.LEVELS if mcp_progress.sends_lines(level)] == ["debug", "info"]
    assert not mcp_progress.sends_lines(None) and not mcp_progress.sends_lines("loud")
    assert mcp_progress.progress_token({"_meta": {"progressToken": 7}}) == 7
    assert mcp_progress.progress_token({"_meta": {"progressToken": True}}) is None  # a bool is no token
    assert mcp_progress.request_level({"_meta": {"io.modelcontextprotocol/logLevel": "debug"}}) == "debug"
    assert mcp_progress.request_level({"_meta": {"io.modelcontextprotocol/logLevel": "chatty"}}) is None

    async def scenario() -> None:
        quiet = CallNotifications(None, "warning", "t")
        assert not quiet.wanted
        quiet.events("progress", (1, 2, None))
        quiet.events("log", "a line")
        assert frames(quiet) == []
        both = CallNotifications("tok", "debug", "t")
        both.events("progress", (1, None, "m"))
        both.events("log", "a line")
        assert frames(both) == [
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "tok", "progress": 1, "message": "m"}},
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "t", "data": "a line"}},
        ]
        # The lines a remote sandbox tells only at the end: those not told yet, in order.
        both.lines_after(["a line", "second", "third"])
        assert [f["params"]["data"] for f in frames(both)] == ["second", "third"]

    anyio.run(scenario)


def test_a_slow_client_drops_notifications_and_never_blocks_the_call() -> None:
    async def scenario() -> None:
        notes = CallNotifications("tok", None, "t")
        for n in range(MAX_QUEUED + 500):  # on the loop's own thread (an awaited call)
            notes.events("progress", (n, None, None))
        assert notes.dropped == 500
        # From a worker thread (a call made in a thread): handed to the loop, never waited on.
        worker = threading.Thread(target=lambda: [notes.events("progress", (n, None, None)) for n in range(100)])
        worker.start()
        worker.join(timeout=5)
        assert not worker.is_alive()
        await anyio.sleep(0.05)
        assert notes.dropped == 600 and len(frames(notes)) == MAX_QUEUED

    anyio.run(scenario)
