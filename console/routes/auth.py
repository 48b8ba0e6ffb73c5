"""Sign-in and sign-out: a token is presented once; the browser keeps a session cookie."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from console.routing import ConsoleRoute
from console.security import Reader, check_same_site, sessions_of
from console.session import COOKIE
from infrastructure.auth import token_digest

router = APIRouter(prefix="/console", route_class=ConsoleRoute, include_in_schema=False)


def _safe_next(target: str | None) -> str:
    """Only a path of the console: never another host (`//evil`, `https://…`)."""
    if target and target.startswith("/console/") and not target.startswith("//") and "\\" not in target:
        return target
    return "/console/modules"


@router.get("/")
def home(visitor: Reader) -> RedirectResponse:
    return RedirectResponse("/console/modules", status_code=303)


@router.get("/sign-in")
def sign_in_page(request: Request, next: str | None = None) -> Response:
    return request.app.state.console_pages.render(request, "sign_in.html", next=_safe_next(next), error=None)


@router.post("/sign-in")
async def sign_in(request: Request, token: Annotated[str, Form()] = "", next: Annotated[str, Form()] = "") -> Response:
    await check_same_site(request, None)
    pages = request.app.state.console_pages
    principal = request.app.state.services.authenticator.authenticate(token.strip() or None)
    if principal is None or principal.role not in ("admin", "auditor"):
        error = ("This token cannot sign in to the console: it is a caller token (for tools and MCP only)."
                 if principal is not None else "That token is not valid. Check it and try again.")
        # The form again with the message tied to its field (200: a form answered, as GOV.UK's are).
        return pages.render(request, "sign_in.html", next=_safe_next(next), error=error)
    sessions = sessions_of(request)
    _, value = sessions.start(token_digest(token.strip()))
    answer = RedirectResponse(_safe_next(next), status_code=303)
    answer.set_cookie(COOKIE, value, max_age=int(sessions.max_age_seconds), httponly=True, samesite="strict",
                      secure=request.url.scheme == "https", path="/")
    return answer


@router.post("/sign-out")
def sign_out(request: Request, visitor: Reader) -> Response:
    sessions_of(request).end(visitor.session)
    answer = RedirectResponse("/console/sign-in", status_code=303)
    answer.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=request.url.scheme == "https")
    return answer
