"""Limits on the JSON values that cross the service's edges: bodies, arguments, defaults, results.

Python's JSON reader recurses, and so do pydantic, FastAPI's encoder and the event store's codec:
a value nested a few hundred levels deep breaks one of them somewhere inside the service. Every
edge therefore refuses a value nested deeper than `MAX_DEPTH` before anything else reads it (a
400 for input, a `result` error for a tool's result), with checks that never recurse themselves.

A JSON string may hold a lone UTF-16 surrogate (`"\\ud800"`), which no UTF-8 store can write.
Input holding one is refused naming the field; a result's are replaced with U+FFFD, as
JavaScript's `String.prototype.toWellFormed` does.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# Containers (objects and arrays) nested in one another, the outermost counting as 1.
MAX_DEPTH = 100

# The `result` error's message for an output nested deeper than that, wherever it is found.
TOO_DEEP_RESULT = f"the result is nested more than {MAX_DEPTH} levels deep (objects and arrays); the limit is {MAX_DEPTH}"

_SURROGATE = re.compile("[\ud800-\udfff]")


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests more than `limit` objects or arrays; never recurses."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list, tuple)))
    return False


def has_lone_surrogate(value: Any) -> bool:
    """Whether any string or key of `value` holds a lone surrogate: `lone_surrogate_at` without the
    path, for the common case of none. orjson refuses to encode one, in C; whatever else it
    refuses (a key that is not a string, an integer past 64 bits) is looked at the slow way."""
    try:
        orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        return lone_surrogate_at(value) is not None
    return False


def lone_surrogate_at(value: Any, where: str = "") -> str | None:
    """The path (`tool.inputParameters[0].name`) of the first string or key holding a lone
    surrogate, or None. `where` prefixes the path; the root itself answers `where` or `body`."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path or "body"
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                name = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", str(key))  # the path is shown: keep it printable
                child_path = f"{path}.{name}" if path else name
                if isinstance(key, str) and _SURROGATE.search(key):
                    return child_path
                stack.append((child, child_path))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(item))))
    return None


def well_formed(value: Any) -> Any:
    """`value` with every lone surrogate in its strings and keys replaced by U+FFFD (a copy only
    where something changes). Call it only on values already within `MAX_DEPTH`."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {well_formed(k) if isinstance(k, str) else k: well_formed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [well_formed(v) for v in value]
    return value
