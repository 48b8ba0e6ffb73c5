"""File Search tools in the console (docs/kinds/file-search-tools.md, docs/console.md): the list, the tool's page (its documents
with their upload and its progress, a search box running the `search` capability, and the editor
of its configuration: the fields every kind shares and each capability's switch and two limits),
enable and disable, delete (refused while a plan or an agent names the tool), and its history.

Every change goes through the kind's commands with the REST API's request model
(`toolkinds.search_tools.routes.SearchToolBody`), so that the console and REST refuse the same things;
an upload takes the same steps as `POST /api/v1/admin/search-tools/{id}/documents`. A search
result's snippet is document text: it is shown escaped, only the kind's `<mark>` markers become
marks."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from toolkinds.search_tools.routes import SearchToolBody, _spool, public
from toolkinds.search_tools.kind import SearchToolKind, Upload
from console.routing import ConsoleRoute, problem_of
from console.security import Reader, Writer
from domain import errors
from domain import history as histories
from domain.documents import MARK_END, MARK_START, MAX_QUERY_CHARS, PROCESSING
from domain.errors import Violation
from toolkinds.search_tools.model import CAPABILITIES, MAX_NAME, cap_key, capability_name, normalise

router = APIRouter(prefix="/console/search-tools", route_class=ConsoleRoute, include_in_schema=False)

BASE = "/console/search-tools"
DOCUMENTS_PER_PAGE = 20
MESSAGES = {
    "created": "Created. Its capabilities are live on every server it is attached to; upload its documents below.",
    "saved": "Saved. The change is live at once.",
    "enabled": "Enabled: the tool's capabilities are offered again.",
    "disabled": "Disabled: no server offers the tool's capabilities now.",
    "deleted": "Deleted the File Search tool {}.",
    "uploaded": "Uploaded {} file(s): each is processing, then ready to search.",
    "removed": "Deleted the document {}.",
}
# Each capability as a person reads it: its title, what it gives, and its two limits' labels.
CAPABILITY_TEXT: dict[str, tuple[str, str, str, str]] = {
    "search": ("Search", "Ranked passages with the matching words marked.", "Results by default", "Results at most"),
    "fetch": ("Fetch", "A document's text, a page at a time.", "Characters by default", "Characters at most"),
    "list_documents": ("List documents", "The documents' names, types, sizes and times.", "Documents by default",
                       "Documents at most"),
    "find_text": ("Find text", "Every place an exact phrase occurs (no regular expressions).", "Matches by default",
                  "Matches at most"),
    "read_context": ("Read context", "The chunks before and after a chunk.", "Neighbours by default", "Neighbours at most"),
}
assert set(CAPABILITY_TEXT) == set(CAPABILITIES)
FIELD_LABELS = {"id": "Id", "description": "Description", "tags": "Tags", "exposeInChat": "Callable in chat",
                "enabled": "Enabled", "capabilities": "Capabilities"}

Values = dict[str, Any]


def _kind(request: Request) -> SearchToolKind:
    return request.app.state.services.toolbox.kind(SearchToolKind)


def _render(request: Request, template: str, status: int = 200, headers: dict[str, str] | None = None,
            **context: Any) -> Response:
    return request.app.state.console_pages.render(request, template, status=status, headers=headers, **context)


def _htmx(request: Request) -> bool:
    return request.headers.get("hx-request") == "true"


def _message(request: Request) -> str:
    for key, text in MESSAGES.items():
        if key in request.query_params:
            return text.format(request.query_params[key])
    return ""


def _page(name: str, suffix: str = "") -> str:
    return f"{BASE}/{quote(name, safe='')}{suffix}"


def _redirect(url: str, **flags: str) -> RedirectResponse:
    return RedirectResponse(url + ("?" + urlencode(flags) if flags else ""), status_code=303)


# -- the form, both ways ---------------------------------------------------------------------------


def config_digest(config: dict[str, Any]) -> str:
    """What the editor was opened with, to tell a save whether the configuration changed since. Not
    the tool's version: every upload and every document's extraction moves that on, and the form
    must not go stale while the documents above it settle."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:24]


