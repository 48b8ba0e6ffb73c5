"""Domain objects as the API's JSON, and the audit export as a download: what the REST routes and
the console both answer, written once here (the console never calls a REST route for them)."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import StreamingResponse
from pydantic import TypeAdapter

from api.schemas import ExecutionOut
from api.services import Services
from domain.catalog import ToolEntry
from domain.model import CodeModule
from domain.ports import ExecutionResult
from domain.rules import tool_input_schema
from infrastructure.audit import export_chunks


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
    return None if tool is None else tool_input_schema(tool)


def execution_out(result: ExecutionResult) -> dict[str, Any]:
    out = {
        "output": result.output,
        "error": result.error.as_dict() if result.error else None,
        "logs": list(result.logs),
        "durationMillis": result.duration_millis,
    }
    if result.content is not None:
        # MCP content the code returned (ai.content): the items, as MCP has them; `output` is the
        # structured value (ai.result's second argument), or null.
        out["content"] = list(result.content)
    return out


# What orjson writes itself, byte for byte as pydantic writes an `ExecutionOut` (compact, UTF-8, the
# same numbers); anything else (a dataclass, a date, a subclass of str, an int past 64 bits, a
# non-string key) it refuses, and pydantic writes the answer as it always did.
_PLAIN_JSON_ONLY = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
_EXECUTION_OUT: TypeAdapter[ExecutionOut] = TypeAdapter(ExecutionOut)


def execution_json(result: ExecutionResult) -> bytes:
    """`execution_out` as the JSON an `ExecutionOut` response model answers, written once: no
    validation of the result into a model to dump it again (issue 30; tests/api/test_call_response.py
    compares the bytes)."""
    out = execution_out(result)
    out["durationMillis"] = float(out["durationMillis"])
    try:
        return orjson.dumps(out, option=_PLAIN_JSON_ONLY)
    except orjson.JSONEncodeError:
        return _EXECUTION_OUT.dump_json(_EXECUTION_OUT.validate_python(out))


def tool_out(entry: ToolEntry) -> dict[str, Any]:
    """A catalog entry (GET /api/v1/admin/tools; the console's tool list)."""
    return {
        "name": entry.name,
        "description": entry.description,
        "callType": entry.call_type,
        "tags": list(entry.tags),
        "inputSchema": entry.input_schema,
        "exposeInChat": entry.expose_in_chat,
        "enabled": entry.enabled,
        "shadowedBy": entry.shadowed_by,
        # Invoker's rights: a plan reaches only the tools its caller may use (toolkinds.plans.kind).
        "runsWith": entry.runs_with,
        "readOnly": entry.read_only,
        "group": entry.group,
        # R17: as MCP's tools/list shows them (the kind's derived hints, the admin's over them).
        "annotations": entry.annotations if entry.annotations is not None else (_READ_ONLY if entry.read_only else None),
        "icons": list(entry.icons),
    }


_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def tenant_created(tenant: dict[str, Any], token: dict[str, Any], secret: str) -> dict[str, Any]:
    """A new tenant with its first admin token, whose secret this answer is the only one to hold."""
    return {"tenant": tenant, "adminToken": secret, "adminTokenId": token["id"]}


def token_issued(token: dict[str, Any], secret: str) -> dict[str, Any]:
    """An issued token with its secret, shown this once (only its SHA-256 is kept)."""
    return {**token, "token": secret}


def audit_download(services: Services, tenant: str) -> StreamingResponse:
    """Every stored event of `tenant`, as JSON lines that `toolsmith audit import` restores."""
    # A tenant sees only its own (docs/security.md): what its kinds of tool say is its (modules, …), its
    # import graph and caller registry. The chunks come from a plain generator, which Starlette
    # iterates in its thread pool: reading the store never blocks the event loop.
    calls = services.toolbox.call_log  # and its call records (docs/calls.md), those queued a moment ago too
    calls.flush()
    chunks = export_chunks(services.store, tenant=tenant, kinds=services.toolbox.kinds,
                           calls=calls.store.chains(tenant) if calls.store is not None else None)
    return StreamingResponse(chunks, media_type="application/x-ndjson",
                             headers={"Content-Disposition": 'attachment; filename="toolsmith-audit.ndjson"'})
