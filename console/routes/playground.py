"""The Playground (docs/console.md; issues 14 and 31): pick any tool, fill a form generated from its
`inputSchema` (or write the arguments as raw JSON), and run it exactly as an MCP `tools/call` does
(`api.mcp_tools.call_as`): the arguments sent, the result, whether it is an error (in words), the
logs and the time; for an API URL tool also the request sent upstream (its secrets replaced) and the
raw answer (what its kind's `ToolKind.traced` collects). Output is shown up to 128 KB (V5). The last inputs per
tool are kept by the browser only (console/assets/playground.js).

**Run as**: the signed-in admin (the default), a usage profile, or an issued token. A call run as a
profile or a token is the call that caller would make on the default MCP server (`/mcp`): the token
is admitted as if it were presented (`Admission.admit_digest`: its tenant, its rate), a profile is a
caller of that profile, and both are offered the tools `api.mcp_watch.take_offer` offers them, so a
tool the profile does not allow, or one not callable in chat, is refused with the words the chat
gets. No token is ever shown: the page names a token by its name and id."""

from __future__ import annotations

import json
import time
from contextlib import ExitStack
from typing import Any
from urllib.parse import quote, urlencode

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import Response
from mcp_types import CallToolResult, TextContent

from api.admission import Refusal, client_address
from api.deps import permissions_of
from api.mcp_tools import DURATION_META, LOGS_META, call_as, not_offered_text
from api.mcp_watch import take_offer
from application.context import CONSOLE, CallContext
from application.principals import ADMIN, AUDITOR, CALLER, Principal
from console.display import shown
from console.routes.catalog import kind_words, page_of
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from domain.callers import PROFILE
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


ROLE_WORDS = {ADMIN: "admin", AUDITOR: "auditor", CALLER: "caller"}


def callers_of(request: Request, tenant: str) -> dict[str, list[dict[str, str]]]:
    """Whom a call may be run as besides the admin: the usage profiles and the issued tokens (by
    name and id, never the token)."""
    services = request.app.state.services
    profiles = sorted(services.records.list(tenant, PROFILE), key=lambda r: r["id"])
    tokens = services.tokens.tokens(tenant)
    return {
        "profiles": [{"value": f"profile:{p['id']}", "label": p["id"]} for p in profiles],
        "tokens": [{"value": f"token:{t['id']}", "label": f"{t['name']} ({ROLE_WORDS.get(t['role'], t['role'])}"
                    + (f", usage profile {t['usageProfile']}" if t.get("usageProfile") else "") + ")"} for t in tokens],
    }


def _render(request: Request, tool: str, *, values: dict[str, str] | None = None, mode: str = "form", raw: str = "",
            problems: dict[str, list[str]] | None = None, result: dict[str, Any] | None = None, run_as: str = "") -> Response:
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
        link=lambda name: "/console/playground?" + urlencode({"tool": name}), kind_words=kind_words,
        callers=callers_of(request, tenant), run_as=run_as,
    )


@router.get("")
def playground(request: Request, visitor: Reader, tool: str = "", runAs: str = "") -> Response:
    return _render(request, tool.strip(), run_as=runAs.strip())


