"""The organizations (docs/tenants.md), for the service's operator only: the list (id, name, state,
quotas, when created), creating one (its first admin token shown once, on the answer to the form,
never in a page a reload or the history brings back), and an organization's page: what it holds
against its quotas, setting them, renaming, suspending or resuming it (after a confirmation), and
deleting it once it holds nothing. Every change goes through `services.tenants`, as the REST routes'
do (api/routes/operator.py); the rules are the domain's, and each refusal is shown by its field."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from api.presenters import tenant_created
from api.schemas import TenantChange, TenantIn
from application.queries import tenant_view
from console.routes.callers import FormProblem
from console.routing import ConsoleRoute
from console.security import Operator
from domain import errors
from domain.tenants import QUOTAS

router = APIRouter(prefix="/console/operator", route_class=ConsoleRoute, include_in_schema=False)

# The answer to a create holds the first admin token: no cache may keep it.
NO_STORE = {"Cache-Control": "no-store"}
LIST = "/console/operator/tenants"
LABELS = {"modules": "Modules", "tools": "Tools", "documents": "Documents", "storedBytes": "Stored bytes"}
HINTS = {
    "modules": "Code modules, drafts included.",
    "tools": "API URL and File Search tools.",
    "documents": "Documents uploaded to File Search tools.",
    "storedBytes": "Bytes of those documents.",
}
MESSAGES = {
    "created": "Created the organization {}.",
    "quotas": "Saved the quotas of {}.",
    "renamed": "Renamed the organization {}.",
    "suspended": "Suspended {}: its tokens are refused (403) and its console sessions show that it is suspended, until you resume it.",
    "resumed": "Resumed {}: its tokens work again.",
    "deleted": "Deleted the organization {}: its tokens no longer work.",
}
WHOLE_NUMBER = re.compile(r"-?\d+\Z")


def field_of(quota: str) -> str:
    """The form field (and element id) of a quota."""
    return f"quota-{quota}"


def _quota_values(form: Any) -> dict[str, str]:
    return {quota: str(form.get(field_of(quota), "")).strip() for quota in QUOTAS}


def _quotas(values: dict[str, str], *, empty_lifts: bool) -> dict[str, Any]:
    """The quotas as the REST body takes them: a whole number as a number; an empty field lifts the
    quota (or, at create, is left out); anything else as typed, for the domain's rule to refuse."""
    found: dict[str, Any] = {}
    for quota, text in values.items():
        cleaned = text.replace(",", "").replace("_", "").replace(" ", "")
        if not cleaned:
            if empty_lifts:
                found[quota] = None
        else:
            found[quota] = int(cleaned) if WHOLE_NUMBER.match(cleaned) else text
    return found


def _field(path: str) -> str:
    """The form field an API field path is about: `quotas.modules` → `quota-modules`."""
    head, _, rest = path.partition(".")
    if head == "quotas" and rest in LABELS:
        return field_of(rest)
    return head or "form"


def _message(path: str, message: str) -> str:
    head, _, rest = path.partition(".")
    label = LABELS.get(rest) if head == "quotas" else {"id": "Id", "name": "Name"}.get(head)
    # The API's null for no limit is the form's empty field.
    return f"{label or path}: {message.replace('or null for no limit', 'or empty for no limit')}"


def _problem(error: Exception) -> FormProblem | None:
    """The form's messages by field, for an error about what was typed; None for any other."""
    fields: dict[str, list[str]] = {}
    if isinstance(error, ValidationError):
        for item in error.errors():
            path = ".".join(str(p) for p in item.get("loc", ()))
            fields.setdefault(_field(path), []).append(_message(path, str(item.get("msg"))))
    elif isinstance(error, errors.InvalidRecord):
        for violation in error.violations:
            fields.setdefault(_field(violation.field), []).append(_message(violation.field, violation.message))
    elif isinstance(error, errors.RecordTaken):
        fields["id"] = [f"Id: an organization with the id {error.record_id!r} exists already."]
    else:
        return None
    return FormProblem(fields, "Some fields need a change.")


def size_text(count: int | None) -> str:
    """Bytes as a person reads them: `1,536 bytes (1.5 KB)`."""
    if count is None:
        return "no limit"
    text = f"{count:,} byte{'s' if count != 1 else ''}"
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if count >= scale:
            return f"{text} ({count / scale:.1f} {unit})"
    return text


def _flash(request: Request) -> str:
    return next((text.format(request.query_params[key]) for key, text in MESSAGES.items() if key in request.query_params), "")


def _done(target: str, **flag: str) -> RedirectResponse:
    return RedirectResponse(f"{target}?{urlencode(flag)}", status_code=303)


def _page_of(tenant_id: str) -> str:
    return f"{LIST}/{quote(tenant_id, safe='')}"


# -- the list, and creating an organization ---------------------------------------------------------


