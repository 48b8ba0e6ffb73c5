"""Admins' resources in the console: every published kind's pages (`console/published.py`), with the
resource's form: one URI or an RFC 6570 URI template, a name (its title), a media type, and where its
content comes from (fixed text, bytes as base64, or a published module that renders it), chosen once;
and the JSON view of the whole definition (in `published/form.html`)."""

from __future__ import annotations

from typing import Any

from console.published import PublishedPages
from domain.errors import Violation
from toolkinds.resources.kind import ResourceKind
from toolkinds.resources.schemas import public

FIELDS = ("id", "version", "description", "title", "tags", "address", "addressKind", "mimeType", "source", "text", "blob", "module")
SOURCES = ("text", "blob", "module")
ANCHORS = {"uri": "address", "uriTemplate": "address", "mimeType": "mimeType", "text": "text", "blob": "blob", "module": "module",
           "description": "description", "title": "title", "tags": "tags"}
LABELS = {"uri": "URI", "uriTemplate": "URI template", "mimeType": "Media type", "text": "Text", "blob": "Bytes (base64)",
          "module": "Rendered by module"}


class ResourceForm:
    def values_of(self, item: Any | None) -> dict[str, Any]:
        if item is None:
            return {**{name: "" for name in FIELDS}, "addressKind": "uri", "source": "text"}
        current = item.current
        template = current.get("uriTemplate")
        return {"id": item.item_id, "version": str(item.version), "description": current["description"],
                "title": current.get("title") or "", "tags": ", ".join(current["tags"]),
                "address": template or current.get("uri") or "", "addressKind": "template" if template else "uri",
                "mimeType": current.get("mimeType") or "",
                "source": "module" if current.get("module") else "blob" if current.get("blob") else "text",
                "text": current["text"] if current.get("text") is not None else "", "blob": current.get("blob") or "",
                "module": current.get("module") or ""}

    def form_values(self, form: Any, item_id: str | None) -> dict[str, Any]:
        values = {name: str(form.get(name, "")) for name in FIELDS}
        values["id"] = item_id if item_id is not None else values["id"].strip()
        values["addressKind"] = "template" if values["addressKind"] == "template" else "uri"
        values["source"] = values["source"] if values["source"] in SOURCES else "text"
        return values

    def edited(self, values: dict[str, Any], action: str) -> dict[str, Any] | None:
        return None  # no rows

    def given_of(self, values: dict[str, Any]) -> tuple[dict[str, Any], list[Violation]]:
        tags = [t.strip() for t in values["tags"].split(",") if t.strip()]
        address = values["address"].strip() or None
        source = values["source"]
        given = {"description": values["description"].strip(), "title": values["title"].strip() or None, "tags": tags,
                 "uri": address if values["addressKind"] == "uri" else None,
                 "uriTemplate": address if values["addressKind"] == "template" else None,
                 "mimeType": values["mimeType"].strip() or None,
                 # only the chosen source's field: the others stay as typed in the form, not saved
                 "text": (values["text"] if values["text"] != "" else None) if source == "text" else None,
                 "blob": (values["blob"].strip() or None) if source == "blob" else None,
                 "module": (values["module"].strip() or None) if source == "module" else None}
        return given, []

    def anchor(self, field: str, values: dict[str, Any]) -> str:
        head = field.split(".")[0].split("[")[0]
        if head in SOURCES:  # only the chosen source is sent: a missing content is that one's
            return values["source"]
        return ANCHORS.get(head, "form")

    def rows_of(self, definition: dict[str, Any] | None) -> dict[str, str]:
        if definition is None:
            return {}
        rows = {"Description": definition.get("description") or "—", "Title": definition.get("title") or "—",
                "Tags": ", ".join(definition.get("tags") or []) or "none"}
        for key, label in LABELS.items():
            value = definition.get(key)
            if value is not None:
                rows[label] = f"{len(value)} base64 characters" if key == "blob" else str(value)
        return rows


PAGES = PublishedPages(ResourceKind, base="/console/resources", one="resource", title="resource", folder="resources",
                       public=public, form=ResourceForm())
router = PAGES.router
