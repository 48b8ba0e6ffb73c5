"""A File Search tool's five capabilities, each an MCP tool `<toolName>_<capability>` (docs/kinds/file-search-tools.md).

All read-only: `search` (ranked chunks with the matching words marked), `fetch` (a document's text
in pages, from a document or a chunk id), `list_documents`, `find_text` (a literal phrase, no
regular expression) and `read_context` (a chunk's neighbours). Here: each capability's argument
schema (the tool's limits as its bounds), its catalog entry, and its answer; decoded texts are
kept in a bounded cache for `fetch` and `find_text`.
"""

from __future__ import annotations

import base64
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from application.kinds.base import tagged, validated
from domain.catalog import ToolEntry
from domain.documents import MAX_QUERY_CHARS, READY, Hit, IndexUnavailable, query_terms, split_chunk_id
from domain.errors import DocumentsUnavailable, InvalidInput, Violation
from domain.metadata import COMPARISONS, COMPOUNDS, MAX_NODES, described, filter_violations, predicate, schema_of
from domain.retrieval import of as retrieval_of
from domain.ports import ExecutionError, ExecutionResult
from toolkinds.search_tools.model import (
    CAPABILITIES, FILE_SEARCH, Config, Document, SearchTool, cap_key, capability_name, enabled_capabilities,
)
from toolkinds.search_tools.uris import document_uri

if TYPE_CHECKING:
    from toolkinds.search_tools.kind import SearchToolKind

SEARCH_TAG = "search"
FILTER = "filter"  # the retriever a search with filters and no query names
CONTEXT_CHARS = 120  # find_text: the characters shown either side of a match
MAX_DOCUMENT_IDS = 100
TEXT_CACHE_CHARS = 64_000_000  # decoded texts kept for fetch and find_text
# Longest suffix first, so that `a_list_documents` is never read as a tool `a_list`.
_SUFFIXES = sorted(CAPABILITIES, key=len, reverse=True)


