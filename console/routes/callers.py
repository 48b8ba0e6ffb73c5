"""Plans, agents, usage profiles and MCP servers (docs/kinds/index.md; docs/rest-api.md, docs/mcp.md): the records that
name tools. Each has a list, a page (with what it reaches now), and for admins a form to create,
edit and delete it; a plan runs with an input; an MCP server has tools attached and detached.
Every change goes through `services.records`, as the REST routes' do (api/routes/callers.py), and is answered with a
toast on the page it leads to (console/toast.py; a create's Undo deletes the record again); a plan's run is
the plans kind's own page (toolkinds/plans/pages.py), answered with the plan's page here (`render_detail`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, ValidationError

from application.queries import reaches
from api.schemas import (
    AgentFields,
    AgentIn,
    McpServerFields,
    McpServerIn,
    PlanFields,
    PlanIn,
    UsageProfileFields,
    UsageProfileIn,
)
from console.display import shown
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from console.toast import Undo, toast
from domain import errors
from domain.callers import AGENT, PLAN, PROFILE, SERVER

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


# -- form errors, shared by the console's record and token forms ------------------------------------


class FormProblem(Exception):
    """A form's fields broke rules: messages by field (the first part of the API's field path). The
    form is answered again with 200 and its messages, as the sign-in form is (a form answered)."""

    def __init__(self, fields: dict[str, list[str]], summary: str = "") -> None:
        super().__init__(summary)
        self.fields = fields
        self.summary = summary


def field_root(path: str) -> str:
    """`nodes[0].toolName` → `nodes`: the form field an API field path belongs to."""
    match = re.match(r"[A-Za-z_]+", path)
    return match.group(0) if match else "form"


def problem_of_error(error: errors.ModuleError) -> FormProblem | None:
    """The form problem for a domain error about the submitted fields, or None for any other error."""
    if isinstance(error, (errors.InvalidRecord, errors.InvalidInput)):
        fields: dict[str, list[str]] = {}
        for violation in error.violations:
            fields.setdefault(field_root(violation.field), []).append(f"{violation.field}: {violation.message}")
        return FormProblem(fields, "Some fields need a change.")
    if isinstance(error, errors.RecordTaken):
        return FormProblem({"id": [error.detail]}, "That name is taken.")
    return None


def problem_of_validation(error: ValidationError) -> FormProblem:
    fields: dict[str, list[str]] = {}
    for item in error.errors():
        loc = [str(p) for p in item.get("loc", ())]
        fields.setdefault(loc[0] if loc else "form", []).append(f"{'.'.join(loc)}: {item.get('msg')}")
    return FormProblem(fields, "Some fields need a change.")


def validated(model: type[BaseModel], body: dict[str, Any]) -> dict[str, Any]:
    """The body as the REST API would accept it (the same request model), or a FormProblem."""
    try:
        return model.model_validate(body).model_dump()
    except ValidationError as error:
        raise problem_of_validation(error) from None


def split_list(text: str, separators: str = ",\n") -> list[str]:
    """A comma- or line-separated field as a list (blank items dropped, order kept)."""
    return [item.strip() for item in re.split("[" + re.escape(separators) + "]", text) if item.strip()]


# -- the kinds of record -------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    kind: str
    plural: str  # the URL segment
    noun: str
    title: str
    create: type[BaseModel]
    fields: type[BaseModel]
    template: str  # the folder of its templates

    @property
    def base(self) -> str:
        return f"/console/{self.plural}"


PLANS = Kind(PLAN, "plans", "plan", "Plans", PlanIn, PlanFields, "plans")
AGENTS = Kind(AGENT, "agents", "agent", "Agents", AgentIn, AgentFields, "agents")
PROFILES = Kind(PROFILE, "profiles", "usage profile", "Usage profiles", UsageProfileIn, UsageProfileFields, "profiles")
SERVERS = Kind(SERVER, "servers", "MCP server", "MCP servers", McpServerIn, McpServerFields, "servers")
KINDS = {k.plural: k for k in (PLANS, AGENTS, PROFILES, SERVERS)}


# What a kind's page shows besides its record, from the module that builds on these pages
# (console/routes/servers.py adds the MCP server's): by the record's kind.
_DETAILS: dict[str, Callable[[Request, dict[str, Any]], dict[str, Any]]] = {}


def add_details(k: Kind, details: Callable[[Request, dict[str, Any]], dict[str, Any]]) -> None:
    """Has `render_detail` show what `details` answers on each page of a record of `k`."""
    _DETAILS[k.kind] = details


def _services(request: Request) -> Any:
    return request.app.state.services


def _tool_names(request: Request, tenant: str) -> list[str]:
    """The catalog's tools a record may name (the winners of R15), by name."""
    return [e.name for e in _services(request).toolbox.entries(tenant) if e.shadowed_by is None]


