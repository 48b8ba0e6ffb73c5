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
