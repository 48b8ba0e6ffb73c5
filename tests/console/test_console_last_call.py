"""The catalog's "Last call" column (console/routes/catalog.py, docs/calls.md): when each tool was last
called and how it went, in words; "never" for a tool nobody called; one query for the whole page."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from tests.console.test_console_others import admin, module_tool  # noqa: F401 - the fixture
from tests.helpers import expect


def row_of(page: str, name: str) -> str:
    found = re.search(rf'<tr>\s*<th scope="row">\s*<a href="[^"]*">{re.escape(name)}</a>.*?</tr>', page, re.S)
    assert found, f"no row for {name}"
    return found.group(0)


def last_call(page: str, name: str) -> str:
    cell = re.search(r'<td data-label="Last call"[^>]*>(.*?)</td>', row_of(page, name), re.S)
    assert cell
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", cell.group(1))).strip()


def test_each_tool_shows_its_last_call_in_words(client: TestClient, admin: TestClient) -> None:
    called = module_tool(client)
    failing = module_tool(client, source="exports.run = function () { throw new Error('no'); };")
    never = module_tool(client)
    expect(client.post(f"/api/v1/tools/{called}/call", json={"n": 1}), 200)
    expect(client.post(f"/api/v1/tools/{failing}/call", json={"n": 1}), 200)
    page = expect(admin.get("/console/tools"), 200).text
    assert "Last call" in page
    assert last_call(page, called) == "just now ok"
    assert last_call(page, failing) == "just now failed: the code threw an error"
    assert last_call(page, never) == "never"
    assert re.search(r'<td data-label="Last call"[^>]*>\s*<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"', row_of(page, called))

    # the newest call is the one shown: a refused one too
    expect(client.post(f"/api/v1/tools/{called}/call", json={"n": "one"}), 400)
    assert last_call(admin.get("/console/tools").text, called) == "just now refused: the arguments do not fit its parameters"


def test_the_page_reads_every_rows_last_call_in_one_query(client: TestClient, admin: TestClient) -> None:
    names = [module_tool(client) for _ in range(4)]
    for name in names:
        expect(client.post(f"/api/v1/tools/{name}/call", json={"n": 2}), 200)
    store = client.app.state.services.toolbox.call_log.store  # type: ignore[attr-defined]
    statements: list[str] = []
    store._reader.set_trace_callback(statements.append)
    try:
        page = expect(admin.get("/console/tools"), 200).text
    finally:
        store._reader.set_trace_callback(None)
    assert all(last_call(page, name) == "just now ok" for name in names)
    assert len([s for s in statements if "call_records" in s]) == 1
