"""File Search tools as a kind of tool (callType FILE_SEARCH; docs/kinds/index.md, docs/kinds/file-search-tools.md).

One File Search tool registers one MCP tool per enabled capability, `<toolName>_<capability>`,
all read-only (`capabilities`). R2 holds the tool's name and all five capability names, enabled
or not, so that switching a capability on never collides.

This module is the `ToolKind`: the tool's configuration (CRUD, live at once), its documents as
queries, the catalog and R2, and the wiring of the parts: `ingest` (uploads, the extraction queue
and its pool, each document's outcome, resuming what a stopped process left `PROCESSING`),
`capabilities` (each capability's schema, catalog entry and answer) and `chunks` (the chunk index
read once its projection caught up, the projection, and its rebuild from the events and the blobs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anyio.to_thread

from application.context import CallContext
from application.kinds.base import Tools
from application.kinds.configured import ConfiguredKind
from application.resources import NOT_KEPT, NotKept, ResourceItem, ResourceMatch, ResourceTemplateItem, ResourceText
from domain.catalog import ToolEntry
from domain.documents import READY, StoredChunk
from domain.errors import DocumentsUnavailable, InvalidDefinition, ToolNotCallable, UnknownRecord, Violation
from domain.metadata import schema_of, schema_violations
from domain.ports import ExecutionResult
from domain.retrieval import of as retrieval_of
from toolkinds.search_tools.chunks import Chunks
from toolkinds.search_tools.capabilities import Capabilities, capability_entries, page_of, parse
from toolkinds.search_tools.ingest import DOCUMENT, Files, Ingest, Upload
from toolkinds.search_tools.model import (
    CAPABILITIES, FILE_SEARCH, LABEL, Config, Document, SearchTool, capability_names, given_violations, name_violations,
    normalise, violations,
)
from toolkinds.search_tools.reembed import progress
from toolkinds.search_tools.uris import TEMPLATE, document_uri, page_uri, parse_uri

__all__ = ["Files", "SearchToolKind", "Upload"]  # `Files` and `Upload` are named here by the composition and the routes


class SearchToolKind(ConfiguredKind[SearchTool]):
    """File Search tools: their configuration is `ConfiguredKind`'s; their documents `ingest`'s, their
    capabilities' answers `capabilities`', the chunk index `chunks`'."""

    call_type = FILE_SEARCH
    label = LABEL
    index_name = "search tool index"

    def __init__(self, deps: Any) -> None:
        super().__init__(deps)
        self.ingest = Ingest(self)
        self.capabilities = Capabilities(self)
        self.chunk_index = Chunks(self)

    @property
    def files(self) -> Files:
        files = self.deps.resources.get(self.call_type)
        if files is None:
            raise DocumentsUnavailable("documents are not configured in this service")
        return files

    # -- queries -------------------------------------------------------------------------------

    def projections(self) -> Sequence[Any]:
        chunk_index = self.chunk_index.follower()  # None when the service keeps no documents
        return (self.index.follower,) if chunk_index is None else (self.index.follower, chunk_index)

    def documents(self, tenant: str, name: str, *, after: str | None = None, limit: int = 50,
                  state: str | None = None) -> tuple[list[Document], str | None]:
        """A page of the tool's documents by name then id, and the cursor of the next page (None at the end)."""
        tool = self.get(tenant, name)
        rows = sorted(tool.documents.values(), key=lambda d: (d["name"], d["id"]))
        if state is not None:
            rows = [d for d in rows if d["state"] == state]
        return page_of(rows, after, limit)

    def document(self, tenant: str, name: str, doc_id: str) -> Document:
        document = self.get(tenant, name).documents.get(doc_id)
        if document is None:
            raise UnknownRecord(DOCUMENT, doc_id)
        return document

    def document_text(self, tenant: str, name: str, doc_id: str) -> str:
        """A `READY` document's extracted text (the console's document page), from the blob store
        through the capabilities' bounded cache; empty for a document with no text yet."""
        document = self.document(tenant, name, doc_id)
        if document["state"] != READY or not document["textSha256"]:
            return ""
        return self.capabilities.text_of(tenant, document)

    def document_chunks(self, tenant: str, name: str, doc_id: str, first: int, last: int) -> list[StoredChunk]:
        """The document's chunks numbered `first` to `last` (both included), in order, as indexed."""
        self.document(tenant, name, doc_id)
        return self.chunk_index.chunk_range(tenant, name, doc_id, first, last)

    # -- MCP resources: each READY document is one (`application.resources`, docs/mcp.md) ------

    def resource_stamp(self, tenant: str) -> Any:
        """Every document event moves its tool's version."""
        return tuple((tool.tool_id, tool.version) for tool in self.tools(tenant))

    def resource_items(self, tenant: str) -> list[ResourceItem]:
        return [_resource(tool, document) for tool in self.tools(tenant)
                for document in tool.documents.values() if document["state"] == READY]

    def resource_item(self, tenant: str, uri: str) -> ResourceItem | None:
        found = self._resource_document(tenant, uri)
        return _resource(*found) if found is not None else None

    def resource_text(self, tenant: str, uri: str, limit: int, context: Any = None, tools: Any = None) -> ResourceText | None:
        found = self._resource_document(tenant, uri)
        if found is None:
            return None
        tool, document = found
        offset = parse_uri(uri)[2]  # type: ignore[index]
        text = self.capabilities.text_of(tenant, document)
        if offset and offset >= len(text):
            raise ValueError(f"offset {offset} is past the document's end ({len(text)} characters)")
        end = min(len(text), offset + limit)
        return ResourceText(uri=uri, mime_type="text/plain", text=text[offset:end], offset=offset, total=len(text),
                            next_uri=page_uri(tool.tool_id, document["id"], end) if end < len(text) else None,
                            source_media_type=document["mediaType"])

    def resource_templates(self, tenant: str) -> list[ResourceTemplateItem]:
        return [ResourceTemplateItem(
            uri_template=TEMPLATE, name="document", title="A document of a File Search tool",
            description="The text extracted from a document uploaded to a File Search tool: {tool} is the tool's name, "
                        "{id} the document's id (from its search results or list_documents).",
            mime_type="text/plain")]

    def resource_match_as_read(self, tenant: str, uri: str) -> ResourceMatch | None | NotKept:
        """None for a URI that is no document's (no I/O); a document's is found by reading the store."""
        return None if parse_uri(uri) is None else NOT_KEPT

    async def aresource_text(self, tenant: str, match: ResourceMatch, limit: int, context: Any, tools: Any) -> ResourceText:
        """`resource_text` in a worker thread (the store's documents; `resource_match_as_read` never
        matches one on the loop, so the MCP layer reads them through `resource_text` anyway)."""
        page = await anyio.to_thread.run_sync(self.resource_text, tenant, match.item.uri, limit, context, tools)
        if page is None:
            raise ValueError("the document is not there any more")
        return page

    def _resource_document(self, tenant: str, uri: str) -> tuple[SearchTool, Document] | None:
        parsed = parse_uri(uri)
        tool = self.find(tenant, parsed[0]) if parsed is not None else None
        document = tool.documents.get(parsed[1]) if tool is not None and parsed is not None else None
        if tool is None or document is None or document["state"] != READY:
            return None
        return tool, document

    # -- the configuration (`ConfiguredKind` does the CRUD) -----------------------------------

    def normalise(self, given: dict[str, Any]) -> Config:
        return normalise(given)

    def save(self, tenant: str, name: str, given: dict[str, Any], *, by: str, create: bool,
             expected: int | None = None) -> tuple[SearchTool, int | None]:
        """A change that names no `retrieval` keeps the tool's (`lexical` for a tool made before
        retrieval existed, until an admin sets one); a new tool's default is `hybrid`."""
        existing = self.find(tenant, name) if not create and isinstance(given, dict) else None
        if existing is not None:
            if "retrieval" not in given:
                given = {**given, "retrieval": retrieval_of(existing.config)}
            # Likewise the metadata schema; one that drops or retypes a key a document holds is refused.
            if given.get("metadata") is None:
                given = {**given, "metadata": schema_of(existing.config)}
            elif isinstance(given["metadata"], dict) and not schema_violations(given["metadata"]):
                # A schema that is itself wrong is named as such by the save's own check first.
                held = _held_keys(existing, given["metadata"])
                if held:
                    raise InvalidDefinition(held)
        return super().save(tenant, name, given, by=by, create=create, expected=expected)

    def violations(self, name: str, given: dict[str, Any], config: Config) -> list[Violation]:
        return name_violations(name) + given_violations(given) + violations(config)

    def deleting(self, tool: SearchTool) -> list[Document]:
        """A tool's delete takes its documents with it (R12 refuses it while a plan or an agent names
        the tool or one of its capabilities): their blobs are cleaned up after."""
        return list(tool.documents.values())

    def deleted(self, tenant: str, name: str, gone: list[Document]) -> None:
        # Its chunks go with its `Deleted`, applied by the chunk projection (`chunks`).
        if self.deps.resources.get(self.call_type) is not None:
            self.ingest.collect(tenant, gone)

    # -- commands: documents (`ingest`) --------------------------------------------------------

    def upload(self, tenant: str, name: str, uploads: Sequence[Upload], *, by: str,
               metadata: dict[str, Any] | None = None) -> list[Document]:
        """Adds each file as a document (`PROCESSING`) and starts its extraction (`Ingest.upload`),
        each with `metadata` when given."""
        return self.ingest.upload(tenant, name, uploads, by=by, metadata=metadata)

    def set_metadata(self, tenant: str, name: str, doc_id: str, metadata: Any, *, by: str, merge: bool = False) -> Document:
        """Makes `metadata` the document's (`merge`: a JSON merge patch of what it has), checked
        against the tool's schema; answers the document."""
        return self.ingest.set_metadata(tenant, name, doc_id, metadata, by=by, merge=merge)

    def delete_document(self, tenant: str, name: str, doc_id: str, *, by: str) -> int | None:
        """The document is gone from every capability's answers when this returns."""
        return self.ingest.delete_document(tenant, name, doc_id, by=by)

    def start(self) -> None:
        """Extracts again what a stopped process left `PROCESSING` (in the background)."""
        self.ingest.start()

    def embedding(self, tenant: str, name: str) -> dict[str, Any]:
        """The tool's embedding: the service's model, its documents with vectors and those by that
        model, and whether a re-embedding of its documents is under way (`reembed.py`)."""
        tool = self.get(tenant, name)
        try:
            model = self.files.embedding_model
        except DocumentsUnavailable:
            model = None
        return {**progress(tool, model), "reembedding": self.ingest.reembedding.running(tenant, name)}

    def embed_again(self, tenant: str, name: str) -> dict[str, Any]:
        """Queues the tool's documents of another model than the service's to be embedded again
        (those a failed re-embedding left; nothing while one runs); answers `embedding`."""
        self.files  # documents not configured: DocumentsUnavailable (503)
        self.ingest.reembedding.queue_tool(self.get(tenant, name))
        return self.embedding(tenant, name)

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Whether every queued extraction finished within `timeout` (tests and the CLI)."""
        return self.ingest.wait_idle(timeout)

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Makes the chunk index again from the events and the blobs (`toolsmith projections
        rebuild`): emptied, then every event applied again by its projection, each `READY`
        document's text chunked again; `progress(position, head)`. Answers the chunks indexed."""
        return self.chunk_index.rebuild(progress)

    # -- the catalog and R2 --------------------------------------------------------------------

    def names_of(self, name: str) -> Sequence[str]:
        """R2 holds all five capability names of a tool, enabled or not."""
        return capability_names(name)

    def owner_of(self, name: str) -> str | None:
        parsed = parse(name)
        return parsed[0] if parsed is not None else None

    def entries_of(self, tool: SearchTool) -> list[ToolEntry]:
        return capability_entries(tool)

    def members(self, tenant: str, name: str) -> Sequence[str]:
        """A File Search tool named on a server or in a usage profile stands for its capabilities."""
        return capability_names(name) if self.find(tenant, name) is not None else ()

    def close(self) -> None:
        self.ingest.close()
        files = self.deps.resources.get(self.call_type)
        if files is not None:
            files.close()

    # -- calls (`capabilities`) ----------------------------------------------------------------

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        parsed = parse(entry.name)
        tool = self.find(tenant, parsed[0]) if parsed is not None else None
        if tool is None or parsed is None:
            raise ToolNotCallable(entry.name, "no such tool")
        return self.run(tenant, tool, parsed[1], arguments)

    def call_unlisted(self, tenant: str, name: str, arguments: Any, context: CallContext) -> ExecutionResult | None:
        parsed = parse(name)
        tool = self.find(tenant, parsed[0]) if parsed is not None else None
        if tool is None or parsed is None:
            if self.find(tenant, name) is not None:
                raise ToolNotCallable(name, f"a File Search tool is called through its capabilities ({', '.join(capability_names(name))})")
            return None
        if not tool.config["enabled"]:
            raise ToolNotCallable(name, "the tool is disabled")
        raise ToolNotCallable(name, f"the capability {parsed[1]!r} is switched off")

    def run_capability(self, tenant: str, name: str, capability: str, arguments: Any) -> ExecutionResult:
        """One capability's call, enabled or not (the console's search box, the REST `search`)."""
        if capability not in CAPABILITIES:
            raise UnknownRecord("capability", capability)
        return self.run(tenant, self.get(tenant, name), capability, arguments)

    def run(self, tenant: str, tool: SearchTool, capability: str, arguments: Any) -> ExecutionResult:
        return self.capabilities.run(tenant, tool, capability, arguments)


def _held_keys(tool: SearchTool, schema: dict[str, Any]) -> list[Violation]:
    """A violation for each key a document holds that `schema` drops or gives another type."""
    before = schema_of(tool.config)
    holders: dict[str, int] = {}
    for document in tool.documents.values():
        for key in document.get("metadata") or {}:
            if schema.get(key) != before.get(key):
                holders[key] = holders.get(key, 0) + 1
    return [Violation(f"metadata.{key}", "R4", f"{count} document(s) hold a value of {key!r} ({before.get(key)}): "
                                               f"remove it from them before dropping the key or changing its type")
            for key, count in sorted(holders.items())]


def _resource(tool: SearchTool, document: Document) -> ResourceItem:
    title = (document.get("title") or "").strip() or None
    return ResourceItem(
        uri=document_uri(tool.tool_id, document["id"]), name=document["name"], title=title,
        description=f"A document of the File Search tool {tool.tool_id}: the text extracted from {document['name']} "
                    f"({document['mediaType']}, {document['characters']} characters)",
        mime_type="text/plain", updated_at=document["updatedAt"],
        stamp=(document["textSha256"], document["updatedAt"], title), shown_by=tuple(capability_names(tool.tool_id)))
