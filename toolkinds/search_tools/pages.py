"""File Search tools in the console (docs/kinds/file-search-tools.md, docs/console.md): the list, the
tool's page with the editor of its configuration (the fields every kind shares and each
capability's switch and two limits), enable and disable, delete (refused while a plan or an agent
names the tool) and its history are the pages every configured kind shares (`console/configured.py`),
with this kind's form (`form.py`) and templates. This module adds what is the kind's own: on the
tool's page, its documents with their upload and its progress, and a search box running the
`search` capability.

Every change goes through the kind's commands with the REST API's request model
(`toolkinds.search_tools.schemas.SearchToolBody`), so that the console and REST refuse the same things;
an upload takes the same steps as `POST /api/v1/admin/search-tools/{id}/documents`
(`toolkinds.search_tools.uploads`). A search result's snippet is document text: it is shown
escaped, only the kind's `<mark>` markers become marks."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from console.configured import ConfiguredPages
from console.routing import problem_of
from console.security import Reader, Writer
from domain import errors
from domain.documents import MARK_END, MARK_START, MAX_QUERY_CHARS, PROCESSING
from toolkinds.search_tools import form as forms
from toolkinds.search_tools.form import CAPABILITY_TEXT
from toolkinds.search_tools.kind import SearchToolKind
from toolkinds.search_tools.model import CAPABILITIES, MAX_NAME, cap_key, capability_name
from toolkinds.search_tools.schemas import SearchToolBody, public
from toolkinds.search_tools.uploads import spooled, uploaded

DOCUMENTS_PER_PAGE = 20


def _kind(request: Request) -> SearchToolKind:
    return PAGES.kind_of(request)  # type: ignore[no-any-return]


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def _editor_context(request: Request, tool: Any) -> dict[str, Any]:
    """What the tool's page shows besides its form: its documents (a tool's, not a new one's) and each capability's text."""
    context: dict[str, Any] = {"search": None}
    if tool is not None:
        context.update(_documents(_kind(request), request.state.visitor.principal.tenant, tool.tool_id, ""))
    return {**context, "capabilities": CAPABILITIES, "capability_text": CAPABILITY_TEXT, "cap_key": cap_key,
            "capability_name": capability_name, "max_name": MAX_NAME, "max_query": MAX_QUERY_CHARS}


PAGES = ConfiguredPages(
    SearchToolKind, base="/console/search-tools", one="search_tool", noun="File Search tool", title="File Search tool",
    folder="search_tools", body=SearchToolBody, public=public, form=forms.SearchToolForm(), editor_template="tool.html",
    history_template="search_tools/history.html", editor_context=_editor_context,
    list_context=lambda request: {"capability_text": CAPABILITY_TEXT},
    said={
        "created": "Created. Its capabilities are live on every server it is attached to; upload its documents below.",
        "enabled": "Enabled: the tool's capabilities are offered again.",
        "disabled": "Disabled: no server offers the tool's capabilities now.",
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
    return {"tool_id": tool.tool_id, "documents": rows, "next_cursor": next_cursor, "after": after,
            "counts": counts, "total": len(tool.documents), "processing": counts.get(PROCESSING, 0) > 0,
            "size_text": size_text, "max_upload_mb": max_upload_mb}


def _search(kind: SearchToolKind, tenant: str, name: str, query: str) -> dict[str, Any]:
    """The search box's answer: the results with their snippets split for marking, or what to change."""
    outcome: dict[str, Any] = {"query": query, "results": [], "problem": ""}
    if not query.strip():
        outcome["problem"] = "Type the words to search for."
        return outcome
    tool = kind.get(tenant, name)
    try:
        result = kind.run_capability(tenant, name, "search", {"query": query})
    except errors.InvalidInput as refusal:
        outcome["problem"] = "; ".join(v.message for v in refusal.violations)
        return outcome
    if result.error is not None:
        outcome["problem"] = f"The search failed ({result.error.type}): {result.error.message}"
        return outcome
    for found in result.output["results"]:
        document = tool.documents.get(found["documentId"]) or {}
        outcome["results"].append({**found, "name": document.get("name", ""), "parts": snippet_parts(found["snippet"])})
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
            uploads = await spooled(given, files.workdir, files.max_upload_bytes)
        documents = await run_in_threadpool(lambda: kind.upload(principal.tenant, name, uploads, by=principal.name))
    except errors.ModuleError as error:
        if wants_json:
            problem = problem_of(error)
            return JSONResponse(problem, status_code=problem["status"])
        tool = kind.find(principal.tenant, name)
        if tool is None or isinstance(error, errors.UnknownRecord):
            raise
        return PAGES.editor(request, PAGES.form.values_of(tool), tool=tool,
                            refusal=f"Not uploaded: {error.detail}", status=problem_of(error)["status"])
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
        return PAGES.render(request, "search_tools/_documents.html", **context,
                            status_message=PAGES.messages["removed"].format(document["name"]))
    return PAGES.redirect(PAGES.page(name), removed=document["name"])


# -- search ----------------------------------------------------------------------------------------


@router.get("/{name}/search")
async def search_documents(name: str, request: Request, visitor: Writer, query: str = "") -> Response:
    """Runs the tool's `search` capability (on or off) with the words typed; htmx swaps the results
    in, a plain form shows the tool's page with them."""
    kind = _kind(request)
    tenant = visitor.principal.tenant
    tool = kind.get(tenant, name)
    outcome = await run_in_threadpool(_search, kind, tenant, name, query)
    if _htmx(request):
        return PAGES.render(request, "search_tools/_search_results.html", search=outcome, tool=public(tool))
    return PAGES.editor(request, PAGES.form.values_of(tool), tool=tool, search=outcome)
