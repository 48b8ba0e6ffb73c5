"""Typed metadata of File Search documents and the filters of `search` (docs/kinds/file-search-tools.md,
"Metadata and filters"; OpenAI's vector-store attributes and `file_search` filters are the model).

A tool declares its metadata schema in its configuration, `metadata: {key: type}`, each type one of
`string`, `number`, `boolean` or `date`: declared rather than inferred from the first value, since a
date and a string look alike in JSON ("2024-05-01"), and since the schema is what the `search`
capability shows a model (the keys it may filter on) before any document holds a value. A
document's metadata (`{key: value}`) is checked against it: a key the schema lacks or a value of
another type is refused, naming the key.

A date is an ISO 8601 date (`2024-05-01`, midnight UTC) or date-time (`2024-05-01T10:00:00+02:00`;
without an offset, UTC): it is kept as given for a date and in UTC (`…Z`) for a date-time, and
compared as the instant it names (`instant`).

A filter is OpenAI's: a comparison `{"type": "eq"|"ne"|"gt"|"gte"|"lt"|"lte"|"in"|"nin", "key",
"value"}` or a compound `{"type": "and"|"or", "filters": [...]}`. `filter_violations` checks one
against the schema (an unknown key, a value of another type, an order on a string or a boolean,
the depth and size caps), each problem named by its path; `matches` evaluates it on one
document's metadata. A comparison on a key the document lacks (or holds with another type than
the schema's) is false, whatever the operator, `ne` and `nin` too.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping
from datetime import date, datetime, timezone
from functools import lru_cache
from typing import Any

from domain.errors import Violation

STRING, NUMBER, BOOLEAN, DATE = "string", "number", "boolean", "date"
TYPES = (STRING, NUMBER, BOOLEAN, DATE)
MAX_KEYS = 32
MAX_KEY_CHARS = 64
MAX_STRING_CHARS = 512
KEY = re.compile(rf"[A-Za-z0-9_.\-]{{1,{MAX_KEY_CHARS}}}")

COMPARISONS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin")
COMPOUNDS = ("and", "or")
ORDERED = ("gt", "gte", "lt", "lte")
LISTED = ("in", "nin")
MAX_DEPTH = 5  # a compound inside a compound … five levels at most
MAX_NODES = 64  # comparisons and compounds in one filter
MAX_LISTED = 100  # values of one `in` or `nin`

Schema = dict[str, str]
Values = dict[str, Any]

_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


# -- the schema ---------------------------------------------------------------------------------


def schema_of(config: Mapping[str, Any]) -> Schema:
    """The metadata schema of a stored configuration (one recorded before metadata existed has none)."""
    found = config.get("metadata")
    return dict(found) if isinstance(found, Mapping) else {}


def schema_violations(schema: Any, field: str = "metadata") -> list[Violation]:
    if not isinstance(schema, Mapping):
        return [Violation(field, "R4", "must be an object of key -> type (string, number, boolean or date)")]
    found = []
    if len(schema) > MAX_KEYS:
        found.append(Violation(field, "R4", f"at most {MAX_KEYS} keys, got {len(schema)}"))
    for key, kind in schema.items():
        if not isinstance(key, str) or not KEY.fullmatch(key):
            found.append(Violation(f"{field}.{key}", "R4", f"a key is 1 to {MAX_KEY_CHARS} of A-Z a-z 0-9 _ . -"))
        elif kind not in TYPES:
            found.append(Violation(f"{field}.{key}", "R4", f"must be one of {', '.join(TYPES)}, got {kind!r}"))
    return found


# -- a document's values ------------------------------------------------------------------------


def values_violations(schema: Schema, values: Any, field: str = "metadata") -> tuple[Values, list[Violation]]:
    """The values as kept (dates normalised) and every problem, each naming its key."""
    if not isinstance(values, Mapping):
        return {}, [Violation(field, "DOC", "must be a JSON object of key -> value")]
    kept: Values = {}
    found: list[Violation] = []
    if len(values) > MAX_KEYS:
        found.append(Violation(field, "DOC", f"at most {MAX_KEYS} keys, got {len(values)}"))
    for key, value in values.items():
        where = f"{field}.{key}"
        kind = schema.get(key) if isinstance(key, str) else None
        if kind is None:
            known = ", ".join(sorted(schema)) or "none: set the tool's metadata schema first"
            found.append(Violation(where, "DOC", f"is not a key of the tool's metadata schema (its keys: {known})"))
            continue
        normal = normalised(kind, value)
        if normal is None:
            found.append(Violation(where, "DOC", f"must be {_described(kind)}, got {_shown(value)}"))
        else:
            kept[key] = normal
    return kept, found


def normalised(kind: str, value: Any) -> Any:
    """The value as kept for a key of type `kind`, None when it is not of that type."""
    if kind == STRING:
        return value if isinstance(value, str) and len(value) <= MAX_STRING_CHARS else None
    if kind == NUMBER:
        return value if _is_number(value) else None
    if kind == BOOLEAN:
        return value if isinstance(value, bool) else None
    if kind == DATE:
        if not isinstance(value, str) or len(value) > 40:
            return None
        if _DATE_ONLY.fullmatch(value):
            try:
                date.fromisoformat(value)
            except ValueError:
                return None
            return value
        try:
            moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    return None


@lru_cache(maxsize=65_536)
def instant(value: str) -> float:
    """The Unix seconds of a kept date (`normalised`; a filter over many documents meets the same
    dates again and again, hence the cache)."""
    moment = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value)
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)).timestamp()


def merged(current: Values, patch: Mapping[str, Any]) -> Values:
    """A JSON merge patch (RFC 7396) of a document's metadata: null removes a key."""
    out = dict(current)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


