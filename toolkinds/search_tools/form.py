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
from domain import retrieval as retrieval_rules
from domain.errors import Violation
from domain.metadata import schema_of
from toolkinds.search_tools import metadata_form
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
                "enabled": "Enabled", "capabilities": "Capabilities", "retrieval": "Search by"}
# Each retrieval mode as a person reads it (domain/retrieval.py): its label and what it finds.
MODE_TEXT: dict[str, tuple[str, str]] = {
    retrieval_rules.HYBRID: ("Words and meaning (hybrid)",
                             "Finds the passages holding the query's words and those saying the same in other words, "
                             "and ranks the two lists together. The usual choice."),
    retrieval_rules.LEXICAL: ("Words only (lexical)",
                              "A passage must hold one of the query's words as it is typed (any case, no stemming); "
                              "best for codes, names and exact terms."),
    retrieval_rules.SEMANTIC: ("Meaning only (semantic)",
                               "Passages near the query in meaning, whether or not they share a word with it."),
}
assert set(MODE_TEXT) == set(retrieval_rules.MODES)
# Each retrieval setting's form field id and label (the field path's last part).
RETRIEVAL_FIELDS = {"mode": ("retrieval-mode", "Search by"), "rrfK": ("retrieval-rrfK", "Fusion constant k"),
                    "minScore": ("retrieval-minScore", "Lowest score kept"),
                    "maxChunksPerDocument": ("retrieval-maxChunksPerDocument", "Passages per document at most")}


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
        # A tool recorded before retrieval existed reads as lexical (`retrieval.of`), a new one as hybrid.
        "retrieval": _retrieval_values(retrieval_rules.of(opened) if opened is not None else retrieval_rules.NEW_TOOL),
        "metadata_rows": metadata_form.schema_rows(schema_of(opened) if opened is not None else {}),
    }


def _retrieval_values(retrieval: dict[str, Any] | None) -> dict[str, str]:
    """The retrieval fields' values (a new tool's defaults for None)."""
    retrieval = retrieval_rules.NEW_TOOL if retrieval is None else retrieval

    def shown(value: Any) -> str:
        return "" if value is None else str(value)

    return {"mode": shown(retrieval.get("mode")), "rrfK": shown(retrieval.get("rrfK")),
            "minScore": shown(retrieval.get("minScore")), "maxChunksPerDocument": shown(retrieval.get("maxChunksPerDocument"))}


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
        # None when the form has no retrieval fields (one posted by a script of before): the tool keeps its own.
        "retrieval": {key: _text(form, f"retrieval_{key}") for key in retrieval_rules.KEYS}
        if form.get("retrieval_mode") is not None else None,
        # None likewise when the form has no metadata rows: the tool keeps its schema.
        "metadata_rows": metadata_form.typed_schema_rows(form),
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
    def number(text: str, field: str) -> float | None:
        plain = text.replace("_", "").replace(" ", "")
        if not plain:
            return None
        if not re.fullmatch(r"-?(?:[0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})(?:[eE]-?[0-9]{1,3})?", plain):
            found.append(Violation(field, "API", "must be a number, like 0.5 (a point before the decimals)"))
            return None
        value = float(plain)
        return int(value) if value.is_integer() and "." not in plain and "e" not in plain.lower() else value

    body: dict[str, Any] = {
        "description": values["description"],
        "tags": [t.strip() for t in values["tags"].split(",") if t.strip()],
        "exposeInChat": values["exposeInChat"],
        "enabled": values["enabled"],
        "capabilities": capabilities,
    }
    typed = values.get("retrieval")
    if typed is not None:
        # An empty k is the default (60); an empty floor or cap is none. The kind checks each value.
        k = whole(typed["rrfK"], "retrieval.rrfK")
        body["retrieval"] = {"mode": typed["mode"] or None, "rrfK": retrieval_rules.RRF_K if k is None else k,
                             "minScore": number(typed["minScore"], "retrieval.minScore"),
                             "maxChunksPerDocument": whole(typed["maxChunksPerDocument"], "retrieval.maxChunksPerDocument")}
        if body["retrieval"]["mode"] is None:
            found.append(Violation("retrieval.mode", "API", "choose how search finds passages"))
    rows = values.get("metadata_rows")
    if rows is not None:
        body["metadata"], twice = metadata_form.schema_of_rows(rows)
        found += twice
    return body, found


def anchor_of(field: str, values: Values | None = None) -> tuple[str, str]:
    """The id of the form field a rule's field path names, and the label a person reads for it."""
    metadata = metadata_form.schema_anchor(field, (values or {}).get("metadata_rows"))
    if metadata is not None:
        return metadata
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
    match = re.fullmatch(r"retrieval\.(\w+)", field)
    if match and match.group(1) in RETRIEVAL_FIELDS:
        return RETRIEVAL_FIELDS[match.group(1)]
    root = re.match(r"[A-Za-z]+", field)
    name = root.group(0) if root else ""
    if name in FIELD_LABELS:
        return name, FIELD_LABELS[name]
    return "form", field or "The form"


def messages_of(found: list[Violation], values: Values | None = None) -> dict[str, list[str]]:
    """Messages by the id of the form field each is about, each naming that field."""
    fields: dict[str, list[str]] = {}
    for violation in found:
        anchor, label = anchor_of(violation.field, values)
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
        return messages_of(found, values)

    def expected(self, kind: Any, tenant: str, name: str, values: Values, config: dict[str, Any]) -> int | None:
        """Refused when the configuration changed since the form was opened; then the version read
        here guards the save against a change in between."""
        if not values["digest"]:
            return None
        current = kind.get(tenant, name)
        if config_digest(current.config) != values["digest"]:
            raise errors.PreconditionFailed(name, -1, current.version)
        return int(current.version)


retrieval_values = _retrieval_values
