"""Placeholder until the tools file lands: no declared tools."""

from __future__ import annotations

from pathlib import Path

from domain.catalog import DeclaredTool


def load_declared_tools(path: Path | None) -> list[DeclaredTool]:
    return []