# -- filters ------------------------------------------------------------------------------------


def filter_violations(schema: Schema, given: Any, field: str = "input.filters") -> list[Violation]:
    """Every problem of a filter against the schema, each named by its path."""
    found: list[Violation] = []
    nodes = [0]
    _check(schema, given, field, 1, nodes, found)
    if nodes[0] > MAX_NODES:
        found.append(Violation(field, "V1", f"at most {MAX_NODES} comparisons and compounds in one filter, got {nodes[0]}"))
    return found


def _check(schema: Schema, node: Any, field: str, depth: int, nodes: list[int], found: list[Violation]) -> None:
    nodes[0] += 1
    if not isinstance(node, Mapping):
        found.append(Violation(field, "V1", "must be an object: a comparison {type, key, value} or a compound {type, filters}"))
        return
    kind = node.get("type")
    if kind in COMPOUNDS:
        extra = [k for k in node if k not in ("type", "filters")]
        if extra:
            found.append(Violation(f"{field}.{extra[0]}", "V1", f"is not a field of an {kind!r} filter (it has type and filters)"))
        inner = node.get("filters")
        if not isinstance(inner, list) or not inner:
            found.append(Violation(f"{field}.filters", "V1", "must be a non-empty array of filters"))
            return
        if depth >= MAX_DEPTH:
            found.append(Violation(f"{field}.filters", "V1", f"filters nest at most {MAX_DEPTH} levels deep"))
            return
        for i, child in enumerate(inner):
            _check(schema, child, f"{field}.filters[{i}]", depth + 1, nodes, found)
        return
    if kind not in COMPARISONS:
        found.append(Violation(f"{field}.type", "V1", f"must be one of {', '.join(COMPARISONS + COMPOUNDS)}, got {_shown(kind)}"))
        return
    extra = [k for k in node if k not in ("type", "key", "value")]
    if extra:
        found.append(Violation(f"{field}.{extra[0]}", "V1", "is not a field of a comparison (it has type, key and value)"))
    key = node.get("key")
    declared = schema.get(key) if isinstance(key, str) else None
    if declared is None:
        known = ", ".join(f"{k} ({t})" for k, t in sorted(schema.items())) or "none"
        found.append(Violation(f"{field}.key", "V1", f"{_shown(key)} is not a metadata key of this tool (its keys: {known})"))
        return
    if "value" not in node:
        found.append(Violation(f"{field}.value", "V1", "is required"))
        return
    value = node["value"]
    if kind in ORDERED and declared not in (NUMBER, DATE):
        found.append(Violation(f"{field}.type", "V1", f"{kind} compares numbers and dates; {key!r} is a {declared}"))
        return
    if kind in LISTED:
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_LISTED:
            found.append(Violation(f"{field}.value", "V1", f"{kind} takes an array of 1 to {MAX_LISTED} values"))
            return
        for i, item in enumerate(value):
            if _operand(declared, item) is None:
                found.append(Violation(f"{field}.value[{i}]", "V1", f"must be {_described(declared, operand=True)} "
                                                                     f"({key!r} is a {declared}), got {_shown(item)}"))
        return
    if _operand(declared, value) is None:
        found.append(Violation(f"{field}.value", "V1", f"must be {_described(declared, operand=True)} "
                                                      f"({key!r} is a {declared}), got {_shown(value)}"))


