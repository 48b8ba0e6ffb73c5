"""A File Search document's MCP resource URI (docs/kinds/file-search-tools.md, docs/mcp.md).

`toolsmith://search-tools/{tool}/documents/{id}`: a scheme of this server's own (RFC 3986 allows
it, MCP recommends one for what is not on the web), since a document is read through MCP's
`resources/read` by a caller the tool is offered to, never fetched by URL; an `https://` URI would
promise a page no client can open. The tool's name and the document's id (the start of its bytes'
SHA-256) are both identifiers, so the URI needs no escaping, and the same document keeps its URI
for as long as it is there. A page of a long text is `?offset=N` (characters) on the same URI.
"""

from __future__ import annotations

import re

SCHEME = "toolsmith"
TEMPLATE = "toolsmith://search-tools/{tool}/documents/{id}"
_URI = re.compile(r"toolsmith://search-tools/([A-Za-z0-9_-]{1,64})/documents/([0-9a-f]{1,64})(?:\?offset=([0-9]{1,12}))?")


def document_uri(tool: str, doc_id: str) -> str:
    return f"toolsmith://search-tools/{tool}/documents/{doc_id}"


def page_uri(tool: str, doc_id: str, offset: int) -> str:
    return document_uri(tool, doc_id) + (f"?offset={offset}" if offset else "")


def parse_uri(uri: object) -> tuple[str, str, int] | None:
    """(tool, document id, offset) of a document's URI, else None."""
    if not isinstance(uri, str):
        return None
    found = _URI.fullmatch(uri)
    if found is None:
        return None
    return found.group(1), found.group(2), int(found.group(3) or 0)
