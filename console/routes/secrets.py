"""Secrets (docs/kinds/index.md, docs/console.md): the list (id, description, fingerprint, the tools that use each, when
it changed), and for admins the forms to create, rotate and delete one. A value is typed into a
password field and never sent back: not in a page, not in a form answered again after an error.
Every change goes through `services.secrets`, as the REST routes' do (api/routes/secrets.py)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from api.schemas import SecretFields, SecretIn
from console.routes.callers import FormProblem, problem_of_error, problem_of_validation
from console.routing import ConsoleRoute
from console.security import Reader, Writer
from console.toast import toast
from domain import errors

router = APIRouter(prefix="/console/secrets", route_class=ConsoleRoute, include_in_schema=False)

# The page holds password fields: no cache keeps it.
NO_STORE = {"Cache-Control": "no-store"}
MESSAGES = {
    "created": "Created the secret {}.",
    "rotated": "Saved the secret {}: tools use its new value from their next call.",
    "deleted": "Deleted the secret {}.",
}


def _page(request: Request, *, status: int = 200, values: dict[str, str] | None = None, problem: FormProblem | None = None,
          refusal: str = "", message: str = "") -> Response:
    services = request.app.state.services
    return request.app.state.console_pages.render(
        request, "secrets/list.html", status=status, headers=NO_STORE,
        secrets=services.secrets.list(request.state.visitor.principal.tenant),
        values=values or {"id": "", "description": ""},
        fields=problem.fields if problem else {}, summary=problem.summary if problem else "",
        refusal=refusal, message=message,
    )


def _message(request: Request) -> str:
    return next((text.format(request.query_params[key]) for key, text in MESSAGES.items() if key in request.query_params), "")


def _done(request: Request, said: str, secret_id: str) -> Response:
    """The secrets page again, with a toast saying what was done (no Undo: a value typed is never kept to put back)."""
    return toast(request, RedirectResponse("/console/secrets", status_code=303), MESSAGES[said].format(secret_id))


@router.get("")
def secrets_page(request: Request, visitor: Reader) -> Response:
    return _page(request, message=_message(request))


@router.post("")
async def create(request: Request, visitor: Writer) -> Response:
    form = await request.form()
    # What the form is shown again with: never the value.
    values = {"id": str(form.get("id", "")).strip(), "description": str(form.get("description", "")).strip()}
    try:
        body = SecretIn.model_validate({**values, "value": str(form.get("value", ""))})
        request.app.state.services.secrets.create(visitor.principal.tenant, body.id, body.value.get_secret_value(),
                                                  body.description, by=visitor.principal.name)
    except ValidationError as error:
        return _page(request, values=values, problem=problem_of_validation(error))
    except errors.ModuleError as error:
        problem = problem_of_error(error)
        if problem is None:
            raise
        return _page(request, values=values, problem=problem)
    return _done(request, "created", values["id"])


@router.post("/{secret_id}/rotate")
async def rotate(secret_id: str, request: Request, visitor: Writer) -> Response:
    """A new value, and (or) a new description; an empty value field keeps the value."""
    form = await request.form()
    value = str(form.get("value", ""))
    description = form.get("description")
    try:
        body = SecretFields.model_validate({"value": value or None,
                                            "description": str(description).strip() if description is not None else None})
        value = body.value.get_secret_value() if body.value is not None else None
        request.app.state.services.secrets.update(visitor.principal.tenant, secret_id, value=value,
                                                  description=body.description, by=visitor.principal.name)
    except (ValidationError, errors.InvalidRecord) as error:
        problem = problem_of_validation(error) if isinstance(error, ValidationError) else problem_of_error(error)
        assert problem is not None
        # Said above the list: the rotate dialog's fields are not on the page once it is answered.
        messages = [m for found in problem.fields.values() for m in found]
        return _page(request, problem=FormProblem({"form": messages}, f"The secret {secret_id} was not changed."))
    return _done(request, "rotated", secret_id)


@router.post("/{secret_id}/delete")
def delete(secret_id: str, request: Request, visitor: Writer) -> Response:
    try:
        request.app.state.services.secrets.delete(visitor.principal.tenant, secret_id, by=visitor.principal.name)
    except errors.SecretInUse as error:
        return _page(request, status=409, refusal=f"Not deleted: {error.detail}. Change those tools first.")
    return _done(request, "deleted", secret_id)
