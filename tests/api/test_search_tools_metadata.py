"""Typed document metadata and search filters over REST (issue 36 item 4, docs/kinds/file-search-tools.md
"Metadata and filters"): a tool declares its keys and their types; documents get values at upload
(the multipart field `metadata`) and later (PUT replaces, PATCH merges); `search` takes OpenAI's
`filters`, applied before the index ranks, with and without a query; every bad input is
problem+json naming the key or the filter's path; the history records it and a rebuild answers
the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.file_search import TOOLS, call, create, settled
from tests.helpers import ADMIN_TOKEN, expect

SCHEMA = {"dept": "string", "year": "number", "draft": "boolean", "published": "date"}


@pytest.fixture
def api(tmp_path: Path, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, extract_timeout_seconds=30)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def put_up(api: TestClient, name: str, text: str, metadata: dict[str, Any] | None = None, status: int = 202) -> Any:
    data = {"metadata": orjson.dumps(metadata).decode()} if metadata is not None else {}
    response = api.post(f"{TOOLS}/docs/documents", files=[("files", (name, text.encode()))], data=data)
    expect(response, status)
    return response.json()


def problem_fields(response: Any, status: int = 400) -> list[str]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return [e["field"] for e in response.json()["errors"]]


def fill(api: TestClient) -> dict[str, str]:
    create(api, metadata=SCHEMA)
    given = {
        "legal-2021.txt": ("Contract renewal policy for suppliers.", {"dept": "legal", "year": 2021, "draft": False,
                                                                         "published": "2021-03-01"}),
        "legal-2024.txt": ("Contract signatures and supplier onboarding.", {"dept": "legal", "year": 2024, "draft": True,
                                                                            "published": "2024-06-15T09:00:00+02:00"}),
        "hr-2024.txt": ("Contract types for new staff and holidays.", {"dept": "hr", "year": 2024}),
        "plain.txt": ("Contract templates kept without any metadata.", None),
    }
    ids = {}
    for name, (text, metadata) in given.items():
        [document] = put_up(api, name, text, metadata)["documents"]
        ids[name] = document["id"]
        assert settled(api, "docs", document["id"])["state"] == "READY"
    return ids


def names(api: TestClient, ids: dict[str, str], arguments: dict[str, Any]) -> set[str]:
    by_id = {v: k for k, v in ids.items()}
    return {by_id[hit["documentId"]] for hit in call(api, "docs_search", arguments)["output"]["results"]}


def test_metadata_set_at_upload_is_shown_and_filters_search_with_and_without_a_query(api: TestClient) -> None:
    ids = fill(api)
    tool = expect(api.get(f"{TOOLS}/docs"), 200).json()
    assert tool["metadata"] == SCHEMA
    legal = expect(api.get(f"{TOOLS}/docs/documents/{ids['legal-2024.txt']}"), 200).json()
    assert legal["metadata"] == {"dept": "legal", "year": 2024, "draft": True, "published": "2024-06-15T07:00:00Z"}
    assert expect(api.get(f"{TOOLS}/docs/documents/{ids['plain.txt']}"), 200).json()["metadata"] == {}

    assert names(api, ids, {"query": "contract"}) == set(ids)
    assert names(api, ids, {"query": "contract", "filters": {"type": "eq", "key": "dept", "value": "legal"}}) == {
        "legal-2021.txt", "legal-2024.txt"}
    assert names(api, ids, {"query": "contract", "filters": {"type": "ne", "key": "dept", "value": "legal"}}) == {"hr-2024.txt"}
    assert names(api, ids, {"query": "contract", "filters": {"type": "and", "filters": [
        {"type": "gte", "key": "year", "value": 2024}, {"type": "nin", "key": "dept", "value": ["hr"]}]}}) == {"legal-2024.txt"}
    assert names(api, ids, {"query": "contract", "filters": {"type": "or", "filters": [
        {"type": "lt", "key": "published", "value": "2022-01-01"}, {"type": "eq", "key": "draft", "value": True}]}}) == {
        "legal-2021.txt", "legal-2024.txt"}
    assert names(api, ids, {"query": "contract", "filters": {"type": "eq", "key": "year", "value": 1999}}) == set()
    # With filters only: each matching document's first chunk, by name, found by the filter.
    results = call(api, "docs_search", {"filters": {"type": "eq", "key": "year", "value": 2024}})["output"]["results"]
    assert [hit["documentId"] for hit in results] == [ids["hr-2024.txt"], ids["legal-2024.txt"]]
    assert all(hit["retrievers"] == ["filter"] for hit in results)
    assert results[0]["metadata"] == {"dept": "hr", "year": 2024}
    # The filter is applied before the index ranks: one result asked for, one result of the filter.
    assert names(api, ids, {"query": "contract", "maxResults": 1, "filters": {"type": "eq", "key": "dept", "value": "hr"}}) == {
        "hr-2024.txt"}


def test_metadata_changes_later_are_searched_at_once_recorded_and_rebuilt_alike(api: TestClient) -> None:
    ids = fill(api)
    doc = f"{TOOLS}/docs/documents/{ids['plain.txt']}/metadata"
    replaced = expect(api.put(doc, json={"dept": "finance", "year": 2019}), 200).json()
    assert replaced["metadata"] == {"dept": "finance", "year": 2019} and replaced["id"] == ids["plain.txt"]
    assert names(api, ids, {"query": "contract", "filters": {"type": "eq", "key": "dept", "value": "finance"}}) == {"plain.txt"}
    patched = expect(api.patch(doc, json={"year": None, "draft": False}), 200).json()
    assert patched["metadata"] == {"dept": "finance", "draft": False}
    assert names(api, ids, {"query": "contract", "filters": {"type": "lt", "key": "year", "value": 2100}}) == {
        "legal-2021.txt", "legal-2024.txt", "hr-2024.txt"}
    # A second upload of the same bytes with metadata sets the metadata of the document the tool has.
    [again] = put_up(api, "plain.txt", "Contract templates kept without any metadata.", {"dept": "ops"})["documents"]
    assert again["id"] == ids["plain.txt"]
    assert expect(api.get(f"{TOOLS}/docs/documents/{ids['plain.txt']}"), 200).json()["metadata"] == {"dept": "ops"}

    events = [e for e in expect(api.get(f"{TOOLS}/docs/history"), 200).json()["events"] if e["type"] == "DocumentMetadataSet"]
    assert len(events) == 6  # three uploads, the PUT, the PATCH and the upload again
    assert events[-1]["data"]["metadata"] == {"dept": "ops"} and events[-1]["data"]["documentId"] == ids["plain.txt"]
    assert events[-1]["by"]

    from toolkinds.search_tools.kind import SearchToolKind

    kind = api.app.state.services.toolbox.kind(SearchToolKind)  # type: ignore[attr-defined]
    queries = [{"query": "contract", "filters": {"type": "in", "key": "dept", "value": ["ops", "legal"]}},
               {"filters": {"type": "gte", "key": "published", "value": "2024-01-01"}}]
    before = [call(api, "docs_search", q)["output"] for q in queries]
    kind.rebuild()
    assert [call(api, "docs_search", q)["output"] for q in queries] == before


def test_bad_metadata_is_problem_json_naming_the_key(api: TestClient) -> None:
    ids = fill(api)
    doc = f"{TOOLS}/docs/documents/{ids['plain.txt']}/metadata"
    assert problem_fields(api.put(doc, json={"colour": "red"})) == ["metadata.colour"]
    assert problem_fields(api.put(doc, json={"year": "2020"})) == ["metadata.year"]
    assert problem_fields(api.put(doc, json={"year": 2**70})) == ["metadata.year"]  # beyond 64 bits: was a 500
    assert problem_fields(api.patch(doc, json={"published": "last week"})) == ["metadata.published"]
    assert problem_fields(api.put(doc, json={"dept": "x" * 513})) == ["metadata.dept"]
    assert problem_fields(api.put(doc, json={f"k{i}": "v" for i in range(33)}))[0] == "metadata"
    assert api.put(f"{TOOLS}/docs/documents/{'0' * 20}/metadata", json={}).status_code == 404
    # At upload: refused before anything is kept.
    before = expect(api.get(f"{TOOLS}/docs/documents"), 200).json()["documents"]
    response = api.post(f"{TOOLS}/docs/documents", files=[("files", ("n.txt", b"new words"))], data={"metadata": '{"year": "x"}'})
    assert problem_fields(response) == ["metadata.year"]
    response = api.post(f"{TOOLS}/docs/documents", files=[("files", ("n.txt", b"new words"))], data={"metadata": "{not json"})
    assert problem_fields(response) == ["metadata"]
    assert expect(api.get(f"{TOOLS}/docs/documents"), 200).json()["documents"] == before
    # The schema: bad keys and types; dropping or retyping a key documents hold.
    assert problem_fields(api.put(f"{TOOLS}/docs", json={"description": "d", "metadata": {"bad key": "string"}})) == [
        "metadata.bad key"]
    assert problem_fields(api.put(f"{TOOLS}/docs", json={"description": "d", "metadata": {"dept": "integer"}})) == ["metadata.dept"]
    refused = api.put(f"{TOOLS}/docs", json={"description": "d", "metadata": {**SCHEMA, "year": "string"}})
    assert problem_fields(refused) == ["metadata.year"] and "document" in refused.text
    # A change that names no metadata keeps the schema; a new key may be added.
    assert expect(api.put(f"{TOOLS}/docs", json={"description": "kept"}), 200).json()["metadata"] == SCHEMA
    grown = expect(api.put(f"{TOOLS}/docs", json={"description": "d", "metadata": {**SCHEMA, "region": "string"}}), 200).json()
    assert grown["metadata"]["region"] == "string"


def test_bad_filters_are_refused_naming_their_path_and_the_schema_is_advertised(api: TestClient) -> None:
    fill(api)
    cases = [
        ({"type": "eq", "key": "colour", "value": "red"}, "input.filters.key"),
        ({"type": "gt", "key": "dept", "value": "a"}, "input.filters.type"),
        ({"type": "and", "filters": [{"type": "eq", "key": "year", "value": "2024"}]}, "input.filters.filters[0].value"),
        ({"type": "xor", "filters": []}, "input.filters.type"),
    ]
    for filters, field in cases:
        response = api.post("/api/v1/tools/docs_search/call", json={"query": "contract", "filters": filters})
        assert field in problem_fields(response), (filters, response.text)
    assert "input.query" in problem_fields(api.post("/api/v1/tools/docs_search/call", json={}))

    schema = search_schema(api)
    assert schema["required"] == [] and schema["properties"]["filters"]["properties"]["key"]["enum"] == sorted(SCHEMA)
    described = schema["properties"]["filters"]["description"]
    assert "published (date)" in described and "year (number)" in described


def search_schema(api: TestClient) -> dict[str, Any]:
    tools = expect(api.get("/api/v1/admin/tools", params={"callType": "FILE_SEARCH"}), 200).json()
    [search] = [t for t in tools if t["name"] == "docs_search"]
    return search["inputSchema"]  # type: ignore[no-any-return]


def test_a_tool_without_metadata_keeps_its_search_schema_and_refuses_filters(api: TestClient) -> None:
    create(api)
    schema = search_schema(api)
    assert "filters" not in schema["properties"] and schema["required"] == ["query"]
    response = api.post("/api/v1/tools/docs_search/call", json={"query": "x", "filters": {"type": "eq", "key": "a", "value": 1}})
    assert response.status_code == 400
    assert expect(api.get(f"{TOOLS}/docs"), 200).json()["metadata"] == {}
