"""Issue 17's File Search scenario on the real OpenSearch node (the chunk index there, with
`OPENSEARCH_URL`), and on PostgreSQL, where the blobs live in the event store's database so that a
second replica reads what the first one stored."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from fastapi.testclient import TestClient
from opensearchpy import OpenSearch
from pydantic import SecretStr

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.file_search import PAGE_TWO_WORD, call, create, scenario, settled, upload
from tests import documents
from tests.helpers import ADMIN_TOKEN


@pytest.fixture
def on_opensearch(tmp_path: Path, opensearch_url: str, opensearch_index: str, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, opensearch_url=SecretStr(opensearch_url),
                        opensearch_index=opensearch_index, opensearch_chunks_index=f"{opensearch_index}-chunks",
                        opensearch_replicas=0)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def test_the_acceptance_scenario_on_opensearch(on_opensearch: TestClient, opensearch: OpenSearch, opensearch_index: str) -> None:
    scenario(on_opensearch)
    # The chunks are in OpenSearch, in the index the settings name, not in an SQLite file.
    assert opensearch.count(index=f"{opensearch_index}-chunks")["count"] > 0
    # A rebuild from the events and the blobs gives the same answers.
    from toolkinds.search_tools.kind import SearchToolKind

    kind = on_opensearch.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]
    before = unscored(call(on_opensearch, "docs_search", {"query": "word20x5 guide"})["output"]["results"])
    kind.rebuild()
    # The same hits in the same order (OpenSearch's BM25 statistics count deleted chunks until a
    # merge, so the scores themselves may move).
    assert unscored(call(on_opensearch, "docs_search", {"query": "word20x5 guide"})["output"]["results"]) == before


def unscored(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "score"} for r in results]


def test_two_replicas_of_a_postgresql_store_share_blobs_and_the_index(
        tmp_path: Path, postgres_store: dict[str, str], opensearch_url: str, opensearch_index: str, shared_sandbox: Any) -> None:
    def replica(name: str) -> TestClient:
        settings = Settings(data_dir=tmp_path / name, admin_token=ADMIN_TOKEN, persistence_module="eventsourcing.postgres",
                            opensearch_url=SecretStr(opensearch_url), opensearch_index=opensearch_index,
                            opensearch_chunks_index=f"{opensearch_index}-chunks", opensearch_replicas=0)
        return TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    with mock.patch.dict(os.environ, postgres_store):
        with replica("one") as one, replica("two") as two:
            create(one)
            doc_id = upload(one, "docs", ("atlas.pdf", documents.two_page_pdf(PAGE_TWO_WORD)))[0]["id"]
            assert settled(one, "docs", doc_id)["state"] == "READY"
            # The other replica searches and fetches what the first one stored.
            found = call(two, "docs_search", {"query": PAGE_TWO_WORD})["output"]["results"]
            assert found and found[0]["documentId"] == doc_id and found[0]["page"] == 2
            page = call(two, "docs_fetch", {"id": doc_id})["output"]
            assert PAGE_TWO_WORD in page["text"].lower()


def test_a_chunk_index_lost_or_left_by_the_release_before_is_built_again_from_the_log_and_the_blobs(
        tmp_path: Path, opensearch_url: str, opensearch_index: str, opensearch: OpenSearch, shared_sandbox: Any) -> None:
    from projections.chunks_opensearch import MAPPINGS, TRACKING_FIELDS

    chunks_alias = f"{opensearch_index}-chunks"
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, opensearch_url=SecretStr(opensearch_url),
                        opensearch_index=opensearch_index, opensearch_chunks_index=chunks_alias, opensearch_replicas=0)

    def service() -> TestClient:
        return TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    def found(client: TestClient) -> list[dict[str, Any]]:
        return call(client, "docs_search", {"query": PAGE_TWO_WORD})["output"]["results"]

    with service() as api:
        create(api)
        doc_id = upload(api, "docs", ("atlas.pdf", documents.two_page_pdf(PAGE_TWO_WORD)))[0]["id"]
        assert settled(api, "docs", doc_id)["state"] == "READY"
        live = found(api)
        assert live and live[0]["documentId"] == doc_id and live[0]["page"] == 2
        # The index is lost while the service runs: the next search finds the document again.
        opensearch.indices.delete(index=f"{chunks_alias}-*")
        assert unscored(found(api)) == unscored(live)
    # The service stopped; an index as the release before made it (no position, no field for one)
    # holds nothing of the document: started again, the service replays the log into it.
    opensearch.indices.delete(index=f"{chunks_alias}-*")
    before = {name: field for name, field in MAPPINGS["properties"].items() if name not in TRACKING_FIELDS}
    opensearch.indices.create(index=f"{chunks_alias}-000001", body={
        "settings": {"number_of_shards": 1, "number_of_replicas": 0},
        "mappings": {"dynamic": "strict", "properties": before}, "aliases": {chunks_alias: {}}})
    with service() as again:
        assert unscored(found(again)) == unscored(live)


def test_a_change_of_embedding_model_keeps_every_document_found_on_opensearch(
        tmp_path: Path, opensearch_url: str, opensearch_index: str, shared_sandbox: Any, opensearch: OpenSearch,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`tests/reembedding.py`'s scenario with the chunk index (and its vectors) in OpenSearch."""
    from contextlib import contextmanager

    from tests import reembedding
    from toolkinds.search_tools.kind import SearchToolKind

    def kind_of(client: TestClient) -> Any:
        return client.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]

    @contextmanager
    def start(choice: str) -> Iterator[TestClient]:
        settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, opensearch_url=SecretStr(opensearch_url),
                            opensearch_index=opensearch_index, opensearch_chunks_index=f"{opensearch_index}-chunks",
                            opensearch_replicas=0, embedding_model=choice)
        with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
            yield client

    def index_models(client: TestClient) -> set[str]:
        kind_of(client).chunk_index._index()  # the projection caught up
        body = {"size": 0, "query": {"term": {"tool": "memo"}}, "aggs": {"models": {"terms": {"field": "model"}}}}
        found = opensearch.search(index=f"{opensearch_index}-chunks", body=body)
        return {bucket["key"] for bucket in found["aggregations"]["models"]["buckets"]}

    reembedding.scenario(start, monkeypatch, index_models, kind_of)
