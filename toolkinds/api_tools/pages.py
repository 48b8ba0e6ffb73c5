"""API URL tools in the console (docs/kinds/api-url-tools.md, docs/console.md; issue 16): the list, the editor (create and
edit, every field of the configuration), enable and disable, delete (refused while a plan or an
agent names the tool), the tool's Playground (one call through the path MCP uses, showing the
request as sent with its secrets replaced, the status, the bytes, the time and the output) and its
history. Every change goes through the kind's `save` and `delete`, with the REST API's request
model (`toolkinds.api_tools.routes.ApiToolBody`), so the console and REST refuse the same things."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool

from api.presenters import execution_out
from api.queries import call_context
from toolkinds.api_tools.routes import ApiToolBody, public
from toolkinds.api_tools.kind import ApiToolKind
from application.toolbox import answered
from console.display import shown
from toolkinds.api_tools import form as forms
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from domain import errors
from domain import history as histories
from domain.errors import Violation

router = APIRouter(prefix="/console/api-tools", route_class=ConsoleRoute, include_in_schema=False)

BASE = "/console/api-tools"
MESSAGES = {
    "created": "Created. The tool is live on every server it is attached to.",
    "saved": "Saved. The change is live at once.",
    "enabled": "Enabled: the tool is offered again.",
    "disabled": "Disabled: no server offers the tool now.",
    "deleted": "Deleted the API tool {}.",
}


def _kind(request: Request) -> ApiToolKind:
    return request.app.state.services.toolbox.kind(ApiToolKind)


def _render(request: Request, template: str, status: int = 200, **context: Any) -> Response:
    return request.app.state.console_pages.render(request, template, status=status, **context)


def _message(request: Request) -> str:
    for key, text in MESSAGES.items():
        if key in request.query_params:
            return text.format(request.query_params[key])
    return ""


def _page(name: str, suffix: str = "") -> str:
    return f"{BASE}/{quote(name, safe='')}{suffix}"


def _redirect(url: str, **flags: str) -> RedirectResponse:
    return RedirectResponse(url + ("?" + urlencode(flags) if flags else ""), status_code=303)


def _secret_ids(request: Request, tenant: str) -> list[str]:
    """The tenant's secret ids, for the pickers (each field still takes any id typed)."""
    service = getattr(request.app.state.services, "secrets", None)
    if service is None:
        return []
    try:
        return [record["id"] for record in service.list(tenant)]
    except Exception:  # noqa: BLE001 - a picker's suggestions are a convenience; the field still takes an id
        return []


# -- the list ------------------------------------------------------------------------------------


@router.get("")
def api_tool_list(request: Request, visitor: Reader) -> Response:
    rows = [public(tool) for tool in _kind(request).tools(visitor.principal.tenant)]
    return _render(request, "api_tools/list.html", rows=rows, message=_message(request))


# -- the editor ----------------------------------------------------------------------------------


def _editor(request: Request, values: forms.Values, *, editing: bool, tool: dict[str, Any] | None = None,
            fields: dict[str, list[str]] | None = None, summary: str = "", message: str = "", refusal: str = "",
            status: int = 200) -> Response:
    tenant = request.state.visitor.principal.tenant
    return _render(
        request, "api_tools/form.html", status=status, values=values, editing=editing, tool=tool, fields=fields or {},
        summary=summary, message=message, refusal=refusal, secret_ids=_secret_ids(request, tenant),
        blank_param=forms.blank_param(), blank_pair=forms.blank_pair(), auth_fields=forms.AUTH_FIELDS, **forms.CHOICES,
    )


@router.get("/new")
def new_api_tool(request: Request, visitor: Writer) -> Response:
    return _editor(request, forms.values_of(None), editing=False)


@router.get("/{name}")
def api_tool_page(name: str, request: Request, visitor: Reader) -> Response:
    tool = _kind(request).get(visitor.principal.tenant, name)
    return _editor(request, forms.values_of(tool.config, tool.tool_id, tool.version), editing=True, tool=public(tool),
                   message=_message(request))


def _refused(error: Exception, values: forms.Values) -> tuple[dict[str, list[str]], str] | None:
    """The form's messages for a refused save, or None for an error that is not about the form."""
    if isinstance(error, ValidationError):
        found = [Violation(forms.path_of(e.get("loc", ())), "API", str(e.get("msg"))) for e in error.errors()]
        return forms.messages_of(found, values), "Some fields need a change."
    if isinstance(error, (errors.InvalidDefinition, errors.InvalidRecord)):
        return forms.messages_of(error.violations, values), "Some fields need a change."
    if isinstance(error, (errors.IdTaken, errors.RecordTaken)):
        return {"id": [f"Id: {error.detail}"]}, "That id is taken."
    if isinstance(error, errors.QuotaExceeded):  # docs/tenants.md
        return {"form": [f"Not created: {error.detail}. Your organization's operator sets its quotas."]}, "A quota is reached."
    if isinstance(error, errors.PreconditionFailed):
        return ({"form": ["Someone saved this tool after you opened it. Open it again to see their change; "
                          "what you typed is below."]}, "Not saved: the tool changed meanwhile.")
    return None


