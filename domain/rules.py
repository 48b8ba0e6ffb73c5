"""Naming and limit rules of docs/rules.md (R1, R3, R4, R9, V1), checked on every save, and a tool's input.

Each check returns `Violation`s rather than raising at the first one, so that a client learns every
problem of a request at once. `validate_definition` raises `InvalidDefinition` with all of them;
`validate_input` raises `InvalidInput` before any JavaScript runs. `input_schema` states the same
V1 rules as the JSON Schema an MCP client sees, so that what the schema accepts the tool accepts.
"""

from __future__ import annotations

import copy
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from domain import annotations as tool_hints
from domain.errors import InvalidDefinition, InvalidInput, Violation
from domain.schemas import input_violations, schema_violations

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
# The largest integer a JavaScript number holds exactly (Number.MAX_SAFE_INTEGER).
MAX_SAFE_INTEGER = 2**53 - 1

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


# What "visible" means for a description, a tag or a name: not made only of the characters Python's
# str.strip() removes (str.isspace()). The OpenAPI document states it as this pattern, which lists
# them, because JSON Schema's regular expressions are ECMA-262's, whose \s is another set (it lacks
# U+001C to U+001F and U+0085, and has U+FEFF): with a bare \S a validator and this service would
# disagree on, say, "\x1c".
VISIBLE_PATTERN = "[^\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"


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
    """V1: whether a JSON value is a valid value of the given parameter type, as it stands."""
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_SAFE_INTEGER
    if type_ == "decimal":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and _is_finite(value)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "array":
        return isinstance(value, list)
    if type_ == "object":
        return isinstance(value, dict)
    if type_ == "date":
        return isinstance(value, str) and normal_date(value) is not None
    return False


