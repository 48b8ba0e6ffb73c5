"""The File Search tool editor's form (docs/kinds/file-search-tools.md, docs/console.md) in both
directions: a tool's configuration as the form's values (the fields every kind shares and each
capability's switch and two limits), the submitted form as the REST API's request body, and each
rule a save breaks as a message tied to the form field it names. No rule is checked here: the kind's
`save` checks them all, as it does for REST."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from domain import errors
from domain.errors import Violation
from toolkinds.search_tools.model import CAPABILITIES, SearchTool, cap_key, normalise

# Each capability as a person reads it: its title, what it gives, and its two limits' labels.
CAPABILITY_TEXT: dict[str, tuple[str, str, str, str]] = {
    "search": ("Search", "Ranked passages with the matching words marked.", "Results by default", "Results at most"),
    "fetch": ("Fetch", "A document's text, a page at a time.", "Characters by default", "Characters at most"),
    "list_documents": ("List documents", "The documents' names, types, sizes and times.", "Documents by default",
                       "Documents at most"),
    "find_text": ("Find text", "Every place an exact phrase occurs (no regular expressions).", "Matches by default",
                  "Matches at most"),
    "read_context": ("Read context", "The chunks before and after a chunk.", "Neighbours by default", "Neighbours at most"),
}
assert set(CAPABILITY_TEXT) == set(CAPABILITIES)
FIELD_LABELS = {"id": "Name", "description": "Description", "tags": "Tags", "exposeInChat": "Callable in chat",
                "enabled": "Enabled", "capabilities": "Capabilities"}


Values = dict[str, Any]


def config_digest(config: dict[str, Any]) -> str:
    """What the editor was opened with, to tell a save whether the configuration changed since. Not
    the tool's version: every upload and every document's extraction moves that on, and the form
    must not go stale while the documents above it settle."""
    return hashlib.sha256(json.dumps(config, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:24]


def values_of(config: dict[str, Any] | None, tool_id: str = "") -> Values:
    """The form's values for a tool's configuration (a new tool's defaults when None)."""
    opened = config
    config = normalise(config or {})
    return {
        "id": tool_id,
        "digest": config_digest(opened) if opened is not None else "",
        "description": config["description"],
        "tags": ", ".join(config["tags"]),
        "exposeInChat": config["exposeInChat"],
        "enabled": config["enabled"],
        "capabilities": {
            name: {"enabled": config["capabilities"][name]["enabled"], "limit": str(config["capabilities"][name][limit]),
                   "cap": str(config["capabilities"][name][cap_key(limit)])}
            for name, (_, limit, _, _) in CAPABILITIES.items()
        },
    }


def _text(form: Any, name: str) -> str:
    value = form.get(name)
    return value.replace("\r\n", "\n").strip() if isinstance(value, str) else ""


def form_values(form: Any, tool_id: str | None = None) -> Values:
    """The submitted form, as typed, to show it again."""
    return {
        "id": tool_id if tool_id is not None else _text(form, "id"),
        "digest": _text(form, "digest"),
        "description": _text(form, "description"),
        "tags": _text(form, "tags"),
        "exposeInChat": form.get("exposeInChat") == "on",
        "enabled": form.get("enabled") == "on",
        "capabilities": {
            name: {"enabled": form.get(f"{name}_enabled") == "on", "limit": _text(form, f"{name}_{limit}"),
                   "cap": _text(form, f"{name}_{cap_key(limit)}")}
            for name, (_, limit, _, _) in CAPABILITIES.items()
        },
    }


def body_of(values: Values) -> tuple[dict[str, Any], list[Violation]]:
    """The REST API's request body (`SearchToolBody`'s fields) from the form's values, and each
    number that could not be read as typed, naming its field. An empty limit is the default."""
    found: list[Violation] = []

    def whole(text: str, field: str) -> int | None:
        plain = text.replace(",", "").replace("_", "").replace(" ", "")
        if not plain:
            return None
        if not re.fullmatch(r"-?[0-9]{1,12}", plain):
            found.append(Violation(field, "API", "must be a whole number"))
            return None
        return int(plain)

    capabilities: dict[str, Any] = {}
    for name, (_, limit, _, _) in CAPABILITIES.items():
        typed = values["capabilities"][name]
        capabilities[name] = {
            "enabled": typed["enabled"],
            limit: whole(typed["limit"], f"capabilities.{name}.{limit}"),
            cap_key(limit): whole(typed["cap"], f"capabilities.{name}.{cap_key(limit)}"),
        }
    body = {
        "description": values["description"],
        "tags": [t.strip() for t in values["tags"].split(",") if t.strip()],
        "exposeInChat": values["exposeInChat"],
        "enabled": values["enabled"],
        "capabilities": capabilities,
    }
    return body, found


def anchor_of(field: str) -> tuple[str, str]:
    """The id of the form field a rule's field path names, and the label a person reads for it."""
    match = re.fullmatch(r"capabilities\.(\w+)(?:\.(\w+))?", field)
    if match and match.group(1) in CAPABILITIES:
        name, part = match.group(1), match.group(2)
        title, _, default_label, cap_label = CAPABILITY_TEXT[name]
        limit = CAPABILITIES[name][1]
        if part == limit:
            return f"capabilities-{name}-{limit}", f"{title}, {default_label.lower()}"
        if part == cap_key(limit):
            return f"capabilities-{name}-{cap_key(limit)}", f"{title}, {cap_label.lower()}"
        return f"capabilities-{name}", title
    root = re.match(r"[A-Za-z]+", field)
    name = root.group(0) if root else ""
    if name in FIELD_LABELS:
        return name, FIELD_LABELS[name]
    return "form", field or "The form"


def messages_of(found: list[Violation]) -> dict[str, list[str]]:
    """Messages by the id of the form field each is about, each naming that field."""
    fields: dict[str, list[str]] = {}
    for violation in found:
        anchor, label = anchor_of(violation.field)
        fields.setdefault(anchor, []).append(f"{label}: {violation.message}")
    return fields


class SearchToolForm:
    """The editor's form as the pages every configured kind shares use it (`console/configured.py: Form`)."""

    def values_of(self, tool: SearchTool | None) -> Values:
        return values_of(None) if tool is None else values_of(tool.config, tool.tool_id)

    def form_values(self, form: Any, tool_id: str | None) -> Values:
        return form_values(form, tool_id)

    def body_of(self, values: Values) -> tuple[dict[str, Any], list[Violation]]:
        return body_of(values)

    def messages_of(self, found: list[Violation], values: Values) -> dict[str, list[str]]:
        return messages_of(found)

    def expected(self, kind: Any, tenant: str, name: str, values: Values, config: dict[str, Any]) -> int | None:
        """Refused when the configuration changed since the form was opened; then the version read
        here guards the save against a change in between."""
        if not values["digest"]:
            return None
        current = kind.get(tenant, name)
        if config_digest(current.config) != values["digest"]:
            raise errors.PreconditionFailed(name, -1, current.version)
        return int(current.version)