class Capabilities:
    """Answers a capability's call on a tool: the index through `chunks` (its projection caught up
    first), the texts from the blob store (the kind's `files`, read at each use)."""

    def __init__(self, kind: SearchToolKind) -> None:
        self.kind = kind
        self._texts: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._texts_chars = 0
        self._texts_lock = threading.Lock()

    def run(self, tenant: str, tool: SearchTool, capability: str, arguments: Any) -> ExecutionResult:
        started = time.perf_counter()
        arguments = validated(capability_schema(capability, tool.config), arguments)
        try:
            output = getattr(self, f"_{capability}")(tenant, tool, arguments)
            result = ExecutionResult(output=output, content=_linked(tool, output) if capability == "search" else None)
        except _Failed as failed:
            result = ExecutionResult(error=ExecutionError(failed.kind, failed.message))
        except IndexUnavailable as error:
            result = ExecutionResult(error=ExecutionError("unavailable", f"the search index cannot be reached now ({error})"))
        return ExecutionResult(output=result.output, error=result.error, content=result.content,
                               duration_millis=round((time.perf_counter() - started) * 1000, 3))

    def _ready(self, tool: SearchTool, document_ids: Sequence[str] | None) -> list[Document]:
        ready = [d for d in tool.documents.values() if d["state"] == READY]
        if document_ids is None:
            return ready
        wanted = set(document_ids)
        return [d for d in ready if d["id"] in wanted]

    def _search(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        query = args.get("query")
        filters = args.get("filters")
        schema = schema_of(tool.config)
        if filters is not None:
            found = filter_violations(schema, filters)
            if found:
                raise InvalidInput(found)
        if query is None and filters is None:
            raise InvalidInput([Violation("input.query", "V1", "give a query, filters, or both")])
        terms = query_terms(query) if query is not None else []
        if query is not None and not terms:
            raise InvalidInput([Violation("input.query", "V1", "the query holds no word to search for (only common "
                                                             "words like 'the' or punctuation): add a distinctive word")])
        limit = args.get("maxResults", _default(tool.config, "search"))
        document_ids = args.get("documentIds")
        ready = self._ready(tool, document_ids)
        if filters is not None:
            # The filter picks the documents first, and the index ranks within them (inside its
            # query, on either engine: never a filter after the top k).
            passes = predicate(schema, filters)
            passed = [d for d in ready if passes(d.get("metadata") or {})]
            if len(passed) < len(ready):
                document_ids = sorted(d["id"] for d in passed)
            ready = passed
        by_id = {d["id"]: d for d in ready}
        if (document_ids is not None or filters is not None) and not by_id:
            return {"query": query or "", "results": []}
        if query is None:
            hits = self._first_chunks(tenant, tool, sorted(by_id.values(), key=lambda d: (d["name"], d["id"]))[:limit])
        else:
            hits = self.kind.chunk_index.retrieve(tenant, tool.tool_id, query, terms, limit, document_ids,
                                                  retrieval_of(tool.config), tool=tool)
        return {"query": query or "", "results": [
            {"id": h.chunk_id, "documentId": h.document_id, "uri": document_uri(tool.tool_id, h.document_id), "title": h.title,
             "snippet": h.snippet, "score": round(h.score, 6), **({"page": h.page} if h.page is not None else {}),
             "retrievers": list(h.retrievers),
             **({"metadata": by_id[h.document_id]["metadata"]} if by_id[h.document_id].get("metadata") else {})}
            for h in hits if h.document_id in by_id
        ]}

    def _first_chunks(self, tenant: str, tool: SearchTool, documents: Sequence[Document]) -> list[Hit]:
        """A search with filters and no query: each document's first chunk, in the order given."""
        hits = []
        for document in documents:
            for chunk in self.kind.chunk_index.chunk_range(tenant, tool.tool_id, document["id"], 0, 0):
                hits.append(Hit(chunk_id=chunk.chunk_id, document_id=document["id"], title=_title(document),
                                snippet=_lead(chunk.text), score=0.0, page=chunk.page, start=chunk.start,
                                retrievers=(FILTER,)))
        return hits

    def _fetch(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        given = args["id"]
        chunk = split_chunk_id(given)
        doc_id = chunk[0] if chunk is not None else given
        document = tool.documents.get(doc_id)
        if document is None:
            raise _Failed("not-found", f"no document {doc_id!r} in {tool.tool_id} (ids come from search or list_documents)")
        if document["state"] != READY:
            raise _Failed("not-ready", f"the document {doc_id!r} is {document['state']}"
                          + (f": {document['reason']}" if document["reason"] else ""))
        text = self._text(tenant, document)
        offset = args.get("offset")
        if offset is None and chunk is not None:
            found = self.kind.chunk_index.chunk_range(tenant, tool.tool_id, doc_id, chunk[1], chunk[1])
            if not found:
                raise _Failed("not-found", f"no chunk {given!r} in the document {doc_id!r}")
            offset = found[0].start
        offset = offset or 0
        if offset > len(text):
            raise _Failed("range", f"offset {offset} is past the document's end ({len(text)} characters)")
        size = args.get("maxChars", _default(tool.config, "fetch"))
        end = min(len(text), offset + size)
        return {"id": doc_id, "title": _title(document), "name": document["name"], "text": text[offset:end],
                "offset": offset, "nextOffset": end if end < len(text) else None, "totalCharacters": len(text)}

    def _list_documents(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        prefix = args.get("namePrefix") or ""
        rows = sorted((d for d in self._ready(tool, None) if d["name"].startswith(prefix)), key=lambda d: (d["name"], d["id"]))
        try:
            page, cursor = page_of(rows, args.get("cursor"), args.get("limit", _default(tool.config, "list_documents")))
        except InvalidInput:
            raise InvalidInput([Violation("input.cursor", "V1", "is not a cursor this tool gave")]) from None
        return {"documents": [{"id": d["id"], "name": d["name"], "title": _title(d), "mediaType": d["mediaType"],
                               "size": d["size"], "characters": d["characters"], "updatedAt": d["updatedAt"],
                               **({"metadata": d["metadata"]} if d.get("metadata") else {})} for d in page],
                "nextCursor": cursor}

    def _find_text(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        needle = args["text"]
        if not needle.strip():
            raise InvalidInput([Violation("input.text", "V1", "must hold something other than spaces")])
        most = args.get("maxMatches", _default(tool.config, "find_text"))
        flags = 0 if args.get("caseSensitive", False) else re.IGNORECASE
        pattern = re.compile(re.escape(needle), flags)  # a literal: the model's text is never a pattern
        matches: list[dict[str, Any]] = []
        truncated = False
        for document in sorted(self._ready(tool, args.get("documentIds")), key=lambda d: (d["name"], d["id"])):
            text = self._text(tenant, document)
            for found in pattern.finditer(text):
                if len(matches) >= most:
                    truncated = True
                    break
                start, end = found.span()
                matches.append({"documentId": document["id"], "title": _title(document), "offset": start,
                                "text": text[max(0, start - CONTEXT_CHARS):end + CONTEXT_CHARS],
                                "contextOffset": max(0, start - CONTEXT_CHARS)})
            if truncated:
                break
        return {"text": needle, "matches": matches, "truncated": truncated}

    def _read_context(self, tenant: str, tool: SearchTool, args: dict[str, Any]) -> dict[str, Any]:
        given = args["chunkId"]
        parsed = split_chunk_id(given)
        document = tool.documents.get(parsed[0]) if parsed is not None else None
        if parsed is None or document is None or document["state"] != READY:
            raise _Failed("not-found", f"no chunk {given!r} in {tool.tool_id} (chunk ids come from search)")
        default = _default(tool.config, "read_context")
        before, after = args.get("before", default), args.get("after", default)
        n = parsed[1]
        found = self.kind.chunk_index.chunk_range(tenant, tool.tool_id, parsed[0], max(0, n - before), n + after)
        if not any(c.n == n for c in found):
            raise _Failed("not-found", f"no chunk {given!r} in the document {parsed[0]!r}")
        return {"chunkId": given, "documentId": parsed[0], "title": _title(document), "chunks": [
            {"id": c.chunk_id, "n": c.n, "start": c.start, "end": c.end, "text": c.text,
             **({"page": c.page} if c.page is not None else {})} for c in found]}

    def text_of(self, tenant: str, document: Document) -> str:
        """A `READY` document's text (the console's document page), through the same cache; a text
        gone from the blob store is `DocumentsUnavailable`, with the reason."""
        try:
            return self._text(tenant, document)
        except _Failed as failed:
            raise DocumentsUnavailable(failed.message) from None

    def _text(self, tenant: str, document: Document) -> str:
        key = (tenant, document["textSha256"])
        with self._texts_lock:
            text = self._texts.get(key)
            if text is not None:
                self._texts.move_to_end(key)
                return text
        try:
            text = self.kind.files.blobs.get(tenant, document["textSha256"]).decode("utf-8")
        except KeyError:
            raise _Failed("not-found", f"the text of {document['id']!r} is missing from the blob store") from None
        with self._texts_lock:
            if key not in self._texts and len(text) <= TEXT_CACHE_CHARS // 4:
                self._texts[key] = text
                self._texts_chars += len(text)
                while self._texts_chars > TEXT_CACHE_CHARS:
                    _, dropped = self._texts.popitem(last=False)
                    self._texts_chars -= len(dropped)
        return text


class _Failed(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


# -- capabilities as tools -----------------------------------------------------------------------


def _default(config: Config, capability: str) -> int:
    limit = CAPABILITIES[capability][1]
    return config["capabilities"][capability][limit]


def _bounded(config: Config, capability: str, description: str, *, minimum: int = 1) -> dict[str, Any]:
    limit = CAPABILITIES[capability][1]
    mine = config["capabilities"][capability]
    return {"type": "integer", "minimum": minimum, "maximum": mine[cap_key(limit)], "default": mine[limit],
            "description": f"{description} (default {mine[limit]}, at most {mine[cap_key(limit)]})"}


_DOCUMENT_IDS = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 100}, "maxItems": MAX_DOCUMENT_IDS,
                 "description": "only these documents (ids from list_documents or search results)"}


def capability_schema(capability: str, config: Config) -> dict[str, Any]:
    """The JSON Schema of a capability's arguments, with the tool's limits as its bounds."""
    if capability == "search":
        properties: dict[str, Any] = {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "words to search for"},
            "maxResults": _bounded(config, capability, "how many results"),
            "documentIds": _DOCUMENT_IDS,
        }
        required = ["query"]
        schema = schema_of(config)
        if schema:  # offered only where there is something to filter on
            properties["filters"] = _filters(schema)
            properties["query"] = {**properties["query"], "description": "words to search for (optional with filters)"}
            required = []
    elif capability == "fetch":
        properties = {
            "id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "a document id, or a chunk id from search (the text then starts at that chunk)"},
            "offset": {"type": "integer", "minimum": 0, "description": "the character to start at (nextOffset of the previous fetch)"},
            "maxChars": _bounded(config, capability, "how many characters"),
        }
        required = ["id"]
    elif capability == "list_documents":
        properties = {
            "namePrefix": {"type": "string", "maxLength": 255, "description": "only documents whose file name starts so"},
            "limit": _bounded(config, capability, "how many documents"),
            "cursor": {"type": "string", "maxLength": 600, "description": "nextCursor of the previous page"},
        }
        required = []
    elif capability == "find_text":
        properties = {
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS, "description": "the exact text to find (no regular expressions)"},
            "caseSensitive": {"type": "boolean", "default": False},
            "documentIds": _DOCUMENT_IDS,
            "maxMatches": _bounded(config, capability, "how many matches"),
        }
        required = ["text"]
    else:
        properties = {
            "chunkId": {"type": "string", "minLength": 1, "maxLength": 200, "description": "a chunk id from search"},
            "before": _bounded(config, capability, "chunks before it", minimum=0),
            "after": _bounded(config, capability, "chunks after it", minimum=0),
        }
        required = ["chunkId"]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _filters(schema: dict[str, str]) -> dict[str, Any]:
    """`filters` as the model sees it: OpenAI's shape, the tool's keys named (checked in full by
    `domain.metadata.filter_violations`, which names the path of each problem)."""
    return {
        "type": "object", "required": ["type"],
        "description": "only documents whose metadata passes: a comparison {\"type\": eq|ne|gt|gte|lt|lte|in|nin, "
                       "\"key\", \"value\"} (in/nin: an array; gt/gte/lt/lte: numbers and dates; a date is ISO 8601) or "
                       "{\"type\": and|or, \"filters\": [...]}. A document without the key never passes. Keys: "
                       + described(schema),
        "properties": {
            "type": {"enum": [*COMPARISONS, *COMPOUNDS]},
            "key": {"type": "string", "enum": sorted(schema)},
            "value": {"description": "a string, number, boolean or date, or an array of them for in/nin"},
            "filters": {"type": "array", "minItems": 1, "maxItems": MAX_NODES, "items": {"type": "object"},
                        "description": "the filters an and/or combines (the same shape, nested)"},
        },
    }


_WHAT = {
    "search": "Search the documents of {name} for words: the best passages, each with its chunk id, document id, "
              "title, a snippet with the matching words marked, and its score. Fetch an id for the full text.",
    "fetch": "Read a document of {name} by its id (or from a chunk id from search on): its text, a page at a time; "
             "pass nextOffset as offset for the next page.",
    "list_documents": "List the documents of {name}: id, file name, type, size and when each was updated; pass "
                      "nextCursor as cursor for the next page.",
    "find_text": "Find an exact phrase in the documents of {name} (no regular expressions): each match's document, "
                 "character offset and the text around it.",
    "read_context": "Read the chunks before and after a chunk of {name} (a chunk id from search), in order.",
}


# What each capability answers (its structured value), as MCP's outputSchema: one document per
# capability for every tool, so each validator is compiled once (domain.schemas).
_S, _I, _N = {"type": "string"}, {"type": "integer"}, {"type": "number"}


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "search": _object({"query": _S, "results": {"type": "array", "items": _object(
        {"id": _S, "documentId": _S, "uri": _S, "title": _S, "snippet": _S, "score": _N, "page": _I,
         "retrievers": {"type": "array", "items": {"enum": ["lexical", "semantic", FILTER]}},
         "metadata": {"type": "object"}},
        ["id", "documentId", "title", "snippet", "score"])}}, ["query", "results"]),
    "fetch": _object({"id": _S, "title": _S, "name": _S, "text": _S, "offset": _I, "nextOffset": {"type": ["integer", "null"]},
                      "totalCharacters": _I}, ["id", "text", "offset", "nextOffset", "totalCharacters"]),
    "list_documents": _object({"documents": {"type": "array", "items": _object(
        {"id": _S, "name": _S, "title": _S, "mediaType": _S, "size": _I, "characters": _I, "updatedAt": _S,
         "metadata": {"type": "object"}}, ["id", "name"])},
        "nextCursor": {"type": ["string", "null"]}}, ["documents", "nextCursor"]),
    "find_text": _object({"text": _S, "matches": {"type": "array", "items": _object(
        {"documentId": _S, "title": _S, "offset": _I, "text": _S, "contextOffset": _I}, ["documentId", "offset", "text"])},
        "truncated": {"type": "boolean"}}, ["text", "matches", "truncated"]),
    "read_context": _object({"chunkId": _S, "documentId": _S, "title": _S, "chunks": {"type": "array", "items": _object(
        {"id": _S, "n": _I, "start": _I, "end": _I, "text": _S, "page": _I}, ["id", "text"])}}, ["chunkId", "documentId", "chunks"]),
}