def values_of(config: dict[str, Any] | None, tool_id: str = "") -> Values:
    """The form's values for a tool's configuration (a new tool's defaults when None)."""
    opened = config
    config = normalise(config or {})
    return {
        "id": tool_id,
        "digest": config_digest(opened) if opened is not None else "",
        "description": config["description"],
        "tags": ", ".join(config["tags"]),
        "exposeInChat": config["exposeInChat"],
        "enabled": config["enabled"],
        "capabilities": {
            name: {"enabled": config["capabilities"][name]["enabled"], "limit": str(config["capabilities"][name][limit]),
                   "cap": str(config["capabilities"][name][cap_key(limit)])}
            for name, (_, limit, _, _) in CAPABILITIES.items()
        },
    }


def _text(form: Any, name: str) -> str:
    value = form.get(name)
    return value.replace("\r\n", "\n").strip() if isinstance(value, str) else ""


def form_values(form: Any, tool_id: str | None = None) -> Values:
    """The submitted form, as typed, to show it again."""
    return {
        "id": tool_id if tool_id is not None else _text(form, "id"),
        "digest": _text(form, "digest"),
        "description": _text(form, "description"),
        "tags": _text(form, "tags"),
        "exposeInChat": form.get("exposeInChat") == "on",
        "enabled": form.get("enabled") == "on",
        "capabilities": {
            name: {"enabled": form.get(f"{name}_enabled") == "on", "limit": _text(form, f"{name}_{limit}"),
                   "cap": _text(form, f"{name}_{cap_key(limit)}")}
            for name, (_, limit, _, _) in CAPABILITIES.items()
        },
    }


def body_of(values: Values) -> tuple[dict[str, Any], list[Violation]]:
    """The REST API's request body (`SearchToolBody`'s fields) from the form's values, and each
    number that could not be read as typed, naming its field. An empty limit is the default."""
    found: list[Violation] = []

    def whole(text: str, field: str) -> int | None:
        plain = text.replace(",", "").replace("_", "").replace(" ", "")
        if not plain:
            return None
        if not re.fullmatch(r"-?[0-9]{1,12}", plain):
            found.append(Violation(field, "API", "must be a whole number"))
            return None
        return int(plain)

    capabilities: dict[str, Any] = {}
    for name, (_, limit, _, _) in CAPABILITIES.items():
        typed = values["capabilities"][name]
        capabilities[name] = {
            "enabled": typed["enabled"],
            limit: whole(typed["limit"], f"capabilities.{name}.{limit}"),
            cap_key(limit): whole(typed["cap"], f"capabilities.{name}.{cap_key(limit)}"),
        }
    body = {
        "description": values["description"],
        "tags": [t.strip() for t in values["tags"].split(",") if t.strip()],
        "exposeInChat": values["exposeInChat"],
        "enabled": values["enabled"],
        "capabilities": capabilities,
    }
    return body, found


def path_of(loc: tuple[Any, ...] | list[Any]) -> str:
    """A pydantic error location as the API's field path: ('capabilities', 'search', 'maxResults') →
    capabilities.search.maxResults; ('tags', 0) → tags[0]."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else ("." if path else "") + str(part)
    return path


def anchor_of(field: str) -> tuple[str, str]:
    """The id of the form field a rule's field path names, and the label a person reads for it."""
    match = re.fullmatch(r"capabilities\.(\w+)(?:\.(\w+))?", field)
    if match and match.group(1) in CAPABILITIES:
        name, part = match.group(1), match.group(2)
        title, _, default_label, cap_label = CAPABILITY_TEXT[name]
        limit = CAPABILITIES[name][1]
        if part == limit:
            return f"capabilities-{name}-{limit}", f"{title}, {default_label.lower()}"
        if part == cap_key(limit):
            return f"capabilities-{name}-{cap_key(limit)}", f"{title}, {cap_label.lower()}"
        return f"capabilities-{name}", title
    root = re.match(r"[A-Za-z]+", field)
    name = root.group(0) if root else ""
    if name in FIELD_LABELS:
        return name, FIELD_LABELS[name]
    return "form", field or "The form"


def messages_of(found: list[Violation]) -> dict[str, list[str]]:
    """Messages by the id of the form field each is about, each naming that field."""
    fields: dict[str, list[str]] = {}
    for violation in found:
        anchor, label = anchor_of(violation.field)
        fields.setdefault(anchor, []).append(f"{label}: {violation.message}")
    return fields


