"""The Playground (docs/console.md; issue 14): pick a tool, fill a form generated from its `inputSchema`
(or write the arguments as raw JSON), and run it exactly as an MCP `tools/call` does
(`api.mcp_tools.call_as`, with the signed-in admin's permissions): the result, whether it is an
error, the logs and the time. Output is shown up to 128 KB (V5). The last inputs per tool are kept
by the browser only (console/assets/playground.js)."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import Response
from mcp_types import TextContent

from api.deps import permissions_of
from api.mcp_tools import DURATION_META, LOGS_META, call_as
from application.context import CONSOLE
from console.display import shown
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from domain.catalog import ToolEntry

router = APIRouter(prefix="/console/playground", route_class=ConsoleRoute, include_in_schema=False)

# V5: what the page shows of an output at most.
KINDS = {"integer": "integer", "number": "number", "boolean": "boolean", "array": "json", "object": "json"}


def _is_date(schema: dict[str, Any]) -> bool:
    formats = {schema.get("format")} | {s.get("format") for s in schema.get("anyOf", []) if isinstance(s, dict)}
    return bool(formats & {"date", "date-time"})


def fields_of(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """One form field per property of the schema: its name, JSON type, the input it needs, and
    whether it is required."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    required = set(schema.get("required") or [])
    fields = []
    for index, (name, prop) in enumerate(properties.items(), start=1):
        prop = prop if isinstance(prop, dict) else {}
        json_type = prop.get("type") if isinstance(prop.get("type"), str) else "any"
        kind = KINDS.get(json_type, "json" if json_type == "any" else "text")
        fields.append({
            "name": name, "id": f"arg-{index}", "type": "date" if _is_date(prop) else json_type, "kind": kind,
            "required": name in required, "description": str(prop.get("description", "")),
            "default": prop.get("default"),
        })
    return fields


def arguments_of(fields: list[dict[str, Any]], form: Any) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The arguments from the form's fields (typed by the schema), and messages by field id."""
    arguments: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    for field in fields:
        raw = form.get(f"arg.{field['name']}")
        text = str(raw) if raw is not None else ""
        kind = field["kind"]
        if kind == "boolean":
            arguments[field["name"]] = text == "on"
            continue
        if not text.strip():
            continue  # left empty: not sent (the tool says when it was required)
        try:
            if kind == "integer":
                arguments[field["name"]] = int(text.strip())
            elif kind == "number":
                number = float(text.strip())
                arguments[field["name"]] = int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
            elif kind == "json":
                arguments[field["name"]] = json.loads(text)
            else:
                arguments[field["name"]] = text
        except ValueError as error:
            what = {"integer": "a whole number", "number": "a number", "json": "JSON"}[kind]
            detail = f": {error.msg}" if isinstance(error, json.JSONDecodeError) else ""
            problems[field["id"]] = [f"{field['name']} must be {what}{detail}."]
    return arguments, problems


def _tools(request: Request, tenant: str) -> list[ToolEntry]:
    """What the signed-in admin may call: every enabled tool a call of its name reaches (R15)."""
    return [e for e in request.app.state.services.toolbox.entries(tenant) if e.shadowed_by is None and e.enabled]


def _render(request: Request, tool: str, *, values: dict[str, str] | None = None, mode: str = "form", raw: str = "",
            problems: dict[str, list[str]] | None = None, result: dict[str, Any] | None = None) -> Response:
    tenant = request.state.visitor.principal.tenant
    tools = _tools(request, tenant)
    entry = next((e for e in tools if e.name == tool), None)
    fields = fields_of(entry.input_schema) if entry is not None else []
    if entry is not None and not fields and mode == "form" and values is None:
        mode = "json"  # a tool without declared parameters takes any object
    return request.app.state.console_pages.render(
        request, "playground/page.html", tools=tools, tool=tool, entry=entry, fields=fields,
        values=values or {}, mode=mode, raw=raw if raw or values is not None else "{}",
        problems=problems or {}, result=result, schema_text=json.dumps(entry.input_schema, indent=2) if entry else "",
        link=lambda name: "/console/playground?" + urlencode({"tool": name}),
    )


@router.get("")
def playground(request: Request, visitor: Reader, tool: str = "") -> Response:
    return _render(request, tool.strip())


def presented(result: Any, elapsed_millis: float, arguments: Any) -> dict[str, Any]:
    """The MCP result as the page shows it: its text (V5: up to 128 KB), isError, logs and time."""
    text = shown("\n".join(c.text for c in result.content if isinstance(c, TextContent)))
    meta = result.meta or {}
    duration = meta.get(DURATION_META)
    return {
        "text": text["text"], "isError": bool(result.is_error), "cut": text["cut"], "bytes": text["bytes"],
        "logs": list(meta.get(LOGS_META, [])), "durationMillis": duration, "elapsedMillis": round(elapsed_millis, 1),
        "arguments": arguments,
    }


@router.post("/run")
async def run(request: Request, visitor: Writer) -> Response:
    form = await request.form()
    tool = str(form.get("tool", "")).strip()
    mode = "json" if form.get("mode") == "json" else "form"
    raw = str(form.get("raw", ""))
    services = request.app.state.services
    entry = services.toolbox.entry(visitor.principal.tenant, tool)
    fields = fields_of(entry.input_schema) if entry is not None else []
    values = {f"arg.{f['name']}": str(form.get(f"arg.{f['name']}", "")) for f in fields}
    if mode == "json":
        try:
            arguments: Any = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as error:
            return _render(request, tool, values=values, mode=mode, raw=raw,
                           problems={"raw": [f"The arguments are not JSON: {error.msg} (line {error.lineno}, column {error.colno})."]})
        if not isinstance(arguments, dict):
            return _render(request, tool, values=values, mode=mode, raw=raw,
                           problems={"raw": ["The arguments must be a JSON object of the tool's parameters."]})
    else:
        arguments, problems = arguments_of(fields, form)
        if problems:
            return _render(request, tool, values=values, mode=mode, raw=raw, problems=problems)
    started = time.perf_counter()
    # Exactly what MCP's tools/call does, with the signed-in admin's permissions.
    result = await call_as(services, visitor.principal, permissions_of(services, visitor.principal), tool, arguments,
                           way_in=CONSOLE)
    shown = presented(result, (time.perf_counter() - started) * 1000, arguments)
    return _render(request, tool, values=values, mode=mode, raw=raw or json.dumps(arguments, indent=2), result=shown)
