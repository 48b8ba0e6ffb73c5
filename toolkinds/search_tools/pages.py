"""File Search tools in the console (docs/kinds/file-search-tools.md, docs/console.md): the list, the
tool's page with the editor of its configuration (the fields every kind shares and each
capability's switch and two limits), enable and disable, delete (refused while a plan or an agent
names the tool) and its history are the pages every configured kind shares (`console/configured.py`),
with this kind's form (`form.py`) and templates. This module adds what is the kind's own: on the
tool's page, its documents with their upload and its progress, and the Test panel docked beside
its settings, which runs any capability as a model would call it (the search by default) and keeps
its last inputs (search_tools.js); each document's own page, with its extracted text a part at a
time (a PDF by its pages), its chunks a page at a time, or why its extraction failed, in words
(`display`).

Every change goes through the kind's commands with the REST API's request model
(`toolkinds.search_tools.schemas.SearchToolBody`), so that the console and REST refuse the same things;
an upload takes the same steps as `POST /api/v1/admin/search-tools/{id}/documents`
(`toolkinds.search_tools.uploads`). A search result's snippet is document text: it is shown
escaped, only the kind's `<mark>` markers become marks."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from console.configured import ConfiguredPages
from console.language import plain
from console.routing import problem_of
from console.security import Reader, Writer
from console.toast import toast
from domain import errors
from domain import retrieval as retrieval_rules
from domain.documents import FAILED, MARK_END, MARK_START, MAX_QUERY_CHARS, PROCESSING, READY, split_chunk_id
from domain.metadata import MAX_KEYS as MAX_METADATA_KEYS, schema_of
from toolkinds.search_tools import display, metadata_form
from toolkinds.search_tools import form as forms
from toolkinds.search_tools.form import CAPABILITY_TEXT, MODE_TEXT
from toolkinds.search_tools.kind import SearchToolKind
from toolkinds.search_tools.model import CAPABILITIES, MAX_NAME, cap_key, capability_name
from toolkinds.search_tools.schemas import SearchToolBody, public
from toolkinds.search_tools.uploads import spooled, uploaded
from toolkinds.search_tools.uris import document_uri

DOCUMENTS_PER_PAGE = 20
CHUNKS_PER_PAGE = 20
MAX_CHOICES = 500
# The capabilities the Test panel runs, with what each needs typed (the first is the default).
TESTED = ("search", "find_text", "fetch", "read_context", "list_documents")


def _kind(request: Request) -> SearchToolKind:
    return PAGES.kind_of(request)  # type: ignore[no-any-return]


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def _editor_context(request: Request, tool: Any) -> dict[str, Any]:
    """What the tool's page shows besides its form: its documents (a tool's, not a new one's) and each capability's text."""
    context: dict[str, Any] = {"search": None, "ready_documents": []}
    if tool is not None:
        context.update(_documents(_kind(request), request.state.visitor.principal.tenant, tool.tool_id, ""))
        # The Test panel's choice of a document to read: the ready ones, by name (at most a few hundred).
        context["ready_documents"] = sorted((d for d in tool.documents.values() if d["state"] == READY),
                                            key=lambda d: (d["name"], d["id"]))[:MAX_CHOICES]
    return {**context, **_words(), "capabilities": CAPABILITIES, "capability_text": CAPABILITY_TEXT, "cap_key": cap_key,
            "capability_name": capability_name, "max_name": MAX_NAME, "max_query": MAX_QUERY_CHARS, "tested": TESTED,
            "rrf_k": retrieval_rules.RRF_K, "max_rrf_k": retrieval_rules.MAX_RRF_K,
            "max_chunks_per_document": retrieval_rules.MAX_CHUNKS_PER_DOCUMENT, "max_metadata_keys": MAX_METADATA_KEYS,
            "operator_text": metadata_form.OPERATOR_TEXT, "join_text": metadata_form.JOIN_TEXT,
            "filter_rows_count": metadata_form.FILTER_ROWS, "retrieval_values": forms.retrieval_values,
            "metadata_rows_of": metadata_form.schema_rows, "schema": schema_of(tool.config) if tool is not None else {}}


def _words() -> dict[str, Any]:
    """What every File Search page names things with (`display`): one mapping for all of them."""
    return {"type_name": display.type_name, "state_name": display.state_name, "failure": display.failure,
            "size_text": size_text, "mode_text": MODE_TEXT, "found_by": display.found_by, "score_text": display.score_text,
            "no_match": display.no_match, "metadata_type_text": metadata_form.TYPE_TEXT, "type_text": metadata_form.TYPE_TEXT,
            "shown_value": metadata_form.shown_value}


PAGES = ConfiguredPages(
    SearchToolKind, base="/console/search-tools", one="search_tool", noun="File Search tool", title="File Search tool",
    folder="search_tools", body=SearchToolBody, public=public, form=forms.SearchToolForm(), editor_template="tool.html",
    history_template="search_tools/history.html", editor_context=_editor_context,
    list_context=lambda request: {"capability_text": CAPABILITY_TEXT, **_words()},
    said={
        "created": "Created {}: its capabilities are live on every server it is attached to; upload its documents below.",
        "enabled": "Enabled {}: the tool's capabilities are offered again.",
        "disabled": "Disabled {}: no server offers the tool's capabilities now.",
        "uploaded": "Uploaded {} file(s): each is processing, then ready to search.",
        "removed": "Deleted the document {}.",
    },
)
router = PAGES.router


# -- documents and search, as the pages show them -------------------------------------------------


def size_text(size: int | None) -> str:
    """A size as a person reads it: 812 bytes, 14.2 KB, 3.1 MB."""
    if size is None:
        return ""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1_048_576:.1f} MB"


def snippet_parts(snippet: str) -> list[tuple[str, bool]]:
    """A snippet as (text, marked) pieces, split on the kind's exact markers: the template escapes
    every piece and wraps the marked ones in <mark>; nothing else of the text is ever markup."""
    parts: list[tuple[str, bool]] = []
    head, *rest = snippet.split(MARK_START)
    if head:
        parts.append((head, False))
    for piece in rest:
        marked, sep, after = piece.partition(MARK_END)
        if not sep:  # an opening marker never closed: the text stays text
            parts.append((MARK_START + piece, False))
            continue
        if marked:
            parts.append((marked, True))
        if after:
            parts.append((after, False))
    return parts


def _documents(kind: SearchToolKind, tenant: str, name: str, after: str) -> dict[str, Any]:
    """The context of the documents fragment: one page, the tool's counts by state, and whether
    any document is still processing (the fragment then polls itself)."""
    tool = kind.get(tenant, name)
    rows, next_cursor = kind.documents(tenant, name, after=after or None, limit=DOCUMENTS_PER_PAGE)
    counts: dict[str, int] = {}
    for document in tool.documents.values():
        counts[document["state"]] = counts.get(document["state"], 0) + 1
    try:
        max_upload_mb: int | None = kind.files.max_upload_bytes // 1_048_576
    except errors.DocumentsUnavailable:
        max_upload_mb = None
    embedding = kind.embedding(tenant, name)  # a change of model's progress (reembed.py)
    return {"tool_id": tool.tool_id, "documents": rows, "next_cursor": next_cursor, "after": after,
            "counts": counts, "total": len(tool.documents),
            "processing": counts.get(PROCESSING, 0) > 0 or embedding["reembedding"], "embedding": embedding,
            "max_upload_mb": max_upload_mb, "schema": schema_of(tool.config), **_words()}


def _field(inputs: dict[str, str], key: str) -> str:
    return (inputs.get(key) or "").strip()


def _arguments(capability: str, inputs: dict[str, str], schema: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """The capability's arguments from what the Test panel's fields hold, or what to type first."""
    if capability == "search":
        query = inputs.get("query") or ""
        filters, problem = metadata_form.filter_of(schema or {}, inputs)
        if problem:
            return {}, problem
        if filters is not None:  # with a filter the words are optional
            return {**({"query": query} if query.strip() else {}), "filters": filters}, ""
        return {"query": query}, "" if query.strip() else \
            ("Type the words to search for, or a filter." if schema else "Type the words to search for.")
    if capability == "find_text":
        text = inputs.get("text") or ""
        arguments: dict[str, Any] = {"text": text, "caseSensitive": inputs.get("case") == "on"}
        return arguments, "" if text.strip() else "Type the exact text to find."
    if capability == "fetch":
        given = _field(inputs, "document")
        arguments = {"id": given}
        offset = _field(inputs, "offset")
        if offset:
            if not offset.isdigit() or len(offset) > 12:
                return arguments, "Start at: type a number of characters (0 is the start)."
            arguments["offset"] = int(offset)
        return arguments, "" if given else "Choose the document to read."
    if capability == "read_context":
        chunk = _field(inputs, "chunk")
        if not chunk:
            return {}, "Type a chunk's id (a search result gives it, like abc123#0)."
        if split_chunk_id(chunk) is None:
            return {}, f"“{chunk}” is not a chunk id: a chunk id is a document's id, '#' and the chunk's number."
        return {"chunkId": chunk}, ""
    prefix = _field(inputs, "prefix")
    return ({"namePrefix": prefix} if prefix else {}), ""


def _test(kind: SearchToolKind, tenant: str, name: str, capability: str, inputs: dict[str, str]) -> dict[str, Any]:
    """The Test panel's answer: the capability's output, shaped for its view (each search result's
    snippet split for marking, each document named), with the raw response; or what to change."""
    capability = capability if capability in TESTED else "search"
    outcome: dict[str, Any] = {"capability": capability, "label": CAPABILITY_TEXT[capability][0],
                               "query": inputs.get("query") or "", "inputs": inputs, "results": [], "problem": "",
                               "output": None, "raw": "", "filtered": False}
    tool = kind.get(tenant, name)
    arguments, missing = _arguments(capability, inputs, schema_of(tool.config))
    if missing:
        outcome["problem"] = missing
        return outcome
    outcome["filtered"] = "filters" in arguments
    try:
        result = kind.run_capability(tenant, name, capability, arguments)
    except errors.InvalidInput as refusal:
        outcome["problem"] = "; ".join(v.message for v in refusal.violations)
        return outcome
    if result.error is not None:
        outcome["problem"] = f"The {CAPABILITY_TEXT[capability][0].lower()} failed: {result.error.message}"
        return outcome
    output = result.output
    outcome["output"] = output
    outcome["raw"] = json.dumps(output, ensure_ascii=False, indent=2)
    if capability == "search":
        for found in output["results"]:
            document = tool.documents.get(found["documentId"]) or {}
            chunk = split_chunk_id(found["id"])
            outcome["results"].append({**found, "name": document.get("name", ""), "parts": snippet_parts(found["snippet"]),
                                       "n": chunk[1] if chunk else None})
    elif capability == "find_text":
        for match in output["matches"]:
            document = tool.documents.get(match["documentId"]) or {}
            at = match["offset"] - match["contextOffset"]
            length = len(output["text"])
            text = match["text"]
            outcome["results"].append({**match, "name": document.get("name", ""),
                                       "parts": [p for p in ((text[:at], False), (text[at:at + length], True),
                                                             (text[at + length:], False)) if p[0]]})
    return outcome


# -- documents ---------------------------------------------------------------------------------------


@router.get("/{name}/documents")
def documents_page(name: str, request: Request, visitor: Reader, after: str = "") -> Response:
    """The documents, a page at a time: the fragment htmx swaps (and polls while any is processing),
    or, followed as a link, a page of its own with the upload."""
    context = _documents(_kind(request), visitor.principal.tenant, name, after)
    headers = {"Vary": "HX-Request", "Cache-Control": "no-store"}
    if _htmx(request):
        return PAGES.render(request, "search_tools/_documents.html", headers=headers, **context)
    return PAGES.render(request, "search_tools/documents.html", headers=headers, message=PAGES.message(request), **context)


def _refusal_words(error: errors.ModuleError) -> str:
    """A refused upload's reasons as the page says them: the messages, not the API's field paths."""
    if isinstance(error, errors.InvalidInput):
        return "; ".join(_named(v) for v in error.violations)
    return plain(error.detail).rstrip(".")


def _named(violation: errors.Violation) -> str:
    """A refusal's message, with the metadata key it is about."""
    if violation.field.startswith("metadata."):
        return f"{violation.field.removeprefix('metadata.')}: {violation.message}"
    return violation.message