def presented(result: Any, elapsed_millis: float, arguments: Any, *, refusal: dict[str, Any] | None = None,
              upstream: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The MCP result as the page shows it: its text (V5: up to 128 KB), isError, logs and time; why
    the caller was refused, in the admin's words; an API URL tool's requests and raw answers."""
    text = shown("\n".join(c.text for c in result.content if isinstance(c, TextContent)))
    meta = result.meta or {}
    duration = meta.get(DURATION_META)
    return {
        "text": text["text"], "isError": bool(result.is_error), "cut": text["cut"], "bytes": text["bytes"],
        "logs": list(meta.get(LOGS_META, [])), "durationMillis": duration, "elapsedMillis": round(elapsed_millis, 1),
        "arguments": arguments, "argumentsText": json.dumps(arguments, indent=2, ensure_ascii=False), "refusal": refusal,
        "upstream": [_upstream(t) for t in upstream or []],
    }


def _upstream(trace: dict[str, Any]) -> dict[str, Any]:
    """One request an API URL tool sent (secrets already replaced by the kind) and its raw answer."""
    body = trace["request"]["body"]
    raw = trace["response"]["body"]
    return {**trace, "bodyText": None if body is None else body if isinstance(body, str) else json.dumps(body, indent=2, ensure_ascii=False),
            "raw": None if raw is None else shown(raw)}


class RunAs:
    """Who a Playground call is made as: the admin, a caller of a usage profile, or an issued token
    admitted as if presented; `offer` is what the default MCP server offers that caller (None for
    the admin, who may run any tool, as before)."""

    def __init__(self, principal: Principal, words: str, *, caller: bool, profile: str | None = None) -> None:
        self.principal = principal
        self.words = words
        self.caller = caller
        self.profile = profile


def run_as_of(request: Request, visitor: Any, value: str) -> RunAs | str:
    """The caller `value` names (`profile:<id>`, `token:<id>`, or empty for the admin), or why not."""
    services = request.app.state.services
    admin = visitor.principal
    kind, _, ident = value.partition(":")
    if not value:
        return RunAs(admin, "you", caller=False)
    if kind == "profile":
        if not any(p["id"] == ident for p in services.records.list(admin.tenant, PROFILE)):
            return f"There is no usage profile {ident}."
        # A caller of that profile, as a caller token of it is (`Principal`): the admin's name, for what it logs.
        return RunAs(Principal(name=admin.name, role=CALLER, tenant=admin.tenant, usage_profile=ident),
                     f"a caller with the usage profile {ident}", caller=True, profile=ident)
    if kind == "token":
        digest = services.tokens.digest_of(admin.tenant, ident)
        if digest is None:
            return "That token no longer exists (it was revoked)."
        try:
            principal = services.admission.admit_digest(digest, client_address(request))
        except Refusal as refusal:
            return f"The token was refused: {refusal.detail}."
        words = f"the token {principal.name}"
        return RunAs(principal, words, caller=principal.role != ADMIN, profile=principal.usage_profile)
    return "Choose whom to run the tool as."


def why_refused(run_as: RunAs, entry: ToolEntry | None, offer: Any, page: str | None) -> dict[str, str | None]:
    """Why the default MCP server offers this caller no such tool, in the admin's words, with a link
    to where it is changed."""
    def said(text: str, href: str | None = None, label: str | None = None) -> dict[str, str | None]:
        return {"text": text, "href": href, "label": label}

    if entry is None:
        return said("There is no such tool.")
    if run_as.principal.role != CALLER:
        return said(f"A token with the role {ROLE_WORDS.get(run_as.principal.role, run_as.principal.role)} may not call tools.")
    if not entry.offered_in_chat:
        return said("The tool is not callable in chat: turn on Callable in chat on the tool's page.", page, "Open the tool")
    if not offer.permissions.allow(entry):
        if run_as.profile is None:
            return said("The token has no usage profile, so it may call no tool.")
        return said(f"The usage profile {run_as.profile} does not allow this tool: allow it on the profile's page.",
                    "/console/profiles/" + quote(run_as.profile, safe=""), f"Open the usage profile {run_as.profile}")
    return said("The tool cannot run now.")


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
    run_as_value = str(form.get("runAs", "")).strip()
    who = run_as_of(request, visitor, run_as_value)
    raw = raw or json.dumps(arguments, indent=2)
    if isinstance(who, str):
        return _render(request, tool, values=values, mode=mode, raw=raw, problems={"runAs": [who]}, run_as=run_as_value)
    started = time.perf_counter()
    # What each kind's calls sent out and got back (an API URL tool's upstream requests), when its kind keeps it.
    traced = ExitStack()
    traces = [traced.enter_context(kind.traced()) for kind in services.toolbox.kinds]
    with traced:
        refusal = None
        if who.caller:
            # As MCP's tools/call on /mcp: only what the default server offers this caller, then the call.
            offer = await anyio.to_thread.run_sync(lambda: take_offer(services, who.principal, None))
            if offer.tool(tool) is None:
                refusal = why_refused(who, entry, offer, page_of(services.plugins, entry.call_type, entry.group or entry.name) if entry else None)
                services.toolbox.refused(who.principal.tenant, tool, CallContext(who.principal, CONSOLE), "tool-not-found")  # the call log
                result = CallToolResult(content=[TextContent(text=not_offered_text(None, tool))], is_error=True)
            else:
                result = await call_as(services, who.principal, offer.permissions, tool, arguments, way_in=CONSOLE)
        else:
            # Exactly what MCP's tools/call does, with the signed-in admin's (or an admin token's) permissions.
            result = await call_as(services, who.principal, permissions_of(services, who.principal), tool, arguments,
                                   way_in=CONSOLE)
    answer = presented(result, (time.perf_counter() - started) * 1000, arguments, refusal=refusal,
                       upstream=[trace for kind in traces for trace in kind])
    answer["runAs"] = who.words
    return _render(request, tool, values=values, mode=mode, raw=raw, result=answer, run_as=run_as_value)