def _is_finite(number: int | float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an int too large for a float is Infinity in JavaScript
        return False


# ISO 8601 as RFC 3339 profiles it, which is what JSON Schema's `date` and `date-time` formats mean:
# a full date, or a date-time with seconds and a time zone. A local time without a zone is refused
# rather than guessed: the sandbox's zone is not the caller's.
_DATE = r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
_FULL_DATE = re.compile(_DATE + r"\Z")
_DATE_TIME = re.compile(
    _DATE + r"[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))\Z"
)


def normal_date(text: str) -> str | None:
    """The instant an RFC 3339 date or date-time names, as `Date.prototype.toISOString` writes it.

    A date alone is midnight UTC (as `new Date("2024-05-06")` reads it); fractions beyond the
    millisecond are cut, and a leap second is the first second of the next day, since a
    JavaScript `Date` has neither. None when the text is not such a date, and (Python's limit)
    for an instant outside the years 1 to 9999 in UTC.
    """
    try:
        if match := _FULL_DATE.match(text):
            year, month, day = map(int, match.groups())
            instant = datetime(year, month, day, tzinfo=timezone.utc)
        elif match := _DATE_TIME.match(text):
            year, month, day, hour, minute, second = map(int, match.groups()[:6])
            fraction, utc, sign, zone_hours, zone_minutes = match.groups()[6:]
            if zone_hours is not None and (int(zone_hours) > 23 or int(zone_minutes) > 59):
                return None
            offset = timedelta() if utc else int(sign + "1") * timedelta(hours=int(zone_hours), minutes=int(zone_minutes))
            leap = second == 60
            millis = int((fraction or ".")[1:4].ljust(3, "0"))
            instant = datetime(year, month, day, hour, minute, 59 if leap else second, millis * 1000, timezone(offset))
            instant = instant.astimezone(timezone.utc)
            if leap:
                if (instant.hour, instant.minute) != (23, 59):  # RFC 3339: leap seconds end a UTC day
                    return None
                instant += timedelta(seconds=1)
        else:
            return None
    except (ValueError, OverflowError):  # no such day or time
        return None
    return (
        f"{instant.year:04d}-{instant.month:02d}-{instant.day:02d}"
        f"T{instant.hour:02d}:{instant.minute:02d}:{instant.second:02d}.{instant.microsecond // 1000:03d}Z"
    )


def tool_violations(tool: dict[str, Any], field: str = "tool", *, fetching: bool = False) -> list[Violation]:
    """R4 and R9 for the tool section (already shaped by the API schema); R17 for its annotations,
    `fetching` when the module's code uses `http.fetch`."""
    found = parameters_violations(tool.get("inputParameters", []), f"{field}.inputParameters")
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
    for key in ("inputSchema", "outputSchema"):
        if tool.get(key) is not None:
            found += schema_violations(tool[key], f"{field}.{key}")
    # R17: annotations within what the module's own code shows (what its imports show: at save, by the application).
    found += tool_hints.violations(tool.get("annotations"), tool_hints.module_facts("" if fetching else None), f"{field}.annotations")
    found += tool_hints.icon_violations(tool.get("icons"), f"{field}.icons")
    if tool.get("inputSchema") is not None and tool.get("inputParameters"):
        found.append(Violation(f"{field}.inputSchema", "V6", "give either inputParameters or inputSchema, not both"))
    found += examples_violations(tool, field)
    return found


MAX_EXAMPLES = 20
EXAMPLE_KEYS = frozenset({"name", "input", "output", "error"})
# The failures an example may expect (`ExecutionError.type`), as the sandbox reports them.
ERROR_TYPES = ("syntax", "runtime", "timeout", "memory", "stack", "link", "result")


def examples_violations(tool: dict[str, Any], field: str = "tool") -> list[Violation]:
    """B4: a tool's examples, each a `name` (an identifier, unique), an `input` that V1 accepts for
    the tool's parameters, and exactly one of an expected `output` (any JSON) or an expected
    `error` type. Each problem is named by its path (`tool.examples[2].input.amount`)."""
    examples = tool.get("examples") or []
    where = f"{field}.examples"
    if not isinstance(examples, list):
        return [Violation(where, "B4", "must be a list of examples")]
    found: list[Violation] = []
    parameters = tool.get("inputParameters", [])
    if len(examples) > MAX_EXAMPLES:
        found.append(Violation(where, "B4", f"at most {MAX_EXAMPLES} examples, got {len(examples)}"))
    seen: set[str] = set()
    for i, example in enumerate(examples):
        at = f"{where}[{i}]"
        if not isinstance(example, dict):
            found.append(Violation(at, "B4", "must be an object with name, input, and output or error"))
            continue
        unknown = sorted(set(example) - EXAMPLE_KEYS)
        if unknown:
            found.append(Violation(f"{at}.{unknown[0]}", "B4", "is not a field of an example (name, input, output, error)"))
        name = example.get("name")
        found += id_violations(name, f"{at}.name")
        if isinstance(name, str) and name in seen:
            found.append(Violation(f"{at}.name", "B4", f"example names must be unique: {name!r} repeats"))
        seen.add(name if isinstance(name, str) else "")
        has_output, has_error = "output" in example, example.get("error") is not None
        if has_output == has_error:
            found.append(Violation(at, "B4", "must expect exactly one of an output or an error type"))
        if has_error and example["error"] not in ERROR_TYPES:
            found.append(Violation(f"{at}.error", "B4", f"must be one of {', '.join(ERROR_TYPES)}"))
        for key in ("input", "output"):
            if _has_reserved_object(example.get(key)):
                found.append(Violation(f"{at}.{key}", "B4", RESERVED_OBJECT))
        if tool.get("inputSchema") is not None:
            if not schema_violations(tool["inputSchema"], "inputSchema"):
                given = example.get("input")
                found += [Violation(f"{at}.{v.field}", v.rule, v.message)
                          for v in input_violations(tool["inputSchema"], {} if given is None else given)]
            continue
        if any(p.get("type") not in PARAMETER_TYPES for p in parameters):
            continue  # V1 names the unknown type; an input cannot be checked against it
        try:
            validate_input(parameters, example.get("input"), omitted_as_null=tool.get("style") == "script")
        except InvalidInput as refused:
            found += [Violation(f"{at}.{v.field}", v.rule, v.message) for v in refused.violations]
    return found


def parameters_violations(params: list[dict[str, Any]], field: str) -> list[Violation]:
    """R4, V1 and R9 for a tool's typed parameters (a code tool's `inputParameters`, an API URL
    tool's `parameters`), each named by its path under `field`."""
    found: list[Violation] = []
    if len(params) > MAX_PARAMETERS:
        found.append(Violation(field, "R4", f"at most {MAX_PARAMETERS} parameters, got {len(params)}"))
    seen: set[str] = set()
    for i, param in enumerate(params):
        where = f"{field}[{i}]"
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
            elif _has_reserved_object(param["default"]):
                found.append(Violation(f"{where}.default", "V1", RESERVED_OBJECT))
        if len(param.get("description", "")) > MAX_DESCRIPTION:
            found.append(Violation(f"{where}.description", "R9", f"must be at most {MAX_DESCRIPTION} characters"))
    return found


RESERVED_OBJECT = ("an object whose keys are exactly _type_ and _data_ is reserved by the event store (it would be read "
                   "back as a typed value); add or rename a key")


def has_reserved_object(value: Any) -> bool:
    """Whether a JSON value a definition stores holds the event store's reserved shape."""
    return _has_reserved_object(value)


def _has_reserved_object(value: Any) -> bool:
    """Whether a JSON value holds `{"_type_": …, "_data_": …}`: eventsourcing's JSON transcoder
    reads such an object back as a registered type (or fails on an unknown one), so a module
    whose definition held one could never be loaded, nor projected, again."""
    if isinstance(value, dict):
        return value.keys() == {"_type_", "_data_"} or any(_has_reserved_object(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_reserved_object(v) for v in value)
    return False


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
    normal = {
        "inputParameters": params,
        "timeoutMillis": _given(tool, "timeoutMillis", DEFAULT_TIMEOUT.get(style, DEFAULT_TIMEOUT["module"])),
        "memoryLimitMb": _given(tool, "memoryLimitMb", DEFAULT_MEMORY_MB),
        "exposeInChat": bool(tool.get("exposeInChat", False)),
        "enabled": tool.get("enabled", True) is not False,
        "tags": tags,
        "style": style,
    }
    for key in ("annotations", "icons"):
        # Only when given (R17), as the schemas.
        if tool.get(key) is not None:
            normal[key] = tool[key]
    for key in ("inputSchema", "outputSchema"):
        # Only when given: a definition stored before they existed compares equal to itself sent again.
        if tool.get(key) is not None:
            normal[key] = tool[key]
    examples = tool.get("examples")
    if examples:
        # Only when there are some: a definition stored before examples existed compares equal
        # to the same definition sent again (no new event for nothing).
        normal["examples"] = [
            {k: v for k, v in e.items() if not (k == "error" and v is None)}  # unknown keys stay, to be refused
            if isinstance(e, dict) else e
            for e in examples
        ] if isinstance(examples, list) else examples
    return normal


def _given(section: dict[str, Any], key: str, default: Any) -> Any:
    value = section.get(key)
    return default if value is None else value


def validate_definition(definition: dict[str, Any]) -> None:
    """Raises `InvalidDefinition` naming every broken rule of a whole definition."""
    found = description_violations(definition["description"])
    found += source_violations(definition["content"])
    found += imports_violations(definition["imports"])
    if definition.get("tool") is not None:
        found += tool_violations(definition["tool"], fetching=tool_hints.uses_http(definition["content"]))
    if found:
        raise InvalidDefinition(found)


def validate_input(parameters: list[dict[str, Any]], value: Any, *, omitted_as_null: bool = False) -> Any:
    """V1 before any JavaScript runs: the arguments a tool is called with, or `InvalidInput`.

    Required values must be present, every value of its declared type (an integer may come as
    3.0; nothing else is converted), and no argument undeclared; defaults fill omitted optional
    values. A date is passed on as `toISOString` writes it, for the sandbox to make a `Date` of.
    With `omitted_as_null` (script style, where each parameter is a variable) an omitted optional
    value without a default is null, so that its variable exists. A tool that declares no
    parameters receives its input as given (a plan's later node, the output of the one before;
    a caller's own arguments are held to the tool's closed schema first, `undeclared_violations`).
    """
    if not parameters:
        return value
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput([Violation("input", "V1", "must be a JSON object of the tool's parameters")])
    arguments: dict[str, Any] = {}
    found: list[Violation] = []
    for param in parameters:
        name, type_ = param["name"], param["type"]
        given = value.get(name)
        if given is None and param["required"]:
            found.append(Violation(f"input.{name}", "V1", f"the required parameter {name!r} is missing"))
            continue
        if given is None and param.get("default") is not None:
            given = param["default"]
        if given is None:
            if name in value or omitted_as_null:
                arguments[name] = None
            continue
        argument = _as_argument(given, type_)
        if argument is _REFUSED:
            found.append(Violation(f"input.{name}", "V1", f"must be {_A[type_]}, got {json_type(given)}"))
        else:
            arguments[name] = argument
    declared = [param["name"] for param in parameters]
    found += [
        Violation(f"input.{name}", "V1", f"unknown parameter {name!r}; the tool takes: {', '.join(declared)}")
        for name in value
        if name not in declared
    ]
    if found:
        raise InvalidInput(found)
    return arguments


_REFUSED: Any = object()


def undeclared_violations(schema: dict[str, Any], arguments: Any) -> list[Violation]:
    """V1 for a caller's arguments to a tool whose advertised schema is closed and declares no
    property (`input_schema([])`): each argument is unknown. (Where a closed schema declares
    properties, the tool's own check names each unknown argument with every other fault.)"""
    if not isinstance(arguments, dict) or schema.get("additionalProperties") is not False or schema.get("properties") != {}:
        return []
    return [Violation(f"input.{name}", "V1", f"unknown parameter {name!r}; the tool takes no parameters") for name in arguments]


def _as_argument(value: Any, type_: str) -> Any:
    """The value the sandbox receives for a parameter, or `_REFUSED`."""
    if type_ == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 3.0 is the integer 3 (as JSON Schema says)
    if not value_matches_type(value, type_):
        return _REFUSED
    return normal_date(value) if type_ == "date" else value


_A = {
    "string": "a string",
    "integer": f"an integer from {-MAX_SAFE_INTEGER} to {MAX_SAFE_INTEGER} (what JavaScript holds exactly)",
    "decimal": "a finite number",
    "date": "an ISO 8601 date (2024-05-06) or date-time with a time zone (2024-05-06T10:00:00Z)",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
}


# JSON Schema (draft 2020-12) of each parameter type. "date" takes both the formats `normal_date` reads.
_SCHEMA_OF_TYPE: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER},
    "decimal": {"type": "number"},
    "date": {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}]},
    "boolean": {"type": "boolean"},
    "array": {"type": "array"},
    "object": {"type": "object"},
}