def _refused(error: Exception) -> tuple[dict[str, list[str]], str] | None:
    """The form's messages for a refused save, or None for an error that is not about the form."""
    if isinstance(error, ValidationError):
        return messages_of([Violation(path_of(e.get("loc", ())), "API", str(e.get("msg"))) for e in error.errors()]), \
            "Some fields need a change."
    if isinstance(error, (errors.InvalidDefinition, errors.InvalidRecord)):
        return messages_of(error.violations), "Some fields need a change."
    if isinstance(error, (errors.IdTaken, errors.RecordTaken)):
        return {"id": [f"Id: {error.detail}"]}, "That id is taken."
    if isinstance(error, errors.QuotaExceeded):  # docs/tenants.md
        return {"form": [f"Not created: {error.detail}. Your organization's operator sets its quotas."]}, "A quota is reached."
    if isinstance(error, errors.PreconditionFailed):
        return ({"form": ["Someone saved this tool after you opened it. Open it again to see their change; "
                          "what you typed is below."]}, "Not saved: the tool changed meanwhile.")
    return None


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


# -- the list ------------------------------------------------------------------------------------


@router.get("")
def search_tool_list(request: Request, visitor: Reader) -> Response:
    rows = [public(tool) for tool in _kind(request).tools(visitor.principal.tenant)]
    return _render(request, "search_tools/list.html", rows=rows, capability_text=CAPABILITY_TEXT, message=_message(request))


# -- the tool's page and its editor ----------------------------------------------------------------


def _tool_page(request: Request, values: Values, *, tool: Any = None, fields: dict[str, list[str]] | None = None,
               summary: str = "", message: str = "", refusal: str = "", search: dict[str, Any] | None = None,
               status: int = 200) -> Response:
    context: dict[str, Any] = {}
    if tool is not None:
        kind = _kind(request)
        context = _documents(kind, request.state.visitor.principal.tenant, tool.tool_id, "")
    return _render(
        request, "search_tools/tool.html", status=status, values=values, editing=tool is not None,
        tool=public(tool) if tool is not None else None, fields=fields or {}, summary=summary, message=message,
        refusal=refusal, search=search, capabilities=CAPABILITIES, capability_text=CAPABILITY_TEXT, cap_key=cap_key,
        capability_name=capability_name, max_name=MAX_NAME, max_query=MAX_QUERY_CHARS, **context,
    )


@router.get("/new")
def new_search_tool(request: Request, visitor: Writer) -> Response:
    return _tool_page(request, values_of(None))


@router.get("/{name}")
def search_tool_page(name: str, request: Request, visitor: Reader) -> Response:
    tool = _kind(request).get(visitor.principal.tenant, name)
    return _tool_page(request, values_of(tool.config, tool.tool_id), tool=tool, message=_message(request))


async def _save(request: Request, visitor: Any, name: str | None) -> Response:
    form = await request.form()
    values = form_values(form, name)
    tool_id = name if name is not None else values["id"]
    principal = visitor.principal
    kind = _kind(request)
    try:
        body, unread = body_of(values)
        if not tool_id:
            unread.insert(0, Violation("id", "R1", "is required"))
        if unread:
            raise errors.InvalidDefinition(unread)
        config = SearchToolBody.model_validate(body).as_config()
        expected = None
        if name is not None and values["digest"]:
            # Refused when the configuration changed since the form was opened; then the version
            # read here guards the save against a change in between.
            current = kind.get(principal.tenant, name)
            if config_digest(current.config) != values["digest"]:
                raise errors.PreconditionFailed(name, -1, current.version)
            expected = current.version
        await run_in_threadpool(lambda: kind.save(principal.tenant, tool_id, config, by=principal.name, create=name is None,
                                                  expected=expected))
    except (ValidationError, errors.ModuleError) as error:
        refused = _refused(error)
        if refused is None:
            raise
        fields, summary = refused
        existing = kind.find(principal.tenant, name) if name is not None else None
        return _tool_page(request, values, tool=existing, fields=fields, summary=summary)
    return _redirect(_page(tool_id), **({"saved": "1"} if name is not None else {"created": "1"}))


@router.post("")
async def create_search_tool(request: Request, visitor: Writer) -> Response:
    return await _save(request, visitor, None)


