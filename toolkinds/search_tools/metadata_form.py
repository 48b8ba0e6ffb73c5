"""The console's forms of File Search metadata (docs/kinds/file-search-tools.md, "Metadata and
filters"; docs/console.md): the tool's metadata schema as rows of a key and its type, a document's
values as one field per key of the schema (its page's editor and the upload's), and the Test
panel's filter as rows of a key, an operator and a value joined by "all" or "any". Each is read
from what was typed into what the REST API takes (`metadata: {key: type}`, `{key: value}`, a
`filters` object); no rule is checked here beyond reading a typed value: the kind checks them all,
as it does for REST, and each refusal's field path is tied back to the field typed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from domain.errors import Violation
from domain.metadata import BOOLEAN, DATE, MAX_KEYS, NUMBER, STRING, TYPES

# Each type as a person names it.
TYPE_TEXT = {STRING: "Text", NUMBER: "Number", BOOLEAN: "Yes or no", DATE: "Date"}
assert set(TYPE_TEXT) == set(TYPES)
# Each filter operator as a person reads it, in the order offered (gt..lte only on numbers and dates).
OPERATOR_TEXT = {
    "eq": "is", "ne": "is not", "gt": "is more than", "gte": "is at least", "lt": "is less than", "lte": "is at most",
    "in": "is one of", "nin": "is none of",
}
JOIN_TEXT = {"and": "all of the conditions", "or": "any of the conditions"}
FILTER_ROWS = 4  # the Test panel's condition rows
BLANK_SCHEMA_ROWS = 2  # empty key rows the tool's form offers beyond its keys (the script adds more)
YES, NO = ("yes", "true", "on"), ("no", "false", "off")


def _getlist(form: Any, name: str) -> list[str]:
    values = form.getlist(name) if hasattr(form, "getlist") else [form.get(name)]
    return [v.strip() if isinstance(v, str) else "" for v in values if v is not None]


# -- the tool's schema ------------------------------------------------------------------------------


def schema_rows(schema: Mapping[str, str] | None, blank: int = BLANK_SCHEMA_ROWS) -> list[dict[str, str]]:
    """The schema's rows as the tool's form shows them (by key), then `blank` empty ones."""
    rows = [{"key": key, "type": kind} for key, kind in sorted((schema or {}).items())]
    return rows + [{"key": "", "type": STRING} for _ in range(blank)]


def typed_schema_rows(form: Any) -> list[dict[str, str]] | None:
    """The rows as typed (None when the form has none: one posted without them keeps the tool's schema)."""
    if form.get("metadata_rows") is None:
        return None
    keys, kinds = _getlist(form, "metadata_key"), _getlist(form, "metadata_type")
    kinds += [STRING] * (len(keys) - len(kinds))
    return [{"key": k, "type": t} for k, t in zip(keys, kinds, strict=False)]


def schema_of_rows(rows: list[dict[str, str]]) -> tuple[dict[str, str], list[Violation]]:
    """The schema from its rows (an empty key's row skipped), and a key typed twice, named."""
    schema: dict[str, str] = {}
    found: list[Violation] = []
    for row in rows:
        if not row["key"]:
            continue
        if row["key"] in schema:
            found.append(Violation(f"metadata.{row['key']}", "API", "is typed twice: a key is declared once"))
            continue
        schema[row["key"]] = row["type"]
    if len(schema) > MAX_KEYS:
        found.append(Violation("metadata", "API", f"at most {MAX_KEYS} keys, got {len(schema)}"))
    return schema, found


def schema_anchor(field: str, rows: list[dict[str, str]] | None) -> tuple[str, str] | None:
    """The form field a refusal of `metadata.<key>` is about (that key's row), and its label."""
    if field == "metadata":
        return "metadata", "Document metadata"
    match = re.fullmatch(r"metadata\.(.+)", field)
    if not match:
        return None
    key = match.group(1)
    for i, row in enumerate(rows or []):
        if row["key"] == key:
            return f"metadata-key-{i}", f"Metadata key {key}"
    return "metadata", f"Metadata key {key}"


# -- a document's values ----------------------------------------------------------------------------


def shown_value(kind: str, value: Any) -> str:
    """A kept value as its field shows it (a yes or no for a boolean)."""
    if value is None:
        return ""
    if kind == BOOLEAN:
        return "yes" if value is True else "no" if value is False else str(value)
    if kind == NUMBER and isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def field_id(prefix: str, key: str) -> str:
    return f"{prefix}-{key}"


def _number(text: str) -> int | float | None:
    plain = text.replace("_", "").replace(" ", "").replace(",", "")
    if not re.fullmatch(r"-?(?:[0-9]{1,15}(?:\.[0-9]{0,15})?|\.[0-9]{1,15})(?:[eE][-+]?[0-9]{1,3})?", plain):
        return None
    value = float(plain)
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return int(value) if re.fullmatch(r"-?[0-9]{1,15}", plain) else value


def typed_value(kind: str, text: str) -> tuple[Any, str]:
    """The value a field holds as its key's type, or what is wrong with it ("" when it reads)."""
    if kind == NUMBER:
        value = _number(text)
        return (value, "") if value is not None else (None, "must be a number, like 12 or 0.5")
    if kind == BOOLEAN:
        lowered = text.lower()
        if lowered in YES:
            return True, ""
        if lowered in NO:
            return False, ""
        return None, "must be yes or no"
    return text, ""  # a string as typed; a date as typed, the kind reads it (ISO 8601)


def typed_values(schema: Mapping[str, str], form: Any, prefix: str) -> tuple[dict[str, Any], dict[str, str], list[Violation]]:
    """A document's metadata from one field per key (`<prefix>_<key>`; an empty field: no value),
    the text of each field as typed (to show again), and each value that does not read."""
    values: dict[str, Any] = {}
    typed: dict[str, str] = {}
    found: list[Violation] = []
    for key, kind in schema.items():
        raw = form.get(f"{prefix}_{key}")
        text = raw.strip() if isinstance(raw, str) else ""
        typed[key] = text
        if not text:
            continue
        value, problem = typed_value(kind, text)
        if problem:
            found.append(Violation(f"metadata.{key}", "API", problem))
        else:
            values[key] = value
    return values, typed, found


def value_messages(found: list[Violation], prefix: str, schema: Mapping[str, str]) -> dict[str, list[str]]:
    """Messages by the id of the field each is about (`<prefix>-<key>`), each naming its key."""
    fields: dict[str, list[str]] = {}
    for violation in found:
        match = re.fullmatch(r"metadata\.(.+)", violation.field)
        key = match.group(1) if match else ""
        anchor = field_id(prefix, key) if key in schema else "metadata-form"
        fields.setdefault(anchor, []).append(f"{key or 'Metadata'}: {violation.message}")
    return fields


# -- the Test panel's filter ------------------------------------------------------------------------

FILTER_FIELDS = ("filter_join",) + tuple(f"filter_{part}_{i}" for i in range(FILTER_ROWS) for part in ("key", "op", "value"))


def filter_of(schema: Mapping[str, str], inputs: Mapping[str, str]) -> tuple[dict[str, Any] | None, str]:
    """The `filters` argument from the panel's rows (a row without a key is skipped; one condition
    is the comparison alone, several are joined by "and" or "or"), or what to change first."""
    conditions: list[dict[str, Any]] = []
    for i in range(FILTER_ROWS):
        key = (inputs.get(f"filter_key_{i}") or "").strip()
        if not key:
            continue
        where = f"Condition {i + 1}"
        kind = schema.get(key)
        if kind is None:
            return None, f"{where}: “{key}” is not a metadata key of this tool."
        op = (inputs.get(f"filter_op_{i}") or "eq").strip()
        if op not in OPERATOR_TEXT:
            return None, f"{where}: choose how to compare."
        text = (inputs.get(f"filter_value_{i}") or "").strip()
        if not text:
            return None, f"{where}: type the value {key} is compared with."
        if op in ("in", "nin"):
            items = [part.strip() for part in text.split(",") if part.strip()]
            value: Any = []
            for item in items:
                typed, problem = typed_value(kind, item)
                if problem:
                    return None, f"{where}: “{item}” {problem}."
                value.append(typed)
        else:
            value, problem = typed_value(kind, text)
            if problem:
                return None, f"{where}: {key} {problem}."
        conditions.append({"type": op, "key": key, "value": value})
    if not conditions:
        return None, ""
    if len(conditions) == 1:
        return conditions[0], ""
    join = inputs.get("filter_join") if inputs.get("filter_join") in JOIN_TEXT else "and"
    return {"type": join, "filters": conditions}, ""
