"""Admins' resources in the console: every published kind's pages (`console/published.py`), with the
resource's form: its URI or URI template, media type, and its text, bytes or rendering module."""

from __future__ import annotations

from typing import Any

from console.published import PublishedPages
from domain.errors import Violation
from toolkinds.resources.kind import ResourceKind
from toolkinds.resources.schemas import public

FIELDS = ("id", "version", "description", "title", "tags", "uri", "uriTemplate", "mimeType", "text", "blob", "module")


class ResourceForm:
    def values_of(self, item: Any | None) -> dict[str, Any]:
        if item is None:
            return {name: "" for name in FIELDS}
        current = item.current
        values = {name: current.get(name) or "" for name in FIELDS if name not in ("id", "version", "tags")}
        return {**values, "id": item.item_id, "version": str(item.version), "tags": ", ".join(current["tags"]),
                "text": current["text"] if current["text"] is not None else ""}

    def form_values(self, form: Any, item_id: str | None) -> dict[str, Any]:
        values = {name: str(form.get(name, "")) for name in FIELDS}
        values["id"] = item_id if item_id is not None else values["id"].strip()
        return values

    def given_of(self, values: dict[str, Any]) -> tuple[dict[str, Any], list[Violation]]:
        tags = [t.strip() for t in values["tags"].split(",") if t.strip()]
        given = {"description": values["description"].strip(), "title": values["title"].strip() or None, "tags": tags,
                 **{name: values[name].strip() or None for name in ("uri", "uriTemplate", "mimeType", "blob", "module")},
                 "text": values["text"] if values["text"] != "" else None}
        return given, []

    def anchor(self, field: str) -> str:
        head = field.split(".")[0].split("[")[0]
        return head if head in FIELDS else "form"


PAGES = PublishedPages(ResourceKind, base="/console/resources", one="resource", title="resource", folder="resources",
                       public=public, form=ResourceForm())
router = PAGES.router