def _list(request: Request, *, status: int = 200, created: dict[str, Any] | None = None, values: dict[str, str] | None = None,
          problem: FormProblem | None = None, message: str = "") -> Response:
    services = request.app.state.services
    return request.app.state.console_pages.render(
        request, "operator/tenants.html", status=status, headers=NO_STORE,
        tenants=services.tenants.list(), own=services.tenants.own,
        created=created, values=values or {"id": "", "name": "", **{field_of(q): "" for q in QUOTAS}},
        fields=problem.fields if problem else {}, summary=problem.summary if problem else "", message=message,
        quotas=QUOTAS, labels=LABELS, hints=HINTS, field_of=field_of, size_text=size_text,
    )


@router.get("")
def operator_home(visitor: Operator) -> RedirectResponse:
    return RedirectResponse(LIST, status_code=303)


@router.get("/tenants")
def tenants_page(request: Request, visitor: Operator) -> Response:
    return _list(request, message=_flash(request))


@router.post("/tenants")
async def create(request: Request, visitor: Operator) -> Response:
    form = await request.form()
    quota_values = _quota_values(form)
    values = {"id": str(form.get("id", "")).strip(), "name": str(form.get("name", "")).strip(),
              **{field_of(q): v for q, v in quota_values.items()}}
    try:
        body = TenantIn.model_validate({"id": values["id"], "name": values["name"],
                                        "quotas": _quotas(quota_values, empty_lifts=False) or None})
        created = tenant_created(*request.app.state.services.tenants.create(body.id, body.name, body.quotas, by=visitor.principal.name))
    except (ValidationError, errors.ModuleError) as error:
        problem = _problem(error)
        if problem is None:
            raise
        return _list(request, values=values, problem=problem)
    return _list(request, created=created, message=MESSAGES["created"].format(created["tenant"]["id"]))


# -- one organization -------------------------------------------------------------------------------


def _tenant(request: Request, tenant_id: str, *, status: int = 200, problem: FormProblem | None = None,
            values: dict[str, str] | None = None, refusal: str = "", message: str = "") -> Response:
    services = request.app.state.services
    tenant = tenant_view(services, tenant_id)
    current = {field_of(q): "" if tenant["quotas"][q] is None else str(tenant["quotas"][q]) for q in QUOTAS}
    return request.app.state.console_pages.render(
        request, "operator/tenant.html", status=status, headers=NO_STORE,
        tenant=tenant, usage=tenant["usage"], own=tenant_id == services.tenants.own,
        values={"name": tenant["name"], **current, **(values or {})},
        fields=problem.fields if problem else {}, summary=problem.summary if problem else "",
        refusal=refusal, message=message, quotas=QUOTAS, labels=LABELS, hints=HINTS, field_of=field_of,
        size_text=size_text,
    )


@router.get("/tenants/{tenant_id}")
def tenant_page(tenant_id: str, request: Request, visitor: Operator) -> Response:
    return _tenant(request, tenant_id, message=_flash(request))


async def _change(request: Request, tenant_id: str, body: dict[str, Any], values: dict[str, str], flag: str) -> Response:
    """What a `PUT` of the REST route with `body` changes; the page again with the messages by field when refused."""
    visitor = request.state.visitor
    try:
        change = TenantChange.model_validate(body).model_dump(exclude_unset=True, exclude_none=False)
        request.app.state.services.tenants.update(tenant_id, change, by=visitor.principal.name)
    except (ValidationError, errors.ModuleError) as error:
        problem = _problem(error)
        if problem is None:
            raise
        return _tenant(request, tenant_id, values=values, problem=problem)
    return _done(_page_of(tenant_id), **{flag: tenant_id})


@router.post("/tenants/{tenant_id}/quotas")
async def set_quotas(tenant_id: str, request: Request, visitor: Operator) -> Response:
    """Every quota of the form: a number sets it, an empty field lifts it."""
    quota_values = _quota_values(await request.form())
    return await _change(request, tenant_id, {"quotas": _quotas(quota_values, empty_lifts=True)},
                         {field_of(q): v for q, v in quota_values.items()}, "quotas")


@router.post("/tenants/{tenant_id}/name")
async def rename(tenant_id: str, request: Request, visitor: Operator) -> Response:
    name = str((await request.form()).get("name", ""))
    return await _change(request, tenant_id, {"name": name}, {"name": name.strip()}, "renamed")


@router.post("/tenants/{tenant_id}/suspend")
async def suspend(tenant_id: str, request: Request, visitor: Operator) -> Response:
    return await _change(request, tenant_id, {"suspended": True}, {}, "suspended")


@router.post("/tenants/{tenant_id}/resume")
async def resume(tenant_id: str, request: Request, visitor: Operator) -> Response:
    return await _change(request, tenant_id, {"suspended": False}, {}, "resumed")


@router.post("/tenants/{tenant_id}/delete")
def delete(tenant_id: str, request: Request, visitor: Operator) -> Response:
    try:
        request.app.state.services.tenants.delete(tenant_id, by=visitor.principal.name)
    except errors.TenantNotEmpty as error:
        return _tenant(request, tenant_id, status=409, refusal=f"Not deleted: {error.detail}.")
    return _done(LIST, deleted=tenant_id)
