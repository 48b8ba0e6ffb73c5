"""Admin REST API of File Search tools (docs/kinds/file-search-tools.md): `/api/v1/admin/search-tools`.

The tool's configuration is live (no draft) and every change is an event of its own aggregate, as
an API URL tool's. Documents: `POST /{id}/documents` takes one or many files in the multipart
field `files` and answers 202 with each document's id and state (`PROCESSING`; the same bytes
the tool has already answer that document); extraction runs in the background, and
`GET /{id}/documents/{docId}` says `READY` with its counts or `FAILED` with the reason. An upload
over `TOOLSMITH_MAX_UPLOAD_MB` is refused with 413 before its body is read past the cap (the body
limit of `entrypoints/web.py`). `POST /{id}/test` runs one capability, enabled or not.
`GET /{id}/embedding` says the service's embedding model and how many of the tool's documents
are embedded by it (a change of model's progress, `reembed.py`); `POST /{id}/embedding` queues
those of another model again (202).

The routes every configured kind shares (list, create, read with `asOf`, replace with
`If-Match`, delete, history) are `api/configured.py`'s; this module adds the kind's own.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api.configured import ConfiguredApi, configured_routes
from api.deps import Admin, Reader, ServicesDep
from api.paths import ADMIN_API
from api.presenters import execution_out
from api.problems import documented
from application.toolbox import answered
from toolkinds.search_tools.kind import SearchToolKind
from toolkinds.search_tools.schemas import SearchToolBody, SearchToolCreate, SearchToolTestCall, public, public_document
from toolkinds.search_tools.uploads import form_metadata, spooled, uploaded

API = ConfiguredApi(SearchToolKind, noun="File Search tool", one="search_tool", body=SearchToolBody, create=SearchToolCreate,
                    public=public, said={
                        "create": "Create a File Search tool; it is live at once (its enabled capabilities are MCP tools).",
                        "get": "One File Search tool; with `asOf`, as it stood at that instant (its documents then too).",
                        "replace": "Replace the configuration; live at once (a capability switched on or off is offered or\n"
                                   "withdrawn over MCP, and sessions are told their tool list changed).",
                        "delete": "Delete the tool and its documents (refused while a plan or an agent names it or a capability); "
                                  "its history stays.",
                        "history": "Every event of the tool and its documents, through all its lives.",
                    })
router = configured_routes(APIRouter(prefix=f"{ADMIN_API}/search-tools", tags=["File Search tools"]), API)


def _kind(services: Any) -> SearchToolKind:
    return API.kind_of(services)  # type: ignore[no-any-return]


@router.post("/{id}/test", responses=documented(400, 404))
async def test_search_tool(id: str, services: ServicesDep, principal: Admin,
                           body: SearchToolTestCall = Body(default_factory=SearchToolTestCall)) -> dict[str, Any]:
    """Runs one capability with these arguments (enabled or not), as MCP would."""
    result = await run_in_threadpool(
        lambda: _kind(services).run_capability(principal.tenant, id, body.capability, body.arguments))
    return {"capability": body.capability, **execution_out(answered(result))}


@router.get("/{id}/embedding", responses=documented(404))
def get_embedding(id: str, services: ServicesDep, principal: Reader) -> dict[str, Any]:
    """The service's embedding model and how many of the tool's documents with vectors are by it (a re-embedding's progress)."""
    return _kind(services).embedding(principal.tenant, id)


@router.post("/{id}/embedding", status_code=202, responses=documented(404, 503))
def embed_again(id: str, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Embed the tool's documents of another model again now, in the background (those a failed re-embedding left)."""
    return _kind(services).embed_again(principal.tenant, id)


# -- documents ----------------------------------------------------------------------------------


# The route reads the multipart form itself (streamed, never whole in memory): its body, documented here.
UPLOAD_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": ["files"],
    "properties": {"files": {"type": "array", "items": {"type": "string", "format": "binary"},
                             "description": "one or many files (text, Markdown, JSON, CSV, source code, HTML, PDF, .docx)"},
                   "metadata": {"type": "string", "description": "a JSON object of metadata (keys of the tool's "
                                                                 "metadata schema), given to every file of the upload"}},
}}}}}


@router.post("/{id}/documents", status_code=202, responses=documented(400, 404, 413, 415, 503), openapi_extra=UPLOAD_BODY)
async def upload_documents(id: str, request: Request, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Upload one or many files (multipart, field `files`); each becomes a document, `PROCESSING`
    until its text is extracted and indexed. The same bytes twice are one document."""
    kind = _kind(services)
    files = kind.files
    async with request.form(max_files=1_000, max_fields=100) as form:
        metadata = form_metadata(form.getlist("metadata"))
        uploads = await spooled(form.getlist("files"), files.workdir, files.max_upload_bytes)
    documents = await run_in_threadpool(lambda: kind.upload(principal.tenant, id, uploads, by=principal.name,
                                                            metadata=metadata))
    return uploaded(documents)


@router.put("/{id}/documents/{docId}/metadata", responses=documented(400, 404))
async def put_document_metadata(id: str, docId: str, services: ServicesDep, principal: Admin,
                                body: dict[str, Any] = Body(..., description="the document's metadata, whole")) -> dict[str, Any]:
    """Replace a document's metadata (keys of the tool's metadata schema, values of their types)."""
    document = await run_in_threadpool(
        lambda: _kind(services).set_metadata(principal.tenant, id, docId, body, by=principal.name))
    return public_document(document)


@router.patch("/{id}/documents/{docId}/metadata", responses=documented(400, 404))
async def patch_document_metadata(id: str, docId: str, services: ServicesDep, principal: Admin,
                                  body: dict[str, Any] = Body(..., description="a JSON merge patch: null removes a key")) -> dict[str, Any]:
    """Change some of a document's metadata (a JSON merge patch: a key set to null is removed)."""
    document = await run_in_threadpool(
        lambda: _kind(services).set_metadata(principal.tenant, id, docId, body, by=principal.name, merge=True))
    return public_document(document)


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
