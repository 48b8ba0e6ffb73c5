"""The chunk index of File Search tools is a projection of the events and the blobs (issue 29, 3;
docs/kinds/file-search-tools.md): built by replay, it holds what the live service built; a lost
index is built again from the log and the blobs; a removed document or a deleted tool leaves no
chunk, live or replayed. On the embedded defaults (the SQLite FTS5 file of the data dir)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests import documents
from tests.conftest import wire
from tests.file_search import PAGE_TWO_WORD, TABLE_WORD, TOOLS, by_words, call, create, settled, upload
from tests.helpers import ADMIN_TOKEN, expect

QUERIES = (TABLE_WORD, PAGE_TWO_WORD, "guide", "heron")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def settings(data: Path) -> Settings:
    return Settings(data_dir=data, admin_token=ADMIN_TOKEN, extract_timeout_seconds=20)


def _client(settings: Settings, shared_sandbox: Any) -> TestClient:
    return TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


@pytest.fixture
def api(settings: Settings, shared_sandbox: Any) -> Iterator[TestClient]:
    with _client(settings, shared_sandbox) as client:
        yield client


def _kind(client: TestClient) -> Any:
    from toolkinds.search_tools.kind import SearchToolKind

    return client.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]


def _fill(api: TestClient) -> dict[str, list[str]]:
    """Two tools with documents, one document removed, one tool deleted and made again: the
    document ids each tool ever had."""
    create(api)
    create(api, "notes")
    made = upload(api, "docs", ("report.docx", documents.docx_with_table(TABLE_WORD)),
                  ("atlas.pdf", documents.two_page_pdf(PAGE_TWO_WORD)), ("guide.md", documents.markdown_doc()),
                  ("heron.md", b"# Herons\n\nThe grey heron waits at the edge of the water.\n"))
    notes = upload(api, "notes", ("heron.md", b"# Herons\n\nThe grey heron waits at the edge of the water.\n"),
                   ("egret.md", b"# Egrets\n\nA little egret heron stirs the mud with its feet.\n"))
    for name, document in [("docs", d) for d in made] + [("notes", d) for d in notes]:
        assert settled(api, name, document["id"])["state"] == "READY"
    heron = made[3]["id"]
    expect(api.delete(f"{TOOLS}/docs/documents/{heron}"), 204)
    expect(api.delete(f"{TOOLS}/notes"), 204)
    create(api, "notes")
    again = upload(api, "notes", ("egret.md", b"# Egrets\n\nA little egret heron stirs the mud with its feet.\n"))
    assert settled(api, "notes", again[0]["id"])["state"] == "READY"
    return {"docs": [d["id"] for d in made], "notes": [d["id"] for d in notes]}


def _held(api: TestClient, ids: dict[str, list[str]]) -> dict[str, Any]:
    """What searches find, and what the index holds for every document the tools ever had (read
    after the searches: a search catches the projection up)."""
    searches = {(tool, q): call(api, f"{tool}_search", {"query": q})["output"]["results"] for tool in ids for q in QUERIES}
    index = _kind(api).files.index
    chunks = {(tool, doc_id): [(c.chunk_id, c.start, c.end, c.page, c.text) for c in index.chunks("default", tool, doc_id, 0, 10**6)]
              for tool, doc_ids in ids.items() for doc_id in doc_ids}
    return {"total": index.total(), "chunks": chunks, "searches": searches}


def test_the_index_built_by_replay_is_the_index_built_live(api: TestClient) -> None:
    ids = _fill(api)
    live = _held(api, ids)
    assert live["chunks"][("docs", ids["docs"][0])], "the docx is indexed"
    assert live["searches"][("docs", PAGE_TWO_WORD)][0]["page"] == 2

    kind = _kind(api)
    chunks = kind.rebuild()  # the index emptied, then every event applied again, with the blobs

    assert chunks == live["total"] == sum(len(c) for c in live["chunks"].values())
    assert _held(api, ids) == live


def test_an_index_lost_is_built_again_from_the_log_and_the_blobs(settings: Settings, data: Path, shared_sandbox: Any) -> None:
    with _client(settings, shared_sandbox) as api:
        ids = _fill(api)
        live = _held(api, ids)
    # The service stopped; its index file is lost. Started again, it replays the log.
    for leftover in data.glob("documents.sqlite*"):
        leftover.unlink()
    with _client(settings, shared_sandbox) as again:
        assert _held(again, ids) == live
        assert call(again, "docs_search", {"query": PAGE_TWO_WORD})["output"]["results"][0]["page"] == 2


def test_a_removed_document_and_a_deleted_tool_leave_no_chunk_live_or_replayed(api: TestClient) -> None:
    ids = _fill(api)
    index = _kind(api).files.index
    heron = ids["docs"][3]
    for replayed in (False, True):
        if replayed:
            _kind(api).rebuild()
        herons = call(api, "docs_search", {"query": "heron"})["output"]["results"]
        assert by_words(herons) == [] and all(hit["documentId"] != heron for hit in herons), replayed
        assert index.chunks("default", "docs", heron, 0, 10**6) == [], replayed
        # The tool deleted, then made again with one of its documents: that one only.
        assert index.chunks("default", "notes", ids["notes"][0], 0, 10**6) == [], replayed
        assert {hit["documentId"] for hit in by_words(call(api, "notes_search", {"query": "heron"})["output"]["results"])} \
            == {ids["notes"][1]}, replayed
        assert index.total() == sum(len(index.chunks("default", tool, doc_id, 0, 10**6))
                                    for tool, doc_ids in ids.items() for doc_id in doc_ids), replayed


def test_a_search_right_after_ready_finds_the_document(api: TestClient) -> None:
    """Read-your-writes: the projection has applied the document's READY before a search reads the index."""
    create(api)
    for n in range(5):
        body = f"# Note {n}\n\nthe word plover{n} is here\n".encode()
        doc_id = upload(api, "docs", (f"note{n}.md", body))[0]["id"]
        assert settled(api, "docs", doc_id)["state"] == "READY"
        hits = call(api, "docs_search", {"query": f"plover{n}"})["output"]["results"]
        assert [hit["documentId"] for hit in by_words(hits)] == [doc_id]


