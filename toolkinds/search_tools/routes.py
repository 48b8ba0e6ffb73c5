"""Admin REST API of File Search tools (docs/kinds/file-search-tools.md): `/api/v1/admin/search-tools`.

The tool's configuration is live (no draft) and every change is an event of its own aggregate, as
an API URL tool's. Documents: `POST /{id}/documents` takes one or many files in the multipart
field `files` and answers 202 with each document's id and state (`PROCESSING`; the same bytes
the tool has already answer that document); extraction runs in the background, and
`GET /{id}/documents/{docId}` says `READY` with its counts or `FAILED` with the reason. An upload
over `TOOLSMITH_MAX_UPLOAD_MB` is refused with 413 before its body is read past the cap (the body
limit of `entrypoints/web.py`). `POST /{id}/test` runs one capability, enabled or not.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Header, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from api.deps import Admin, Reader, ServicesDep
from api.presenters import execution_out
from api.problems import documented, etag, if_match_version
from toolkinds.search_tools.kind import SearchToolKind, Upload
from application.toolbox import answered
from api.schemas import DESCRIPTION, IDENTIFIER, TAGS, documents, requires
from domain import history
from domain.errors import InvalidDefinition, InvalidInput, UnknownRecord, UploadTooLarge, Violation
from toolkinds.search_tools.model import FILE_SEARCH, MAX_NAME, SearchTool

router = APIRouter(prefix="/api/v1/admin/search-tools", tags=["File Search tools"])

CHUNK = 1_048_576


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Capability(_Strict):
    enabled: bool | None = None
    maxResults: int | None = None
    maxResultsCap: int | None = None
    maxChars: int | None = None
    maxCharsCap: int | None = None
    limit: int | None = None
    limitCap: int | None = None
    maxMatches: int | None = None
    maxMatchesCap: int | None = None
    neighbours: int | None = None
    neighboursCap: int | None = None


class Capabilities(_Strict):
    search: Capability = Field(default_factory=Capability, description="ranked passages (on by default; maxResults 10, cap 50)")
    fetch: Capability = Field(default_factory=Capability, description="a document's text in pages (on by default; maxChars 20,000, cap 50,000)")
    list_documents: Capability = Field(default_factory=Capability, description="the documents (limit 50, cap 200)")
    find_text: Capability = Field(default_factory=Capability, description="an exact phrase (maxMatches 20, cap 100)")
    read_context: Capability = Field(default_factory=Capability, description="a chunk's neighbours (neighbours 1, cap 5)")


class SearchToolBody(_Strict):
    model_config = ConfigDict(extra="forbid", json_schema_extra=requires("description"))
    # The rules JSON Schema can say are in the document too (api.schemas.documents); the domain enforces them.
    id: str | None = Field(None, max_length=200, description="the tool's name (R1, at most 40 characters); on PUT it must be the path's",
                           **documents(**{**IDENTIFIER, "maxLength": MAX_NAME}))
    description: str = Field("", max_length=4_000, **documents(**DESCRIPTION))
    tags: list[str] = Field(default_factory=list, max_length=100, **documents(**TAGS))
    exposeInChat: bool = True
    enabled: bool = True
    capabilities: Capabilities = Field(default_factory=Capabilities)

    def as_config(self) -> dict[str, Any]:
        given = self.model_dump(exclude={"id", "capabilities"})
        given["capabilities"] = {name: cap.model_dump(exclude_none=True) for name, cap in self.capabilities}
        return given


class SearchToolCreate(SearchToolBody):
    """A new tool's body: its `id` is required (on PUT the path names it)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=requires("id", "description", not_null=("id",)))


class SearchToolTestCall(_Strict):
    capability: Literal["search", "fetch", "list_documents", "find_text", "read_context"] = "search"
    arguments: dict[str, Any] | None = Field(None, description="the capability's arguments, as a JSON object")


IfMatch = Annotated[str | None, Header(alias="If-Match", description="the tool's ETag as read (B7)")]


def _kind(services: Any) -> SearchToolKind:
    return services.toolbox.kind(SearchToolKind)


