"""The chunk index as a projection's view (`projections/chunks.py`): staged changes count once
flushed, with the batch's position last; a large batch writes its chunks early but never its
position before them; an index holding another event store's position is emptied (on the
embedded SQLite index; the index's own contract runs on OpenSearch too)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eventsourcing.persistence import Tracking

from domain.documents import TEXT, Chunk, DropTool, IndexedDocument, IndexPosition, PutDocument, RemoveDocument
from projections import chunks as chunk_view
from projections.chunks import ChunkView
from projections.chunks_sqlite import SqliteDocumentIndex

APP = "Store"


def put(document_id: str, text: str, tool: str = "handbook") -> PutDocument:
    return PutDocument("acme", tool, IndexedDocument(document_id, document_id, f"{document_id}.txt", TEXT),
                       [Chunk(0, 0, len(text), text)])


@pytest.fixture
def index(tmp_path: Path) -> SqliteDocumentIndex:
    opened = SqliteDocumentIndex(tmp_path / "documents.sqlite")
    yield opened
    opened.close()


def test_staged_changes_count_once_flushed_with_the_last_position(index: SqliteDocumentIndex) -> None:
    view = ChunkView(index, "store-1")
    assert view.max_tracking_id(APP) is None
    view.stage(put("a", "the capybara swims"), Tracking(APP, 1))
    view.stage(None, Tracking(APP, 2))
    view.stage(put("b", "the capybara naps"), Tracking(APP, 3))
    view.stage(RemoveDocument("acme", "handbook", "a"), Tracking(APP, 4))
    assert index.total() == 0 and view.max_tracking_id(APP) is None  # nothing before the flush

    view.flush()

    assert [c.chunk_id for c in index.chunks("acme", "handbook", "b", 0, 9)] == ["b#0"]
    assert index.chunks("acme", "handbook", "a", 0, 9) == []
    assert view.max_tracking_id(APP) == 4 and index.position(APP) == IndexPosition(APP, 4, "store-1")


def test_a_discarded_batch_leaves_nothing_and_a_position_alone_is_written_at_once(index: SqliteDocumentIndex) -> None:
    view = ChunkView(index, "store-1")
    view.stage(put("a", "the capybara swims"), Tracking(APP, 1))
    view.discard()
    view.flush()
    assert index.total() == 0 and view.max_tracking_id(APP) is None
    view.insert_tracking(Tracking(APP, 7))  # the runner saying how far it read
    assert view.max_tracking_id(APP) == 7


def test_a_large_batch_writes_its_chunks_early_and_its_position_last(
        index: SqliteDocumentIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunk_view, "FLUSH_CHARS", 20)
    view = ChunkView(index, "store-1")
    view.stage(put("a", "the capybara swims in the river"), Tracking(APP, 1))
    assert index.total() == 1 and view.max_tracking_id(APP) is None  # the chunks, not the position
    view.stage(DropTool("acme", "wiki"), Tracking(APP, 2))
    view.flush()
    assert view.max_tracking_id(APP) == 2


def test_an_index_of_another_event_store_is_emptied_before_it_is_followed(index: SqliteDocumentIndex) -> None:
    index.apply([put("a", "the capybara swims")], IndexPosition(APP, 40, "another-store"))

    view = ChunkView(index, "this-store")

    assert view.max_tracking_id(APP) is None  # replayed from this store's start
    assert index.total() == 0
