"""File Search capabilities declare their output schemas (issue 33, 3): MCP's tools/list gives each
capability its `outputSchema` and the read-only annotation, and each capability's call answers a
`structuredContent` that its listed schema accepts (a client that validates, as the SDKs do, takes
it), with the search results' resource links to the documents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.file_search import PHRASE, create, settled, upload
from tests.helpers import ADMIN_TOKEN
from tests.kinds.mcp import McpSession
from toolkinds.search_tools.capabilities import OUTPUT_SCHEMAS

NOTES = f"# Lighthouse notes\n\nOn the first night {PHRASE} on the rocks below.\n".encode()


@pytest.fixture
def api(tmp_path: Path, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, extract_timeout_seconds=20)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def test_each_capability_lists_its_output_schema_and_answers_what_it_accepts(api: TestClient) -> None:
    create(api)
    document = upload(api, "docs", ("notes.md", NOTES))[0]
    assert settled(api, "docs", document["id"])["state"] == "READY"
    mcp = McpSession(api)
    listed = {t["name"]: t for t in mcp.request("tools/list", {})["tools"] if t["name"].startswith("docs_")}
    assert sorted(listed) == sorted(f"docs_{c}" for c in OUTPUT_SCHEMAS)
    for capability, schema in OUTPUT_SCHEMAS.items():
        tool = listed[f"docs_{capability}"]
        assert tool["outputSchema"] == schema and tool["annotations"]["readOnlyHint"] is True
    found = mcp.call("docs_search", {"query": "lighthouse gulls"})
    hit = found["structuredContent"]["results"][0]
    answers = {
        "search": found,
        "fetch": mcp.call("docs_fetch", {"id": document["id"]}),
        "list_documents": mcp.call("docs_list_documents", {}),
        "find_text": mcp.call("docs_find_text", {"text": "seventeen gulls"}),
        "read_context": mcp.call("docs_read_context", {"chunkId": hit["id"]}),
    }
    for capability, answer in answers.items():
        assert answer.get("isError", False) is False, (capability, answer)
        problems = [e.message for e in Draft202012Validator(listed[f"docs_{capability}"]["outputSchema"]).iter_errors(answer["structuredContent"])]
        assert problems == [], (capability, problems)
    assert PHRASE in answers["fetch"]["structuredContent"]["text"]
    assert answers["find_text"]["structuredContent"]["matches"][0]["documentId"] == document["id"]
    links = [c for c in found["content"] if c["type"] == "resource_link"]
    assert links and links[0]["uri"] == hit["uri"] == f"toolsmith://search-tools/docs/documents/{document['id']}"
