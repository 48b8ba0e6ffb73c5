"""The people of the organization (docs/users.md): the list (name, email, role, status, last sign-in),
adding a person (with a password, or by invitation: the link is shown once, on the answer), a
person's page (change their name, role, usage profile and locale; disable, enable, invite again,
delete with a confirmation), and "Your account", where a signed-in person changes their own
display name, locale and password. Admins change, auditors read, as in the REST API
(api/routes/users.py); both go through `services.users`."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from console.routes.callers import FormProblem, problem_of_error
from console.routing import ConsoleRoute
from console.security import Anyone, Reader, Refused, Writer
from console.toast import Undo, toast
from domain import errors
from domain.callers import PROFILE
from domain.users import ADMIN, AUDITOR, CALLER, actor_of, status

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)

BASE = "/console/users"
ROLE_WORDS = {CALLER: "Caller (uses tools through AI clients)", AUDITOR: "Auditor (reads everything)", ADMIN: "Admin (changes everything)"}
SHORT_ROLES = {CALLER: "Caller", AUDITOR: "Auditor", ADMIN: "Admin"}
STATUS_WORDS = {"active": "Active", "invited": "Invited", "disabled": "Disabled"}
STATUS_BADGES = {"active": "badge-ok", "invited": "badge-info", "disabled": "badge-danger"}
# An invitation's link is on one answer only: no cache keeps it, and the back button shows no copy.
NO_STORE = {"Cache-Control": "no-store"}
FIELDS = ("email", "name", "role", "usageProfile", "locale")


def _users(request: Request) -> Any:
    users = request.app.state.services.users
    if users is None:
        raise Refused(404, "People are not managed by this service.")
    return users


def _profiles(request: Request, tenant: str) -> list[str]:
    return [p["id"] for p in request.app.state.services.records.list(tenant, PROFILE)]


def who(by: str | None) -> str:
    """A `by` in words: a person's display name, or the token's name."""
    person = actor_of(by)
    return person["name"] if person else (by or "—")


def _render(request: Request, template: str, *, status_code: int = 200, headers: dict[str, str] | None = None,
            **context: Any) -> Response:
    tenant = request.state.visitor.principal.tenant
    return request.app.state.console_pages.render(
        request, template, status=status_code, headers=headers, roles=list(ROLE_WORDS.items()), role_words=SHORT_ROLES,
        status_words=STATUS_WORDS, status_badges=STATUS_BADGES, status_of=status, who=who, profiles=_profiles(request, tenant), **context)


def _form(form: Any) -> dict[str, str]:
    return {k: str(form.get(k, "")).strip() for k in FIELDS}


# -- the list and a new person -------------------------------------------------------------------


def _list(request: Request, *, status_code: int = 200, values: dict[str, str] | None = None,
          problem: FormProblem | None = None, invited: dict[str, Any] | None = None) -> Response:
    visitor = request.state.visitor
    people = _users(request).list(visitor.principal.tenant)
    return _render(request, "users/list.html", status_code=status_code, headers=NO_STORE, people=people, invited=invited,
                   values=values or {"email": "", "name": "", "role": CALLER, "usageProfile": "", "locale": "en"},
                   fields=problem.fields if problem else {}, summary=problem.summary if problem else "")


@router.get("/users")
def users_page(request: Request, visitor: Reader) -> Response:
    return _list(request)


@router.post("/users")
async def add_person(request: Request, visitor: Writer) -> Response:
    form = await request.form()
    values = _form(form)
    how = str(form.get("how", "invite"))
    password = str(form.get("password", ""))
    users, principal = _users(request), visitor.principal
    try:
        common = {"usage_profile": values["usageProfile"] or None, "locale": values["locale"] or "en", "by": principal.name}
        if how == "password":
            user = users.create(principal.tenant, values["email"], values["name"], values["role"], password=password, **common)
            invited = None
        else:
            user, invitation = users.invite(principal.tenant, values["email"], values["name"], values["role"], **common)
            invited = {**user, "url": str(request.base_url).rstrip("/") + "/console/invitation?code=" + quote(invitation["code"], safe=""),
                       "expiresAt": invitation["expiresAt"]}
    except errors.ModuleError as error:
        problem = problem_of_error(error)
        if isinstance(error, errors.RecordTaken):
            problem = FormProblem({"email": ["email: a person of this organization already has this email"]}, "That email is taken.")
        if problem is None:
            raise
        return _list(request, values={**values, "how": how}, problem=problem)
    if invited is not None:
        # The link is on this answer only (a toast says it was done, never the link).
        return toast(request, _list(request, invited=invited), f"Invited {user['name']}: copy the invitation link now, it is shown once.")
    page = f"{BASE}/{user['id']}"
    return toast(request, RedirectResponse(page, status_code=303), f"Added {user['name']}: they can sign in now.")


# -- a person ---------------------------------------------------------------------------------


def _person_page(request: Request, user_id: str, *, status_code: int = 200, problem: FormProblem | None = None,
                 values: dict[str, str] | None = None, invited: dict[str, Any] | None = None) -> Response:
    visitor = request.state.visitor
    user = _users(request).get(visitor.principal.tenant, user_id)  # UnknownRecord: the console's 404
    own = visitor.principal.user is not None and visitor.principal.user.id == user_id
    return _render(request, "users/detail.html", status_code=status_code, headers=NO_STORE, person=user, own=own,
                   values=values or {k: user.get(k) or "" for k in FIELDS}, invited=invited,
                   fields=problem.fields if problem else {}, summary=problem.summary if problem else "")


@router.get("/users/{user_id}")
def person_page(user_id: str, request: Request, visitor: Reader) -> Response:
    return _person_page(request, user_id)


@router.post("/users/{user_id}")
async def change_person(user_id: str, request: Request, visitor: Writer) -> Response:
    form = await request.form()
    values = _form(form)
    changes = {"name": values["name"], "role": values["role"], "usageProfile": values["usageProfile"] or None,
               "locale": values["locale"]}
    version = str(form.get("version", ""))
    try:
        user = _users(request).update(visitor.principal.tenant, user_id, changes,
                                      expected=int(version) if version.isdigit() else None, by=visitor.principal.name)
    except errors.PreconditionFailed:
        problem = FormProblem({"form": ["Someone changed this person after you opened the page: their page shows it now. "
                                        "Make your change again."]}, "Not saved.")
        return _person_page(request, user_id, status_code=409, problem=problem)
    except errors.ModuleError as error:
        problem = problem_of_error(error)
        if problem is None:
            raise
        return _person_page(request, user_id, problem=problem, values={**values, "email": ""})
    return toast(request, RedirectResponse(f"{BASE}/{user_id}", status_code=303), f"Saved {user['name']}.")


def _not_yourself(visitor: Any, user_id: str, what: str) -> None:
    if visitor.principal.user is not None and visitor.principal.user.id == user_id:
        raise Refused(409, f"You cannot {what} your own account: another admin can.")


@router.post("/users/{user_id}/disable")
def disable_person(user_id: str, request: Request, visitor: Writer) -> Response:
    _not_yourself(visitor, user_id, "disable")
    user = _users(request).disable(visitor.principal.tenant, user_id, by=visitor.principal.name)
    page = f"{BASE}/{user_id}"
    return toast(request, RedirectResponse(page, status_code=303),
                 f"Disabled {user['name']}: they are signed out and cannot sign in.", undo=Undo(f"{page}/enable"))


@router.post("/users/{user_id}/enable")
def enable_person(user_id: str, request: Request, visitor: Writer) -> Response:
    user = _users(request).enable(visitor.principal.tenant, user_id, by=visitor.principal.name)
    page = f"{BASE}/{user_id}"
    return toast(request, RedirectResponse(page, status_code=303), f"Enabled {user['name']}: they can sign in again.",
                 undo=Undo(f"{page}/disable"))


@router.post("/users/{user_id}/invitation")
def invite_again(user_id: str, request: Request, visitor: Writer) -> Response:
    users = _users(request)
    user, invitation = users.reinvite(visitor.principal.tenant, user_id, by=visitor.principal.name)
    invited = {**user, "url": str(request.base_url).rstrip("/") + "/console/invitation?code=" + quote(invitation["code"], safe=""),
               "expiresAt": invitation["expiresAt"]}
    return toast(request, _person_page(request, user_id, invited=invited),
                 f"Made a new invitation link for {user['name']}: copy it now, it is shown once.")


@router.post("/users/{user_id}/delete")
def delete_person(user_id: str, request: Request, visitor: Writer) -> Response:
    _not_yourself(visitor, user_id, "delete")
    users = _users(request)
    user = users.get(visitor.principal.tenant, user_id)
    users.delete(visitor.principal.tenant, user_id, by=visitor.principal.name)
    # No Undo: their password is forgotten with them.
    return toast(request, RedirectResponse(BASE, status_code=303), f"Deleted {user['name']}: they can no longer sign in.")


# -- your account -----------------------------------------------------------------------------


def _account(request: Request, *, status_code: int = 200, problem: FormProblem | None = None,
             password_problem: FormProblem | None = None, values: dict[str, str] | None = None) -> Response:
    visitor = request.state.visitor
    person = visitor.principal.user
    if person is None:
        return request.app.state.console_pages.render(request, "users/account.html", status=status_code, person=None,
                                                      values={}, fields={}, summary="", password_fields={}, password_summary="")
    user = _users(request).get(visitor.principal.tenant, person.id)
    return request.app.state.console_pages.render(
        request, "users/account.html", status=status_code, person=user, role_words=SHORT_ROLES,
        values=values or {"name": user["name"], "locale": user["locale"]},
        fields=problem.fields if problem else {}, summary=problem.summary if problem else "",
        password_fields=password_problem.fields if password_problem else {},
        password_summary=password_problem.summary if password_problem else "")


@router.get("/account")
def account_page(request: Request, visitor: Anyone) -> Response:
    return _account(request)


@router.post("/account")
async def change_account(request: Request, visitor: Anyone) -> Response:
    person = visitor.principal.user
    if person is None:
        raise Refused(403, "A token has no account to change: sign in with your email and password.")
    form = await request.form()
    values = {"name": str(form.get("name", "")).strip(), "locale": str(form.get("locale", "")).strip()}
    try:
        _users(request).update(visitor.principal.tenant, person.id, values, by=visitor.principal.name)
    except errors.ModuleError as error:
        problem = problem_of_error(error)
        if problem is None:
            raise
        return _account(request, problem=problem, values=values)
    return toast(request, RedirectResponse("/console/account", status_code=303), "Saved your name and language.")


@router.post("/account/password")
async def change_password(request: Request, visitor: Anyone) -> Response:
    person = visitor.principal.user
    if person is None:
        raise Refused(403, "A token has no password to change: sign in with your email and password.")
    form = await request.form()
    current, new, confirm = (str(form.get(k, "")) for k in ("currentPassword", "newPassword", "confirmPassword"))
    if new != confirm:
        return _account(request, password_problem=FormProblem(
            {"confirmPassword": ["The two new passwords are not the same: type the same password in both fields."]},
            "Your password is not changed."))
    try:
        _users(request).set_password(visitor.principal.tenant, person.id, new, current=current, check_current=True,
                                     by=visitor.principal.name)
    except errors.InvalidRecord as error:
        fields: dict[str, list[str]] = {}
        for v in error.violations:
            fields.setdefault("newPassword" if v.field == "password" else v.field, []).append(
                ("New password: " if v.field == "password" else "Current password: ") + v.message)
        return _account(request, password_problem=FormProblem(fields, "Your password is not changed."))
    return toast(request, RedirectResponse("/console/account", status_code=303), "Changed your password.")
