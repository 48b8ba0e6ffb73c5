"""The Calls page and a tool's activity (console/routes/calls.py, docs/calls.md, docs/console.md): the log
with its filters and its pages, each call linking to its tool and version, auditors reading it, the
navigation naming it; a tool's last 24 hours and 7 days as inline SVG, read in bounded queries."""

from __future__ import annotations

import re
from urllib.parse import unquote

from fastapi.testclient import TestClient

from tests.console.test_console_others import admin, auditor, module_tool  # noqa: F401 - the fixtures
from tests.helpers import expect


def rows(page: str) -> list[str]:
    return re.findall(r'<tr class="call-row">(.*?)</tr>', page, re.S)


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def test_the_calls_page_lists_filters_and_pages_the_log(client: TestClient, admin: TestClient) -> None:
    ok = module_tool(client)
    failing = module_tool(client, source="exports.run = function () { throw new Error('no'); };")
    for n in range(3):
        expect(client.post(f"/api/v1/tools/{ok}/call", json={"n": n}), 200)
    expect(client.post(f"/api/v1/tools/{failing}/call", json={"n": 1}), 200)
    expect(client.post(f"/api/v1/tools/{ok}/call", json={"n": "one"}), 400)

    page = expect(admin.get("/console/calls"), 200).text
    assert '<a href="/console/calls" aria-current="page"' in page or 'href="/console/calls"' in page  # in the navigation
    shown = rows(page)
    assert len(shown) >= 5
    newest = text(shown[0])
    assert ok in newest and "refused: the arguments do not fit its parameters" in newest and "REST" in newest
    # each call links to its tool, and to the version it ran
    assert f'href="/console/modules/{ok}"' in shown[0] and f'href="/console/modules/{ok}/history#version-1"' in shown[0]
    assert "version 1" in newest

    mine = rows(expect(admin.get("/console/calls", params={"tool": ok}), 200).text)
    assert len(mine) == 4 and all(ok in r for r in mine)
    failed = rows(admin.get("/console/calls", params={"outcome": "runtime"}).text)
    assert failed and all(failing in r and "failed: the code threw an error" in text(r) for r in failed)
    assert rows(admin.get("/console/calls", params={"tool": ok, "via": "mcp"}).text) == []
    assert "No call matches these filters." in admin.get("/console/calls", params={"tool": ok, "via": "mcp"}).text

    # the htmx swap answers the table alone
    part = admin.get("/console/calls", params={"tool": ok}, headers={"HX-Request": "true", "HX-Target": "calls-results"}).text
    assert part.lstrip().startswith('<section id="calls-results"') and len(rows(part)) == 4


def test_cursor_paging_reaches_every_call_once(client: TestClient, admin: TestClient) -> None:
    name = module_tool(client)
    for n in range(23):
        expect(client.post(f"/api/v1/tools/{name}/call", json={"n": n}), 200)
    seen: list[str] = []
    url = f"/console/calls?tool={name}&size=10"
    pages = 0
    while url:
        page = expect(admin.get(url), 200).text
        pages += 1
        seen += re.findall(r"<dt>Call id</dt><dd><code>([0-9a-f]+)</code>", page)
        older = re.search(r'<a href="([^"]+)" rel="next"', page)
        url = unquote(older.group(1).replace("&amp;", "&")) if older else ""
    assert pages == 3 and len(seen) == 23 and len(set(seen)) == 23


def test_a_bad_day_is_said_where_the_table_would_be(admin: TestClient) -> None:
    refused = admin.get("/console/calls", params={"since": "yesterday"})
    assert refused.status_code == 400 and "From: a date like 2026-12-31 is expected" in refused.text
    backwards = admin.get("/console/calls", params={"since": "2026-12-02", "until": "2026-12-01"})
    assert backwards.status_code == 400 and "To: the last day comes on or after the first" in backwards.text
    assert admin.get("/console/calls", params={"via": "carrier-pigeon"}).status_code in (400, 422)


def test_auditors_read_the_calls_and_a_tools_activity(client: TestClient, auditor: TestClient) -> None:
    name = module_tool(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"n": 1}), 200)
    assert name in expect(auditor.get("/console/calls"), 200).text
    assert "<svg" in expect(auditor.get("/console/calls/activity", params={"tool": name}), 200).text


def test_a_tools_page_shows_its_last_24_hours_and_7_days(client: TestClient, admin: TestClient) -> None:
    name = module_tool(client, source="exports.run = function (i) { if (i.n < 0) throw new Error('neg'); return i.n; };")
    for n in (1, 2, 3, -1):
        expect(client.post(f"/api/v1/tools/{name}/call", json={"n": n}), 200)
    page = expect(admin.get(f"/console/modules/{name}"), 200).text
    assert f'hx-get="/console/calls/activity?tool={name}"' in page  # the slot, asked for once shown

    activity = expect(admin.get("/console/calls/activity", params={"tool": name}), 200).text
    assert "Last 24 hours" in activity and "Last 7 days" in activity
    totals = re.findall(r"<div><dt>(Calls|Errors|p50|p95)</dt><dd[^>]*>(.*?)</dd></div>", activity, re.S)
    day = dict((k, text(v)) for k, v in totals[:4])
    assert day["Calls"] == "4" and day["Errors"] == "1 (25%)" and day["p50"].endswith(("ms", "s"))
    assert activity.count('<svg class="chart bars"') == 2 and activity.count('<svg class="chart lines"') == 2
    assert 'aria-label="Calls per hour: 4 in all, 1 failed or refused' in activity
    assert "<title>" in activity and "1 failed or refused" in activity
    assert re.search(r'<span class="caller-name">[^<]+</span>', activity)  # the top caller
    assert "<script" not in activity and "style=" not in activity  # drawn on the server; the CSP allows no inline style

    quiet = module_tool(client)
    nothing = admin.get("/console/calls/activity", params={"tool": quiet}).text
    assert nothing.count("No call.") == 2 and "<svg" not in nothing


