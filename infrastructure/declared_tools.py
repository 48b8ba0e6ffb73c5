"""The tools file (`TOOLSMITH_TOOLS_FILE`): native tools (LOCAL) and external MCP tools (MCP).

A JSON object `{"native": [...], "mcp": [...]}`, read once at start. `load_declared_tools` checks
the whole file before it builds anything and raises one `ToolsFileError` naming every problem by
its path (`native[1].entrypoint: no module named 'foo'`), so a typo, an unknown key, a missing
environment variable or an entrypoint that does not import stops the start, all of them at once.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator, SchemaError
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from domain import annotations as tool_hints
from domain.catalog import LOCAL, MCP, DeclaredTool, ToolEntry
from domain.errors import Violation
from domain.rules import MAX_TAG_LENGTH, MAX_TAGS, description_violations, id_violations
from infrastructure.mcp_tool import McpTool
from infrastructure.native_tool import EntrypointError, NativeTool, resolve_entrypoint, signature_schema

TIMEOUT_MILLIS = (100, 60_000)
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_MAX_MESSAGE = 300


class ToolsFileError(ValueError):
    """The tools file cannot be used: `problems` names each one by its path in the file."""

    def __init__(self, path: Path, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        super().__init__(f"{path}: {'; '.join(problems)}")


class _Declared(BaseModel):
    # Strict: the JSON types as written ("true" is not a boolean); unknown keys are typos.
    model_config = ConfigDict(extra="forbid", strict=True, alias_generator=to_camel, frozen=True)

    name: str
    description: str
    input_schema: dict[str, Any] | None = None
    tags: list[str] = []
    expose_in_chat: bool = False
    enabled: bool = True
    # R17: what the tool's own server (or its author) says of it; nothing is derived for these kinds.
    annotations: dict[str, Any] | None = None
    icons: list[Any] | None = None

    def entry(self, call_type: str, input_schema: dict[str, Any]) -> ToolEntry:
        return ToolEntry(name=self.name, description=self.description, call_type=call_type, input_schema=input_schema,
                         tags=tuple(self.tags), expose_in_chat=self.expose_in_chat, enabled=self.enabled,
                         annotations=tool_hints.annotations(self.annotations, tool_hints.UNKNOWN),
                         icons=tool_hints.icons(self.icons))


class _Native(_Declared):
    entrypoint: str


class _Mcp(_Declared):
    url: str
    input_schema: dict[str, Any]
    remote_name: str | None = None
    headers: dict[str, str] = {}
    timeout_millis: int = Field(10_000, ge=TIMEOUT_MILLIS[0], le=TIMEOUT_MILLIS[1])


_KINDS: dict[str, type[_Declared]] = {"native": _Native, "mcp": _Mcp}


def load_declared_tools(path: Path | None) -> list[DeclaredTool]:
    """The tools the file declares, or [] without a file. Raises `ToolsFileError`."""
    if path is None:
        return []
    document = _read(path)
    problems: list[Violation] = []
    tools: list[DeclaredTool] = []
    declared_at: dict[str, str] = {}
    for kind, item, where in _items(document, problems):
        # The name and description are checked even when other fields are malformed.
        found = _naming_violations(item, where, declared_at)
        try:
            spec = _KINDS[kind].model_validate(item)
        except ValidationError as e:
            problems += found + _shape_violations(e, where, _KINDS[kind])
            continue
        found += _tags_violations(spec.tags, f"{where}.tags")
        if spec.input_schema is not None:
            found += _schema_violations(spec.input_schema, f"{where}.inputSchema")
        found += tool_hints.violations(spec.annotations, tool_hints.UNKNOWN, f"{where}.annotations")
        found += tool_hints.icon_violations(spec.icons, f"{where}.icons")
        tool: DeclaredTool | None = None
        if isinstance(spec, _Native):
            tool = _native(spec, where, found)
        elif isinstance(spec, _Mcp):
            tool = _mcp(spec, where, found)
        problems += found
        if tool is not None and not found:
            tools.append(tool)
    if problems:
        raise ToolsFileError(path, [_line(p) for p in problems])
    return tools


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ToolsFileError(path, [f"cannot be read: {getattr(e, 'strerror', None) or e}"]) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ToolsFileError(path, [f"not JSON: {e.msg} at line {e.lineno} column {e.colno}"]) from None


def _items(document: Any, problems: list[Violation]) -> list[tuple[str, Any, str]]:
    """Each declaration with its kind and path; what is not shaped as one becomes a problem."""
    if not isinstance(document, dict):
        problems.append(Violation("(file)", "", 'must be a JSON object: {"native": [...], "mcp": [...]}'))
        return []
    for key in document:
        if key not in _KINDS:
            problems.append(Violation(key, "", _unknown_key(key, list(_KINDS))))
    items = []
    for kind in _KINDS:
        listed = document.get(kind, [])
        if not isinstance(listed, list):
            problems.append(Violation(kind, "", "must be a JSON array"))
            continue
        for i, item in enumerate(listed):
            if not isinstance(item, dict):
                problems.append(Violation(f"{kind}[{i}]", "", "must be a JSON object"))
            else:
                items.append((kind, item, f"{kind}[{i}]"))
    return items


def _naming_violations(item: dict[str, Any], where: str, declared_at: dict[str, str]) -> list[Violation]:
    """R1 for the name (it shares one name space with modules and plans), a name declared only once
    in the file, and R3 for the description."""
    found = []
    if "name" in item:
        name = item["name"]
        found += id_violations(name, f"{where}.name")
        if isinstance(name, str) and name in declared_at:
            found.append(Violation(f"{where}.name", "R2", f"{name!r} is already declared at {declared_at[name]}"))
        elif isinstance(name, str):
            declared_at[name] = where
    if "description" in item:
        found += description_violations(item["description"], f"{where}.description")
    return found


def _native(spec: _Native, where: str, found: list[Violation]) -> NativeTool | None:
    try:
        function = resolve_entrypoint(spec.entrypoint)
        schema = spec.input_schema if spec.input_schema is not None else signature_schema(function)
    except EntrypointError as e:
        found.append(Violation(f"{where}.entrypoint", "", str(e)))
        return None
    return NativeTool(spec.entry(LOCAL, schema), spec.entrypoint, function)


def _mcp(spec: _Mcp, where: str, found: list[Violation]) -> McpTool | None:
    url = urlsplit(spec.url)
    if url.scheme not in ("http", "https") or not url.hostname:
        found.append(Violation(f"{where}.url", "", "must be an http(s) URL"))
    elif url.username is not None or url.password is not None:
        # A URL is logged by the HTTP client; credentials belong in `headers`.
        found.append(Violation(f"{where}.url", "", "must not carry credentials: put them in headers"))
    if spec.remote_name is not None and not spec.remote_name.strip():
        found.append(Violation(f"{where}.remoteName", "", "must not be empty"))
    headers: dict[str, str] = {}
    secrets: list[str] = []
    for name, template in spec.headers.items():
        field = f"{where}.headers.{name}"
        if not _HEADER_NAME.match(name):
            found.append(Violation(field, "", "is not a valid HTTP header name"))
        value = _expanded(template, field, found, secrets)
        if value is not None and any(c in value for c in "\r\n\0"):
            # Said without the value: it may hold a secret.
            found.append(Violation(field, "", "must not contain a line break or NUL (after expanding variables)"))
        headers[name] = value or ""
    return McpTool(spec.entry(MCP, spec.input_schema), spec.url, spec.remote_name or spec.name, headers,
                   spec.timeout_millis, tuple(secrets))


def _expanded(template: str, field: str, found: list[Violation], secrets: list[str]) -> str | None:
    """`${VAR}` replaced by the environment's value; a missing or malformed variable is a problem."""
    failed = False

    def value_of(match: re.Match[str]) -> str:
        nonlocal failed
        name = match.group(1)
        if not _VARIABLE_NAME.match(name):
            found.append(Violation(field, "", f"${{{name}}} does not name an environment variable"))
        elif not os.environ.get(name):
            found.append(Violation(field, "", f"environment variable {name} is not set"))
        else:
            secrets.append(os.environ[name])
            return os.environ[name]
        failed = True
        return ""

    value = _VARIABLE.sub(value_of, template)
    return None if failed else value


