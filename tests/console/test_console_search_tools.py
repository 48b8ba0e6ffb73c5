"""The console's File Search tool pages over HTTP (no browser; docs/kinds/file-search-tools.md, docs/console.md): the list, the
editor's forms (create, each refusal named next to its field with what was typed kept, edit, a
capability switched off, enable, delete and its refusal), the documents (uploaded from the page's
script or a plain form, polled while processing, paged, deleted), the search box (a snippet's
document text escaped, only its marks made <mark>), the history, CSRF, and an auditor's view."""

from __future__ import annotations

import dataclasses
import html
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from console.toast import COOKIE, read_cookie
from toolkinds.search_tools.kind import SearchToolKind
from toolkinds.search_tools import pages
from tests.console.test_console_others import ORIGIN, console, post
from tests.helpers import ADMIN_TOKEN, expect, page_csrf, unique_id

TOOLS = "/api/v1/admin/search-tools"
PAGE = "/console/search-tools"
HTMX = {"HX-Request": "true"}
GUIDE = b"# Zebra care\n\nZebras graze at dawn. <script>alert('x')</script> & stripes <b>bold</b>.\n"


@pytest.fixture
def admin(client: TestClient) -> TestClient:
    return console(client, ADMIN_TOKEN)


@pytest.fixture
def kind(client: TestClient) -> SearchToolKind:
    return client.app.state.services.toolbox.kind(SearchToolKind)


def tool_form(name: str, **changes: str | None) -> dict[str, str]:
    """The editor's fields for a tool with search and fetch on (the defaults) and find_text on too."""
    fields: dict[str, str | None] = {
        "id": name, "description": "Care guides for zebras", "tags": "zoo, guides", "exposeInChat": "on", "enabled": "on",
        "search_enabled": "on", "search_maxResults": "10", "search_maxResultsCap": "50",
        "fetch_enabled": "on", "fetch_maxChars": "20000", "fetch_maxCharsCap": "50000",
        "list_documents_limit": "50", "list_documents_limitCap": "200",
        "find_text_enabled": "on", "find_text_maxMatches": "20", "find_text_maxMatchesCap": "100",
        "read_context_neighbours": "1", "read_context_neighboursCap": "5",
        **changes,
    }
    return {k: v for k, v in fields.items() if v is not None}


def error_of(page: str, field_id: str) -> str:
    """The message shown next to the field `field_id` (the element its aria-describedby names)."""
    field = re.search(rf'<(?:input|textarea|select)[^>]*\bid="{re.escape(field_id)}"[^>]*>', page)
    assert field, f"no field {field_id}"
    assert 'aria-invalid="true"' in field.group(0), f"{field_id} is not marked invalid"
    assert f"{field_id}-error" in field.group(0)
    message = re.search(rf'<p class="error" id="{re.escape(field_id)}-error">(.*?)</p>', page, re.S)
    assert message, f"no message next to {field_id}"
    return html.unescape(message.group(1))


def value_of(page: str, field_id: str) -> str:
    field = re.search(rf'<input[^>]*\bid="{re.escape(field_id)}"[^>]*>', page)
    assert field, f"no field {field_id}"
    found = re.search(r'value="([^"]*)"', field.group(0))
    return html.unescape(found.group(1)) if found else ""


def checked(page: str, field_id: str) -> bool:
    field = re.search(rf'<input[^>]*\bid="{re.escape(field_id)}"[^>]*>', page)
    assert field, f"no field {field_id}"
    return " checked" in field.group(0)


def words(page: str) -> str:
    """The page's text as a person reads it: no markup, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def upload(visitor: TestClient, name: str, files: list[tuple[str, bytes]], *, token: str | None = None,
           script: bool = True) -> Any:
    """An upload as the page's script sends it (the CSRF token in a header, JSON asked for), or as a plain form."""
    token = token if token is not None else page_csrf(visitor.get(f"{PAGE}/{name}").text)
    parts = [("files", (file_name, data, "application/octet-stream")) for file_name, data in files]
    if script:
        return visitor.post(f"{PAGE}/{name}/documents", files=parts,
                            headers={"Origin": ORIGIN, "X-CSRF-Token": token, "Accept": "application/json"})
    return visitor.post(f"{PAGE}/{name}/documents", files=parts, data={"csrf_token": token}, headers={"Origin": ORIGIN},
                        follow_redirects=False)


def made(client: TestClient, name: str, **config: Any) -> None:
    expect(client.post(TOOLS, json={"id": name, "description": "Care guides", **config}), 201)


