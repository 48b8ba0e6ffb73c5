"""Domain objects as the API's JSON."""

from __future__ import annotations

from typing import Any

from domain.model import CodeModule
from domain.ports import ExecutionResult
from domain.rules import input_schema


def module_out(module: CodeModule, used_by: list[str]) -> dict[str, Any]:
    return {
        "id": module.module_id,
        "description": module.current["description"],
        "state": module.state,
        "draft": module.draft,
        "published": module.published_view(),
        "inputSchema": _input_schema(module),
        "usedBy": used_by,
        "createdBy": module.created_by,
        "updatedAt": module.updated_at,
        "updatedBy": module.updated_by,
    }


def _input_schema(module: CodeModule) -> dict[str, Any] | None:
    """What callers are offered: the published tool's arguments, or the draft's before a first publish."""
    definition = module.published if module.published is not None else module.draft
    tool = definition["tool"] if definition is not None else None
    return None if tool is None else input_schema(tool["inputParameters"])


def execution_out(result: ExecutionResult) -> dict[str, Any]:
    return {
        "output": result.output,
        "error": result.error.as_dict() if result.error else None,
        "logs": list(result.logs),
        "durationMillis": result.duration_millis,
    }