def _schema_violations(schema: dict[str, Any], field: str) -> list[Violation]:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        where = "/".join(map(str, e.absolute_path))
        return [Violation(field, "", f"not a valid JSON Schema: {e.message}" + (f" (at {where})" if where else ""))]
    if schema.get("type") != "object":
        return [Violation(field, "", 'must be a JSON Schema of an object ("type": "object"): a tool takes named arguments')]
    return []


def _tags_violations(tags: list[str], field: str) -> list[Violation]:
    """R9's rule for a code tool's tags, so that every kind of tool is tagged alike."""
    found = []
    if len(tags) > MAX_TAGS:
        found.append(Violation(field, "R4", f"at most {MAX_TAGS} tags, got {len(tags)}"))
    for i, tag in enumerate(tags):
        if not tag.strip() or len(tag) > MAX_TAG_LENGTH:
            found.append(Violation(f"{field}[{i}]", "R9", f"a tag is 1 to {MAX_TAG_LENGTH} visible characters"))
    return found


def _shape_violations(error: ValidationError, where: str, model: type[_Declared]) -> list[Violation]:
    """Pydantic's errors, each at its path in the file, with a hint for an unknown key."""
    keys = [field.alias or name for name, field in model.model_fields.items()]
    found = []
    for e in error.errors(include_url=False):
        if e["loc"] and e["loc"][0] in ("name", "description") and e["type"] != "missing":
            continue  # said by `_naming_violations`, with the design's rule
        path = where + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in e["loc"])
        message = _unknown_key(str(e["loc"][-1]), keys) if e["type"] == "extra_forbidden" else e["msg"][:1].lower() + e["msg"][1:]
        if e["type"] == "missing":
            message = "is required"
        found.append(Violation(path, "", message))
    return found


def _unknown_key(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    return f"unknown key (did you mean {close[0]!r}?)" if close else f"unknown key (known: {', '.join(known)})"


def _line(violation: Violation) -> str:
    """One problem on one line: its path, what is wrong, and the rule when the design numbers it."""
    message = " ".join(violation.message.split())
    if len(message) > _MAX_MESSAGE:
        message = message[: _MAX_MESSAGE - 1] + "…"
    rule = f" ({violation.rule})" if violation.rule else ""
    return f"{violation.field}: {message}{rule}"