async def _save(request: Request, visitor: Any, name: str | None) -> Response:
    form = await request.form()
    values = forms.form_values(form, name)
    tool_id = name if name is not None else values["id"]
    principal = visitor.principal
    kind = _kind(request)
    try:
        body, unread = forms.body_of(values)
        if not tool_id:
            unread.insert(0, Violation("id", "R1", "is required"))
        if unread:
            raise errors.InvalidDefinition(unread)
        config = ApiToolBody.model_validate(body).as_config()
        version = values["version"]
        expected = (int(version) if version.isdigit() else -1) if version else None
        await run_in_threadpool(lambda: kind.save(principal.tenant, tool_id, config, by=principal.name, create=name is None,
                                                  expected=None if name is None else expected))
    except (ValidationError, errors.ModuleError) as error:
        refused = _refused(error, values)
        if refused is None:
            raise
        fields, summary = refused
        existing = kind.find(principal.tenant, name) if name is not None else None
        return _editor(request, values, editing=name is not None, tool=public(existing) if existing else None,
                       fields=fields, summary=summary)
    return _redirect(_page(tool_id), **({"saved": "1"} if name is not None else {"created": "1"}))


@router.post("")
async def create_api_tool(request: Request, visitor: Writer) -> Response:
    return await _save(request, visitor, None)


@router.post("/{name}")
async def save_api_tool(name: str, request: Request, visitor: Writer) -> Response:
    _kind(request).get(visitor.principal.tenant, name)  # 404 before reading the form
    return await _save(request, visitor, name)


@router.post("/{name}/enabled")
async def set_enabled(name: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    enabled = form.get("enabled") == "true"
    principal = visitor.principal
    await run_in_threadpool(lambda: _kind(request).set_enabled(principal.tenant, name, enabled, by=principal.name))
    return _redirect(_page(name), **({"enabled": "1"} if enabled else {"disabled": "1"}))


@router.post("/{name}/delete")
async def delete_api_tool(name: str, request: Request, visitor: Writer) -> Response:
    principal = visitor.principal
    kind = _kind(request)
    try:
        await run_in_threadpool(lambda: kind.delete(principal.tenant, name, by=principal.name))
    except errors.InUse as error:
        tool = kind.get(principal.tenant, name)
        return _editor(request, forms.values_of(tool.config, tool.tool_id, tool.version), editing=True, tool=public(tool),
                       refusal=f"Not deleted: {error.detail}", status=409)
    return _redirect(BASE, deleted=name)


# -- the Playground --------------------------------------------------------------------------------


def _playground(request: Request, tool: Any, *, raw: str, problems: list[str] | None = None,
                result: dict[str, Any] | None = None) -> Response:
    return _render(request, "api_tools/playground.html", tool=public(tool), raw=raw, problems=problems or [], result=result)


@router.get("/{name}/playground")
def playground(name: str, request: Request, visitor: Reader) -> Response:
    tool = _kind(request).get(visitor.principal.tenant, name)
    return _playground(request, tool, raw=forms.example_arguments(tool.config["parameters"]))


def presented(answer: dict[str, Any]) -> dict[str, Any]:
    """The test's answer as the page shows it: the request (secrets already replaced by the kind),
    the status, the bytes, the time, and the output (V5: up to 128 KB) or the error."""
    output = answer["output"]
    text = None if answer["error"] else output if isinstance(output, str) else json.dumps(output, indent=2, ensure_ascii=False)
    request = answer["request"]
    body = request["body"]
    return {
        **answer,
        "request": {**request, "bodyText": None if body is None else body if isinstance(body, str)
                    else json.dumps(body, indent=2, ensure_ascii=False)},
        "outputShown": shown(text),
        "logsShown": shown("\n".join(answer["logs"])) if answer["logs"] else None,
    }


@router.post("/{name}/playground")
async def run_playground(name: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    kind = _kind(request)
    principal = visitor.principal
    tool = kind.get(principal.tenant, name)
    raw = str(form.get("arguments", ""))
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as error:
        return _playground(request, tool, raw=raw, problems=[
            f"The arguments are not JSON: {error.msg} (line {error.lineno}, column {error.colno})."])
    if not isinstance(arguments, dict):
        return _playground(request, tool, raw=raw, problems=["The arguments must be a JSON object of the tool's parameters."])
    try:
        result, trace = await run_in_threadpool(lambda: kind.test(principal.tenant, name, arguments, call_context(principal)))
    except errors.InvalidInput as refusal:
        return _playground(request, tool, raw=raw, problems=[f"{v.field}: {v.message}" for v in refusal.violations])
    answer = {**trace.as_dict(), **execution_out(answered(result))}
    return _playground(request, tool, raw=raw, result=presented(answer))


# -- history -----------------------------------------------------------------------------------------


@router.get("/{name}/history")
def api_tool_history(name: str, request: Request, visitor: Reader) -> Response:
    events = _kind(request).events(visitor.principal.tenant, name)
    if not events:
        raise errors.UnknownRecord("API URL tool", name)
    entries = [histories.entry(e) for e in events]
    live = _kind(request).find(visitor.principal.tenant, name) is not None
    return _render(request, "api_tools/history.html", name=name, entries=list(reversed(entries)), live=live)