def _operand(kind: str, value: Any) -> Any:
    """A filter's value as compared (a date as Unix seconds: an ISO string or a number), None when wrong."""
    if kind == DATE:
        if _is_number(value):
            return float(value)
        kept = normalised(DATE, value)
        return None if kept is None else instant(kept)
    return normalised(kind, value)


def _held(kind: str, value: Any) -> Any:
    """A document's kept value as compared, None when it is not of the schema's type (then no comparison holds)."""
    if kind == DATE:
        if not isinstance(value, str):
            return None
        try:
            return instant(value)
        except ValueError:
            return None
    return normalised(kind, value)


def matches(schema: Schema, node: Mapping[str, Any], values: Mapping[str, Any]) -> bool:
    """Whether a document's metadata passes a filter that `filter_violations` found nothing in."""
    return predicate(schema, node)(values)


def predicate(schema: Schema, node: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], bool]:
    """The filter (one `filter_violations` found nothing in) as a test of a document's metadata,
    its values converted once (a search runs it on each of the tool's documents)."""
    kind = node["type"]
    if kind in COMPOUNDS:
        inner = [predicate(schema, child) for child in node["filters"]]
        if kind == "and":
            return lambda values: all(test(values) for test in inner)
        return lambda values: any(test(values) for test in inner)
    key = node["key"]
    declared = schema[key]

    def held(values: Mapping[str, Any]) -> Any:
        return _held(declared, values[key]) if key in values else None

    if kind in LISTED:
        operands = [_operand(declared, item) for item in node["value"]]
        inside = kind == "in"
        return lambda values: (h := held(values)) is not None and (h in operands) == inside
    operand = _operand(declared, node["value"])
    compare = _COMPARE[kind]
    return lambda values: (h := held(values)) is not None and bool(compare(h, operand))


_COMPARE: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le,
}


def described(schema: Schema) -> str:
    """The schema in words, for the `search` capability's description of `filters`."""
    return ", ".join(f"{key} ({kind})" for key, kind in sorted(schema.items()))


def _is_number(value: Any) -> bool:
    # An integer beyond 64 bits is refused: the event's hash, SQLite and OpenSearch read none.
    if isinstance(value, int) and not isinstance(value, bool):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def _described(kind: str, operand: bool = False) -> str:
    return {STRING: f"a string of at most {MAX_STRING_CHARS} characters", NUMBER: "a finite number (an integer within 64 bits)",
            BOOLEAN: "true or false",
            DATE: "an ISO 8601 date or date-time" + (" or Unix seconds" if operand else "")}[kind]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
