"""File Search tools over MCP against a running `toolsmith serve` (issue 17), driven by the MCP
SDK's own client: a server with the tool attached offers exactly its enabled capabilities, each
read-only; `search` and `fetch` answer; switching a capability off tells the session."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests import documents
from tests.e2e.conftest import Server, mcp_client, printed_tokens
from tests.e2e.test_mcp import GET_STREAM_SETTLES, SERVERS, Inbox, listed, text_of

pytestmark = pytest.mark.anyio

TOOLS = "/api/v1/admin/search-tools"
WORD = "quetzalcoatlus"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    started = Server(data_dir=tmp_path / "data").start()
    started.token = printed_tokens(started.output)[0]
    yield started
    if started.process and started.process.poll() is None:
        started.stop()


async def test_an_attached_search_tool_offers_its_enabled_capabilities(server: Server) -> None:
    with server.client() as http:
        made = http.post(TOOLS, json={"id": "handbook", "description": "The staff handbook",
                                      "capabilities": {"find_text": {"enabled": True}}})
        assert made.status_code == 201, made.text
        uploaded = http.post(f"{TOOLS}/handbook/documents", files=[("files", ("atlas.pdf", documents.two_page_pdf(WORD)))])
        assert uploaded.status_code == 202, uploaded.text
        doc_id = uploaded.json()["documents"][0]["id"]
        deadline = time.monotonic() + 60
        while http.get(f"{TOOLS}/handbook/documents/{doc_id}").json()["state"] == "PROCESSING":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert http.get(f"{TOOLS}/handbook/documents/{doc_id}").json()["state"] == "READY"
        # The tool is attached by its own name: the server offers its capabilities.
        attached = http.post(SERVERS, json={"id": "docs", "description": "documents", "tools": ["handbook"]})
        assert attached.status_code == 201, attached.text

        inbox = Inbox()
        async with mcp_client(server, path="/mcp/docs", on_message=inbox) as client:
            tools = (await client.list_tools()).tools
            assert sorted(t.name for t in tools) == ["handbook_fetch", "handbook_find_text", "handbook_search"]
            assert all(t.annotations is not None and t.annotations.read_only_hint for t in tools)

            answer = await client.call_tool("handbook_search", {"query": WORD})
            assert not answer.is_error
            results = json.loads(text_of(answer))["results"]
            assert results[0]["documentId"] == doc_id and results[0]["page"] == 2 and "<mark>" in results[0]["snippet"]
            fetched = await client.call_tool("handbook_fetch", {"id": results[0]["id"], "maxChars": 200})
            assert not fetched.is_error
            page = json.loads(text_of(fetched))
            assert page["id"] == doc_id and len(page["text"]) <= 200 and page["totalCharacters"] > 0

            await anyio.sleep(GET_STREAM_SETTLES)
            body = http.get(f"{TOOLS}/handbook").json()
            body["capabilities"]["find_text"]["enabled"] = False
            keep = ("description", "tags", "exposeInChat", "enabled", "capabilities")
            assert http.put(f"{TOOLS}/handbook", json={k: body[k] for k in keep}).status_code == 200
            await inbox.list_changed()
            assert set(await listed(client)) == {"handbook_fetch", "handbook_search"}
            assert (await client.call_tool("handbook_find_text", {"text": WORD})).is_error
