"""A tool's own JSON Schema 2020-12 documents (docs/kinds/code-modules.md): an `inputSchema` in place
of typed parameters, an `outputSchema` its results are checked against.

A schema is refused at save, naming its field, when it is not one the service can check quickly and
safely: larger than `MAX_SCHEMA_CHARS` of JSON or nested deeper than `MAX_SCHEMA_DEPTH`, not valid
against the 2020-12 meta-schema, not of an object, with a `$ref` that leaves the document, or with
`$ref`s that loop without consuming anything of the instance (`{"$ref": "#"}`: a validator would
never end). Recursion through `properties`, `items` and the like stays allowed (a tree of nodes).

Validators are compiled once per schema document (`validator`): a call only runs the checks.
The meta-schema check at save is `jsonschema`'s (its errors carry the path in the schema); the
checks of arguments and results are `jsonschema_rs`'s (Rust, 2020-12 with formats), which costs a
call about 2 µs where `jsonschema` cost 150 (bench/output_schema.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import orjson
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from domain.errors import Violation

MAX_SCHEMA_CHARS = 65_536
MAX_SCHEMA_DEPTH = 32
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# Keywords whose subschemas apply to the same instance (no part of it consumed): a `$ref` cycle
# through only these never ends.
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas",)


def schema_violations(schema: Any, field: str) -> list[Violation]:
    """What is wrong with a tool's `inputSchema` or `outputSchema` at `field` (none: it is fine)."""
    if not isinstance(schema, dict):
        return [Violation(field, "V6", "must be a JSON Schema object")]
    deepest = _depth(schema)
    if deepest > MAX_SCHEMA_DEPTH:
        return [Violation(field, "V6", f"nests objects and arrays {deepest} levels deep; at most {MAX_SCHEMA_DEPTH}")]
    try:
        size = len(orjson.dumps(schema))
    except TypeError:  # an integer beyond 64 bits: no JSON peer reads it the same (I-JSON, RFC 7493)
        return [Violation(field, "V6", "holds an integer beyond the 64-bit range; numbers must fit in 64 bits")]
    if size > MAX_SCHEMA_CHARS:
        return [Violation(field, "V6", f"is {size} characters of JSON; at most {MAX_SCHEMA_CHARS}")]
    given = schema.get("$schema", DIALECT)
    if given != DIALECT:
        return [Violation(f"{field}.$schema", "V6", f"must be {DIALECT} (JSON Schema 2020-12), or left out")]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        return [Violation(f"{field}{where}", "V6", f"not a valid JSON Schema 2020-12: {error.message}")]
    if schema.get("type") != "object":
        return [Violation(f"{field}.type", "V6", 'must be "object": a tool takes and gives named values (MCP)')]
    return _ref_violations(schema, field)


def _depth(value: Any) -> int:
    """How deep `value` nests objects and arrays; never recurses."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_SCHEMA_DEPTH:
            return level
        stack.extend((child, level + 1) for child in children)
    return deepest


def _ref_violations(schema: dict[str, Any], field: str) -> list[Violation]:
    """Every `$ref` and `$dynamicRef` points inside the document (`#` or `#/…`), to something there,
    and no chain of them loops through keywords that consume nothing of the instance."""
    found: list[Violation] = []
    edges: dict[str, list[str]] = {}
    for pointer, node in _subschemas(schema, ""):
        out = edges.setdefault(pointer, [])
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if ref is None:
                continue
            where = f"{field}{_dotted(pointer)}.{keyword}"
            if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
                found.append(Violation(where, "V6", "must point inside the schema (\"#\" or \"#/…\"): nothing is fetched"))
                continue
            target = ref[1:]
            if _resolve(schema, target) is None:
                found.append(Violation(where, "V6", f"points to {ref!r}, which the schema does not hold"))
                continue
            out.append(target)
        for keyword in _IN_PLACE_LISTS:
            if isinstance(node.get(keyword), list):
                out += [f"{pointer}/{keyword}/{i}" for i in range(len(node[keyword]))]
        for keyword in _IN_PLACE_ONE:
            if isinstance(node.get(keyword), dict):
                out.append(f"{pointer}/{keyword}")
        for keyword in _IN_PLACE_MAPS:
            if isinstance(node.get(keyword), dict):
                out += [f"{pointer}/{keyword}/{_escaped(k)}" for k in node[keyword]]
    if found:
        return found
    loop = _loop(edges)
    if loop is not None:
        return [Violation(f"{field}{_dotted(loop)}.$ref", "V6",
                          "loops back to itself without consuming any part of the value: a validator would never end")]
    return []


def _subschemas(schema: Any, pointer: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every object of the document with its JSON pointer (a subschema or not: a `$ref` is found
    wherever it stands); never recurses."""
    stack = [(schema, pointer)]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            yield at, node
            stack.extend((v, f"{at}/{_escaped(k)}") for k, v in node.items() if k not in ("enum", "const", "examples", "default"))
        elif isinstance(node, list):
            stack.extend((v, f"{at}/{i}") for i, v in enumerate(node))


def _loop(edges: dict[str, list[str]]) -> str | None:
    """A node on a cycle of `edges`, if any (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    for start in edges:
        if start in state:
            continue
        stack = [(start, iter(edges.get(start, ())))]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
            elif state.get(child) == 1:
                return child
            elif child not in state:
                state[child] = 1
                stack.append((child, iter(edges.get(child, ()))))
    return None


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _resolve(schema: Any, pointer: str) -> Any:
    node = schema
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node if isinstance(node, (dict, bool)) else None


def _dotted(pointer: str) -> str:
    """`/properties/a/items/0` as `.properties.a.items[0]`."""
    out = ""
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


# -- checking values ------------------------------------------------------------------------------

_compiled: dict[int, tuple[dict[str, Any], Any]] = {}
_MAX_COMPILED = 512  # (a draft's Test compiles its own: the cache is emptied when full)


def validator(schema: dict[str, Any]) -> Any:
    """The compiled validator of a schema document (formats checked), made once per document: a
    tool's version holds its schema as one object, which is the key (its identity, checked)."""
    held = _compiled.get(id(schema))
    if held is not None and held[0] is schema:
        return held[1]
    made = jsonschema_rs.Draft202012Validator(schema, validate_formats=True)
    if len(_compiled) >= _MAX_COMPILED:
        _compiled.clear()
    _compiled[id(schema)] = (schema, made)
    return made


def path_of(error: Any, root: str) -> str:
    """A validation error's place in the value, as `root.address.city` or `root.items[2]`."""
    return root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.instance_path)


def _in_order(errors: Any) -> list[Any]:
    return sorted(errors, key=lambda e: [str(p) for p in e.instance_path])


def input_violations(schema: dict[str, Any], arguments: Any) -> list[Violation]:
    """V1 for a caller's arguments against the tool's `inputSchema`: each problem by its path."""
    check = validator(schema)
    if check.is_valid(arguments):
        return []
    return [Violation(path_of(e, "input"), "V1", e.message) for e in _in_order(check.iter_errors(arguments))[:20]]


def output_problem(schema: dict[str, Any], value: Any) -> str | None:
    """Why a tool's structured result does not match its `outputSchema` (None: it does), naming the
    first mismatch's path in the result (`$.items[2].name`)."""
    check = validator(schema)
    if check.is_valid(value):
        return None
    error = _in_order(check.iter_errors(value))[0]
    return f"the result does not match the tool's outputSchema at {path_of(error, '$')}: {error.message}"