def _no_file(item: Any) -> bool:
    """The part a browser sends for a file input left empty (an empty name and no bytes)."""
    return item == "" or (isinstance(item, UploadFile) and not item.filename and not item.size)


@router.post("/{name}/documents")
async def upload_documents(name: str, request: Request, visitor: Writer) -> Response:
    """The same steps as the REST upload (each file spooled under the cap, then the kind's `upload`).
    The page's script asks for JSON (202, or the problem with its status); a plain form post is
    sent back to the tool's page."""
    kind = _kind(request)
    principal = visitor.principal
    wants_json = "application/json" in request.headers.get("accept", "")
    try:
        files = kind.files
        async with request.form(max_files=1_000, max_fields=100) as form:
            given = [item for item in form.getlist("files") if not _no_file(item)]
            if not given and not wants_json:
                # A form sent with nothing chosen: the words the page's script says, not the API's.
                raise errors.InvalidInput([errors.Violation("files", "DOC", "choose or drop at least one file")])
            # The metadata typed for the upload (a field per key of the tool's schema), given to every file.
            schema = schema_of(kind.get(principal.tenant, name).config)
            metadata, _, unread = metadata_form.typed_values(schema, form, "upload_meta")
            if unread:
                raise errors.InvalidInput(unread)
            uploads = await spooled(given, files.workdir, files.max_upload_bytes)
        documents = await run_in_threadpool(lambda: kind.upload(principal.tenant, name, uploads, by=principal.name,
                                                                metadata=metadata or None))
    except errors.ModuleError as error:
        if wants_json:
            problem = problem_of(error)
            return JSONResponse(problem, status_code=problem["status"])
        tool = kind.find(principal.tenant, name)
        if tool is None or isinstance(error, errors.UnknownRecord):
            raise
        return PAGES.editor(request, PAGES.form.values_of(tool), tool=tool,
                            refusal=f"Not uploaded: {_refusal_words(error)}.", status=problem_of(error)["status"])
    if wants_json:
        return JSONResponse(uploaded(documents), status_code=202)
    return PAGES.redirect(PAGES.page(name), uploaded=str(len(documents)))


