"""Prompts in the console: every published kind's pages (`console/published.py`), with the prompt's
form: its arguments (name, description, required, completion values or module) and its messages
(role and text with {{argument}} placeholders, or other MCP content as JSON) as rows of fields, or
the module that renders them; and the JSON view of the whole definition (in `published/form.html`)."""

from __future__ import annotations

import json
import re
from typing import Any

from console.published import PublishedPages, edit_rows, new_key, row_keys
from domain.errors import Violation
from toolkinds.prompts.kind import PromptKind
from toolkinds.prompts.schemas import public

FIELDS = ("id", "version", "description", "title", "tags", "module")
ROLES = ("user", "assistant")
_ROW = re.compile(r"^(arguments|messages)\[(\d+)\](?:\.(\w+))?(?:\.(\w+))?")


def blank_argument() -> dict[str, Any]:
    return {"key": new_key(), "name": "", "description": "", "required": False, "values": "", "completer": ""}


def blank_message() -> dict[str, Any]:
    return {"key": new_key(), "role": "user", "text": "", "content": ""}


def _argument_row(argument: dict[str, Any]) -> dict[str, Any]:
    completion = argument.get("completion") or {}
    return {**blank_argument(), "name": argument.get("name") or "", "description": argument.get("description") or "",
            "required": bool(argument.get("required")), "values": "\n".join(completion.get("values") or []),
            "completer": completion.get("module") or ""}


def _message_row(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content") or {}
    text = content.get("type") == "text" and set(content) == {"type", "text"}
    return {**blank_message(), "role": message.get("role") or "user", "text": content.get("text", "") if text else "",
            "content": "" if text else json.dumps(content, indent=2, ensure_ascii=False)}


def _filled_argument(row: dict[str, Any]) -> bool:
    return any(str(row[k]).strip() for k in ("name", "description", "values", "completer"))


def _filled_message(row: dict[str, Any]) -> bool:
    return bool(row["text"].strip() or row["content"].strip())


class PromptForm:
    def values_of(self, prompt: Any | None) -> dict[str, Any]:
        if prompt is None:
            return {**{name: "" for name in FIELDS}, "arguments": [], "messages": [blank_message()], "focus": ""}
        current = prompt.current
        return {"id": prompt.item_id, "version": str(prompt.version), "description": current["description"],
                "title": current["title"] or "", "tags": ", ".join(current["tags"]), "module": current["module"] or "",
                "arguments": [_argument_row(a) for a in current["arguments"]],
                "messages": [_message_row(m) for m in current["messages"] or []], "focus": ""}

    def form_values(self, form: Any, item_id: str | None) -> dict[str, Any]:
        values: dict[str, Any] = {name: str(form.get(name, "")) for name in FIELDS}
        values["id"] = item_id if item_id is not None else values["id"].strip()
        text = lambda name: str(form.get(name, ""))  # noqa: E731
        values["arguments"] = [{"key": k, "name": text(f"arg_{k}_name"), "description": text(f"arg_{k}_description"),
                                "required": text(f"arg_{k}_required") == "on", "values": text(f"arg_{k}_values"),
                                "completer": text(f"arg_{k}_completer")} for k in row_keys(form, "arg_row")]
        values["messages"] = [{"key": k, "role": text(f"msg_{k}_role"), "text": text(f"msg_{k}_text"),
                               "content": text(f"msg_{k}_content")} for k in row_keys(form, "msg_row")]
        values["focus"] = ""
        return values

    def edited(self, values: dict[str, Any], action: str) -> dict[str, Any] | None:
        return edit_rows(values, action, {"arguments": blank_argument, "messages": blank_message})

    def given_of(self, values: dict[str, Any]) -> tuple[dict[str, Any], list[Violation]]:
        unread: list[Violation] = []
        arguments = []
        for row in filter(_filled_argument, values["arguments"]):
            argument: dict[str, Any] = {"name": row["name"].strip(), "description": row["description"].strip(),
                                        "required": row["required"]}
            choices = [line.strip() for line in row["values"].splitlines() if line.strip()]
            completion = {**({"values": choices} if choices else {}), **({"module": row["completer"].strip()} if row["completer"].strip() else {})}
            argument["completion"] = completion or None  # both given: the kind refuses it (P3) at the values
            arguments.append(argument)
        messages = []
        for i, row in enumerate(filter(_filled_message, values["messages"])):
            content: Any = {"type": "text", "text": row["text"]}
            if row["content"].strip():
                try:
                    content = json.loads(row["content"])
                except json.JSONDecodeError as error:
                    unread.append(Violation(f"messages[{i}].content", "JSON",
                                            f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"))
            messages.append({"role": row["role"], "content": content})
        tags = [t.strip() for t in values["tags"].split(",") if t.strip()]
        given = {"description": values["description"].strip(), "title": values["title"].strip() or None, "tags": tags,
                 "arguments": arguments, "messages": messages or None, "module": values["module"].strip() or None}
        return given, unread

    def anchor(self, field: str, values: dict[str, Any]) -> str:
        found = _ROW.match(field)
        if found:
            table, index, part, sub = found.group(1), int(found.group(2)), found.group(3), found.group(4)
            if table == "arguments":
                rows = [r for r in values["arguments"] if _filled_argument(r)]
                if index < len(rows):
                    key = rows[index]["key"]
                    if part == "completion":
                        return f"arg-{key}-completer" if sub == "module" else f"arg-{key}-values"
                    return f"arg-{key}-{part if part in ('name', 'description') else 'name'}"
            else:
                rows = [r for r in values["messages"] if _filled_message(r)]
                if index < len(rows):
                    row = rows[index]
                    if part == "role":
                        return f"msg-{row['key']}-role"
                    return f"msg-{row['key']}-{'content' if row['content'].strip() else 'text'}"
            return table
        head = field.split(".")[0].split("[")[0]
        return head if head in (*FIELDS, "arguments", "messages") else "form"

    def rows_of(self, definition: dict[str, Any] | None) -> dict[str, str]:
        if definition is None:
            return {}
        rows = {"Description": definition.get("description") or "—", "Title": definition.get("title") or "—",
                "Tags": ", ".join(definition.get("tags") or []) or "none"}
        for argument in definition.get("arguments") or []:
            completion = argument.get("completion") or {}
            parts = ["required" if argument.get("required") else "optional", argument.get("description") or ""]
            if completion.get("values"):
                parts.append("completes from " + ", ".join(completion["values"]))
            elif completion.get("module"):
                parts.append(f"completed by the module {completion['module']}")
            rows[f"Argument {argument.get('name')}"] = " · ".join(p for p in parts if p)
        for i, message in enumerate(definition.get("messages") or [], 1):
            content = message.get("content") or {}
            shown = content.get("text") if content.get("type") == "text" else json.dumps(content, ensure_ascii=False, sort_keys=True)
            rows[f"Message {i} ({message.get('role')})"] = shown or ""
        rows["Rendered by module"] = definition.get("module") or "—"
        return rows


PAGES = PublishedPages(PromptKind, base="/console/prompts", one="prompt", title="prompt", folder="prompts", public=public,
                       form=PromptForm())
router = PAGES.router