@router.post("/{name}")
async def save_search_tool(name: str, request: Request, visitor: Writer) -> Response:
    _kind(request).get(visitor.principal.tenant, name)  # 404 before reading the form
    return await _save(request, visitor, name)


@router.post("/{name}/enabled")
async def set_enabled(name: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    enabled = form.get("enabled") == "true"
    principal = visitor.principal
    await run_in_threadpool(lambda: _kind(request).set_enabled(principal.tenant, name, enabled, by=principal.name))
    return _redirect(_page(name), **({"enabled": "1"} if enabled else {"disabled": "1"}))


@router.post("/{name}/delete")
async def delete_search_tool(name: str, request: Request, visitor: Writer) -> Response:
    principal = visitor.principal
    kind = _kind(request)
    try:
        await run_in_threadpool(lambda: kind.delete(principal.tenant, name, by=principal.name))
    except errors.InUse as error:
        tool = kind.get(principal.tenant, name)
        return _tool_page(request, values_of(tool.config, tool.tool_id), tool=tool,
                          refusal=f"Not deleted: {error.detail}", status=409)
    return _redirect(BASE, deleted=name)


# -- documents ---------------------------------------------------------------------------------------


@router.get("/{name}/documents")
def documents_page(name: str, request: Request, visitor: Reader, after: str = "") -> Response:
    """The documents, a page at a time: the fragment htmx swaps (and polls while any is processing),
    or, followed as a link, a page of its own with the upload."""
    context = _documents(_kind(request), visitor.principal.tenant, name, after)
    headers = {"Vary": "HX-Request", "Cache-Control": "no-store"}
    if _htmx(request):
        return _render(request, "search_tools/_documents.html", headers=headers, **context)
    return _render(request, "search_tools/documents.html", headers=headers, message=_message(request), **context)


def _uploaded(documents: list[dict[str, Any]]) -> dict[str, Any]:
    return {"documents": [{"id": d["id"], "name": d["name"], "state": d["state"], "mediaType": d["mediaType"],
                           "size": d["size"]} for d in documents]}


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
        uploads: list[Upload] = []
        async with request.form(max_files=1_000, max_fields=100) as form:
            given = [item for item in form.getlist("files") if not _no_file(item)]
            if any(not isinstance(item, UploadFile) for item in given):
                raise errors.InvalidInput([Violation("files", "DOC", "must be files (multipart/form-data file parts)")])
            try:
                for item in given:
                    assert isinstance(item, UploadFile)
                    path = await run_in_threadpool(_spool, item, files.workdir, files.max_upload_bytes)
                    uploads.append(Upload(item.filename or "document", path))
            except BaseException:
                for upload in uploads:
                    upload.path.unlink(missing_ok=True)
                raise
        documents = await run_in_threadpool(lambda: kind.upload(principal.tenant, name, uploads, by=principal.name))
    except errors.ModuleError as error:
        if wants_json:
            problem = problem_of(error)
            return JSONResponse(problem, status_code=problem["status"])
        tool = kind.find(principal.tenant, name)
        if tool is None or isinstance(error, errors.UnknownRecord):
            raise
        return _tool_page(request, values_of(tool.config, tool.tool_id), tool=tool,
                          refusal=f"Not uploaded: {error.detail}", status=problem_of(error)["status"])
    if wants_json:
        return JSONResponse(_uploaded(documents), status_code=202)
    return _redirect(_page(name), uploaded=str(len(documents)))


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
        return _render(request, "search_tools/_documents.html", **context,
                       status_message=MESSAGES["removed"].format(document["name"]))
    return _redirect(_page(name), removed=document["name"])


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
        return _render(request, "search_tools/_search_results.html", search=outcome, tool=public(tool))
    return _tool_page(request, values_of(tool.config, tool.tool_id), tool=tool, search=outcome)


# -- history -----------------------------------------------------------------------------------------


@router.get("/{name}/history")
def search_tool_history(name: str, request: Request, visitor: Reader) -> Response:
    kind = _kind(request)
    events = kind.events(visitor.principal.tenant, name)
    if not events:
        raise errors.UnknownRecord("File Search tool", name)
    entries = [histories.entry(e) for e in events]
    live = kind.find(visitor.principal.tenant, name) is not None
    return _render(request, "search_tools/history.html", name=name, entries=list(reversed(entries)), live=live)