def _body_from_form(k: Kind, form: Any, record_id: str | None, existing: dict[str, Any] | None) -> dict[str, Any]:
    """The REST API's request body from the console's form fields."""
    body: dict[str, Any] = {"description": str(form.get("description", "")).strip()}
    if record_id is None:
        body["id"] = str(form.get("id", "")).strip()
    if k is PLANS:
        body["nodes"] = [{"type": "DIRECT_TOOL", "toolName": name} for name in split_list(str(form.get("nodes", "")), "\n")]
        body["exposeAsTool"] = form.get("exposeAsTool") == "on"
        body["exposeInChat"] = form.get("exposeInChat") == "on"
        body["tags"] = split_list(str(form.get("tags", "")))
    elif k in (AGENTS, PROFILES):
        body["allowedTools"] = [str(v) for v in form.getlist("allowedTools")]
        body["allowedTags"] = split_list(str(form.get("allowedTags", "")))
    elif k is SERVERS:
        body["tools"] = list(existing["tools"]) if existing else []
        # Tool search (docs/mcp.md): switched on or off, and the attached tools pinned beside find_tool and call_tool.
        body["toolSearch"] = {"enabled": form.get("toolSearchEnabled") == "on",
                              "pinned": list(dict.fromkeys(str(v) for v in form.getlist("pinned")))}
    return body


def _values(k: Kind, record: dict[str, Any] | None) -> dict[str, Any]:
    """The form's values for a record (or empty ones for a new record)."""
    record = record or {}
    values: dict[str, Any] = {"id": record.get("id", ""), "description": record.get("description", "")}
    if k is PLANS:
        values["nodes"] = "\n".join(n["toolName"] for n in record.get("nodes", []))
        values["exposeAsTool"] = record.get("exposeAsTool", False)
        values["exposeInChat"] = record.get("exposeInChat", False)
        values["tags"] = ", ".join(record.get("tags", []))
    elif k in (AGENTS, PROFILES):
        values["allowedTools"] = list(record.get("allowedTools", []))
        values["allowedTags"] = ", ".join(record.get("allowedTags", []))
    elif k is SERVERS:
        search = record.get("toolSearch") or {}
        values.update(tools=list(record.get("tools", [])), toolSearchEnabled=bool(search.get("enabled")),
                      pinned=list(search.get("pinned", [])))
    return values


def _form_values(k: Kind, form: Any, record_id: str | None) -> dict[str, Any]:
    """The submitted values, to show the form again as it was sent."""
    values: dict[str, Any] = {"id": record_id or str(form.get("id", "")), "description": str(form.get("description", ""))}
    if k is PLANS:
        values.update(nodes=str(form.get("nodes", "")), exposeAsTool=form.get("exposeAsTool") == "on",
                      exposeInChat=form.get("exposeInChat") == "on", tags=str(form.get("tags", "")))
    elif k in (AGENTS, PROFILES):
        values.update(allowedTools=[str(v) for v in form.getlist("allowedTools")], allowedTags=str(form.get("allowedTags", "")))
    elif k is SERVERS:
        values.update(tools=_attached_of_form(form), toolSearchEnabled=form.get("toolSearchEnabled") == "on",
                      pinned=[str(v) for v in form.getlist("pinned")])
    return values


