"""File Search tools as a kind of tool (callType FILE_SEARCH; docs/kinds/index.md, docs/kinds/file-search-tools.md).

One File Search tool registers one MCP tool per enabled capability, `<toolName>_<capability>`,
all read-only (`capabilities`). R2 holds the tool's name and all five capability names, enabled
or not, so that switching a capability on never collides.

This module is the `ToolKind`: the tool's configuration (CRUD, live at once), its documents as
queries, the catalog and R2, and the wiring of the parts: `ingest` (uploads, the extraction queue
and its pool, each document's outcome, resuming what a stopped process left `PROCESSING`),
`capabilities` (each capability's schema, catalog entry and answer) and `chunks` (every touch of
the chunk index, and its rebuild from the events and the blobs).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from application.commands import Change
from application.projected import Index, loaded
from application.kinds.base import Ranked, ToolKind, Tools
from domain.catalog import ToolEntry
from domain.documents import READY
from domain.errors import DocumentsUnavailable, IdTaken, InUse, InvalidDefinition, ToolNotCallable, UnknownRecord
from domain.ports import ExecutionResult
from domain.rules import id_violations
from domain.tenants import TOOLS
from toolkinds.search_tools import chunks
from toolkinds.search_tools.capabilities import Capabilities, capability_entries, page_of, parse
from toolkinds.search_tools.ingest import DOCUMENT, Files, Ingest, Upload
from toolkinds.search_tools.model import (
    CAPABILITIES, FILE_SEARCH, LABEL, Document, SearchTool, capability_names, given_violations, name_violations,
    normalise, search_tool_id, violations,
)

__all__ = ["Files", "SearchToolKind", "Upload"]  # `Files` and `Upload` are named here by the composition and the routes


class SearchToolKind(ToolKind):
    call_type = FILE_SEARCH
    label = LABEL

    def __init__(self, deps: Any) -> None:
        super().__init__(deps)
        self.index = Index(deps.store, SearchTool, "tool_id", name="search tool index")
        self.ingest = Ingest(self)
        self.capabilities = Capabilities(self)

    @property
    def files(self) -> Files:
        files = self.deps.resources.get(self.call_type)
        if files is None:
            raise DocumentsUnavailable("documents are not configured in this service")
        return files

    # -- queries -------------------------------------------------------------------------------

    def _all(self) -> Iterator[SearchTool]:
        """Every File Search tool of every tenant ever created (deleted ones too), once each."""
        for aggregate_id in self.deps.store.originators_of(SearchTool.Created):
            tool = self._load(aggregate_id)
            if tool is not None:
                yield tool

    def tools(self, tenant: str) -> list[SearchTool]:
        """Every live File Search tool of `tenant`, by name: the tool index (a projection of the
        tools' lifecycle events, `application/projected.py`) says which, each loaded as the store
        has it."""
        return loaded(self._load, self.index.live(tenant))

    def projections(self) -> Sequence[Any]:
        return (self.index.follower,)

    def find(self, tenant: str, name: str) -> SearchTool | None:
        if not isinstance(name, str) or id_violations(name):
            return None
        tool = self._load(search_tool_id(tenant, name))
        return tool if tool is not None and not tool.deleted else None

    def get(self, tenant: str, name: str) -> SearchTool:
        tool = self.find(tenant, name)
        if tool is None:
            raise UnknownRecord(LABEL, name)
        return tool

    def events(self, tenant: str, name: str) -> list[Any]:
        if not isinstance(name, str) or id_violations(name):
            return []
        return self.deps.store.stored_events(search_tool_id(tenant, name))

    def _load(self, aggregate_id: UUID, *, for_update: bool = False) -> SearchTool | None:
        try:
            return self.deps.store.repository.get(aggregate_id, deepcopy_from_cache=for_update)
        except AggregateNotFoundError:
            return None

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

    # -- commands: the tool --------------------------------------------------------------------

    def save(self, tenant: str, name: str, given: dict[str, Any], *, by: str, create: bool,
             expected: int | None = None) -> tuple[SearchTool, int | None]:
        """POST (create) or PUT (replace) a tool's configuration; live at once."""
        config = normalise(given)
        found = id_violations(name) + name_violations(name) + given_violations(given) + violations(config)
        if found:
            raise InvalidDefinition(found)
        aggregate_id = search_tool_id(tenant, name)

        def attempt() -> Change[SearchTool]:
            existing = self._load(aggregate_id, for_update=True)
            live = existing is not None and not existing.deleted
            if create:
                if live:
                    raise IdTaken(name, LABEL)
                for held in (name, *capability_names(name)):  # R2 across every kind, each capability's name too
                    holder = self.deps.names.holder_of(tenant, held, besides=self.label)
                    if holder is not None:
                        raise IdTaken(held, holder)
                if self.deps.quotas is not None:  # under the tenant's lock, as docs/tenants.md asks
                    self.deps.quotas.check(tenant, TOOLS)
                if existing is None:
                    tool = SearchTool(tenant=tenant, tool_id=name, config=config, by=by)
                else:
                    tool = existing
                    tool.recreate(config, by)
                return Change(tool, save=[tool], subject=self.deps.commands.subject(tool, name))
            if not live:
                raise UnknownRecord(LABEL, name)
            assert existing is not None
            subject = self.deps.commands.subject(existing, name, expected)
            changed = existing.change(config, by)
            return Change(existing, save=[existing] if changed else [], subject=subject)

        return self.deps.commands.run(attempt, name=name, lock=tenant)

    def set_enabled(self, tenant: str, name: str, enabled: bool, *, by: str) -> tuple[SearchTool, int | None]:
        tool = self.get(tenant, name)
        return self.save(tenant, name, {**tool.config, "enabled": enabled}, by=by, create=False)

    def delete(self, tenant: str, name: str, *, by: str) -> int | None:
        """Deletes the tool and its documents; refused (R12) while a plan or an agent names it or
        one of its capabilities."""
        gone: list[Document] = []

        def attempt() -> Change[None]:
            tool = self._load(search_tool_id(tenant, name), for_update=True)
            if tool is None or tool.deleted:
                raise UnknownRecord(LABEL, name)
            registry = self.deps.store.registry(tenant)
            users: dict[str, list[str]] = {}
            for held in (name, *capability_names(name)):
                for kind, names in registry.users_of(held).items():
                    users.setdefault(kind, []).extend(n for n in names if n not in users.get(kind, []))
            if any(users.values()):
                raise InUse(name, users)
            gone[:] = list(tool.documents.values())
            tool.delete(by)
            return Change(None, save=[tool], subject=self.deps.commands.subject(tool, name))

        _, position = self.deps.commands.run(attempt, name=name, lock=tenant)
        files = self.deps.resources.get(self.call_type)
        if files is not None:
            chunks.drop_tool(files.index, tenant, name)
            self.ingest.collect(tenant, gone)
        return position

    # -- commands: documents (`ingest`) --------------------------------------------------------

    def upload(self, tenant: str, name: str, uploads: Sequence[Upload], *, by: str) -> list[Document]:
        """Adds each file as a document (`PROCESSING`) and starts its extraction (`Ingest.upload`)."""
        return self.ingest.upload(tenant, name, uploads, by=by)

    def delete_document(self, tenant: str, name: str, doc_id: str, *, by: str) -> int | None:
        """The document is gone from every capability's answers when this returns."""
        return self.ingest.delete_document(tenant, name, doc_id, by=by)

    def start(self) -> None:
        """Extracts again what a stopped process left `PROCESSING` (in the background)."""
        self.ingest.start()

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Whether every queued extraction finished within `timeout` (tests and the CLI)."""
        return self.ingest.wait_idle(timeout)

    def rebuild(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Makes the chunk index again from the events and the blobs (`toolsmith projections
        rebuild`): every `READY` document's text, chunked again. Answers the chunks indexed."""
        files = self.files
        ready = [(tool, d) for tool in self._all() if not tool.deleted for d in tool.documents.values() if d["state"] == READY]
        return chunks.rebuild(files.blobs, files.index, ready, progress)

    # -- the catalog and R2 --------------------------------------------------------------------

    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        return [entry for tool in self.tools(tenant) for entry in capability_entries(tool)]

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        parsed = parse(name)
        if parsed is None:
            return None
        tool = self.find(tenant, parsed[0])
        if tool is None:
            return None
        return next((e for e in capability_entries(tool) if e.name == name), None)

    def touched(self, event: Any) -> Collection[str] | None:
        return capability_names(event.tool_id) if isinstance(event, SearchTool.Event) else None

    def holds(self, tenant: str, name: str) -> bool:
        if self.find(tenant, name) is not None:
            return True
        parsed = parse(name)
        return parsed is not None and self.find(tenant, parsed[0]) is not None

    def members(self, tenant: str, name: str) -> Sequence[str]:
        """A File Search tool named on a server or in a usage profile stands for its capabilities."""
        return capability_names(name) if self.find(tenant, name) is not None else ()

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None:
        tenant, name = state.get("tenant"), state.get("tool_id")
        if isinstance(tenant, str) and isinstance(name, str) and search_tool_id(tenant, name) == aggregate_id:
            return tenant
        return None

    def close(self) -> None:
        self.ingest.close()
        files = self.deps.resources.get(self.call_type)
        if files is not None:
            files.close()

    # -- calls (`capabilities`) ----------------------------------------------------------------

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: dict[str, Any], tools: Tools, depth: int) -> ExecutionResult:
        parsed = parse(entry.name)
        tool = self.find(tenant, parsed[0]) if parsed is not None else None
        if tool is None or parsed is None:
            raise ToolNotCallable(entry.name, "no such tool")
        return self.run(tenant, tool, parsed[1], arguments)

    def call_unlisted(self, tenant: str, name: str, arguments: Any, context: dict[str, Any]) -> ExecutionResult | None:
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
