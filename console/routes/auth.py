"""Sign-in and sign-out. A person signs in with their organization, email and password (docs/users.md),
or a token is presented once; either way the browser keeps a session cookie (`console/session.py`).
A token is admitted as an API request's is (`api.admission`): a suspended organization's tokens and
a token past its rate are refused with a message; the operator's token leads to the organizations'
pages, a tenant's admin or auditor token to its tenant's. A password sign-in answers the same words
for an unknown email and a wrong password, and locks an (organization, email) for 15 minutes after
`TOOLSMITH_LOGIN_FAILURES` wrong ones (`application/users.py`). An invited person sets their first
password on the invitation page their link opens, and is signed in."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from api.admission import TOO_MANY_FAILURES, Refusal, client_address
from console.routing import ConsoleRoute
from console.security import Anyone, check_same_site, session_of, sessions_of
from console.session import COOKIE
from application.principals import ADMIN, AUDITOR, OPERATOR, Principal
from application.users import InvitationInvalid, SignInLocked, SignInRefused
from domain import errors
from domain.callers import token_digest
from domain.users import CALLER

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


TENANT_HOME = "/console/modules"
ACCOUNT = "/console/account"
# The pages a caller person opens: their account, and the consent and grants of their AI clients.
CALLER_PAGES = (ACCOUNT, "/console/oauth", "/console/consent", "/console/grants")
PASSWORD_REFUSED = "That email and password do not match an account of this organization. Check them and try again."
OPERATOR_HOME = "/console/operator/tenants"
OPERATOR_PAGES = "/console/operator"


def _safe_next(target: str | None) -> str:
    """Only a path of the console: never another host (`//evil`, `https://…`)."""
    if target and target.startswith("/console/") and not target.startswith("//") and "\\" not in target:
        return target
    return TENANT_HOME


def _landing(principal: Principal, target: str | None) -> str:
    """Where a sign-in leads: `next` when it is a page this token may open, else its home (the
    operator's pages for the operator, the tenant's for its admins and auditors)."""
    home = OPERATOR_HOME if principal.role == OPERATOR else TENANT_HOME
    if principal.role == CALLER:  # a caller person: their account, or a page that is theirs (a consent)
        chosen = _safe_next(target)
        return chosen if chosen.startswith(CALLER_PAGES) else ACCOUNT
    chosen = _safe_next(target)
    operator_page = chosen == OPERATOR_PAGES or chosen.startswith(OPERATOR_PAGES + "/")
    return chosen if operator_page == (principal.role == OPERATOR) else home


def _refused(refusal: Refusal) -> tuple[int, str, dict[str, str] | None]:
    """The sign-in form's status, message and headers for a token the admission refused."""
    if refusal.code == "tenant-suspended":
        return 403, ("Your organization is suspended: its tokens cannot sign in until the service's operator "
                     "resumes it. Nothing it holds is lost."), None
    if refusal.code == TOO_MANY_FAILURES:
        wait = (refusal.headers or {}).get("Retry-After", "1")
        return 429, (f"Too many tokens that are not valid were tried from your address. Try again in {wait} "
                     f"second{'s' if wait != '1' else ''}."), refusal.headers
    if refusal.status == 429:
        wait = (refusal.headers or {}).get("Retry-After", "1")
        return 429, f"This token made more requests than its rate allows. Try again in {wait} second{'s' if wait != '1' else ''}.", refusal.headers
    return 200, "That token is not valid. Check it and try again.", None


@router.get("/")
def home(visitor: Anyone) -> RedirectResponse:
    if visitor.principal.role == CALLER:
        return RedirectResponse(ACCOUNT, status_code=303)
    return RedirectResponse(OPERATOR_HOME if visitor.principal.role == OPERATOR else TENANT_HOME, status_code=303)


def _sign_in_form(request: Request, *, status: int = 200, headers: dict[str, str] | None = None, next: str | None = None,
                  error: str | None = None, password_error: str | None = None, organization: str | None = None,
                  email: str = "") -> Response:
    """The sign-in page: the password form (the organization prefilled with the service's own, or
    the link's `organization`) and the token form, each with its own message."""
    services = request.app.state.services
    return request.app.state.console_pages.render(
        request, "sign_in.html", status=status, headers=headers, next=_safe_next(next), error=error,
        password_error=password_error, email=email,
        organization=organization if organization is not None else services.settings.tenant,
        people=services.users is not None)


@router.get("/sign-in")
def sign_in_page(request: Request, next: str | None = None, organization: str | None = None) -> Response:
    return _sign_in_form(request, next=next, organization=organization)


def person_signed_in(request: Request, tenant: str, user_id: str, next: str | None = None) -> Response:
    """Starts a person's session (a password or single sign-on sign-in) and leads to `next`, or to
    their home: the cookie names the person, never a secret."""
    services = request.app.state.services
    principal = services.users.principal(tenant, user_id)
    sessions = sessions_of(request)
    _, value = sessions.start_person(tenant, user_id)
    answer = RedirectResponse(_landing(principal, next) if principal is not None else "/console/sign-in", status_code=303)
    answer.set_cookie(COOKIE, value, max_age=int(sessions.max_age_seconds), httponly=True, samesite="strict",
                      secure=request.url.scheme == "https", path="/")
    return answer


