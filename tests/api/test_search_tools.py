"""File Search tools over REST (issue 17, docs/kinds/file-search-tools.md) with the embedded defaults: the SQLite FTS5
chunk index and the blob folder in the data dir, extraction in its own processes."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from toolkinds.search_tools.model import search_tool_id
from infrastructure.settings import Settings
from tests import documents
from tests.conftest import wire
from tests.file_search import PAGE_TWO_WORD, TABLE_WORD, TOOLS, call, create, scenario, settled, upload
from tests.helpers import ADMIN_TOKEN, expect


def _client(settings: Settings, shared_sandbox: Any) -> TestClient:
    return TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def api(data: Path, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=data, admin_token=ADMIN_TOKEN, max_upload_mb=2, extract_timeout_seconds=20)
    with _client(settings, shared_sandbox) as client:
        yield client


def test_the_acceptance_scenario_on_sqlite_fts5(api: TestClient) -> None:
    scenario(api)


def test_a_rebuild_from_the_events_and_blobs_gives_the_same_index(api: TestClient, data: Path, shared_sandbox: Any) -> None:
    create(api)
    made = upload(api, "docs", ("report.docx", documents.docx_with_table(TABLE_WORD)),
                  ("atlas.pdf", documents.two_page_pdf(PAGE_TWO_WORD)), ("guide.md", documents.markdown_doc()))
    for document in made:
        assert settled(api, "docs", document["id"])["state"] == "READY"
    before = {q: call(api, "docs_search", {"query": q})["output"]["results"] for q in (TABLE_WORD, PAGE_TWO_WORD, "guide")}
    kind = _kind(api)
    (data / "documents.sqlite").stat()  # the index is a file of the data dir
    chunks = kind.rebuild()
    assert chunks == sum(settled(api, "docs", d["id"])["chunks"] for d in made)
    after = {q: call(api, "docs_search", {"query": q})["output"]["results"] for q in before}
    assert after == before


def _kind(client: TestClient) -> Any:
    from toolkinds.search_tools.kind import SearchToolKind

    return client.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]


def test_the_same_bytes_twice_are_one_document(api: TestClient) -> None:
    create(api)
    first = upload(api, "docs", ("a.md", b"# Title\n\nsome unusual words: florbix\n"))
    again = upload(api, "docs", ("copy-of-a.md", b"# Title\n\nsome unusual words: florbix\n"))
    assert again[0]["id"] == first[0]["id"]
    settled(api, "docs", first[0]["id"])
    listed = expect(api.get(f"{TOOLS}/docs/documents"), 200).json()["documents"]
    assert [d["name"] for d in listed] == ["a.md"]
    events = expect(api.get(f"{TOOLS}/docs/history"), 200).json()["events"]
    added = [e for e in events if e["type"] == "DocumentAdded"]
    assert len(added) == 1
    # The event records the hash, name, type, size and who; never the contents.
    assert {"sha256", "name", "mediaType", "size"} <= set(added[0]["data"]) and added[0]["by"] == "admin"
    assert "florbix" not in str(events)


def test_hostile_and_broken_files_end_failed_with_a_reason_and_the_service_keeps_serving(data: Path, shared_sandbox: Any) -> None:
    limit = 5
    settings = Settings(data_dir=data, admin_token=ADMIN_TOKEN, extract_timeout_seconds=limit)
    with _client(settings, shared_sandbox) as api:
        create(api)
        ready = upload(api, "docs", ("fine.md", b"# Fine\n\nthis one is fine: plumbago\n"))[0]
        assert settled(api, "docs", ready["id"])["state"] == "READY"
        started = time.monotonic()
        made = upload(
            api, "docs",
            ("loop.pdf", documents.looping_pdf()),
            ("bomb.docx", documents.zip_bomb_docx()),
            ("empty.txt", b""),
            ("fake.pdf", documents.fake_pdf()),
            ("binary.txt", documents.binary_as_text()),
            ("later.md", b"# Later\n\nuploaded beside hostile files: bittern\n"),
        )
        # While the hostile PDF holds an extraction process, calls and other uploads are served.
        assert call(api, "docs_search", {"query": "plumbago"})["output"]["results"]
        expect(api.get("/healthz"), 200)
        states = {d["name"]: settled(api, "docs", d["id"]) for d in made}
        elapsed = time.monotonic() - started
    for name in ("loop.pdf", "bomb.docx", "empty.txt", "fake.pdf", "binary.txt"):
        assert states[name]["state"] == "FAILED", states[name]
    assert f"longer than {limit} s" in states["loop.pdf"]["reason"]
    assert "decompression bomb" in states["bomb.docx"]["reason"]
    assert states["empty.txt"]["reason"] == "the file is empty"
    assert "not a PDF" in states["fake.pdf"]["reason"]
    assert states["binary.txt"]["reason"].startswith("unsupported file type")  # NUL bytes: not text of any kind
    assert states["later.md"]["state"] == "READY"
    # Within the limit: the hostile PDF cost its own extraction's time limit, and then some start-up.
    assert elapsed < limit + 15, elapsed


def test_bad_queries_get_clear_answers(api: TestClient) -> None:
    create(api)
    settled(api, "docs", upload(api, "docs", ("a.md", b"# Words\n\nAND OR NOT NEAR title quux\n"))[0]["id"])
    too_long = api.post("/api/v1/tools/docs_search/call", json={"query": "x" * 10_000})
    assert too_long.status_code == 400 and "query" in too_long.text
    stop_words = api.post("/api/v1/tools/docs_search/call", json={"query": "the and of"})
    assert stop_words.status_code == 400 and "common words" in stop_words.json()["detail"]
    syntax = call(api, "docs_search", {"query": '"AND (OR* -NOT title: NEAR/3 ^quux~ {x} [y]'})
    assert syntax["error"] is None and syntax["output"]["results"]
    over = api.post("/api/v1/tools/docs_search/call", json={"query": "quux", "maxResults": 51})
    assert over.status_code == 400 and any(e["field"] == "input.maxResults" for e in over.json()["errors"])


def test_an_upload_over_the_cap_is_413_and_nothing_is_kept(api: TestClient) -> None:
    create(api)
    response = api.post(f"{TOOLS}/docs/documents", files=[("files", ("big.txt", b"a" * (3 * 1_048_576)))])
    assert response.status_code == 413 and "TOOLSMITH_MAX_UPLOAD_MB" in response.json()["detail"]
    assert expect(api.get(f"{TOOLS}/docs/documents"), 200).json()["documents"] == []


def test_configuration_rules_name_their_field(api: TestClient) -> None:
    long_name = api.post(TOOLS, json={"id": "d" * 41})
    assert long_name.status_code == 400 and any(e["field"] == "id" for e in long_name.json()["errors"])
    over_cap = api.post(TOOLS, json={"id": "docs", "capabilities": {"search": {"maxResults": 60}}})
    assert over_cap.status_code == 400
    assert any(e["field"] == "capabilities.search.maxResults" for e in over_cap.json()["errors"])
    cap_over_design = api.post(TOOLS, json={"id": "docs", "capabilities": {"fetch": {"maxCharsCap": 60_000}}})
    assert any(e["field"] == "capabilities.fetch.maxCharsCap" for e in cap_over_design.json()["errors"])
    another_limit = api.post(TOOLS, json={"id": "docs", "description": "d", "capabilities": {"search": {"maxChars": 10}}})
    assert another_limit.status_code == 400
    assert [e["field"] for e in another_limit.json()["errors"]] == ["capabilities.search.maxChars"]


def test_capabilities_are_catalog_tools_with_their_limits_and_names_are_held(api: TestClient) -> None:
    create(api, capabilities={"search": {"maxResults": 5, "maxResultsCap": 20}, "find_text": {"enabled": True}})
    catalog = {t["name"]: t for t in expect(api.get("/api/v1/admin/tools", params={"callType": "FILE_SEARCH"}), 200).json()}
    assert sorted(catalog) == ["docs_fetch", "docs_find_text", "docs_search"]
    search = catalog["docs_search"]
    assert search["readOnly"] is True and search["group"] == "docs" and "search" in search["tags"]
    assert search["inputSchema"]["properties"]["maxResults"] == {
        "type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "how many results (default 5, at most 20)"}
    # R2: a module cannot take a capability's name, even one switched off.
    taken = api.post("/api/v1/admin/code-modules", json={"id": "docs_read_context", "description": "x", "draftContent": "export function run() {}"})
    assert taken.status_code == 409
    # Nor can another File Search tool whose capability names collide with a module's.
    expect(api.post("/api/v1/admin/code-modules", json={"id": "notes_fetch", "description": "x",
                                                   "draftContent": "export function run() {}"}), 201)
    clash = api.post(TOOLS, json={"id": "notes", "description": "notes"})
    assert clash.status_code == 409 and "notes_fetch" in clash.json()["detail"]
    # Switching a capability off takes it out of the catalog at once.
    body = expect(api.get(f"{TOOLS}/docs"), 200).json()
    body["capabilities"]["find_text"]["enabled"] = False
    expect(api.put(f"{TOOLS}/docs", json={k: body[k] for k in ("description", "tags", "exposeInChat", "enabled", "capabilities")}), 200)
    catalog = [t["name"] for t in expect(api.get("/api/v1/admin/tools", params={"callType": "FILE_SEARCH"}), 200).json()]
    assert catalog == ["docs_fetch", "docs_search"]
    off = api.post("/api/v1/tools/docs_find_text/call", json={"text": "x"})
    assert off.status_code == 404 and "switched off" in off.json()["detail"]


def test_delete_is_refused_while_a_plan_names_a_capability_and_history_stays(api: TestClient) -> None:
    create(api)
    expect(api.post("/api/v1/admin/plans", json={"id": "lookup", "description": "search the handbook", "nodes": [
        {"type": "DIRECT_TOOL", "toolName": "docs_search"}]}), 201)
    refused = api.delete(f"{TOOLS}/docs")
    assert refused.status_code == 409 and "lookup" in refused.text
    expect(api.delete("/api/v1/admin/plans/lookup"), 204)
    expect(api.delete(f"{TOOLS}/docs"), 204)
    expect(api.get(f"{TOOLS}/docs"), 404)
    assert [e["type"] for e in expect(api.get(f"{TOOLS}/docs/history"), 200).json()["events"]][-1] == "Deleted"


def test_a_document_left_processing_is_extracted_when_the_service_starts_again(data: Path, shared_sandbox: Any) -> None:
    from application.commands import Change

    settings = Settings(data_dir=data, admin_token=ADMIN_TOKEN)
    services = wire(settings, shared_sandbox)  # not started: nothing extracts
    try:
        kind = _kind_of(services)
        kind.save("default", "docs", {"description": "resumed documents"}, by="admin", create=True)
        # What a process that stopped mid-extraction leaves: the bytes stored, the document PROCESSING.
        sha, size = kind.files.blobs.put("default", io.BytesIO(b"# Resumed\n\ncormorant\n"))

        def attempt() -> Change[None]:
            tool = kind._load(search_tool_id("default", "docs"), for_update=True)
            tool.add_document(sha, "resumed.md", "text/markdown", size, "admin")
            return Change(None, save=[tool])

        kind.deps.commands.run(attempt, name="docs", lock="default")
    finally:
        services.close()
    with _client(settings, shared_sandbox) as client:
        listed = expect(client.get(f"{TOOLS}/docs/documents"), 200).json()["documents"]
        assert [d["name"] for d in listed] == ["resumed.md"]
        assert settled(client, "docs", listed[0]["id"])["state"] == "READY"
        assert call(client, "docs_search", {"query": "cormorant"})["output"]["results"]


def _kind_of(services: Any) -> Any:
    from toolkinds.search_tools.kind import SearchToolKind

    return services.toolbox.kind(SearchToolKind)


def test_r14_a_caller_reaches_capabilities_by_the_tools_name_or_its_tags(api: TestClient) -> None:
    create(api, tags=["handbook"])
    settled(api, "docs", upload(api, "docs", ("a.md", b"# Leave\n\nparental leave is sixteen weeks\n"))[0]["id"])
    create(api, "other", tags=["private"])
    for profile, body in (("by-name", {"allowedTools": ["docs"]}), ("by-tag", {"allowedTags": ["handbook"]}),
                          ("one-capability", {"allowedTools": ["docs_fetch"]})):
        expect(api.post("/api/v1/admin/usage-profiles", json={"id": profile, "description": profile, **body}), 201)
    for profile, allowed in (("by-name", {"docs_search", "docs_fetch"}), ("by-tag", {"docs_search", "docs_fetch"}),
                             ("one-capability", {"docs_fetch"})):
        token = expect(api.post("/api/v1/admin/tokens", json={"name": profile, "role": "caller", "usageProfile": profile}), 201).json()["token"]
        caller = {"Authorization": f"Bearer {token}"}
        for name in ("docs_search", "docs_fetch", "other_search"):
            arguments = {"query": "parental"} if name.endswith("search") else {"id": "nothing"}
            answer = api.post(f"/api/v1/tools/{name}/call", json=arguments, headers=caller)
            assert (answer.status_code == 200) == (name in allowed), (profile, name, answer.text)


def test_toolsmith_projections_rebuild_makes_the_chunk_index_again(data: Path, shared_sandbox: Any) -> None:
    import subprocess
    import sys

    from tests.helpers import environment_without_settings

    settings = Settings(data_dir=data, admin_token=ADMIN_TOKEN)
    with _client(settings, shared_sandbox) as api:
        create(api)
        doc_id = upload(api, "docs", ("atlas.pdf", documents.two_page_pdf(PAGE_TWO_WORD)))[0]["id"]
        assert settled(api, "docs", doc_id)["state"] == "READY"
    # The service stopped; its index file is lost.
    for leftover in data.glob("documents.sqlite*"):
        leftover.unlink()
    toolsmith = Path(sys.executable).parent / "toolsmith"
    done = subprocess.run([str(toolsmith), "projections", "rebuild"], capture_output=True, text=True, timeout=120,
                          env={**environment_without_settings(), "TOOLSMITH_DATA_DIR": str(data)})
    assert done.returncode == 0, done.stderr
    assert "the chunk index holds" in done.stdout
    with _client(settings, shared_sandbox) as again:
        found = call(again, "docs_search", {"query": PAGE_TWO_WORD})["output"]["results"]
        assert found and found[0]["documentId"] == doc_id and found[0]["page"] == 2