@router.post("/{name}/documents/{doc_id}/delete")
async def delete_document(name: str, doc_id: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    after = form.get("after")
    principal = visitor.principal
    kind = _kind(request)
    document = kind.document(principal.tenant, name, doc_id)
    await run_in_threadpool(lambda: kind.delete_document(principal.tenant, name, doc_id, by=principal.name))
    if _htmx(request):
        context = _documents(kind, principal.tenant, name, after if isinstance(after, str) else "")
        said = PAGES.messages["removed"].format(document["name"])
        return toast(request, PAGES.render(request, "search_tools/_documents.html", **context, status_message=said), said)
    return toast(request, PAGES.redirect(PAGES.page(name), removed=document["name"]),
                 PAGES.messages["removed"].format(document["name"]))


# -- the Test panel --------------------------------------------------------------------------------

TEST_FIELDS = ("query", "text", "case", "document", "offset", "chunk", "prefix", *metadata_form.FILTER_FIELDS)


@router.get("/{name}/search")
async def search_documents(name: str, request: Request, visitor: Writer, capability: str = "search") -> Response:
    """The Test panel: runs one capability (on or off; the search by default) with what its fields
    hold, as a model would call it; htmx swaps the answer in, a plain form shows the tool's page with it."""
    kind = _kind(request)
    tenant = visitor.principal.tenant
    tool = kind.get(tenant, name)
    inputs = {key: request.query_params.get(key, "") for key in TEST_FIELDS}
    outcome = await run_in_threadpool(_test, kind, tenant, name, capability, inputs)
    if _htmx(request):
        return PAGES.render(request, "search_tools/_search_results.html", search=outcome, tool=public(tool),
                            schema=schema_of(tool.config), **_words())
    return PAGES.editor(request, PAGES.form.values_of(tool), tool=tool, search=outcome)


# -- a document's page -----------------------------------------------------------------------------


def _number(value: str, default: int = 1) -> int:
    """A page number from the query string: anything that is not a positive number is the first page."""
    return int(value) if value.isdigit() and 0 < len(value) <= 9 and int(value) > 0 else default


@router.get("/{name}/documents/{doc_id}")
async def document_page(name: str, doc_id: str, request: Request, visitor: Reader, part: str = "",
                        chunks: str = "", chunk: str = "") -> Response:
    return await _document_page(name, doc_id, request, visitor, part, chunks, chunk)


@router.post("/{name}/documents/{doc_id}/metadata")
async def save_document_metadata(name: str, doc_id: str, request: Request, visitor: Writer) -> Response:
    """The document's metadata from one field per key of the tool's schema (an empty field: no
    value), replacing what it had, as `PUT …/documents/{docId}/metadata` does; each value refused is
    named next to its field, with what was typed kept."""
    kind = _kind(request)
    principal = visitor.principal
    form = await request.form()
    schema = schema_of(kind.get(principal.tenant, name).config)
    values, typed, unread = metadata_form.typed_values(schema, form, "meta")
    try:
        if unread:
            raise errors.InvalidInput(unread)
        document = await run_in_threadpool(
            lambda: kind.set_metadata(principal.tenant, name, doc_id, values, by=principal.name))
    except errors.InvalidInput as refusal:
        fields = metadata_form.value_messages(refusal.violations, "meta", schema)
        return await _document_page(name, doc_id, request, visitor, metadata_typed=typed,
                                    metadata_fields=fields, metadata_summary="The metadata was not saved: some values need a change.")
    said = f"Saved the metadata of {document['name']}."
    return toast(request, PAGES.redirect(PAGES.page(name, f"/documents/{doc_id}")), said)


async def _document_page(name: str, doc_id: str, request: Request, visitor: Any, part: str = "", chunks: str = "",
                         chunk: str = "", **metadata: Any) -> Response:
    """One document: what it is, and its extracted text one part at a time (a PDF a page at a time)
    and its chunks a page at a time, or why its extraction failed. `chunk=n` opens the page of
    chunks holding chunk n (a search result's link); htmx asks for one section's fragment."""
    kind = _kind(request)
    tenant = visitor.principal.tenant
    tool = kind.get(tenant, name)
    document = kind.document(tenant, name, doc_id)
    # Its text is read only by those who may run the tool's capabilities (an auditor sees what it is).
    reads = visitor.can_write
    text = await run_in_threadpool(kind.document_text, tenant, name, doc_id) if reads else ""
    cut = display.parts(text, document.get("pageStarts")) if text else []
    shown = min(_number(part), len(cut)) if cut else 0
    total_chunks = int(document.get("chunks") or 0)
    chunk_pages = max(1, -(-total_chunks // CHUNKS_PER_PAGE))
    wanted = _number(chunk, 0) if chunk.isdigit() else None
    chunk_page = min(wanted // CHUNKS_PER_PAGE + 1 if wanted is not None else _number(chunks), chunk_pages)
    first = (chunk_page - 1) * CHUNKS_PER_PAGE
    listed = await run_in_threadpool(kind.document_chunks, tenant, name, doc_id, first, first + CHUNKS_PER_PAGE - 1) \
        if total_chunks and reads else []
    context = {
        "tool": public(tool), "tool_id": tool.tool_id, "document": document, "parts": cut,
        "part": cut[shown - 1] if shown else None, "part_text": text[cut[shown - 1].start:cut[shown - 1].end] if shown else "",
        "chunks": listed, "chunk_page": chunk_page, "chunk_pages": chunk_pages, "total_chunks": total_chunks,
        "chunk_wanted": wanted, "failed": display.failure(document["reason"]) if document["state"] == FAILED else None,
        "processing": document["state"] == PROCESSING, "reads": reads, **_words(),
        # What an MCP client reads it by (`resources/read`), once it is ready.
        "resource_uri": document_uri(tool.tool_id, document["id"]) if document["state"] == READY else None,
        # Its metadata, by the keys of the tool's schema: as kept, or as typed into a refused save.
        "schema": schema_of(tool.config), "metadata_fields": {}, "metadata_summary": "",
        "metadata_typed": {key: metadata_form.shown_value(kind_of, (document.get("metadata") or {}).get(key))
                           for key, kind_of in schema_of(tool.config).items()},
        **metadata,
    }
    headers = {"Vary": "HX-Request", "Cache-Control": "no-store"}
    section = request.headers.get("hx-target", "")
    if _htmx(request) and section in ("document-text", "document-chunks"):
        return PAGES.render(request, f"search_tools/_{section.replace('-', '_')}.html", headers=headers, **context)
    return PAGES.render(request, "search_tools/document.html", headers=headers, **context)