def _attached_of_form(form: Any) -> list[str]:
    """The attached tools a server's form was shown with (its pinned choices), as it sent them back."""
    return [str(v) for v in form.getlist("attached")]


def _render_form(request: Request, k: Kind, *, values: dict[str, Any], editing: bool, problem: FormProblem | None = None,
                 status: int = 200) -> Response:
    tenant = request.state.visitor.principal.tenant
    tools = _tool_names(request, tenant)
    chosen = values.get("allowedTools", [])
    return request.app.state.console_pages.render(
        request, f"{k.template}/form.html", status=status, k=k, values=values, editing=editing,
        tools=tools + [t for t in chosen if t not in tools], fields=problem.fields if problem else {},
        summary=problem.summary if problem else "",
    )


def _detail_context(request: Request, k: Kind, record: dict[str, Any]) -> dict[str, Any]:
    services = _services(request)
    tenant = request.state.visitor.principal.tenant
    context: dict[str, Any] = {}
    if k in (AGENTS, PROFILES):
        context["reaches"] = reaches(services, tenant, record["allowedTools"], record["allowedTags"])
    if k is PROFILES:
        permissions = services.toolbox.permissions(tenant, "caller", record["id"])
        context["offered"] = [e.name for e in services.toolbox.offered(tenant, permissions)]
    extra = _DETAILS.get(k.kind)
    if extra is not None:
        context.update(extra(request, record))
    if k is PLANS:
        catalog = {e.name: e for e in services.toolbox.entries(tenant) if e.shadowed_by is None}
        context["node_pages"] = [
            {"toolName": n["toolName"], "callType": catalog[n["toolName"]].call_type if n["toolName"] in catalog else None}
            for n in record["nodes"]
        ]
    return context


def render_detail(request: Request, k: Kind, record: dict[str, Any], *, status: int = 200, message: str = "",
                   problem: str = "", run: dict[str, Any] | None = None, run_input: str = "", run_error: str = "") -> Response:
    return request.app.state.console_pages.render(
        request, f"{k.template}/detail.html", status=status, k=k, r=record, message=message, problem_text=problem,
        run=run, run_input=run_input, run_error=run_error, values=_values(k, record), fields={}, summary="",
        tools=_tool_names(request, request.state.visitor.principal.tenant), editing=True,
        **_detail_context(request, k, record),
    )


MESSAGES = {
    "created": "Created.",
    "saved": "Saved.",
    "attached": "Attached {}.",
    "detached": "Detached {}.",
    "deleted": "Deleted {}.",
}


def _message(request: Request) -> str:
    for key, text in MESSAGES.items():
        if key in request.query_params:
            return text.format(request.query_params[key])
    return ""


def _redirect(url: str, **flags: str) -> RedirectResponse:
    return RedirectResponse(url + ("?" + urlencode(flags) if flags else ""), status_code=303)


