"""The REST API's request bodies and answers of File Search tools (docs/kinds/file-search-tools.md):
a tool's configuration (the fields every kind shares and each capability's switch and limits) as
JSON Schema says it (the domain enforces every rule), a tool and a document as the API shows them.
The REST routes and the console's editor both validate with these models, so that both refuse the
same things."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from api.configured import CREATING, ConfiguredBody
from api.schemas import IDENTIFIER, documents
from domain.metadata import schema_of
from domain.retrieval import of as retrieval_of
from toolkinds.search_tools.model import FILE_SEARCH, MAX_NAME, SearchTool


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


class Retrieval(_Strict):
    mode: Literal["hybrid", "lexical", "semantic"] | None = Field(
        None, description="hybrid (default for a new tool): words and meaning fused; lexical: words (BM25); semantic: meaning")
    rrfK: int | None = Field(None, ge=1, le=10_000, description="reciprocal rank fusion's k (60)")
    minScore: float | None = Field(None, description="results scoring below this are left out (hybrid: 0 to 1)")
    maxChunksPerDocument: int | None = Field(None, ge=1, le=50, description="at most this many results from one document")


class SearchToolBody(ConfiguredBody):
    # Shorter than other kinds' names: each capability is offered as `<id>_<capability>` (R1).
    id: str | None = Field(None, max_length=200, description="the tool's name (R1, at most 40 characters); on PUT it must be the path's",
                           **documents(**{**IDENTIFIER, "maxLength": MAX_NAME}))
    capabilities: Capabilities = Field(default_factory=Capabilities)
    retrieval: Retrieval | None = Field(None, description="how search finds chunks (docs/kinds/file-search-tools.md)")
    metadata: dict[str, str] | None = Field(
        None, description="the documents' metadata keys and their types (string, number, boolean, date), at most 32; "
                          "search filters on them. Unnamed on PUT: the tool's are kept")

    def as_config(self) -> dict[str, Any]:
        given = self.model_dump(exclude={"id", "capabilities", "retrieval"})
        given["capabilities"] = {name: cap.model_dump(exclude_none=True) for name, cap in self.capabilities}
        if self.retrieval is not None:
            given["retrieval"] = self.retrieval.model_dump(exclude_unset=True)
        return given


class SearchToolCreate(SearchToolBody):
    """A new tool's body: its `id` is required (on PUT the path names it)."""

    model_config = CREATING


class SearchToolTestCall(_Strict):
    capability: Literal["search", "fetch", "list_documents", "find_text", "read_context"] = "search"
    arguments: dict[str, Any] | None = Field(None, description="the capability's arguments, as a JSON object")


def public(tool: SearchTool) -> dict[str, Any]:
    """The tool as the API shows it: its configuration, how many documents, who changed it and when."""
    states: dict[str, int] = {}
    for document in tool.documents.values():
        states[document["state"]] = states.get(document["state"], 0) + 1
    return {"id": tool.tool_id, "callType": FILE_SEARCH, **tool.config, "retrieval": retrieval_of(tool.config),
            "metadata": schema_of(tool.config), "documents": {"total": len(tool.documents), **states},
            "version": tool.version, "createdBy": tool.created_by, "createdAt": tool.created_on,
            "updatedBy": tool.updated_by, "updatedAt": tool.modified_on}


def public_document(document: dict[str, Any]) -> dict[str, Any]:
    return {**{k: v for k, v in document.items() if k != "pageStarts"}, "metadata": document.get("metadata") or {}}
