"""The console's audit viewer over HTTP (no browser): the tenant's events in words, newest first,
filtered and paged by the URL, a row's change as a diff, nothing of another tenant's, and never a
secret's value nor a token's digest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from console import audit_log
from infrastructure.settings import Settings
from tests.helpers import ADMIN_TOKEN, expect, sign_in_console, unique_id

OPERATOR_TOKEN = "tso_test-operator-token"
MODULES = "/api/v1/admin/code-modules"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN)


def signed_in(app: FastAPI, token: str = ADMIN_TOKEN) -> TestClient:
    client = TestClient(app)
    sign_in_console(client, token, next="/console/audit")
    return client


def module(api: TestClient, name: str, source: str = "exports.run = function (i) { return i.n + 1; };") -> None:
    expect(api.post(MODULES, json={"id": name, "description": "adds one", "draftContent": source,
                                   "tool": {"inputParameters": [{"name": "n", "type": "integer", "required": True}],
                                            "exposeInChat": True}}), 201)
    expect(api.post(f"{MODULES}/{name}/publish"), 200)


def rows(html: str) -> list[str]:
    """Each row's text, tags stripped and spaces folded."""
    found = re.findall(r'<tr class="audit-row">(.*?)</tr>', html, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in found]


def test_the_viewer_tells_each_event_in_words_newest_first_above_the_export(app: FastAPI, api: TestClient) -> None:
    name = unique_id("addOne")
    module(api, name)
    expect(api.put(f"{MODULES}/{name}", json={"draftContent": "exports.run = function (i) {\n  return i.n + 2;\n};"}), 200)
    expect(api.post(f"{MODULES}/{name}/publish"), 200)
    server = unique_id("srv")
    expect(api.post("/api/v1/admin/mcp-servers", json={"id": server, "tools": []}), 201)
    expect(api.put(f"/api/v1/admin/mcp-servers/{server}/tools/{name}"), 200)
    page = signed_in(app).get("/console/audit")
    assert page.status_code == 200
    text = rows(page.text)
    assert f"attached tool {name} to MCP server {server}" in text[0]
    assert f"created MCP server {server}" in text[1]
    assert f"published code module {name} as version 2" in text[2]
    assert f"saved a draft of code module {name}" in text[3]
    assert all("admin" in row for row in text)  # who: the principal's name
    # the object links to its page while it exists
    assert f'href="/console/modules/{name}"' in page.text and f'href="/console/servers/{server}"' in page.text
    # no class name, no topic
    assert "DraftChanged" not in page.text and "domain.model" not in page.text
    assert page.text.index("audit-results") < page.text.index("Download the audit export")


def test_a_rows_change_is_a_diff_of_the_changed_fields_and_a_line_diff_of_the_code(app: FastAPI, api: TestClient) -> None:
    name = unique_id("addOne")
    module(api, name)
    expect(api.put(f"{MODULES}/{name}", json={"draftContent": "exports.run = function (i) {\n  return i.n + 2;\n};",
                                                     "description": "adds two"}), 200)
    viewer = signed_in(app)
    page = viewer.get("/console/audit", params={"kind": "module", "name": name})
    position = re.findall(r'hx-get="/console/audit/events/(\d+)"', page.text)[0]
    change = viewer.get(f"/console/audit/events/{position}")
    assert change.status_code == 200
    assert "Description" in change.text and "<del>adds one</del>" in change.text and "<ins>adds two</ins>" in change.text
    assert 'class="removed"' in change.text and 'class="added"' in change.text
    assert "return i.n + 2;" in change.text
    assert "own_hash" not in change.text and "previous_hash" not in change.text


def test_filters_and_pages_are_in_the_url(app: FastAPI, api: TestClient) -> None:
    names = [unique_id("m") for _ in range(6)]
    for name in names:
        module(api, name)  # two events each: created, published
    viewer = signed_in(app)
    only = viewer.get("/console/audit", params={"kind": "module", "name": names[2]})
    assert {row.split(" code module ")[-1].split()[0] for row in rows(only.text)} == {names[2]}
    assert viewer.get("/console/audit", params={"who": "nobody-at-all"}).text.count('class="audit-row"') == 0
    assert "No event matches these filters" in viewer.get("/console/audit", params={"who": "nobody-at-all"}).text
    first = viewer.get("/console/audit", params={"kind": "module", "size": 10})
    older = re.search(r'href="(/console/audit\?kind=module&amp;size=10&amp;before=\d+)" rel="next"', first.text)
    assert older, first.text
    second = viewer.get(older.group(1).replace("&amp;", "&"))
    assert len(rows(first.text)) == 10 and len(rows(second.text)) == 2
    assert not set(rows(first.text)) & set(rows(second.text))
    assert 'href="/console/audit?kind=module&amp;size=10"' in second.text  # back to the newest
    # htmx's swap asks for the table alone
    fragment = viewer.get("/console/audit", params={"kind": "module"}, headers={"HX-Request": "true", "HX-Target": "audit-results"})
    assert fragment.text.lstrip().startswith("{#") is False and "<html" not in fragment.text and 'id="audit-results"' in fragment.text
    # bad input is a readable refusal, not a 500
    refused = viewer.get("/console/audit", params={"since": "yesterday"})
    assert refused.status_code == 400 and "From: a date like 2026-12-31 is expected" in refused.text
    backwards = viewer.get("/console/audit", params={"since": "2026-02-01", "until": "2026-01-01"})
    assert backwards.status_code == 400 and "To: the last day comes on or after the first" in backwards.text
    assert viewer.get("/console/audit", params={"kind": "CODE"}).status_code == 400
    future = viewer.get("/console/audit", params={"since": "2999-01-01"})
    assert future.status_code == 200 and 'class="audit-row"' not in future.text