def _register(k: Kind) -> None:
    @router.get(f"/{k.plural}", name=f"console-{k.plural}")
    def list_records(request: Request, visitor: Reader) -> Response:
        services = _services(request)
        tenant = visitor.principal.tenant
        records = services.records.list(tenant, k.kind)
        rows = []
        for r in records:
            row = dict(r)
            if k in (AGENTS, PROFILES):
                row["reaches"] = reaches(services, tenant, r["allowedTools"], r["allowedTags"])
            rows.append(row)
        return request.app.state.console_pages.render(request, f"{k.template}/list.html", k=k, rows=rows, message=_message(request))

    @router.get(f"/{k.plural}/new", name=f"console-{k.plural}-new")
    def new_record(request: Request, visitor: Writer) -> Response:
        return _render_form(request, k, values=_values(k, None), editing=False)

    @router.post(f"/{k.plural}", name=f"console-{k.plural}-create")
    async def create_record(request: Request, visitor: Writer) -> Response:
        form = await request.form()
        principal = visitor.principal
        try:
            body = validated(k.create, _body_from_form(k, form, None, None))
            record, _ = _services(request).records.save(principal.tenant, k.kind, body, by=principal.name, create=True)
        except (FormProblem, errors.ModuleError) as error:
            problem = error if isinstance(error, FormProblem) else problem_of_error(error)
            if problem is None:
                raise
            return _render_form(request, k, values=_form_values(k, form, None), editing=False, problem=problem)
        page = f"{k.base}/{quote(record['id'], safe='')}"
        # Undoing a create is cheap: the record is deleted again (a plan, an agent or a token naming it is refused there).
        return toast(request, _redirect(page), f"Created the {k.noun} {record['id']}.", undo=Undo(f"{page}/delete"))

    @router.get(f"/{k.plural}/{{record_id}}", name=f"console-{k.plural}-detail")
    def record_page(record_id: str, request: Request, visitor: Reader) -> Response:
        record = _services(request).records.get(visitor.principal.tenant, k.kind, record_id)
        return render_detail(request, k, record, message=_message(request))

    @router.post(f"/{k.plural}/{{record_id}}", name=f"console-{k.plural}-save")
    async def save_record(record_id: str, request: Request, visitor: Writer) -> Response:
        form = await request.form()
        principal = visitor.principal
        records = _services(request).records
        existing = records.get(principal.tenant, k.kind, record_id)
        try:
            body = validated(k.fields, _body_from_form(k, form, record_id, existing))
            records.save(principal.tenant, k.kind, {"id": record_id, **body}, by=principal.name, create=False)
        except (FormProblem, errors.ModuleError) as error:
            problem = error if isinstance(error, FormProblem) else problem_of_error(error)
            if problem is None:
                raise
            return _render_form(request, k, values=_form_values(k, form, record_id), editing=True, problem=problem)
        return toast(request, _redirect(f"{k.base}/{quote(record_id, safe='')}"), f"Saved the {k.noun} {record_id}: live at once.")

    @router.get(f"/{k.plural}/{{record_id}}/edit", name=f"console-{k.plural}-edit")
    def edit_record(record_id: str, request: Request, visitor: Writer) -> Response:
        record = _services(request).records.get(visitor.principal.tenant, k.kind, record_id)
        return _render_form(request, k, values=_values(k, record), editing=True)

    @router.post(f"/{k.plural}/{{record_id}}/delete", name=f"console-{k.plural}-delete")
    def delete_record(record_id: str, request: Request, visitor: Writer) -> Response:
        principal = visitor.principal
        records = _services(request).records
        try:
            records.delete(principal.tenant, k.kind, record_id, by=principal.name)
        except errors.InUse as error:
            record = records.get(principal.tenant, k.kind, record_id)
            return render_detail(request, k, record, problem=f"Not deleted: {error.detail}")
        return toast(request, _redirect(k.base), f"Deleted the {k.noun} {record_id}.")


for _kind in (PLANS, AGENTS, PROFILES, SERVERS):
    _register(_kind)


# -- a plan's run --------------------------------------------------------------------------------


def node_runs(record: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    """Each node of the plan in order: what the run says it answered (its output, V5's cut, its
    error, its logs and time), then the nodes a failure left unreached."""
    ran = {step["node"]: step for step in result.get("nodes", [])}
    runs = []
    for index, node in enumerate(record["nodes"], start=1):
        step = ran.get(index)
        if step is None:
            runs.append({"index": index, "toolName": node["toolName"], "state": "not run", "logs": [], "output": None,
                         "error": None, "durationMillis": None})
            continue
        failed = step["error"] is not None
        runs.append({
            "index": index, "toolName": step["toolName"], "state": "failed" if failed else "ran",
            "last": index == len(record["nodes"]),
            "logs": step["logs"], "error": step["error"], "durationMillis": step["durationMillis"],
            "output": None if failed else shown(json.dumps(step["output"], indent=2, ensure_ascii=False)),
        })
    return runs


# An MCP server's tools (attach, detach) and its check are console/routes/servers.py's.
