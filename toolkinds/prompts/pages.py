"""Prompts in the console: every published kind's pages (`console/published.py`), with the prompt's
form: its arguments and messages as JSON, or the module that renders them."""

from __future__ import annotations

import json
from typing import Any

from console.published import PublishedPages
from domain.errors import Violation
from toolkinds.prompts.kind import PromptKind
from toolkinds.prompts.schemas import public

FIELDS = ("id", "version", "description", "title", "tags", "arguments", "messages", "module")


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) if value else ""


class PromptForm:
    def values_of(self, prompt: Any | None) -> dict[str, Any]:
        if prompt is None:
            return {name: "" for name in FIELDS}
        current = prompt.current
        return {"id": prompt.item_id, "version": str(prompt.version), "description": current["description"],
                "title": current["title"] or "", "tags": ", ".join(current["tags"]), "arguments": _json(current["arguments"]),
                "messages": _json(current["messages"]), "module": current["module"] or ""}

    def form_values(self, form: Any, item_id: str | None) -> dict[str, Any]:
        values = {name: str(form.get(name, "")) for name in FIELDS}
        values["id"] = item_id if item_id is not None else values["id"].strip()
        return values

    def given_of(self, values: dict[str, Any]) -> tuple[dict[str, Any], list[Violation]]:
        unread: list[Violation] = []
        parsed: dict[str, Any] = {}
        for name in ("arguments", "messages"):
            text = values[name].strip()
            try:
                parsed[name] = json.loads(text) if text else None
            except json.JSONDecodeError as error:
                unread.append(Violation(name, "JSON", f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"))
        tags = [t.strip() for t in values["tags"].split(",") if t.strip()]
        given = {"description": values["description"].strip(), "title": values["title"].strip() or None, "tags": tags,
                 "arguments": parsed.get("arguments") or [], "messages": parsed.get("messages"),
                 "module": values["module"].strip() or None}
        return given, unread

    def anchor(self, field: str) -> str:
        head = field.split(".")[0].split("[")[0]
        return head if head in FIELDS else "form"


PAGES = PublishedPages(PromptKind, base="/console/prompts", one="prompt", title="prompt", folder="prompts", public=public,
                       form=PromptForm())
router = PAGES.router
