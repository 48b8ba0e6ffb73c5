"""How each module event changes a module's read-side document, shared by every read model.

A document keeps the summary fields of the module's draft and of its published version, so that an
event carrying no definition (`DraftDiscarded`) can still be applied, and derives from them what the
list shows: the current description, tags and imports, the role callers see (the published
version's), the state, and `uses` (draft and
published imports together, for used-by lists and the `usedBy` filter).

Every event is decoded into strings of its own, so the same tenant, author, tag or imported module
id would be held once per document without `sys.intern`: at 50,000 modules that is about a tenth
of the read model's memory (issue 15, 8). Only names that repeat across documents are interned,
never descriptions.
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

from domain.model import DRAFT, PUBLISHED, UNPUBLISHED
from projections.interface import Document

SUMMARY_FIELDS = ("id", "description", "state", "role", "tags", "imports", "publishedVersion", "exposeInChat", "updatedAt", "updatedBy")


def part(definition: dict[str, Any]) -> dict[str, Any]:
    """What the read side keeps of a definition."""
    tool = definition.get("tool")
    return {
        "description": definition["description"],
        "role": "tool" if tool else "library",
        "tags": [sys.intern(tag) for tag in tool["tags"]] if tool else [],
        "imports": [sys.intern(module_id) for module_id in definition["imports"]],
        "exposeInChat": bool(tool and tool["exposeInChat"]),
    }


def new_document(tenant: str, module_id: str) -> Document:
    return {"tenant": sys.intern(tenant), "id": module_id, "draft": None, "published": None, "publishedVersion": None}


def touched(document: Document, by: str, at: datetime) -> Document:
    document["updatedBy"] = sys.intern(by)
    document["updatedAt"] = at.isoformat()
    return derive(document)


def derive(document: Document) -> Document:
    draft, published = document["draft"], document["published"]
    current = draft or published
    document["description"] = current["description"]
    # The role is what the module is to its callers: the published version's while one is published
    # (a pending draft changes nothing for them until it is), the draft's before the first publish. The
    # list's Role column, its filter, its facets and its ordering all read this one field (issue 31, 12).
    document["role"] = (published or draft)["role"]
    document["tags"] = current["tags"]
    document["imports"] = current["imports"]
    document["exposeInChat"] = current["exposeInChat"]
    document["state"] = UNPUBLISHED if published is None else (DRAFT if draft else PUBLISHED)
    draft_imports = draft["imports"] if draft else []
    published_imports = published["imports"] if published else []
    document["uses"] = sorted({*draft_imports, *published_imports}) if draft_imports or published_imports else []
    return document


def summary(document: Document) -> dict[str, Any]:
    return {name: document.get(name) for name in SUMMARY_FIELDS}


def searchable(document: Document, text: str) -> bool:
    """In-memory equivalent of the `search` query: every word in the id or the description."""
    haystack = f"{document['id']} {document['description']}".lower()
    return all(word in haystack for word in text.lower().split())
