"""The settings table of docs/configuration.md, generated from the settings object at build time.

`mkdocs build` calls `on_page_markdown` for every page (mkdocs.yml, `hooks:`); on the configuration
page it replaces the marker below with one row per field of `infrastructure.settings.Settings`:
its environment variables (every alias pydantic-settings reads), type, default and description.
The page cannot drift from the code: a new setting appears the next time the docs are built, and
tests/unit/test_docs.py fails when a field has no description.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

MARKER = "<!-- settings-table -->"


def _settings_class() -> type:
    # Imported when rendering, not when MkDocs loads the hook, so that a broken import names itself
    # in the build's error rather than stopping MkDocs before it reads its configuration. The
    # repository's root comes first on the path: the settings of this checkout, installed or not.
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    from infrastructure.settings import Settings

    return Settings


def environment_variables(name: str, field: FieldInfo) -> list[str]:
    """Every environment variable that sets the field, upper-cased (pydantic-settings reads them in any case)."""
    alias = field.validation_alias
    choices = getattr(alias, "choices", None) or [alias or name]
    names: list[str] = []
    # The design's name first (TOOLSMITH_DATA_DIR), then the field's own (DATA_DIR).
    for choice in sorted((str(c) for c in choices), key=lambda c: c.lower() == name):
        variable = choice.upper()
        if variable not in names:
            names.append(variable)
    return names


def type_name(annotation: Any) -> str:
    """A reader's name for the field's type: `integer`, `one of: in-process, external`, `secret`, …"""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return "one of: " + ", ".join(f"`{value}`" for value in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(members) < len(typing.get_args(annotation))
        named = " or ".join(type_name(a) for a in members)
        return f"{named} (optional)" if optional else named
    return {str: "text", int: "integer", float: "number", bool: "boolean", SecretStr: "secret"}.get(
        annotation, getattr(annotation, "__name__", str(annotation)).lower())


def constraints(field: FieldInfo) -> str:
    """The bounds pydantic checks at start (`≥ 1`, `≤ 1000`, a pattern), as a reader writes them."""
    shown = []
    for item in field.metadata:
        for attribute, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "length ≥")):
            value = getattr(item, attribute, None)
            if value is not None:
                shown.append(f"{sign} {value:,}" if isinstance(value, int) else f"{sign} {value}")
        pattern = getattr(item, "pattern", None)
        if pattern:
            shown.append(f"matches `{pattern}`")
    return ", ".join(shown)


def default_text(field: FieldInfo) -> str:
    """The default as the docs show it: a factory by its docstring, an unset secret as `unset`."""
    if field.default_factory is not None:
        doc = inspect.getdoc(field.default_factory) or field.default_factory.__name__
        return doc.splitlines()[0].rstrip(".")
    if field.default is None or field.default is PydanticUndefined:
        return "unset"
    if field.default == "":
        return "empty"
    if isinstance(field.default, bool):
        return "true" if field.default else "false"
    if isinstance(field.default, int):
        return f"`{field.default:,}`"
    return f"`{field.default}`"


def _cell(text: str) -> str:
    # A pipe would end the cell; a newline would end the row.
    return re.sub(r"\s+", " ", text).replace("|", "\\|").strip()


def render_settings_table(settings_class: type | None = None) -> str:
    """The Markdown table of every setting, in the order the settings object declares them."""
    settings_class = settings_class or _settings_class()
    rows = [
        "| environment variable | type | default | description |",
        "|---|---|---|---|",
    ]
    for name, field in settings_class.model_fields.items():
        variables = environment_variables(name, field)
        first = f"`{variables[0]}`" + "".join(f" (also `{v}`)" for v in variables[1:])
        kind = type_name(field.annotation)
        bounds = constraints(field)
        if bounds:
            kind = f"{kind}, {bounds}"
        rows.append("| " + " | ".join(_cell(c) for c in (
            first, kind, default_text(field), field.description or "")) + " |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs hook: the configuration page gets the table in place of its marker."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, render_settings_table())