def test_a_projection_resumed_between_an_upload_and_its_ready_still_indexes_the_document(
        settings: Settings, shared_sandbox: Any) -> None:
    """The file name a document's chunks carry comes from its upload's event: a projection that
    applied the upload in a process that stopped reads it from the tool as it was at the READY."""
    import io

    from application.commands import Change
    from toolkinds.search_tools.kind import SearchToolKind
    from toolkinds.search_tools.model import search_tool_id

    services = wire(settings, shared_sandbox)  # not started: nothing extracts
    try:
        kind = services.toolbox.kind(SearchToolKind)
        kind.save("default", "docs", {"description": "resumed documents"}, by="admin", create=True)
        sha, size = kind.files.blobs.put("default", io.BytesIO(b"cormorant colonies nest on the cliffs\n"))

        def attempt() -> Change[None]:
            tool = kind._load(search_tool_id("default", "docs"), for_update=True)
            tool.add_document(sha, "seabirds.txt", "text/plain", size, "admin")
            return Change(None, save=[tool])

        kind.deps.commands.run(attempt, name="docs", lock="default")
        kind.chunk_index.follower().catch_up()  # the upload applied, then the process stops
    finally:
        services.close()
    with _client(settings, shared_sandbox) as api:  # extracted again at the start: READY
        [listed] = expect(api.get(f"{TOOLS}/docs/documents"), 200).json()["documents"]
        assert settled(api, "docs", listed["id"])["state"] == "READY"
        resumed = call(api, "docs_search", {"query": "cormorant"})["output"]["results"]
        assert [hit["documentId"] for hit in resumed] == [listed["id"]] and resumed[0]["title"] == "seabirds.txt"
        _kind(api).rebuild()
        assert call(api, "docs_search", {"query": "cormorant"})["output"]["results"] == resumed


def test_a_failing_chunk_projection_leaves_searches_the_index_as_it_is(api: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolkinds.search_tools.projection import ChunkIndex

    create(api)
    first = upload(api, "docs", ("a.md", b"# Plovers\n\nthe ringed plover nests on shingle\n"))[0]["id"]
    assert settled(api, "docs", first)["state"] == "READY"
    assert [hit["documentId"] for hit in call(api, "docs_search", {"query": "plover"})["output"]["results"]] == [first]

    def poisoned(self: Any, event: Any) -> Any:
        raise RuntimeError("a projection bug")

    monkeypatch.setattr(ChunkIndex, "_ready", poisoned)
    second = upload(api, "docs", ("b.md", b"# Avocets\n\nthe pied avocet sweeps the mud\n"))[0]["id"]
    assert settled(api, "docs", second)["state"] == "READY"
    # Searches still answer, from the index as it is: what it held, not what the failing event adds.
    assert [hit["documentId"] for hit in call(api, "docs_search", {"query": "plover"})["output"]["results"]] == [first]
    assert all(hit["documentId"] != second for hit in call(api, "docs_search", {"query": "avocet"})["output"]["results"])
