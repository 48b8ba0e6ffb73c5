"""Bearer tokens (docs/security.md): the list, issuing one (its secret shown once, on the answer to the
form, never stored in a page that a reload or the history brings back), and revoking one. Admins
only, as the REST routes are (api/routes/tokens.py); both go through `services.tokens`."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError

from api.presenters import token_issued
from api.schemas import TokenIn
from application.principals import ADMIN, AUDITOR, CALLER, ROLES
from console.routes.callers import FormProblem, problem_of_error, problem_of_validation
from console.routing import ConsoleRoute
from console.security import Reader, Refused, Writer
from console.toast import toast
from domain import errors
from domain.callers import PROFILE

router = APIRouter(prefix="/console/tokens", route_class=ConsoleRoute, include_in_schema=False)

# The roles offered, the least power first: a new token is a caller unless the admin chooses more
# (issue 31: it defaulted to admin). Every role the service knows is offered.
ROLES_BY_POWER = (CALLER, *(r for r in ROLES if r not in (CALLER, ADMIN)), ADMIN)
ROLE_WORDS = {CALLER: "Caller (calls tools)", AUDITOR: "Auditor (reads)", ADMIN: "Admin (everything)"}

# The secret is on one answer only: no cache may keep it, and a back button shows no copy of it.
NO_STORE = {"Cache-Control": "no-store"}


def _page(request: Request, *, status: int = 200, issued: dict[str, Any] | None = None, values: dict[str, str] | None = None,
          problem: FormProblem | None = None, message: str = "") -> Response:
    services = request.app.state.services
    principal = request.state.visitor.principal
    return request.app.state.console_pages.render(
        request, "tokens/list.html", status=status, headers=NO_STORE,
        tokens=services.tokens.tokens(principal.tenant), issued=issued, roles=[(r, ROLE_WORDS[r]) for r in ROLES_BY_POWER],
        role_words=ROLE_WORDS,
        profiles=[p["id"] for p in services.records.list(principal.tenant, PROFILE)],
        values=values or {"name": "", "role": CALLER, "usageProfile": ""},
        fields=problem.fields if problem else {}, summary=problem.summary if problem else "", message=message,
    )


@router.get("")
def tokens_page(request: Request, visitor: Reader) -> Response:
    if not visitor.can_write:
        return request.app.state.console_pages.render(
            request, "tokens/auditor.html", status=403, title="Tokens",
        )
    return _page(request)


@router.post("")
async def issue(request: Request, visitor: Writer) -> Response:
    form = await request.form()
    values = {k: str(form.get(k, "")).strip() for k in ("name", "role", "usageProfile")}
    services = request.app.state.services
    try:
        body = TokenIn.model_validate({"name": values["name"], "role": values["role"],
                                       "usageProfile": values["usageProfile"] or None})
        issued = token_issued(*services.tokens.issue_token(visitor.principal.tenant, body.name, body.role, body.usageProfile,
                                                           by=visitor.principal.name))
        if visitor.principal.user is not None and services.users is not None:  # a person's token is theirs (docs/users.md)
            services.users.own_token(visitor.principal.tenant, visitor.principal.user.id, issued["id"], by=visitor.principal.name)
    except ValidationError as error:
        return _page(request, values=values, problem=problem_of_validation(error))
    except errors.ModuleError as error:
        problem = problem_of_error(error)
        if problem is None:
            raise
        return _page(request, values=values, problem=problem)
    # A toast says it was done; the card on the page holds the token, shown this once (never in the toast).
    return toast(request, _page(request, issued=issued), f"Issued the token {body.name}: copy it now, it is shown once.")


@router.post("/{token_id}/revoke")
def revoke(token_id: str, request: Request, visitor: Writer) -> Response:
    services = request.app.state.services
    name = next((t["name"] for t in services.tokens.tokens(visitor.principal.tenant) if t["id"] == token_id), None)
    if name is None:
        raise Refused(404, f"No token with the id {token_id!r}: it may have been revoked already.")
    services.tokens.revoke_token(visitor.principal.tenant, token_id, by=visitor.principal.name)
    # Said by a toast on the page the redirect leads to (no Undo: a revoked token's secret is gone).
    return toast(request, RedirectResponse("/console/tokens", status_code=303), f"Revoked the token {name}: it no longer works.")
