"""Naming and limit rules of DESIGN §2 (R1, R3, R4, R9, V1), checked on every save.

Each check returns `Violation`s rather than raising at the first one, so that a client learns every
problem of a request at once. `validate_definition` raises `InvalidDefinition` with all of them.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

from domain.errors import InvalidDefinition, InvalidInput, Violation

MAX_ID_LENGTH = 64
MAX_DESCRIPTION = 2_000
MAX_SOURCE = 262_144
MAX_TAGS = 20
MAX_PARAMETERS = 30
MAX_IMPORTS = 20
MAX_TAG_LENGTH = 64
TIMEOUT_RANGE = (100, 10_000)
DEFAULT_TIMEOUT = {"module": 3_000, "script": 5_000}
MEMORY_RANGE = (1, 4_096)
DEFAULT_MEMORY_MB = 128
STYLES = ("module", "script")
PARAMETER_TYPES = ("string", "integer", "decimal", "date", "boolean", "array", "object")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# ECMAScript reserved words, the words reserved in strict mode, and the literals.
RESERVED_WORDS = frozenset(
    """
    await break case catch class const continue debugger default delete do else enum export extends
    false finally for function if import in instanceof new null return super switch this throw true
    try typeof var void while with yield
    implements interface let package private protected public static
    arguments eval
    """.split()
)
# Names the sandbox gives every module (or that JavaScript fixes): a module with one of these ids
# would shadow them in every module that imports it.
SANDBOX_NAMES = frozenset("exports log ai input http undefined NaN Infinity globalThis".split())


def id_violations(value: Any, field: str = "id") -> list[Violation]:
    """R1: a JavaScript identifier of 1–64 ASCII letters, digits and `_`, not a reserved word."""
    if not isinstance(value, str):
        return [Violation(field, "R1", "must be a string")]
    if not value:
        return [Violation(field, "R1", "must not be empty")]
    if len(value) > MAX_ID_LENGTH:
        return [Violation(field, "R1", f"must be at most {MAX_ID_LENGTH} characters, got {len(value)}")]
    if "$" in value:
        return [Violation(field, "R1", "must not contain '$'")]
    if value[0].isdigit():
        return [Violation(field, "R1", "must not start with a digit")]
    if not _IDENTIFIER.match(value):
        return [Violation(field, "R1", "may contain only ASCII letters, digits and '_'")]
    if value in RESERVED_WORDS:
        return [Violation(field, "R1", f"{value!r} is a reserved word of JavaScript")]
    if value in SANDBOX_NAMES:
        return [Violation(field, "R1", f"{value!r} is a name the sandbox gives every module")]
    return []


def is_valid_id(value: Any) -> bool:
    return not id_violations(value)


def description_violations(value: Any, field: str = "description") -> list[Violation]:
    """R3: required, 1–2,000 characters."""
    if not isinstance(value, str):
        return [Violation(field, "R3", "must be a string")]
    if not value.strip():
        return [Violation(field, "R3", "is required")]
    if len(value) > MAX_DESCRIPTION:
        return [Violation(field, "R3", f"must be at most {MAX_DESCRIPTION} characters, got {len(value)}")]
    return []


def source_violations(value: Any, field: str = "draftContent") -> list[Violation]:
    """R4: at most 262,144 characters."""
    if not isinstance(value, str):
        return [Violation(field, "R4", "must be a string")]
    if len(value) > MAX_SOURCE:
        return [Violation(field, "R4", f"must be at most {MAX_SOURCE} characters, got {len(value)}")]
    if "\x00" in value:
        # The engine reads source as a C string; write "\0" inside a string literal instead.
        return [Violation(field, "R4", "must not contain the NUL character (U+0000)")]
    return []


def imports_violations(value: Any, field: str = "draftImports") -> list[Violation]:
    """R4 and the shape half of R5: at most 20 distinct module ids."""
    if not isinstance(value, list):
        return [Violation(field, "R4", "must be a list of module ids")]
    found: list[Violation] = []
    if len(value) > MAX_IMPORTS:
        found.append(Violation(field, "R4", f"at most {MAX_IMPORTS} imports, got {len(value)}"))
    for i, name in enumerate(value):
        found += id_violations(name, f"{field}[{i}]")
    if len(set(map(str, value))) != len(value):
        found.append(Violation(field, "R4", "imports must be distinct"))
    return found


def value_matches_type(value: Any, type_: str) -> bool:
    """V1: whether a JSON value can stand for a parameter of the given type."""
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "decimal":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "array":
        return isinstance(value, list)
    if type_ == "object":
        return isinstance(value, dict)
    if type_ == "date":
        return isinstance(value, str) and _parses_as_date(value)
    return False


def _parses_as_date(text: str) -> bool:
    try:
        if len(text) == 10:
            date.fromisoformat(text)
        else:
            datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def tool_violations(tool: dict[str, Any], field: str = "tool") -> list[Violation]:
    """R4 and R9 for the tool section (already shaped by the API schema)."""
    found: list[Violation] = []
    params = tool.get("inputParameters", [])
    if len(params) > MAX_PARAMETERS:
        found.append(Violation(f"{field}.inputParameters", "R4", f"at most {MAX_PARAMETERS} parameters, got {len(params)}"))
    seen: set[str] = set()
    for i, param in enumerate(params):
        where = f"{field}.inputParameters[{i}]"
        found += id_violations(param["name"], f"{where}.name")
        if param["name"] in seen:
            found.append(Violation(f"{where}.name", "R4", f"parameter names must be unique: {param['name']!r} repeats"))
        seen.add(param["name"])
        if param["type"] not in PARAMETER_TYPES:
            found.append(Violation(f"{where}.type", "V1", f"must be one of {', '.join(PARAMETER_TYPES)}"))
        elif "default" in param and param["default"] is not None:
            if param["required"]:
                found.append(Violation(f"{where}.default", "V1", "only an optional parameter can have a default"))
            elif not value_matches_type(param["default"], param["type"]):
                found.append(Violation(f"{where}.default", "V1", f"is not a valid {param['type']}"))
        if len(param.get("description", "")) > MAX_DESCRIPTION:
            found.append(Violation(f"{where}.description", "R9", f"must be at most {MAX_DESCRIPTION} characters"))
    low, high = TIMEOUT_RANGE
    if not low <= tool["timeoutMillis"] <= high:
        found.append(Violation(f"{field}.timeoutMillis", "R9", f"must be between {low} and {high}, got {tool['timeoutMillis']}"))
    low, high = MEMORY_RANGE
    if not low <= tool["memoryLimitMb"] <= high:
        found.append(Violation(f"{field}.memoryLimitMb", "R9", f"must be between {low} and {high}, got {tool['memoryLimitMb']}"))
    if tool["style"] not in STYLES:
        found.append(Violation(f"{field}.style", "R9", f"must be one of {', '.join(STYLES)}"))
    tags = tool.get("tags", [])
    if len(tags) > MAX_TAGS:
        found.append(Violation(f"{field}.tags", "R4", f"at most {MAX_TAGS} tags, got {len(tags)}"))
    for i, tag in enumerate(tags):
        if not tag.strip() or len(tag) > MAX_TAG_LENGTH:
            found.append(Violation(f"{field}.tags[{i}]", "R9", f"a tag is 1 to {MAX_TAG_LENGTH} visible characters"))
    return found


def normalise_tool(tool: dict[str, Any] | None) -> dict[str, Any] | None:
    """Fills the R9 defaults of a tool section so that stored definitions are complete."""
    if tool is None:
        return None
    style = tool.get("style") or "module"
    params = [
        {
            "name": p["name"],
            "description": p.get("description") or "",
            "required": bool(p.get("required", False)),
            "type": p.get("type") or "string",
            **({"default": p["default"]} if p.get("default") is not None else {}),
        }
        for p in tool.get("inputParameters") or []
    ]
    tags: list[str] = []
    for tag in tool.get("tags") or []:
        if tag not in tags:
            tags.append(tag)
    return {
        "inputParameters": params,
        "timeoutMillis": _given(tool, "timeoutMillis", DEFAULT_TIMEOUT.get(style, DEFAULT_TIMEOUT["module"])),
        "memoryLimitMb": _given(tool, "memoryLimitMb", DEFAULT_MEMORY_MB),
        "exposeInChat": bool(tool.get("exposeInChat", False)),
        "enabled": tool.get("enabled", True) is not False,
        "tags": tags,
        "style": style,
    }


def _given(section: dict[str, Any], key: str, default: Any) -> Any:
    value = section.get(key)
    return default if value is None else value


def validate_definition(definition: dict[str, Any]) -> None:
    """Raises `InvalidDefinition` naming every broken rule of a whole definition."""
    found = description_violations(definition["description"])
    found += source_violations(definition["content"])
    found += imports_violations(definition["imports"])
    if definition.get("tool") is not None:
        found += tool_violations(definition["tool"])
    if found:
        raise InvalidDefinition(found)


def validate_input(parameters: list[dict[str, Any]], value: Any) -> Any:
    """V1 before any JavaScript runs: required values present, types right, defaults applied.

    A tool that declares no parameters receives its input as given.
    """
    if not parameters:
        return value
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput([Violation("input", "V1", "must be a JSON object of the tool's parameters")])
    arguments = dict(value)
    found: list[Violation] = []
    for param in parameters:
        name, type_ = param["name"], param["type"]
        given = value.get(name)
        if given is None:
            if param["required"]:
                found.append(Violation(f"input.{name}", "V1", f"the required parameter {name!r} is missing"))
            elif "default" in param:
                arguments[name] = param["default"]
            continue
        if type_ == "integer" and isinstance(given, float) and given.is_integer():
            given = arguments[name] = int(given)
        if not value_matches_type(given, type_):
            found.append(Violation(f"input.{name}", "V1", f"must be {_A[type_]}, got {json_type(given)}"))
    if found:
        raise InvalidInput(found)
    return arguments


_A = {
    "string": "a string",
    "integer": "an integer",
    "decimal": "a number",
    "date": "an ISO 8601 date",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
}


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