@router.post("/sign-in/password")
async def sign_in_by_password(request: Request, organization: Annotated[str, Form()] = "", email: Annotated[str, Form()] = "",
                              password: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "") -> Response:
    await check_same_site(request, None)
    services = request.app.state.services
    tenant, email = organization.strip().lower(), email.strip()
    kept = {"next": next, "organization": organization.strip(), "email": email}
    if services.users is None:
        return _sign_in_form(request, password_error=PASSWORD_REFUSED, **kept)
    client = client_address(request)
    try:
        # An address spraying passwords over many emails is throttled as one trying tokens is.
        services.admission.throttled(client)
        try:
            user = services.users.sign_in(tenant, email, password)
        except SignInRefused:
            services.admission.failed(client)
            raise
        principal = services.users.principal(tenant, user["id"])
        if principal is None:
            raise SignInRefused()
        services.admission.admit_principal(principal, client)
    except SignInLocked as locked:
        minutes = max(1, round(locked.wait / 60))
        return _sign_in_form(request, status=429, headers={"Retry-After": str(max(1, int(locked.wait)))},
                             password_error=(f"Too many wrong passwords for this email. Sign-in with it is locked for "
                                             f"{minutes} minute{'s' if minutes != 1 else ''}; try again then, or ask an admin."), **kept)
    except SignInRefused:
        return _sign_in_form(request, password_error=PASSWORD_REFUSED, **kept)
    except Refusal as refusal:
        status, error, headers = _refused(refusal)
        if refusal.status == 401:
            error = PASSWORD_REFUSED
        elif refusal.code == TOO_MANY_FAILURES:
            wait = (refusal.headers or {}).get("Retry-After", "1")
            error = f"Too many failed sign-ins came from your address. Try again in {wait} second{'s' if wait != '1' else ''}."
        return _sign_in_form(request, status=status, headers=headers, password_error=error.replace("its tokens", "its people"), **kept)
    return person_signed_in(request, tenant, user["id"], next)


@router.get("/invitation")
def invitation_page(request: Request, code: str = "") -> Response:
    """An invited person's page: they choose their password (the code is in the link, never logged)."""
    pages = request.app.state.console_pages
    try:
        person = request.app.state.services.users.invitation_of(code)
    except InvitationInvalid:
        return pages.render(request, "users/invitation.html", status=404, person=None, code="", error=None)
    return pages.render(request, "users/invitation.html", person=person, code=code, error=None)


@router.post("/invitation")
async def accept_invitation(request: Request, code: Annotated[str, Form()] = "", password: Annotated[str, Form()] = "",
                            confirm: Annotated[str, Form()] = "") -> Response:
    await check_same_site(request, None)
    pages = request.app.state.console_pages
    users = request.app.state.services.users
    try:
        person = users.invitation_of(code)
    except InvitationInvalid:
        return pages.render(request, "users/invitation.html", status=404, person=None, code="", error=None)
    if password != confirm:
        return pages.render(request, "users/invitation.html", person=person, code=code,
                            error="The two passwords are not the same. Type the same password in both fields.")
    try:
        users.accept_invitation(code, password)
    except errors.InvalidRecord as error:
        return pages.render(request, "users/invitation.html", person=person, code=code,
                            error=f"{error.violations[0].message[0].upper()}{error.violations[0].message[1:]}.")
    except InvitationInvalid:
        return pages.render(request, "users/invitation.html", status=404, person=None, code="", error=None)
    users.record_sign_in(person["tenant"], person["id"])
    return person_signed_in(request, person["tenant"], person["id"])


@router.post("/sign-in")
async def sign_in(request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "") -> Response:
    await check_same_site(request, None)
    pages = request.app.state.console_pages
    token = token.strip()
    try:
        principal = request.app.state.services.admission.admit(token or None, client_address(request))
    except Refusal as refusal:
        status, error, headers = _refused(refusal)
        # The form again with the message tied to its field (a form answered, as GOV.UK's are).
        return _sign_in_form(request, status=status, headers=headers, next=next, error=error)
    if principal.role not in (ADMIN, AUDITOR, OPERATOR):
        error = "This token cannot sign in to the console: it is a caller token (for tools and MCP only)."
        return _sign_in_form(request, next=next, error=error)
    sessions = sessions_of(request)
    _, value = sessions.start(token_digest(token))
    answer = RedirectResponse(_landing(principal, next), status_code=303)
    answer.set_cookie(COOKIE, value, max_age=int(sessions.max_age_seconds), httponly=True, samesite="strict",
                      secure=request.url.scheme == "https", path="/")
    return answer


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    """Ends the session whatever its token may do now (a suspended organization's admin signs out too)."""
    session = session_of(request)
    await check_same_site(request, session)
    sessions_of(request).end(session)
    answer = RedirectResponse("/console/sign-in", status_code=303)
    answer.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return answer