def test_a_tools_activity_costs_four_queries_of_the_log(client: TestClient, admin: TestClient) -> None:
    name = module_tool(client)
    for n in range(30):
        expect(client.post(f"/api/v1/tools/{name}/call", json={"n": n}), 200)
    store = client.app.state.services.toolbox.call_log.store  # type: ignore[attr-defined]
    statements: list[str] = []
    store._reader.set_trace_callback(statements.append)
    try:
        expect(admin.get("/console/calls/activity", params={"tool": name}), 200)
    finally:
        store._reader.set_trace_callback(None)
    queries = [s for s in statements if "call_records" in s]
    assert len(queries) == 4 and all("LIMIT" in q or "GROUP BY" in q for q in queries)


def test_an_admin_switches_value_capture_on_and_off_from_the_tools_card(client: TestClient, admin: TestClient, auditor: TestClient) -> None:
    from tests.console.test_console_others import post

    name = module_tool(client)
    card = expect(admin.get("/console/calls/activity", params={"tool": name}), 200).text
    assert "Value capture" in card and "Off: the log keeps the SHA-256" in card and "Capture values" in card
    assert "Capture values" not in auditor.get("/console/calls/activity", params={"tool": name}).text  # auditors read only

    page = f"/console/modules/{name}"
    bad = post(admin, "/console/calls/capture", {"tool": name, "capture": "on", "maxBytes": "0"}, page=page, headers={"HX-Request": "true"})
    assert bad.status_code == 400 and "a whole number from 1 to 65,536" in bad.text
    on = post(admin, "/console/calls/capture", {"tool": name, "capture": "on", "maxBytes": "100"}, page=page, headers={"HX-Request": "true"})
    assert on.status_code == 200 and "cut to 100 bytes" in on.text and "Stop capturing values" in on.text
    assert [c["tool"] for c in expect(client.get("/api/v1/admin/calls/capture"), 200).json()] == [name]
    expect(client.post(f"/api/v1/tools/{name}/call", json={"n": 41}), 200)
    assert "Arguments kept" in admin.get("/console/calls", params={"tool": name}).text

    off = post(admin, "/console/calls/capture", {"tool": name, "capture": "off"}, page=page)
    assert off.status_code == 303 and off.headers["location"] == f"/console/calls?tool={name}"
    assert expect(client.get("/api/v1/admin/calls/capture"), 200).json() == []
    assert post(admin, "/console/calls/capture", {"tool": "no_such_tool", "capture": "on", "maxBytes": "9"}, page=page).status_code == 404
    assert post(auditor, "/console/calls/capture", {"tool": name, "capture": "on", "maxBytes": "9"}, page=page).status_code == 403


def test_a_file_search_tools_activity_is_its_capabilities_calls(client: TestClient, admin: TestClient) -> None:
    from tests.console.test_console_search_tools import made
    from tests.helpers import unique_id

    name = unique_id("docs").lower()
    made(client, name)
    page = expect(admin.get(f"/console/search-tools/{name}"), 200).text
    slot = re.search(r'hx-get="/console/calls/activity\?([^"]+)"', page)
    assert slot and slot.group(1).startswith(f"tool={name}&amp;name={name}_")
    card = expect(admin.get("/console/calls/activity?" + slot.group(1).replace("&amp;", "&")), 200).text
    assert "Last 24 hours" in card and "Value capture" not in card  # switched per capability, over the API


def test_another_organizations_admin_sees_none_of_these_calls_nor_their_activity(client: TestClient, admin: TestClient) -> None:
    from tests.console.test_console_others import console
    from tests.helpers import OPERATOR_TOKEN, unique_id

    name = module_tool(client)
    expect(client.post(f"/api/v1/tools/{name}/call", json={"n": 1}), 200)
    assert name in admin.get("/console/calls").text
    made = expect(client.post("/api/v1/operator/tenants", json={"id": unique_id("beta").lower().replace("_", "-"), "name": "Beta"},
                              headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}), 201).json()
    theirs = console(client, made["adminToken"])
    page = expect(theirs.get("/console/calls"), 200).text
    assert name not in page and "No tool was called yet." in page
    card = expect(theirs.get("/console/calls/activity", params={"tool": name}), 200).text
    assert card.count("No call.") == 2
    from tests.console.test_console_others import post

    refused = post(theirs, "/console/calls/capture", {"tool": name, "capture": "on", "maxBytes": "9"}, page="/console/calls")
    assert refused.status_code == 404
    assert expect(client.get("/api/v1/admin/calls/capture"), 200).json() == []