def public(tool: SearchTool) -> dict[str, Any]:
    """The tool as the API shows it: its configuration, how many documents, who changed it and when."""
    states: dict[str, int] = {}
    for document in tool.documents.values():
        states[document["state"]] = states.get(document["state"], 0) + 1
    return {"id": tool.tool_id, "callType": FILE_SEARCH, **tool.config, "documents": {"total": len(tool.documents), **states},
            "version": tool.version, "createdBy": tool.created_by, "createdAt": tool.created_on,
            "updatedBy": tool.updated_by, "updatedAt": tool.modified_on}


def public_document(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k != "pageStarts"}


@router.get("", responses=documented())
def list_search_tools(services: ServicesDep, principal: Reader) -> list[dict[str, Any]]:
    """Every File Search tool of the tenant, by name."""
    return [public(tool) for tool in _kind(services).tools(principal.tenant)]


@router.post("", status_code=201, responses=documented(400, 409))
async def create_search_tool(body: SearchToolCreate, services: ServicesDep, principal: Admin, response: Response) -> dict[str, Any]:
    """Create a File Search tool; it is live at once (its enabled capabilities are MCP tools)."""
    if body.id is None:
        raise InvalidDefinition([Violation("id", "R1", "is required")])
    tool, _ = await run_in_threadpool(
        lambda: _kind(services).save(principal.tenant, body.id, body.as_config(), by=principal.name, create=True))  # type: ignore[arg-type]
    response.headers["ETag"] = etag(tool.version)
    return public(tool)


@router.get("/{id}", responses=documented(400, 404))
def get_search_tool(
    id: str, services: ServicesDep, principal: Reader, response: Response,
    asOf: Annotated[datetime | None, Query(description="an ISO 8601 instant: the tool as it stood then (B2)")] = None,
) -> dict[str, Any]:
    """One File Search tool; with `asOf`, as it stood at that instant (its documents then too)."""
    kind = _kind(services)
    if asOf is None:
        tool = kind.get(principal.tenant, id)
    else:
        if asOf.tzinfo is None:
            raise InvalidDefinition([Violation("asOf", "B2", "must name its time zone (2024-05-06T10:00:00Z)")])
        tool = history.replay(kind.events(principal.tenant, id), asOf)
        if tool is None or tool.deleted:
            raise UnknownRecord("File Search tool", id)
    response.headers["ETag"] = etag(tool.version)
    return public(tool)


@router.put("/{id}", responses=documented(400, 404, 409, 412))
async def replace_search_tool(id: str, body: SearchToolBody, services: ServicesDep, principal: Admin, response: Response,
                              if_match: IfMatch = None) -> dict[str, Any]:
    """Replace the configuration; live at once (a capability switched on or off is offered or
    withdrawn over MCP, and sessions are told their tool list changed)."""
    if body.id is not None and body.id != id:
        raise InvalidDefinition([Violation("id", "R1", f"must be the path's id {id!r} (a tool is renamed by creating another)")])
    expected = if_match_version(if_match)
    tool, _ = await run_in_threadpool(
        lambda: _kind(services).save(principal.tenant, id, body.as_config(), by=principal.name, create=False, expected=expected))
    response.headers["ETag"] = etag(tool.version)
    return public(tool)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404, 409))
async def delete_search_tool(id: str, services: ServicesDep, principal: Admin) -> Response:
    """Delete the tool and its documents (refused while a plan or an agent names it or a capability); its history stays."""
    await run_in_threadpool(lambda: _kind(services).delete(principal.tenant, id, by=principal.name))
    return Response(status_code=204)