def capability_entries(tool: SearchTool) -> list[ToolEntry]:
    """The tool's enabled capabilities as catalog entries (a disabled capability is never listed)."""
    config = tool.config
    about = config["description"].strip()
    return [
        ToolEntry(
            name=capability_name(tool.tool_id, capability),
            description=(f"{about}\n\n" if about else "") + _WHAT[capability].format(name=tool.tool_id),
            call_type=FILE_SEARCH,
            input_schema=capability_schema(capability, config),
            tags=tagged(config["tags"], SEARCH_TAG),
            expose_in_chat=config["exposeInChat"],
            enabled=config["enabled"],
            read_only=True,
            group=tool.tool_id,
            output_schema=OUTPUT_SCHEMAS.get(capability),
        )
        for capability in enabled_capabilities(config)
    ]


def parse(name: Any) -> tuple[str, str] | None:
    """(tool, capability) for a capability's name, else None."""
    if not isinstance(name, str):
        return None
    for capability in _SUFFIXES:
        suffix = f"_{capability}"
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], capability
    return None


def _linked(tool: SearchTool, output: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """A search's MCP content: its answer as JSON text, then a `resource_link` to each document its
    results come from (first seen first), which `resources/read` reads whole (docs/mcp.md)."""
    links: dict[str, dict[str, Any]] = {}
    for hit in output["results"]:
        if hit["documentId"] not in links:
            document = tool.documents.get(hit["documentId"])
            links[hit["documentId"]] = {"type": "resource_link", "uri": hit["uri"], "name": document["name"] if document else hit["documentId"],
                                        "title": hit["title"], "mimeType": "text/plain"}
    return ({"type": "text", "text": orjson.dumps(output).decode()}, *links.values())


def _lead(text: str, words: int = 32) -> str:
    """A snippet of a chunk found by a filter alone: its first words (nothing to mark)."""
    found = text.split()
    return " ".join(found[:words]) + (" …" if len(found) > words else "")


def _title(document: Document) -> str:
    return (document.get("title") or "").strip() or document["name"]


def page_of(rows: list[Document], after: str | None, limit: int) -> tuple[list[Document], str | None]:
    """Keyset paging by (name, id); the cursor is opaque to callers."""
    if after:
        try:
            last = base64.urlsafe_b64decode(after.encode() + b"==").decode().split("\x00", 1)
            key = (last[0], last[1])
        except (ValueError, IndexError, UnicodeDecodeError):
            raise InvalidInput([Violation("cursor", "V1", "is not a cursor this API gave")]) from None
        rows = [d for d in rows if (d["name"], d["id"]) > key]
    page = rows[:limit]
    cursor = None
    if len(rows) > limit:
        cursor = base64.urlsafe_b64encode(f"{page[-1]['name']}\x00{page[-1]['id']}".encode()).decode().rstrip("=")
    return page, cursor