def test_another_tenants_events_never_appear(app: FastAPI, api: TestClient) -> None:
    operator = TestClient(app, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
    tenant = unique_id("org").replace("_", "-")
    other_token = expect(operator.post("/api/v1/operator/tenants", json={"id": tenant, "name": "Other"}), 201).json()["adminToken"]
    other = TestClient(app, headers={"Authorization": f"Bearer {other_token}"})
    secret_name = unique_id("theirs")
    module(other, secret_name)
    mine = unique_id("mine")
    module(api, mine)
    viewer = signed_in(app)
    page = viewer.get("/console/audit")
    assert mine in page.text and secret_name not in page.text
    # nor by its position
    theirs = signed_in(app, other_token).get("/console/audit")
    position = re.findall(r'hx-get="/console/audit/events/(\d+)"', theirs.text)[0]
    assert viewer.get(f"/console/audit/events/{position}").status_code == 404


def test_a_secrets_change_says_changed_and_never_shows_a_value(app: FastAPI, api: TestClient) -> None:
    name = unique_id("key")
    expect(api.post("/api/v1/admin/secrets", json={"id": name, "value": "hunter2-value", "description": "upstream key"}), 201)
    expect(api.put(f"/api/v1/admin/secrets/{name}", json={"value": "hunter3-value"}), 200)
    viewer = signed_in(app)
    page = viewer.get("/console/audit", params={"kind": "secret"})
    text = rows(page.text)
    assert f"changed the value of secret {name}" in text[0] and f"created secret {name}" in text[1]
    for position in re.findall(r'hx-get="/console/audit/events/(\d+)"', page.text):
        change = viewer.get(f"/console/audit/events/{position}").text
        assert "hunter" not in change
        assert not re.search(r"[0-9a-f]{32}", change)  # no fingerprint either
    newest = re.findall(r"/console/audit/events/(\d+)", page.text)[0]
    rotated = viewer.get(f"/console/audit/events/{newest}").text
    assert "changed" in rotated


def test_a_token_is_named_never_its_digest(app: FastAPI, api: TestClient) -> None:
    issued = expect(api.post("/api/v1/admin/tokens", json={"name": "the reporting job", "role": "auditor"}), 201).json()
    viewer = signed_in(app)
    page = viewer.get("/console/audit", params={"kind": "token"})
    assert "issued token the reporting job" in rows(page.text)[0]
    position = re.findall(r'/console/audit/events/(\d+)', page.text)[0]
    change = viewer.get(f"/console/audit/events/{position}").text
    assert "auditor" in change and issued["token"] not in change and "digest" not in change


def test_a_page_reads_a_bounded_part_of_the_log(app: FastAPI, api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of the newest events reads a batch or so from the log's end, not the whole log."""
    for _ in range(4):
        module(api, unique_id("m"))
    services = app.state.services
    reader = audit_log.Reader(services, "default")
    asked: list[tuple[int, int]] = []
    select = reader.recorder.select_notifications

    def counted(start, limit, stop=None, topics=(), **kw):  # noqa: ANN001, ANN202
        asked.append((start, stop))
        return select(start, limit, stop=stop, topics=topics, **kw)

    monkeypatch.setattr(reader.recorder, "select_notifications", counted)
    monkeypatch.setattr(audit_log, "BATCH", 4)
    page = reader.page(audit_log.Filters(), size=2)
    assert len(page.rows) == 2 and len(asked) <= 2
    assert asked[0][1] == reader.head()


def test_a_change_reads_a_bounded_part_of_its_objects_past(app: FastAPI, api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """The version before a change is looked for among at most SCAN_LIMIT earlier events of its
    aggregate (a registry holds every record of the tenant): past that, the change says so."""
    expect(api.post("/api/v1/admin/usage-profiles", json={"id": "first", "description": "one", "allowedTools": []}), 201)
    for n in range(5):
        expect(api.post("/api/v1/admin/usage-profiles", json={"id": f"between{n}", "allowedTools": []}), 201)
    expect(api.put("/api/v1/admin/usage-profiles/first", json={"description": "two", "allowedTools": []}), 200)
    reader = audit_log.Reader(app.state.services, "default")
    position = reader.page(audit_log.Filters(name="first")).rows[0].position
    close = reader.change(position)
    assert close is not None and [f["name"] for f in close.fields] == ["Description"] and not close.note
    monkeypatch.setattr(audit_log, "SCAN_LIMIT", 3)
    far = reader.change(position)
    assert far is not None and "too far back" in far.note


DOCUMENT_EVENTS = {
    "DocumentAdded": ({"sha256": "0" * 64, "name": "guide.pdf", "media_type": "application/pdf", "size": 10, "by": "admin"},
                      "admin", "added a document to File Search tool docs (guide.pdf)"),
    "DocumentEmbedded": ({"model": "static-mrl-256", "vectors_sha256": "1" * 64},
                         audit_log.SYSTEM, "embedded a document of File Search tool docs (d1, model static-mrl-256)"),
    "DocumentReady": ({"text_sha256": "2" * 64, "characters": 5, "chunks": 1, "page_starts": [0], "title": None},
                      audit_log.SYSTEM, "finished reading a document of File Search tool docs (d1)"),
    "DocumentFailed": ({"reason": "not a PDF"}, audit_log.SYSTEM, "could not read a document of File Search tool docs (d1)"),
    "DocumentMetadataSet": ({"metadata": {"team": "a"}, "by": "admin"}, "admin",
                            "set the metadata of a document of File Search tool docs (d1)"),
    "DocumentRemoved": ({"by": "admin"}, "admin", "removed a document from File Search tool docs (d1)"),
}


@pytest.mark.parametrize("name", sorted(DOCUMENT_EVENTS))
def test_each_event_of_a_file_search_document_is_told_in_words(name: str) -> None:
    import uuid
    from datetime import datetime, timezone

    from toolkinds.search_tools.model import SearchTool

    fields, who, words = DOCUMENT_EVENTS[name]
    event = getattr(SearchTool, name)(originator_id=uuid.uuid4(), originator_version=2, timestamp=datetime.now(timezone.utc),
                                      tenant="default", tool_id="docs", document_id="d1", previous_hash="", **fields)
    row = audit_log.describe(7, event)
    assert row is not None and row.kind == "search-tool" and row.name == "docs" and row.who == who
    assert audit_log.sentence(row) == words and not row.diff


def test_prompts_and_resources_are_told_in_words_filtered_linked_and_compared(app: FastAPI, api: TestClient) -> None:
    prompts, resources = "/api/v1/admin/prompts", "/api/v1/admin/resources"
    greet = unique_id("greet")
    expect(api.post(prompts, json={"id": greet, "description": "Greets", "messages": [
        {"role": "user", "content": {"type": "text", "text": "Hello."}}]}), 201)
    expect(api.post(f"{prompts}/{greet}/publish"), 200)
    expect(api.put(f"{prompts}/{greet}", json={"messages": [{"role": "user", "content": {"type": "text", "text": "Good morning."}}]}), 200)
    expect(api.post(f"{prompts}/{greet}/publish"), 200)
    expect(api.post(f"{prompts}/{greet}/revert", json={"version": 1}), 200)
    expect(api.delete(f"{prompts}/{greet}/draft"), 200)
    motd = unique_id("motd")
    expect(api.post(resources, json={"id": motd, "description": "The message", "uri": f"memo://{motd}", "mimeType": "text/plain",
                                     "text": "Bring an umbrella."}), 201)
    expect(api.post(f"{resources}/{motd}/publish"), 200)
    viewer = signed_in(app)
    page = viewer.get("/console/audit")
    text = rows(page.text)
    assert f"published resource {motd} as version 1" in text[0] and f"created resource {motd}" in text[1]
    assert f"discarded the draft of prompt {greet}" in text[2]
    assert f"restored version 1 as the draft of prompt {greet}" in text[3]
    assert f"published prompt {greet} as version 2" in text[4] and f"saved a draft of prompt {greet}" in text[5]
    assert f"published prompt {greet} as version 1" in text[6] and f"created prompt {greet}" in text[7]
    assert all("admin" in row for row in text[:8])
    assert f'href="/console/prompts/{greet}"' in page.text and f'href="/console/resources/{motd}"' in page.text
    only = viewer.get("/console/audit", params={"kind": "prompt"})
    assert len(rows(only.text)) == 6 and all(f"prompt {greet}" in row for row in rows(only.text))
    assert [row for row in rows(viewer.get("/console/audit", params={"kind": "resource"}).text)] == text[:2]
    # version 2's change is the text against version 1's
    second = viewer.get("/console/audit", params={"kind": "prompt", "name": greet})
    row = next(r for r in re.findall(r'<tr class="audit-row">(.*?)</tr>', second.text, re.S) if "as version 2" in r)
    position = re.findall(r'hx-get="/console/audit/events/(\d+)"', row)[0]
    change = viewer.get(f"/console/audit/events/{position}")
    assert change.status_code == 200 and "<del>Hello.</del>" in change.text and "<ins>Good morning.</ins>" in change.text
    # deleted: told still, its link gone
    expect(api.delete(f"{prompts}/{greet}"), 204)
    after = viewer.get("/console/audit")
    assert f"deleted prompt {greet}" in rows(after.text)[0] and f'href="/console/prompts/{greet}"' not in after.text
