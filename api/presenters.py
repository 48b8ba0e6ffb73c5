"""Domain objects as the API's JSON."""

from __future__ import annotations

from typing import Any

from domain.model import CodeModule
from domain.ports import ExecutionResult


def module_out(module: CodeModule, used_by: list[str]) -> dict[str, Any]:
    return {
        "id": module.module_id,
        "description": module.current["description"],
        "state": module.state,
        "draft": module.draft,
        "published": module.published_view(),
        "usedBy": used_by,
        "createdBy": module.created_by,
        "updatedAt": module.updated_at,
        "updatedBy": module.updated_by,
    }


def execution_out(result: ExecutionResult) -> dict[str, Any]:
    return {
        "output": result.output,
        "error": result.error.as_dict() if result.error else None,
        "logs": list(result.logs),
        "durationMillis": result.duration_millis,
    }
