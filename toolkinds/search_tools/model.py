"""File Search tools (docs/kinds/index.md, docs/kinds/file-search-tools.md): documents uploaded to the server, searched by the model.

A File Search tool is live, not versioned, like an API URL tool: every change of its configuration
and of its documents is an event of the tool's own aggregate (history, `asOf`, hash chain, export),
with who and when. It fans out: each enabled **capability** is its own MCP tool named
`<toolName>_<capability>`, so a tool's name is at most 40 characters (the longest capability name
then still fits R1's 64).

A document's events record what an auditor needs and nothing of its contents: the SHA-256 of its
bytes (the blob store's key), its name, media type (from its bytes) and size, who uploaded it and
when; then either `READY` with the SHA-256 of the text extracted, its character and chunk counts
and where its pages start (after `DocumentEmbedded`, naming the blob of its chunks' vectors and
their model, when the extraction embedded them; another `DocumentEmbedded` later when the service's
model changed and the document was embedded again), or `FAILED` with the reason; and its typed metadata
(`DocumentMetadataSet`, the whole of it after each change, checked against the tool's `metadata`
schema: `domain.metadata`). The same bytes uploaded twice to one tool
are one document: a document's id is derived from its bytes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain import metadata as metadata_rules
from domain import retrieval as retrieval_rules
from domain.configured import Configured
from domain.documents import FAILED, PROCESSING, READY
from domain.errors import Violation
from domain.rules import MAX_TAG_LENGTH, MAX_TAGS, description_violations
from domain.topics import moved

# Recorded as `domain.search_tools` before the kinds moved into packages of their own.
moved("domain.search_tools", __name__)

FILE_SEARCH = "FILE_SEARCH"
LABEL = "File Search tool"
MAX_NAME = 40
DOCUMENT_ID_CHARS = 20

# Each capability: whether it is on by default, and its limit's name, default and cap (docs/kinds/file-search-tools.md).
CAPABILITIES: dict[str, tuple[bool, str, int, int]] = {
    "search": (True, "maxResults", 10, 50),
    "fetch": (True, "maxChars", 20_000, 50_000),
    "list_documents": (False, "limit", 50, 200),
    "find_text": (False, "maxMatches", 20, 100),
    "read_context": (False, "neighbours", 1, 5),
}

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates/search-tools")

Config = dict[str, Any]
Document = dict[str, Any]


def search_tool_id(tenant: str, name: str) -> UUID:
    return uuid5(_NAMESPACE, f"search-tool/{tenant}/{name}")


def document_id(sha256: str) -> str:
    """A document's id in its tool: the start of its bytes' SHA-256 (the same bytes, the same document)."""
    return sha256[:DOCUMENT_ID_CHARS]


def capability_name(tool: str, capability: str) -> str:
    return f"{tool}_{capability}"


def capability_names(tool: str) -> list[str]:
    """Every name the tool's capabilities may register under (R2 holds them all, enabled or not,
    so that switching a capability on never collides with another tool)."""
    return [capability_name(tool, c) for c in CAPABILITIES]


def cap_key(limit: str) -> str:
    return f"{limit}Cap"


# -- the aggregate ------------------------------------------------------------------------------


class SearchTool(Configured):
    """One File Search tool of one tenant through all its lives, with its documents (by id); its
    lifecycle (created, changed, deleted, created again) is `Configured`'s."""

    @staticmethod
    def create_id(tenant: str, tool_id: str) -> UUID:  # type: ignore[override]
        return search_tool_id(tenant, tool_id)

    def _empty(self) -> None:
        """A tool created, deleted or created again holds no document."""
        self.documents: dict[str, Document] = {}

    # -- documents -----------------------------------------------------------------------------

    def add_document(self, sha256: str, name: str, media_type: str, size: int, by: str) -> tuple[Document, bool]:
        """The document of these bytes, and whether it is new (False: the tool had them already)."""
        doc_id = document_id(sha256)
        existing = self.documents.get(doc_id)
        if existing is not None:
            return existing, False
        self._document_added(tenant=self.tenant, tool_id=self.tool_id, document_id=doc_id, sha256=sha256, name=name,
                             media_type=media_type, size=size, by=by)
        return self.documents[doc_id], True

    def document_ready(self, doc_id: str, text_sha256: str, characters: int, chunks: int, page_starts: list[int],
                       title: str | None) -> bool:
        """Records the extraction's result; False (nothing recorded) for a document no longer there
        or not waiting for it (a replica finished it first)."""
        document = self.documents.get(doc_id)
        if document is None or document["state"] != PROCESSING:
            return False
        self._document_ready(tenant=self.tenant, tool_id=self.tool_id, document_id=doc_id, text_sha256=text_sha256,
                             characters=characters, chunks=chunks, page_starts=page_starts, title=title)
        return True

    def document_embedded(self, doc_id: str, model: str, vectors_sha256: str) -> bool:
        """Records the chunks' vectors (a blob) and their model, just before its `DocumentReady`;
        False for a document no longer there or not waiting for it."""
        document = self.documents.get(doc_id)
        if document is None or document["state"] != PROCESSING:
            return False
        self._document_embedded(tenant=self.tenant, tool_id=self.tool_id, document_id=doc_id, model=model,
                                vectors_sha256=vectors_sha256)
        return True

    def document_embedded_again(self, doc_id: str, model: str, vectors_sha256: str, text_sha256: str) -> bool:
        """Records the chunks' vectors by another model (a change of model: `reembed.py`) of a
        `READY` document whose text is still `text_sha256`; False (nothing recorded) for a
        document gone, not ready, of another text, or of that model already."""
        document = self.documents.get(doc_id)
        if (document is None or document["state"] != READY or document["textSha256"] != text_sha256
                or document.get("embeddingModel") == model):
            return False
        self._document_embedded(tenant=self.tenant, tool_id=self.tool_id, document_id=doc_id, model=model,
                                vectors_sha256=vectors_sha256)
        return True

    def document_failed(self, doc_id: str, reason: str) -> bool:
        document = self.documents.get(doc_id)
        if document is None or document["state"] != PROCESSING:
            return False
        self._document_failed(tenant=self.tenant, tool_id=self.tool_id, document_id=doc_id, reason=reason)
        return True

    def set_metadata(self, doc_id: str, metadata: dict[str, Any], by: str) -> bool:
        """Makes `metadata` (checked against the tool's schema by the caller) the document's; False
        (nothing recorded) when it holds that already."""
        if self.documents[doc_id].get("metadata", {}) == metadata:
            return False
        self._document_metadata_set(tenant=self.tenant, tool_id=self.tool_id, document_id=doc_id, metadata=dict(metadata),
                                    by=by)
        return True

    def remove_document(self, doc_id: str, by: str) -> Document:
        document = self.documents[doc_id]
        self._document_removed(tenant=self.tenant, tool_id=self.tool_id, document_id=doc_id, by=by)
        return document

    @event("DocumentAdded")
    def _document_added(self, tenant: str, tool_id: str, document_id: str, sha256: str, name: str, media_type: str,
                        size: int, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        at = timestamp.isoformat() if timestamp is not None else None
        self.documents = {**self.documents, document_id: {
            "id": document_id, "name": name, "mediaType": media_type, "size": size, "sha256": sha256,
            "state": PROCESSING, "characters": None, "chunks": None, "pages": None, "title": None, "reason": None,
            "textSha256": None, "pageStarts": None, "uploadedBy": by, "uploadedAt": at, "updatedAt": at,
        }}

    @event("DocumentReady")
    def _document_ready(self, tenant: str, tool_id: str, document_id: str, text_sha256: str, characters: int, chunks: int,
                        page_starts: list[int], title: str | None, previous_hash: str = "",
                        timestamp: datetime | None = None) -> None:
        self._document_update(document_id, timestamp, state=READY, textSha256=text_sha256, characters=characters,
                              chunks=chunks, pageStarts=list(page_starts), pages=len(page_starts) or None, title=title)

    @event("DocumentEmbedded")
    def _document_embedded(self, tenant: str, tool_id: str, document_id: str, model: str, vectors_sha256: str,
                           previous_hash: str = "", timestamp: datetime | None = None) -> None:
        # Recorded only when the extraction worker embedded the chunks: a document without it (every
        # one before embeddings existed) is found by its words only.
        self._document_update(document_id, timestamp, embeddingModel=model, vectorsSha256=vectors_sha256)

    @event("DocumentMetadataSet")
    def _document_metadata_set(self, tenant: str, tool_id: str, document_id: str, metadata: dict[str, Any], by: str,
                               previous_hash: str = "", timestamp: datetime | None = None) -> None:
        # The whole of the document's metadata after the change (an upload's, a PUT's or a PATCH's).
        self._document_update(document_id, timestamp, metadata=dict(metadata))

    @event("DocumentFailed")
    def _document_failed(self, tenant: str, tool_id: str, document_id: str, reason: str, previous_hash: str = "",
                         timestamp: datetime | None = None) -> None:
        self._document_update(document_id, timestamp, state=FAILED, reason=reason)

    @event("DocumentRemoved")
    def _document_removed(self, tenant: str, tool_id: str, document_id: str, by: str, previous_hash: str = "",
                          timestamp: datetime | None = None) -> None:
        self.documents = {k: v for k, v in self.documents.items() if k != document_id}

    def _document_update(self, doc_id: str, timestamp: datetime | None, **changes: Any) -> None:
        # A new dict per change: a document handed out earlier (a cached read) never changes under its reader.
        at = timestamp.isoformat() if timestamp is not None else None
        self.documents = {**self.documents, doc_id: {**self.documents[doc_id], **changes, "updatedAt": at}}


# -- the configuration --------------------------------------------------------------------------


def normalise(given: dict[str, Any]) -> Config:
    """The configuration with every default filled in (what is stored and shown back)."""
    capabilities = given.get("capabilities") or {}
    normal: dict[str, Any] = {}
    for name, (on, limit, default, cap) in CAPABILITIES.items():
        mine = capabilities.get(name) or {}
        normal[name] = {
            "enabled": bool(mine.get("enabled", on)),
            limit: _or(mine.get(limit), default),
            cap_key(limit): _or(mine.get(cap_key(limit)), cap),
        }
    normal_config = {
        "description": given.get("description") or "",
        "tags": list(dict.fromkeys(given.get("tags") or [])),
        "exposeInChat": bool(given.get("exposeInChat", True)),
        "enabled": given.get("enabled", True) is not False,
        "capabilities": normal,
        # A new tool's default is hybrid; a PUT that names none keeps the tool's (kind.save).
        "retrieval": retrieval_rules.normalise(given.get("retrieval"), None, creating=True),
    }
    # Each document's metadata keys and their types (domain.metadata), kept only when there are
    # some (a tool without reads as `{}`); a PUT that names none keeps the tool's (kind.save).
    schema = given.get("metadata")
    if schema:
        normal_config["metadata"] = dict(schema) if isinstance(schema, dict) else schema
    return normal_config


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def name_violations(name: str) -> list[Violation]:
    if isinstance(name, str) and len(name) > MAX_NAME:
        return [Violation("id", "R1", f"a File Search tool's name is at most {MAX_NAME} characters (each capability "
                                      f"registers as <name>_<capability>), got {len(name)}")]
    return []


def given_violations(given: dict[str, Any]) -> list[Violation]:
    """What `normalise` would drop unseen: a capability this kind lacks, a limit of another capability."""
    capabilities = given.get("capabilities") or {}
    found = retrieval_rules.given_violations(given.get("retrieval"))
    for name, mine in capabilities.items():
        if name not in CAPABILITIES:
            found.append(Violation(f"capabilities.{name}", "R4", f"is not a capability (they are {', '.join(CAPABILITIES)})"))
            continue
        limit = CAPABILITIES[name][1]
        for key in mine or {}:
            if key not in ("enabled", limit, cap_key(limit)):
                found.append(Violation(f"capabilities.{name}.{key}", "R4",
                                       f"is not a setting of {name} (it has enabled, {limit} and {cap_key(limit)})"))
    return found


def violations(config: Config) -> list[Violation]:
    """Every rule of docs/kinds/file-search-tools.md the (normalised) configuration breaks, each naming its field."""
    found = description_violations(config["description"]) + retrieval_rules.violations(retrieval_rules.of(config))
    found += metadata_rules.schema_violations(config.get("metadata", {}))
    tags = config["tags"]
    if len(tags) > MAX_TAGS:
        found.append(Violation("tags", "R4", f"at most {MAX_TAGS} tags, got {len(tags)}"))
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag.strip() or len(tag) > MAX_TAG_LENGTH:
            found.append(Violation(f"tags[{i}]", "R9", f"a tag is 1 to {MAX_TAG_LENGTH} visible characters"))
    for name, (_, limit, _, cap) in CAPABILITIES.items():
        mine = config["capabilities"][name]
        field = f"capabilities.{name}"
        top = mine[cap_key(limit)]
        if not _is_int(top) or not 1 <= top <= cap:
            found.append(Violation(f"{field}.{cap_key(limit)}", "R4", f"must be an integer from 1 to {cap}, got {top!r}"))
            continue
        value = mine[limit]
        if not _is_int(value) or not 1 <= value <= top:
            found.append(Violation(f"{field}.{limit}", "R4", f"must be an integer from 1 to {cap_key(limit)} ({top}), got {value!r}"))
    return found


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def enabled_capabilities(config: Config) -> list[str]:
    return [name for name in CAPABILITIES if config["capabilities"][name]["enabled"]]
