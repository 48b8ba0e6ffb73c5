"""Sample native tools for the tools-file tests (named by `entrypoint: "tests.native_tools:…"`)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from pydantic import Field


def add(a: int, b: int = 2) -> int:
    return a + b


def greet(name: Annotated[str, Field(description="Who to greet")], *, excited: bool = False) -> dict[str, str]:
    return {"greeting": f"Hello, {name}{'!' if excited else '.'}"}


def divide(a: float, b: float) -> float:
    return a / b


def today() -> date:
    return date(2024, 5, 6)


def endless() -> object:
    return object()


def pairs(*values: int) -> int:
    return len(values)


class Opaque:
    """A type pydantic has no JSON Schema for."""


def opaque(thing: Opaque) -> str:
    return "never called"


NOT_A_FUNCTION = 42


def nested(levels: int) -> list:
    """A result nested `levels` arrays deep (issue 12: the depth limit on results)."""
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def lone_surrogates() -> dict[str, object]:
    """A result whose strings and keys hold lone UTF-16 surrogates (issue 12: replaced with U+FFFD)."""
    return {"text": "a\ud800b", "\udc00key": ["\udfff"]}
