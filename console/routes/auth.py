"""Sign-in and sign-out: a token is presented once; the browser keeps a session cookie. A token is
admitted as an API request's is (`api.admission`): a suspended organization's tokens and a token
past its rate are refused with a message; the operator's token leads to the organizations' pages,
a tenant's admin or auditor token to its tenant's."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from api.admission import TOO_MANY_FAILURES, Refusal, client_address
from console.routing import ConsoleRoute
from console.security import Anyone, check_same_site, session_of, sessions_of
from console.session import COOKIE
from application.principals import ADMIN, AUDITOR, OPERATOR, Principal
from domain.callers import token_digest

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


TENANT_HOME = "/console/modules"
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
    return RedirectResponse(OPERATOR_HOME if visitor.principal.role == OPERATOR else TENANT_HOME, status_code=303)


@router.get("/sign-in")
def sign_in_page(request: Request, next: str | None = None) -> Response:
    return request.app.state.console_pages.render(request, "sign_in.html", next=_safe_next(next), error=None)


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
        return pages.render(request, "sign_in.html", status=status, headers=headers, next=_safe_next(next), error=error)
    if principal.role not in (ADMIN, AUDITOR, OPERATOR):
        error = "This token cannot sign in to the console: it is a caller token (for tools and MCP only)."
        return pages.render(request, "sign_in.html", next=_safe_next(next), error=error)
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