@pytest.fixture
def held(kind: SearchToolKind, monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Extractions wait until the test sets the event (so that a document stays PROCESSING)."""
    release = threading.Event()
    files = kind.files
    extract = files.extract

    def waiting(path: str, media_type: str, **options: Any) -> Any:
        release.wait(30)
        return extract(path, media_type, **options)

    gated = dataclasses.replace(files, extract=waiting)
    monkeypatch.setattr(SearchToolKind, "files", property(lambda self: gated))
    yield release
    release.set()


# -- the list and the editor -------------------------------------------------------------------------


def test_the_list_shows_each_tool_with_its_capabilities_and_documents_by_state(
        client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name, enabled=False, tags=["zoo"], capabilities={"find_text": {"enabled": True}})
    assert upload(admin, name, [("guide.md", GUIDE), ("empty.txt", b"   ")]).status_code == 202
    assert kind.wait_idle(60)
    page = admin.get(PAGE)
    assert page.status_code == 200
    assert '<a href="/console/search-tools">File Search tools</a>' in page.text.replace(' aria-current="page"', "")
    row = next(r for r in re.findall(r"<tr>(.*?)</tr>", page.text, re.S) if name in r)
    assert f'href="/console/search-tools/{name}"' in row and "Care guides" in row
    cells = [words(c).strip() for c in re.findall(r"<td>(.*?)</td>", row, re.S)]
    assert cells[:3] == ["no", "Search, Fetch, Find text", "2 (1 ready, 1 failed)"]
    assert ">zoo</a>" in row and " by admin" in row
    assert 'href="/console/search-tools/new"' in page.text and "New File Search tool" in page.text
    # the catalog leads to the tool's own page
    assert f'href="/console/search-tools/{name}"' in admin.get("/console/tools", params={"search": name}).text


def test_a_tool_created_from_the_form_is_the_one_rest_shows(client: TestClient, admin: TestClient) -> None:
    name = unique_id("guides")
    answer = post(admin, PAGE, tool_form(name, fetch_enabled=None, search_maxResults="7", read_context_neighbours=""),
                  page=f"{PAGE}/new")
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"{PAGE}/{name}"
    assert read_cookie(answer.cookies[COOKIE])["text"].startswith(f"Created {name}: its capabilities are live")
    tool = expect(client.get(f"{TOOLS}/{name}"), 200).json()
    assert tool["description"] == "Care guides for zebras" and tool["tags"] == ["zoo", "guides"]
    assert tool["exposeInChat"] is True and tool["enabled"] is True
    capabilities = tool["capabilities"]
    assert capabilities["search"] == {"enabled": True, "maxResults": 7, "maxResultsCap": 50}
    assert capabilities["fetch"]["enabled"] is False and capabilities["find_text"]["enabled"] is True
    assert capabilities["list_documents"]["enabled"] is False
    assert capabilities["read_context"] == {"enabled": False, "neighbours": 1, "neighboursCap": 5}  # empty: the default
    # its page shows what was saved, with its documents and a search box
    page = admin.get(answer.headers["location"]).text
    assert f"File Search tool {name}" in page
    assert value_of(page, "capabilities-search-maxResults") == "7"
    assert not checked(page, "capabilities-fetch-enabled") and checked(page, "capabilities-find_text-enabled")
    assert f"<code>{name}_search</code>, <code>{name}_find_text</code>" in page
    assert 'id="upload-files"' in page and 'id="search-query"' in page and "No document yet." in page


def test_a_limit_over_its_cap_is_named_next_to_its_field_and_the_form_keeps_what_was_typed(
        client: TestClient, admin: TestClient) -> None:
    name = unique_id("guides")
    answer = post(admin, PAGE, tool_form(name, search_maxResults="80", description="kept as typed", fetch_enabled=None),
                  page=f"{PAGE}/new")
    assert answer.status_code == 200
    assert "Some fields need a change." in answer.text
    assert error_of(answer.text, "capabilities-search-maxResults") == \
        "Search, results by default: must be an integer from 1 to maxResultsCap (50), got 80"
    assert value_of(answer.text, "capabilities-search-maxResults") == "80"
    assert ">kept as typed</textarea>" in answer.text and value_of(answer.text, "id") == name
    assert not checked(answer.text, "capabilities-fetch-enabled")
    assert '<a href="#capabilities-search-maxResults">' in answer.text  # the summary links to the field
    assert client.get(f"{TOOLS}/{name}").status_code == 404


def test_each_refusal_names_its_own_field(client: TestClient, admin: TestClient) -> None:
    # what could not be read as typed is named before any rule is checked
    answer = post(admin, PAGE, tool_form(unique_id("guides"), fetch_maxChars="lots", find_text_maxMatchesCap="1e3"),
                  page=f"{PAGE}/new").text
    assert error_of(answer, "capabilities-fetch-maxChars") == "Fetch, characters by default: must be a whole number"
    assert error_of(answer, "capabilities-find_text-maxMatchesCap") == "Find text, matches at most: must be a whole number"
    # a cap over the kind's own, a name over 40 characters, no id
    answer = post(admin, PAGE, tool_form("g" * 41, read_context_neighboursCap="9"), page=f"{PAGE}/new").text
    assert "at most 40 characters" in error_of(answer, "id")
    assert error_of(answer, "capabilities-read_context-neighboursCap") == \
        "Read context, neighbours at most: must be an integer from 1 to 5, got 9"
    assert "Name: is required" in error_of(post(admin, PAGE, tool_form(""), page=f"{PAGE}/new").text, "id")
    # a taken name (R2 across every kind)
    name = unique_id("guides")
    made(client, name)
    assert "That name is taken." in post(admin, PAGE, tool_form(name), page=f"{PAGE}/new").text


def test_an_edit_switches_a_capability_off_and_a_stale_form_is_refused(
        client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name)
    page = admin.get(f"{PAGE}/{name}").text
    digest = re.search(r'name="digest" value="(\w+)"', page).group(1)
    fields = {**tool_form(name, search_enabled=None, fetch_maxCharsCap="30000"), "digest": digest}
    fields.pop("id")
    # documents uploaded and extracted meanwhile change the tool, not its configuration: the form is not stale
    assert upload(admin, name, [("guide.md", GUIDE)]).status_code == 202
    assert kind.wait_idle(60)
    saved = post(admin, f"{PAGE}/{name}", fields, page=f"{PAGE}/{name}")
    assert saved.status_code == 303 and saved.headers["location"] == f"{PAGE}/{name}"
    assert read_cookie(saved.cookies[COOKIE])["text"] == f"Saved {name}: the change is live at once."
    tool = expect(client.get(f"{TOOLS}/{name}"), 200).json()
    assert tool["capabilities"]["search"]["enabled"] is False and tool["capabilities"]["fetch"]["maxCharsCap"] == 30000
    assert f"{name}_search" not in [t["name"] for t in client.get("/api/v1/admin/tools").json()]
    shown = admin.get(saved.headers["location"]).text
    assert ">Search (not offered)</option>" in shown
    # the same form again, read before that save: refused, and what was typed is kept
    stale = post(admin, f"{PAGE}/{name}", {**fields, "description": "typed again"}, page=f"{PAGE}/{name}")
    assert stale.status_code == 200 and "Not saved: the tool changed meanwhile." in stale.text
    assert ">typed again</textarea>" in stale.text


def test_how_search_finds_passages_is_set_in_the_form_and_each_bad_value_named_next_to_its_field(
        client: TestClient, admin: TestClient) -> None:
    name = unique_id("guides")
    # a new tool's form offers words and meaning (the default), with k at 60 and no floor nor cap
    new = admin.get(f"{PAGE}/new").text
    assert checked(new, "retrieval-mode-hybrid") and not checked(new, "retrieval-mode-lexical")
    assert value_of(new, "retrieval-rrfK") == "60" and value_of(new, "retrieval-minScore") == ""
    assert "Words and meaning (hybrid)" in new and "Meaning only (semantic)" in new
    retrieval = {"retrieval_mode": "semantic", "retrieval_rrfK": "30", "retrieval_minScore": "0.25",
                 "retrieval_maxChunksPerDocument": "2"}
    answer = post(admin, PAGE, {**tool_form(name), **retrieval}, page=f"{PAGE}/new")
    assert answer.status_code == 303, answer.text
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["retrieval"] == \
        {"mode": "semantic", "rrfK": 30, "minScore": 0.25, "maxChunksPerDocument": 2}
    page = admin.get(f"{PAGE}/{name}").text
    assert checked(page, "retrieval-mode-semantic") and value_of(page, "retrieval-minScore") == "0.25"
    assert "Searched by meaning only (semantic)" in words(page)  # the Test panel says how it searches
    # each bad value is named next to its own field, what was typed kept
    digest = re.search(r'name="digest" value="(\w+)"', page).group(1)
    edit = {**tool_form(name), "digest": digest}
    edit.pop("id")
    bad = post(admin, f"{PAGE}/{name}", {**edit, "retrieval_mode": "lexical", "retrieval_rrfK": "0",
                                         "retrieval_minScore": "high", "retrieval_maxChunksPerDocument": "99"},
               page=f"{PAGE}/{name}").text
    assert "Some fields need a change." in bad
    assert error_of(bad, "retrieval-minScore").startswith("Lowest score kept: must be a number")
    assert value_of(bad, "retrieval-minScore") == "high" and checked(bad, "retrieval-mode-lexical")
    bad = post(admin, f"{PAGE}/{name}", {**edit, "retrieval_rrfK": "0", "retrieval_maxChunksPerDocument": "99",
                                         "retrieval_mode": "fuzzy"}, page=f"{PAGE}/{name}").text
    assert error_of(bad, "retrieval-rrfK").startswith("Fusion constant k: ")
    assert error_of(bad, "retrieval-maxChunksPerDocument").startswith("Passages per document at most: ")
    assert re.search(r'id="retrieval-mode-lexical"[^>]*aria-invalid="true" aria-describedby="retrieval-mode-error ', bad)
    assert re.search(r'<p class="error" id="retrieval-mode-error">Search by: Input should be', bad)
    assert '<a href="#retrieval-rrfK">' in bad
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["retrieval"]["mode"] == "semantic"  # nothing saved
    # an empty k is the default, an empty floor and cap are none
    saved = post(admin, f"{PAGE}/{name}", {**edit, "retrieval_mode": "lexical", "retrieval_rrfK": "",
                                           "retrieval_minScore": "", "retrieval_maxChunksPerDocument": ""},
                 page=f"{PAGE}/{name}")
    assert saved.status_code == 303, saved.text
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["retrieval"] == \
        {"mode": "lexical", "rrfK": 60, "minScore": None, "maxChunksPerDocument": None}
    # a form without the retrieval fields (posted by a script of before) keeps the tool's
    digest = re.search(r'name="digest" value="(\w+)"', admin.get(f"{PAGE}/{name}").text).group(1)
    assert post(admin, f"{PAGE}/{name}", {**edit, "digest": digest, "description": "again"},
                page=f"{PAGE}/{name}").status_code == 303
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["retrieval"]["mode"] == "lexical"


def test_a_tool_made_before_retrieval_existed_shows_words_only(admin: TestClient) -> None:
    from toolkinds.search_tools import form as forms

    values = forms.values_of({"description": "old", "capabilities": {}}, "old")  # a recorded config with no retrieval
    assert values["retrieval"] == {"mode": "lexical", "rrfK": "60", "minScore": "", "maxChunksPerDocument": ""}
    assert forms.values_of(None)["retrieval"]["mode"] == "hybrid"


def test_disable_enable_and_delete_with_its_refusal(client: TestClient, admin: TestClient) -> None:
    name = unique_id("guides")
    made(client, name)
    assert post(admin, f"{PAGE}/{name}/enabled", {"enabled": "false"}, page=PAGE).status_code == 303
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["enabled"] is False
    assert ">Enable</button>" in admin.get(f"{PAGE}/{name}").text
    assert post(admin, f"{PAGE}/{name}/enabled", {"enabled": "true"}, page=PAGE).status_code == 303
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["enabled"] is True
    # an agent names one of its capabilities: the delete is refused, and the page says why
    agent = unique_id("agent")
    expect(client.post("/api/v1/admin/agents", json={"id": agent, "description": "reads", "allowedTools": [f"{name}_search"]}), 201)
    refused = post(admin, f"{PAGE}/{name}/delete", {}, page=PAGE)
    assert refused.status_code == 409
    assert "Not deleted:" in refused.text and agent in refused.text
    expect(client.delete(f"/api/v1/admin/agents/{agent}"), 204)
    deleted = post(admin, f"{PAGE}/{name}/delete", {}, page=PAGE)
    assert deleted.status_code == 303 and deleted.headers["location"] == PAGE
    assert client.get(f"{TOOLS}/{name}").status_code == 404
    assert read_cookie(deleted.cookies[COOKIE])["text"] == f"Deleted the File Search tool {name}."
    assert admin.get(f"{PAGE}/{name}").status_code == 404


# -- documents ---------------------------------------------------------------------------------------


def test_documents_uploaded_by_the_script_poll_until_they_settle(
        client: TestClient, admin: TestClient, kind: SearchToolKind, held: threading.Event) -> None:
    name = unique_id("guides")
    made(client, name)
    answer = upload(admin, name, [("guide.md", GUIDE), ("notes.txt", b"Zebras sleep standing up.")])
    assert answer.status_code == 202
    documents = answer.json()["documents"]
    assert [(d["name"], d["state"]) for d in documents] == [("guide.md", "PROCESSING"), ("notes.txt", "PROCESSING")]
    # while any is processing, the list fetches itself every second
    fragment = admin.get(f"{PAGE}/{name}/documents", headers=HTMX)
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert 'hx-trigger="every 1s"' in fragment.text and f'hx-get="{PAGE}/{name}/documents"' in fragment.text
    assert "2 documents: 0 ready, 2 processing, 0 failed." in words(fragment.text)
    assert 'hx-trigger="every 1s"' in admin.get(f"{PAGE}/{name}").text
    # once they settle, it stops
    held.set()
    assert kind.wait_idle(60)
    fragment = admin.get(f"{PAGE}/{name}/documents", headers=HTMX).text
    assert "every 1s" not in fragment
    text = words(fragment)
    assert "2 documents: 2 ready, 0 processing, 0 failed." in text
    assert re.search(r"guide\.md Id \w+ Ready \d+ characters, 1 chunk Markdown", text)
    assert "by admin" in text
    # the same file again is the same document
    again = upload(admin, name, [("copy.md", GUIDE)])
    assert again.json()["documents"][0]["id"] == documents[0]["id"]
    assert len(expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"]) == 2


def test_a_failed_document_shows_its_reason(client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name)
    assert upload(admin, name, [("blank.txt", b"  \n  ")]).status_code == 202
    assert kind.wait_idle(60)
    reason = expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"][0]["reason"]
    assert reason
    doc_id = expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"][0]["id"]
    fragment = admin.get(f"{PAGE}/{name}/documents", headers=HTMX).text
    sentence = reason[0].upper() + reason[1:] + "."
    assert f"blank.txt Id {doc_id} Failed {sentence} Why, and what to do about blank.txt Text 5 bytes" in words(fragment)
    assert f'href="{PAGE}/{name}/documents/{doc_id}"' in fragment
    # its page says why, in a sentence, and shows no text or chunk
    page = words(admin.get(f"{PAGE}/{name}/documents/{doc_id}").text)
    assert f"State Failed Type Text Size 5 bytes Uploaded just now by admin" in page
    assert f"Why it failed {sentence}" in page and "Extracted text" not in page and "Chunks" not in page


def test_failure_reasons_read_as_sentences_with_what_to_do() -> None:
    from toolkinds.search_tools.display import failure, type_name

    encrypted = failure("the PDF is encrypted: it cannot be read without its password")
    assert encrypted.sentence == "The PDF is encrypted: it cannot be read without its password."
    assert "Remove its password" in encrypted.advice and encrypted.detail == ""
    broken = failure("the file is not a PDF document: its bytes do not parse as PDF (PdfReadError: EOF marker not found)")
    assert broken.sentence == "The file is not a PDF document: its bytes do not parse as PDF."
    assert broken.detail == "PdfReadError: EOF marker not found" and broken.advice
    scanned = failure("the PDF holds no extractable text (a scanned image?)")
    assert scanned.sentence == "The PDF holds no extractable text (a scanned image?)." and "OCR" in scanned.advice
    assert failure(None).sentence == "The text could not be extracted."
    assert type_name("application/vnd.openxmlformats-officedocument.wordprocessingml.document") == "Word document"
    assert [type_name(t) for t in ("application/pdf", "text/plain", "text/markdown", "text/html", "text/x-source")] == \
        ["PDF", "Text", "Markdown", "HTML", "Source code"]


def test_a_long_text_is_shown_a_part_at_a_time_and_its_chunks_a_page_at_a_time(
        client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    from toolkinds.search_tools.display import PART_CHARS, parts

    name = unique_id("guides")
    made(client, name)
    paragraphs = [f"Paragraph {n}: zebras graze at dawn and rest at noon, far from the river." for n in range(600)]
    text = "\n\n".join(paragraphs)
    assert upload(admin, name, [("long.txt", text.encode())]).status_code == 202
    assert kind.wait_idle(60)
    document = expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"][0]
    assert document["state"] == "READY" and document["chunks"] > 20
    cut = parts(text, None)
    assert len(cut) > 2 and all(p.end - p.start <= PART_CHARS for p in cut) and cut[-1].end == len(text)
    assert all(text[p.start:p.end].endswith("\n\n") for p in cut[:-1])  # at a paragraph's end
    here = f"{PAGE}/{name}/documents/{document['id']}"
    first = admin.get(here)
    assert first.status_code == 200
    shown = words(first.text)
    assert f"Part 1 (1 of {len(cut)})" in shown and "Paragraph 0:" in shown and "Paragraph 599:" not in shown
    assert f"Chunks 1 to 20 of {document['chunks']}" in shown and "Chunk 21 " not in shown
    assert len(first.text) < 60_000  # never the whole text at once
    last = words(admin.get(here, params={"part": str(len(cut)), "chunks": "2"}).text)
    assert "Paragraph 599:" in last and "Paragraph 0:" not in last and "Chunk 21 " in last
    # htmx asks for one section only; a page number out of range is the last, nonsense the first
    fragment = admin.get(here, params={"part": "999"}, headers={**HTMX, "HX-Target": "document-text"}).text
    assert fragment.lstrip().startswith("<section id=\"document-text\"") and "Paragraph 599:" in fragment
    assert "Part 1 (1 of" in words(admin.get(here, params={"part": "x1", "chunks": "-3"}).text)
    # a search result's chunk link opens the page of chunks that holds it
    assert "Chunk 22 " in words(admin.get(here, params={"chunk": "21"}).text)
    assert admin.get(f"{PAGE}/{name}/documents/nosuchdocument").status_code == 404


def test_a_plain_form_upload_comes_back_to_the_tools_page(client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name)
    answer = upload(admin, name, [("guide.md", GUIDE)], script=False)
    assert answer.status_code == 303 and answer.headers["location"] == f"{PAGE}/{name}?uploaded=1"
    assert "Uploaded 1 file(s)" in admin.get(answer.headers["location"]).text
    # a form sent with no file says so on the tool's page
    empty = admin.post(f"{PAGE}/{name}/documents", files=[("files", ("", b"", "application/octet-stream"))],
                       data={"csrf_token": page_csrf(admin.get(PAGE).text)}, headers={"Origin": ORIGIN})
    assert empty.status_code == 400 and "Not uploaded: choose or drop at least one file." in words(empty.text)
    # the script is told the problem as JSON, with its status
    missing = admin.post(f"{PAGE}/no_such_tool/documents", files=[("files", ("a.txt", b"x", "text/plain"))],
                         headers={"Origin": ORIGIN, "X-CSRF-Token": page_csrf(admin.get(PAGE).text), "Accept": "application/json"})
    assert missing.status_code == 404 and "no_such_tool" in missing.json()["detail"]
    assert kind.wait_idle(60)


def test_documents_are_paged_and_deleted_one_by_one(
        client: TestClient, admin: TestClient, kind: SearchToolKind, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pages, "DOCUMENTS_PER_PAGE", 1)
    name = unique_id("guides")
    made(client, name)
    assert upload(admin, name, [("a.md", GUIDE), ("b.txt", b"Zebras sleep standing up.")]).status_code == 202
    assert kind.wait_idle(60)
    first = admin.get(f"{PAGE}/{name}/documents").text  # followed as a link: a page of its own
    assert f"Documents: {name}" in first and 'id="upload-files"' in first
    assert "a.md" in first and "b.txt" not in first
    after = html.unescape(re.search(r'id="documents-next" href="([^"]+)"', first).group(1))
    second = admin.get(after, headers=HTMX).text
    assert "b.txt" in second and "a.md" not in second and "First page" in second and "Next page" not in second
    # delete from the list (htmx): the fragment comes back without it, and the live region says so
    b_id = expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"][1]["id"]
    token = page_csrf(admin.get(f"{PAGE}/{name}").text)
    gone = admin.post(f"{PAGE}/{name}/documents/{b_id}/delete", data={"csrf_token": token, "after": ""},
                      headers={"Origin": ORIGIN, **HTMX})
    assert gone.status_code == 200
    assert '<p id="documents-status" hx-swap-oob="innerHTML">Deleted the document b.txt.</p>' in gone.text
    assert "1 document: 1 ready" in words(gone.text)
    assert [d["name"] for d in expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"]] == ["a.md"]
    # without htmx: back to the tool's page, with the message
    a_id = expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"][0]["id"]
    plain = post(admin, f"{PAGE}/{name}/documents/{a_id}/delete", {}, page=PAGE)
    assert plain.status_code == 303 and plain.headers["location"] == f"{PAGE}/{name}?removed=a.md"
    assert "Deleted the document a.md." in admin.get(plain.headers["location"]).text
    assert post(admin, f"{PAGE}/{name}/documents/{a_id}/delete", {}, page=PAGE).status_code == 404


# -- search -------------------------------------------------------------------------------------------


def test_search_marks_the_words_and_escapes_the_document_text(client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name)
    assert upload(admin, name, [("guide.md", GUIDE)]).status_code == 202
    assert kind.wait_idle(60)
    answer = admin.get(f"{PAGE}/{name}/search", params={"query": "zebras script"}, headers=HTMX)
    assert answer.status_code == 200
    snippet = re.search(r'<p class="snippet">(.*?)</p>', answer.text, re.S).group(1)
    # the document's markup is text; only the matching words are marked
    assert "<script>" not in answer.text and "<b>" not in answer.text
    assert "&lt;<mark>script</mark>&gt;alert(&#39;x&#39;)&lt;/<mark>script</mark>&gt;" in snippet
    assert "<mark>Zebras</mark> graze" in snippet and "&amp; stripes &lt;b&gt;bold&lt;/b&gt;" in snippet
    assert re.sub(r"</?mark>", "", snippet) == html.escape(GUIDE.decode().strip(), quote=True).replace("&#x27;", "&#39;")
    doc_id = expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"][0]["id"]
    assert f'<h3><a href="{PAGE}/{name}/documents/{doc_id}?chunk=0#chunk-0">guide.md</a></h3>' in answer.text
    assert "chunk <code>" in answer.text and "The response as a model gets it" in answer.text
    assert '<p id="search-status" hx-swap-oob="innerHTML">1 result for “zebras script”.</p>' in answer.text
    # a plain form: the tool's page with the results
    page = admin.get(f"{PAGE}/{name}/search", params={"query": "zebras"}).text
    assert f"File Search tool {name}" in page and "<mark>Zebras</mark>" in page and 'value="zebras"' in page
    # nothing to search for, and no match
    refused = words(admin.get(f"{PAGE}/{name}/search", params={"query": "the and"}, headers=HTMX).text)
    assert "Not searched: the query holds no word to search for" in refused
    assert "Type the words to search for." in admin.get(f"{PAGE}/{name}/search", params={"query": " "}, headers=HTMX).text
    # no match: by words alone (a hybrid tool's meaning always finds the nearest passages)
    described = expect(client.get(f"{TOOLS}/{name}"), 200).json()["description"]
    expect(client.put(f"{TOOLS}/{name}", json={"description": described, "retrieval": {"mode": "lexical"}}), 200)
    none = words(admin.get(f"{PAGE}/{name}/search", params={"query": "giraffes"}, headers=HTMX).text)
    assert "No passage matches “giraffes”." in none
    # what is true by words alone: no stemming; nothing said of meaning
    assert "By words, a passage must hold one of the query's words as it is typed" in none and "no stemming" in none
    assert "By meaning" not in none


def test_each_result_says_why_it_was_found_and_what_its_score_means(
        client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name)  # a new tool: words and meaning
    assert upload(admin, name, [("guide.md", GUIDE)]).status_code == 202
    assert kind.wait_idle(60)

    def searched(query: str) -> str:
        return words(admin.get(f"{PAGE}/{name}/search", params={"query": query}, headers=HTMX).text)

    both = searched("zebras graze")
    assert "Found by its words and by its meaning." in both
    assert "Searched by words and meaning: a score is the result's rank by its words and its rank by its meaning, fused, from 0 to 1" in both
    # words the guide does not hold: found by its meaning alone
    meaning = searched("animals eating grass in the morning")
    assert "Found by its meaning: it need not hold a word of the query (its start is shown)." in meaning
    assert "Found by its words" not in meaning
    described = expect(client.get(f"{TOOLS}/{name}"), 200).json()["description"]
    expect(client.put(f"{TOOLS}/{name}", json={"description": described, "retrieval": {"mode": "semantic"}}), 200)
    semantic = searched("zebras graze")
    assert "Searched by meaning only: a score is the similarity of the passage's meaning to the query's, from −1 to 1" in semantic
    assert "Found by its meaning" in semantic and "Found by its words" not in semantic
    expect(client.put(f"{TOOLS}/{name}", json={"description": described, "retrieval": {"mode": "lexical"}}), 200)
    lexical = searched("zebras graze")
    assert "Searched by words only: a score is BM25's relevance" in lexical and "Found by its words." in lexical
    # a floor no result reaches: said first among the reasons, then what holds of words and meaning
    expect(client.put(f"{TOOLS}/{name}", json={"description": described, "retrieval": {"mode": "hybrid", "minScore": 2}}), 200)
    floored = searched("zebras graze")
    assert "No passage matches “zebras graze”. Results scoring below 2 are left out (the tool's lowest score kept)." in floored
    assert "By words, a passage must hold" in floored and "; by meaning, the nearest passages are always found, but only in documents whose passages were embedded" in floored


def test_a_snippet_is_split_only_on_whole_marks() -> None:
    assert pages.snippet_parts("a </mark> b <mark>c</mark> d <mark></mark><mark>e") == [
        ("a </mark> b ", False), ("c", True), (" d ", False), ("<mark>e", False)]
    assert pages.snippet_parts("<mark>x</mark>") == [("x", True)]


# -- history, CSRF, and an auditor ------------------------------------------------------------------


def test_the_history_lists_the_tools_and_its_documents_changes(client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name)
    assert upload(admin, name, [("guide.md", GUIDE)]).status_code == 202
    assert kind.wait_idle(60)
    page = admin.get(f"{PAGE}/{name}/history")
    assert page.status_code == 200
    rows = re.findall(r"<tr>(.*?)</tr>", page.text, re.S)[1:]
    # the worker embedded the chunks: its vectors are recorded with the document's READY
    assert [re.search(r'<th scope="row">([\w ]+)</th>', r).group(1) for r in rows] == [
        "Document ready", "Document embedded", "Document added", "Created"]
    assert "guide.md" in rows[2] and "<td>admin</td>" in rows[2]
    assert f'href="/console/search-tools/{name}/history"' in admin.get(f"{PAGE}/{name}").text
    assert admin.get(f"{PAGE}/no_such_tool/history").status_code == 404


def test_changes_without_the_csrf_token_or_from_another_site_are_refused(client: TestClient, admin: TestClient) -> None:
    name = unique_id("guides")
    made(client, name)
    no_token = admin.post(PAGE, data=tool_form(unique_id("guides")), headers={"Origin": ORIGIN}, follow_redirects=False)
    assert no_token.status_code == 403
    assert admin.post(f"{PAGE}/{name}/delete", data={"csrf_token": "forged"}, headers={"Origin": ORIGIN}).status_code == 403
    parts = [("files", ("a.txt", b"hello zebras", "text/plain"))]
    assert admin.post(f"{PAGE}/{name}/documents", files=parts, headers={"Origin": ORIGIN, "Accept": "application/json"}).status_code == 403
    assert admin.post(f"{PAGE}/{name}/documents", files=parts, headers={"Origin": ORIGIN, "X-CSRF-Token": "forged"}).status_code == 403
    token = page_csrf(admin.get(PAGE).text)
    elsewhere = admin.post(f"{PAGE}/{name}/documents", files=parts, headers={"Origin": "https://evil.example", "X-CSRF-Token": token})
    assert elsewhere.status_code == 403
    assert expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"] == []
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["enabled"] is True


def test_an_auditor_reads_every_page_and_changes_nothing(client: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name)
    assert upload(console(client, ADMIN_TOKEN), name, [("guide.md", GUIDE)]).status_code == 202
    assert kind.wait_idle(60)
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "an auditor", "role": "auditor"}), 201).json()
    auditor = console(client, issued["token"])
    for url in (PAGE, f"{PAGE}/{name}", f"{PAGE}/{name}/documents", f"{PAGE}/{name}/history"):
        page = auditor.get(url)
        assert page.status_code == 200, url
        assert "guide.md" in page.text or url in (PAGE, f"{PAGE}/{name}/history"), url
        for control in ('id="upload-files"', "/delete", ">Disable</button>", 'id="search-query"', "New File Search tool"):
            assert control not in page.text, (url, control)
    assert "can read the tool but not run its capabilities" in auditor.get(f"{PAGE}/{name}").text
    # the document's page: what it is, never its text (reading it is running the tool)
    doc_id = expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"][0]["id"]
    document = auditor.get(f"{PAGE}/{name}/documents/{doc_id}")
    assert document.status_code == 200 and "Markdown" in document.text and "can see the document but not read its text" in document.text
    assert "Zebras graze" not in document.text and "/delete" not in document.text
    assert auditor.get(f"{PAGE}/new").status_code == 403
    assert auditor.get(f"{PAGE}/{name}/search", params={"query": "zebras"}).status_code == 403
    token = page_csrf(auditor.get(PAGE).text)
    refused = auditor.post(f"{PAGE}/{name}/documents", files=[("files", ("a.txt", b"zebras", "text/plain"))],
                           headers={"Origin": ORIGIN, "X-CSRF-Token": token, "Accept": "application/json"})
    assert refused.status_code == 403


# -- metadata and filters ---------------------------------------------------------------------------

SCHEMA = {"department": "string", "year": "number", "draft": "boolean", "published": "date"}


def test_metadata_keys_are_declared_in_the_tools_form_and_a_bad_one_named_on_its_row(
        client: TestClient, admin: TestClient) -> None:
    name = unique_id("guides")
    made(client, name, metadata=SCHEMA)
    page = admin.get(f"{PAGE}/{name}").text
    assert [value_of(page, f"metadata-key-{i}") for i in range(6)] == ["department", "draft", "published", "year", "", ""]
    assert re.search(r'id="metadata-type-1".*?<option value="boolean" selected>Yes or no</option>', page, re.S)
    digest = re.search(r'name="digest" value="(\w+)"', page).group(1)
    edit = {**tool_form(name), "digest": digest, "metadata_rows": "on"}
    edit.pop("id")
    rows = [("metadata_key", k) for k in ("department", "draft", "published", "year", "region", "")] + \
           [("metadata_type", t) for t in ("string", "boolean", "date", "number", "string", "string")]
    saved = post(admin, f"{PAGE}/{name}", list(edit.items()) + rows, page=f"{PAGE}/{name}")
    assert saved.status_code == 303, saved.text
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["metadata"] == {**SCHEMA, "region": "string"}
    # a key that is not one: named on its own row, the rows as typed kept
    digest = re.search(r'name="digest" value="(\w+)"', admin.get(f"{PAGE}/{name}").text).group(1)
    rows = [("metadata_key", "department"), ("metadata_key", "bad key!"),
            ("metadata_type", "string"), ("metadata_type", "number")]
    bad = post(admin, f"{PAGE}/{name}", list({**edit, "digest": digest}.items()) + rows, page=f"{PAGE}/{name}").text
    assert error_of(bad, "metadata-key-1").startswith("Metadata key bad key!: a key is 1 to 64")
    assert value_of(bad, "metadata-key-1") == "bad key!"
    # a form without the rows keeps the tool's keys
    plain = {k: v for k, v in edit.items() if k != "metadata_rows"}
    assert post(admin, f"{PAGE}/{name}", {**plain, "digest": digest, "description": "again"},
                page=f"{PAGE}/{name}").status_code == 303
    assert "region" in expect(client.get(f"{TOOLS}/{name}"), 200).json()["metadata"]


def test_metadata_is_given_at_upload_edited_on_the_documents_page_and_filtered_in_the_test_panel(
        client: TestClient, admin: TestClient, kind: SearchToolKind) -> None:
    name = unique_id("guides")
    made(client, name, metadata=SCHEMA)
    token = page_csrf(admin.get(f"{PAGE}/{name}").text)
    answer = admin.post(f"{PAGE}/{name}/documents", files=[("files", ("guide.md", GUIDE, "application/octet-stream"))],
                        data={"upload_meta_department": "Care", "upload_meta_year": "2024", "upload_meta_draft": "no"},
                        headers={"Origin": ORIGIN, "X-CSRF-Token": token, "Accept": "application/json"})
    assert answer.status_code == 202, answer.text
    # a value that does not read: the upload is refused, naming the key
    refused = admin.post(f"{PAGE}/{name}/documents", files=[("files", ("notes.txt", b"Zebra notes.", "text/plain"))],
                         data={"upload_meta_year": "last year"},
                         headers={"Origin": ORIGIN, "X-CSRF-Token": token, "Accept": "application/json"})
    assert refused.status_code == 400 and "year" in refused.text
    assert upload(admin, name, [("notes.txt", b"Field notes: zebras at the river.")]).status_code == 202
    assert kind.wait_idle(60)
    listed = {d["name"]: d for d in expect(client.get(f"{TOOLS}/{name}/documents"), 200).json()["documents"]}
    guide, notes = listed["guide.md"], listed["notes.txt"]
    assert guide["metadata"] == {"department": "Care", "year": 2024, "draft": False}
    assert notes["metadata"] == {}

    # the document's page shows its values in their fields, and saves them
    here = f"{PAGE}/{name}/documents/{notes['id']}"
    page = admin.get(here).text
    assert value_of(page, "meta-department") == "" and 'id="meta-draft"' in page and "Save the metadata" in page
    bad = post(admin, f"{here}/metadata", {"meta_department": "Field", "meta_year": "soon", "meta_published": "May"},
               page=here)
    assert bad.status_code == 200 and "The metadata was not saved: some values need a change." in bad.text  # as every form
    assert error_of(bad.text, "meta-year") == "year: must be a number, like 12 or 0.5"
    assert value_of(bad.text, "meta-department") == "Field" and value_of(bad.text, "meta-year") == "soon"
    bad = post(admin, f"{here}/metadata", {"meta_department": "Field", "meta_published": "May"}, page=here)
    assert bad.status_code == 200 and error_of(bad.text, "meta-published").startswith("published: must be")
    saved = post(admin, f"{here}/metadata", {"meta_department": "Field", "meta_year": "2023", "meta_draft": "yes",
                                             "meta_published": "2023-05-01"}, page=here)
    assert saved.status_code == 303, saved.text
    assert read_cookie(saved.cookies[COOKIE])["text"] == "Saved the metadata of notes.txt."
    assert expect(client.get(f"{TOOLS}/{name}/documents/{notes['id']}"), 200).json()["metadata"] == \
        {"department": "Field", "year": 2023, "draft": True, "published": "2023-05-01"}
    assert value_of(admin.get(here).text, "meta-published") == "2023-05-01"
    # an empty field removes its value
    assert post(admin, f"{here}/metadata", {"meta_department": "Field"}, page=here).status_code == 303
    assert expect(client.get(f"{TOOLS}/{name}/documents/{notes['id']}"), 200).json()["metadata"] == {"department": "Field"}

    # the Test panel's filter: only the documents that pass are searched
    def searched(**params: str) -> str:
        return words(admin.get(f"{PAGE}/{name}/search", params=params, headers=HTMX).text)

    care = searched(query="zebras", filter_key_0="department", filter_op_0="eq", filter_value_0="Care")
    assert "1 result for “zebras” within the filter." in care and "guide.md" in care and "notes.txt" not in care
    assert "department: Care · draft: no · year: 2024" in care  # the result's metadata
    either = searched(query="zebras", filter_join="or", filter_key_0="department", filter_op_0="in",
                      filter_value_0="Care, Field", filter_key_1="year", filter_op_1="gt", filter_value_1="3000")
    assert "2 results for “zebras” within the filter." in either
    both = searched(query="zebras", filter_join="and", filter_key_0="department", filter_op_0="in",
                    filter_value_0="Care, Field", filter_key_1="year", filter_op_1="gte", filter_value_1="2024")
    assert "1 result for" in both and "guide.md" in both
    alone = searched(filter_key_0="department", filter_op_0="ne", filter_value_0="Care")
    assert "1 document passes the filter." in alone and "notes.txt" in alone
    assert "Found by the filter alone" in alone
    # what to change, in words
    assert "Condition 1: year must be a number" in searched(query="zebras", filter_key_0="year", filter_value_0="new")
    assert "Type the words to search for, or a filter." in searched(query=" ")
    ordered = searched(query="zebras", filter_key_0="department", filter_op_0="gt", filter_value_0="A")
    assert "Not searched:" in ordered
