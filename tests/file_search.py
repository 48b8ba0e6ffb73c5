"""The File Search scenario of issue 17's acceptance, over REST, run against each chunk index
(SQLite FTS5 in `tests/api/test_search_tools.py`, the real OpenSearch node in
`tests/integration/test_search_tools_opensearch.py`): upload a markdown file, an HTML page, a docx
with a table and a two-page PDF, then every capability answers what a person would check."""

from __future__ import annotations

import time
from typing import Any

from tests import documents
from tests.helpers import expect

TOOLS = "/api/v1/admin/search-tools"
ALL_ON = {name: {"enabled": True} for name in ("search", "fetch", "list_documents", "find_text", "read_context")}
TABLE_WORD = "zanzibarite"
PAGE_TWO_WORD = "quetzalcoatlus"
PHRASE = "the lighthouse keeper counted seventeen gulls"


def create(client: Any, name: str = "docs", **extra: Any) -> dict[str, Any]:
    body = {"id": name, "description": "Company handbook and manuals", "tags": ["handbook"], "capabilities": ALL_ON, **extra}
    return expect(client.post(TOOLS, json=body), 201).json()


def upload(client: Any, name: str, *files: tuple[str, bytes], status: int = 202) -> list[dict[str, Any]]:
    response = client.post(f"{TOOLS}/{name}/documents", files=[("files", (file_name, data)) for file_name, data in files])
    expect(response, status)
    return response.json()["documents"]


def settled(client: Any, name: str, doc_id: str, timeout: float = 90.0) -> dict[str, Any]:
    """The document once it is no longer PROCESSING."""
    deadline = time.monotonic() + timeout
    while True:
        document = expect(client.get(f"{TOOLS}/{name}/documents/{doc_id}"), 200).json()
        if document["state"] != "PROCESSING":
            return document
        assert time.monotonic() < deadline, f"{doc_id} still PROCESSING after {timeout} s"
        time.sleep(0.1)


def call(client: Any, tool: str, arguments: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post(f"/api/v1/tools/{tool}/call", json=arguments)
    expect(response, status)
    return response.json()


def by_words(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results the lexical retriever found (a new tool's search is hybrid: the semantic one
    also answers the nearest chunks by meaning, whatever their words)."""
    return [hit for hit in results if "lexical" in hit["retrievers"]]


def long_text() -> str:
    paragraphs = [f"Section {i}. " + " ".join(f"word{i}x{j}" for j in range(60)) for i in range(40)]
    paragraphs[25] += f" And so {PHRASE} before dawn."
    return "\n\n".join(paragraphs)


def scenario(client: Any, name: str = "docs") -> None:
    create(client, name)
    made = upload(
        client, name,
        ("guide.md", documents.markdown_doc()),
        ("page.html", documents.html_page()),
        ("report.docx", documents.docx_with_table(TABLE_WORD)),
        ("atlas.pdf", documents.two_page_pdf(PAGE_TWO_WORD)),
        ("long.txt", long_text().encode()),
    )
    assert [d["state"] for d in made] == ["PROCESSING"] * 5
    by_name = {d["name"]: settled(client, name, d["id"]) for d in made}
    for document in by_name.values():
        assert document["state"] == "READY", document
        assert document["characters"] > 0 and document["chunks"] >= 1
    assert by_name["atlas.pdf"]["pages"] == 2
    assert by_name["report.docx"]["mediaType"].endswith("wordprocessingml.document")
    assert by_name["atlas.pdf"]["mediaType"] == "application/pdf"

    # search: a word only the docx's table holds, and a word on page 2 of the PDF (with its page).
    found = call(client, f"{name}_search", {"query": TABLE_WORD})["output"]["results"]
    assert found and found[0]["documentId"] == by_name["report.docx"]["id"]
    assert "<mark>" in found[0]["snippet"] and TABLE_WORD in found[0]["snippet"].lower()
    found = call(client, f"{name}_search", {"query": PAGE_TWO_WORD})["output"]["results"]
    assert found[0]["documentId"] == by_name["atlas.pdf"]["id"] and found[0]["page"] == 2
    # documentIds narrows the search.
    narrowed = call(client, f"{name}_search", {"query": TABLE_WORD, "documentIds": [by_name["guide.md"]["id"]]})["output"]
    assert by_words(narrowed["results"]) == []
    assert {hit["documentId"] for hit in narrowed["results"]} <= {by_name["guide.md"]["id"]}

    # fetch pages through a long document with nextOffset.
    long_id = by_name["long.txt"]["id"]
    text, offset, pages = "", 0, 0
    while offset is not None:
        page = call(client, f"{name}_fetch", {"id": long_id, "offset": offset, "maxChars": 1_000})["output"]
        assert page["offset"] == offset and len(page["text"]) <= 1_000
        text += page["text"]
        offset = page["nextOffset"]
        pages += 1
    assert pages > 2 and len(text) == page["totalCharacters"] == by_name["long.txt"]["characters"]

    # find_text finds the exact phrase with its offset.
    matches = call(client, f"{name}_find_text", {"text": PHRASE.upper()})["output"]["matches"]
    assert len(matches) == 1 and matches[0]["documentId"] == long_id
    assert text[matches[0]["offset"]:matches[0]["offset"] + len(PHRASE)] == PHRASE
    assert call(client, f"{name}_find_text", {"text": PHRASE.upper(), "caseSensitive": True})["output"]["matches"] == []

    # read_context returns the neighbours of a chunk, in order.
    hit = call(client, f"{name}_search", {"query": "word20x5", "documentIds": [long_id]})["output"]["results"][0]
    n = int(hit["id"].rsplit("#", 1)[1])
    context = call(client, f"{name}_read_context", {"chunkId": hit["id"], "before": 1, "after": 1})["output"]
    assert [c["n"] for c in context["chunks"]] == [m for m in (n - 1, n, n + 1) if m >= 0][: len(context["chunks"])]
    assert any(c["id"] == hit["id"] for c in context["chunks"])
    assert len(context["chunks"]) in (2, 3)

    # list_documents pages through the documents.
    first = call(client, f"{name}_list_documents", {"limit": 3})["output"]
    rest = call(client, f"{name}_list_documents", {"limit": 3, "cursor": first["nextCursor"]})["output"]
    assert len(first["documents"]) == 3 and len(rest["documents"]) == 2 and rest["nextCursor"] is None
    assert sorted(d["name"] for d in first["documents"] + rest["documents"]) == sorted(by_name)

    # Deleting a document removes it from every capability's answers at once.
    docx_id = by_name["report.docx"]["id"]
    expect(client.delete(f"{TOOLS}/{name}/documents/{docx_id}"), 204)
    after = call(client, f"{name}_search", {"query": TABLE_WORD})["output"]["results"]
    assert by_words(after) == [] and all(hit["documentId"] != docx_id for hit in after)
    assert all(d["id"] != docx_id for d in call(client, f"{name}_list_documents", {"limit": 50})["output"]["documents"])
    gone = call(client, f"{name}_fetch", {"id": docx_id})
    assert gone["error"] is not None and "no document" in gone["error"]["message"]
    expect(client.get(f"{TOOLS}/{name}/documents/{docx_id}"), 404)