def tool_input_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema MCP shows of a tool section's arguments: its own `inputSchema` as it is (V6),
    else the one its typed parameters make."""
    given = tool.get("inputSchema")
    return given if given is not None else input_schema(tool["inputParameters"])


def input_schema(parameters: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a tool's arguments, as MCP's `inputSchema` (docs/mcp.md).

    It accepts what `validate_input` accepts, except that an optional value may not be null (a
    client that follows the schema is never refused), and for dates of the years 0000 and 10000 in
    UTC, which Python's `datetime` cannot hold. A tool without parameters takes no argument: an
    empty object, closed (MCP 2025-11-25's advice; strict clients such as OpenAI's take only a
    closed schema as strict), which a caller's call enforces (`undeclared_violations`).
    """
    if not parameters:
        return {"type": "object", "properties": {}, "additionalProperties": False}
    properties: dict[str, Any] = {}
    for param in parameters:
        schema = copy.deepcopy(_SCHEMA_OF_TYPE.get(param["type"], {}))
        if param.get("description"):
            schema["description"] = param["description"]
        if param.get("default") is not None:
            schema["default"] = param["default"]
        properties[param["name"]] = schema
    return {
        "type": "object",
        "properties": properties,
        "required": [param["name"] for param in parameters if param["required"]],
        "additionalProperties": False,
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
