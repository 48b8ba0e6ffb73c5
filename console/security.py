"""What every console response and request goes through: the Content-Security-Policy and other
headers on every response of the service, the session behind each page, and the cross-site checks
(the `Origin` and a CSRF token) on every request that changes state."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, Request
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from console.session import COOKIE, Sessions, Visitor

CSP = "; ".join((
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
HEADERS = {
    b"content-security-policy": CSP.encode(),
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",
    b"x-frame-options": b"DENY",
}
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class SecurityHeaders:
    """Sets the CSP (`default-src 'self'`, no inline script or style, no eval) and friends on every
    HTTP response the service sends: console pages, `/docs`, the API."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    if name.decode() not in headers:
                        headers.append(name.decode(), value.decode())
            await send(message)

        await self.app(scope, receive, with_headers)


class SignInRequired(Exception):
    """No session, an expired or ended one, or a token that no longer works."""


class Refused(Exception):
    """A request the visitor may not make: `status` and a message for a person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def sessions_of(request: Request) -> Sessions:
    return request.app.state.console_sessions


async def current_visitor(request: Request) -> Visitor:
    """The signed-in admin or auditor, from the session cookie; sign-in otherwise."""
    sessions = sessions_of(request)
    session = sessions.read(request.cookies.get(COOKIE))
    if session is None:
        raise SignInRequired()
    principal = request.app.state.services.authenticator.authenticate_digest(session.digest)
    if principal is None or principal.role not in ("admin", "auditor"):
        raise SignInRequired()
    visitor = Visitor(principal, session)
    request.state.visitor = visitor
    if request.method not in SAFE_METHODS:
        await check_same_site(request, visitor)
    return visitor


async def check_same_site(request: Request, visitor: Visitor | None) -> None:
    """A state-changing request must come from this origin: an `Origin` (or, without one, a
    `Sec-Fetch-Site`) naming this site, and the session's CSRF token in a header or a form field."""
    expected_origin = f"{request.url.scheme}://{request.url.netloc}"
    origin = request.headers.get("origin")
    if origin is not None and origin != expected_origin:
        raise Refused(403, "This request came from another site and was refused.")
    if origin is None and request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise Refused(403, "This request came from another site and was refused.")
    if visitor is None:
        return
    presented = request.headers.get(CSRF_HEADER)
    if presented is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        presented = value if isinstance(value, str) else None
    if not Sessions.csrf_matches(visitor.session, presented):
        raise Refused(403, "This form has expired or did not come from this console; reload the page and try again.")


async def current_writer(visitor: Annotated[Visitor, Depends(current_visitor)]) -> Visitor:
    """An admin: auditors read everything and change nothing."""
    if not visitor.can_write:
        raise Refused(403, "Your token's role (auditor) can read but not change anything.")
    return visitor


Reader = Annotated[Visitor, Depends(current_visitor)]
Writer = Annotated[Visitor, Depends(current_writer)]


def sign_in_url(request: Request) -> str:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return "/console/sign-in?next=" + quote(target, safe="")