@router.get("/{id}/history", responses=documented(404))
def search_tool_history(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """Every event of the tool and its documents, through all its lives."""
    events = _kind(services).events(principal.tenant, id)
    if not events:
        raise UnknownRecord("File Search tool", id)
    return {"id": id, "events": [history.entry(e) for e in events]}


@router.post("/{id}/test", responses=documented(400, 404))
async def test_search_tool(id: str, services: ServicesDep, principal: Admin,
                           body: SearchToolTestCall = Body(default_factory=SearchToolTestCall)) -> dict[str, Any]:
    """Runs one capability with these arguments (enabled or not), as MCP would."""
    result = await run_in_threadpool(
        lambda: _kind(services).run_capability(principal.tenant, id, body.capability, body.arguments))
    return {"capability": body.capability, **execution_out(answered(result))}


# -- documents ----------------------------------------------------------------------------------


# The route reads the multipart form itself (streamed, never whole in memory): its body, documented here.
UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["files"],
    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"},
                             "description": "one or many files (text, Markdown, JSON, CSV, source code, HTML, PDF, .docx)"}},
}}}}}


@router.post("/{id}/documents", status_code=202, responses=documented(400, 404, 413, 415, 503), openapi_extra=UPLOAD_BODY)
async def upload_documents(id: str, request: Request, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Upload one or many files (multipart, field `files`); each becomes a document, `PROCESSING`
    until its text is extracted and indexed. The same bytes twice are one document."""
    kind = _kind(services)
    files = kind.files
    limit = files.max_upload_bytes
    async with request.form(max_files=1_000, max_fields=100) as form:
        given = form.getlist("files")
        if any(not isinstance(item, UploadFile) for item in given):
            raise InvalidInput([Violation("files", "DOC", "must be files (multipart/form-data file parts)")])
        uploads: list[Upload] = []
        try:
            for item in given:
                assert isinstance(item, UploadFile)
                uploads.append(Upload(item.filename or "document", await run_in_threadpool(_spool, item, files.workdir, limit)))
        except BaseException:
            for upload in uploads:
                upload.path.unlink(missing_ok=True)
            raise
    documents = await run_in_threadpool(lambda: kind.upload(principal.tenant, id, uploads, by=principal.name))
    return {"documents": [{"id": d["id"], "name": d["name"], "state": d["state"], "mediaType": d["mediaType"],
                           "size": d["size"]} for d in documents]}


def _spool(item: UploadFile, workdir: Path, limit: int) -> Path:
    """The upload in a file of the kind's work folder (the kind takes it over), 413 past the cap."""
    handle, name = tempfile.mkstemp(prefix="upload-", dir=workdir)
    path = Path(name)
    size = 0
    try:
        with os.fdopen(handle, "wb") as target:
            item.file.seek(0)
            while piece := item.file.read(CHUNK):
                size += len(piece)
                if size > limit:
                    raise UploadTooLarge(f"{item.filename!r} is larger than {limit // 1_048_576} MB (TOOLSMITH_MAX_UPLOAD_MB)")
                target.write(piece)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


@router.get("/{id}/documents", responses=documented(400, 404))
def list_documents(
    id: str, services: ServicesDep, principal: Reader,
    limit: Annotated[int, Query(ge=1, le=500, description="documents per page")] = 50,
    cursor: Annotated[str | None, Query(max_length=600, description="nextCursor of the previous page")] = None,
    state: Annotated[Literal["PROCESSING", "READY", "FAILED"] | None, Query(description="only documents in this state")] = None,
) -> dict[str, Any]:
    """The tool's documents by name, a page at a time, each with its state."""
    rows, next_cursor = _kind(services).documents(principal.tenant, id, after=cursor, limit=limit, state=state)
    return {"documents": [public_document(d) for d in rows], "nextCursor": next_cursor}


@router.get("/{id}/documents/{docId}", responses=documented(404))
def get_document(id: str, docId: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """One document: name, type, size, hash, state, and its character and chunk counts or the failure's reason."""
    return public_document(_kind(services).document(principal.tenant, id, docId))


@router.delete("/{id}/documents/{docId}", status_code=204, response_class=Response, responses=documented(404))
async def delete_document(id: str, docId: str, services: ServicesDep, principal: Admin) -> Response:
    """Delete a document: gone from every capability's answers when this answers."""
    await run_in_threadpool(lambda: _kind(services).delete_document(principal.tenant, id, docId, by=principal.name))
    return Response(status_code=204)
