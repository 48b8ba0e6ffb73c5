"""What every console response and request goes through: the Content-Security-Policy and other
headers on every response of the service, who may keep a copy of it (`Cache-Control`), the session behind each page (admitted as every request
of the API is: `api.admission`, docs/tenants.md), who may open which pages (a tenant's admins and
auditors its pages, the operator the organizations' pages and nothing inside a tenant), and the
cross-site checks (the `Origin` and a CSRF token) on every request that changes state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated
from urllib.parse import parse_qs, quote

from fastapi import Depends, Request
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.admission import TOO_MANY_FAILURES, Refusal, client_address
from console.session import COOKIE, Session, Sessions, Visitor
from application.principals import ADMIN, AUDITOR, OPERATOR

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


def consent_policy(redirect_origin: str) -> str:
    """The CSP of the OAuth consent page (console/routes/consent.py): the console's, but its form may
    lead to the application's redirect origin (Chromium applies `form-action` to a form post's redirect)."""
    return CSP.replace("form-action 'self'", f"form-action 'self' {redirect_origin}")


HEADERS = {
    b"content-security-policy": CSP.encode(),
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",
    b"x-frame-options": b"DENY",
}
# Who may keep a copy of an answer. Every answer of the service but a static file is for one
# bearer token or one session (a module's source, the audit log, a token shown once): no copy is
# kept anywhere. A static file whose URL carries the hash of its bytes (`Pages.asset`) never
# changes under that URL; any other static URL is revalidated (its ETag) on each use.
NO_STORE = "no-store"
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


# What `secure` adds to a response that does not set it already.
_ADDED = (*HEADERS.items(), (b"cache-control", NO_STORE.encode()))


def secure(start: Message) -> None:
    """Sets the CSP (`default-src 'self'`, no inline script or style, no eval) and friends on an
    HTTP response's start (`http.response.start`), and `Cache-Control: no-store` unless it says
    otherwise (only `VersionedAssets` does). The edge (`entrypoints.web.Edge`) calls it on every
    response the service sends: console pages, `/docs`, the API. The headers are a new list: the
    response's own is left as it was."""
    headers = start.get("headers") or ()
    present = {name for name, _ in headers}  # ASGI header names are lowercase, as `HEADERS`' are
    start["headers"] = [*headers, *(header for header in _ADDED if header[0] not in present)]


class VersionedAssets:
    """The console's static files (`app`, mounted at `prefix`), cached by browsers for a year when
    the URL's `v` is the hash of the file's bytes (`versions(name)`, as `Pages.asset` writes it),
    and revalidated on each use otherwise (no `v`, or one of another build). `names` are the files
    there are: no other name is ever read to be hashed."""

    def __init__(self, app: ASGIApp, prefix: str, names: frozenset[str], versions: Callable[[str], str]) -> None:
        self.app = app
        self.prefix = prefix.rstrip("/") + "/"
        self.names = names
        self.versions = versions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = scope["path"].removeprefix(self.prefix)
        asked = parse_qs((scope.get("query_string") or b"").decode("latin-1")).get("v", [])
        versioned = name in self.names and asked == [self.versions(name)]
        policy = IMMUTABLE if versioned else REVALIDATE

        async def with_policy(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] in (200, 304):
                MutableHeaders(scope=message)["Cache-Control"] = policy
            await send(message)

        await self.app(scope, receive, with_policy)


class SignInRequired(Exception):
    """No session, an expired or ended one, or a token that no longer works."""


class Refused(Exception):
    """A request the visitor may not make: `status` and a message for a person; the page's `title`,
    its `template` (given `context`) and `headers` (a 429's `Retry-After`) when not the usual ones."""

    def __init__(self, status: int, message: str, *, title: str = "Refused", template: str = "error.html",
                 headers: dict[str, str] | None = None, **context: object) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.title = title
        self.template = template
        self.headers = headers
        self.context = context


SUSPENDED = ("Your organization is suspended by the service's operator: its tokens, this session's among them, "
             "are refused until the operator resumes it. Nothing it holds is lost.")


def sessions_of(request: Request) -> Sessions:
    return request.app.state.console_sessions


def session_of(request: Request) -> Session:
    """The session the cookie carries, whatever its token may do now; sign-in otherwise."""
    session = sessions_of(request).read(request.cookies.get(COOKIE))
    if session is None:
        raise SignInRequired()
    return session


def _not_admitted(refusal: Refusal, session: Session) -> Exception:
    """The page for a session whose token the admission refused (its sign-out form needs the CSRF token)."""
    if refusal.status == 401:  # revoked, or its organization deleted (its tokens with it)
        return SignInRequired()
    if refusal.code == "tenant-suspended":
        return Refused(403, SUSPENDED, title="Organization suspended", template="not_admitted.html", session_csrf=session.csrf)
    if refusal.status == 429:
        wait = (refusal.headers or {}).get("Retry-After", "1")
        why = ("Too many tokens that are not valid were tried from your address" if refusal.code == TOO_MANY_FAILURES
               else "This token made more requests than its rate allows")
        return Refused(429, f"{why}. Try again in {wait} "
                            f"second{'s' if wait != '1' else ''}.", title="Too many requests",
                       template="not_admitted.html", headers=refusal.headers, session_csrf=session.csrf)
    return Refused(refusal.status, refusal.detail, template="not_admitted.html", session_csrf=session.csrf)


async def signed_in(request: Request) -> Visitor:
    """Whoever the session's token is now, if the admission lets it in (as it does each API request:
    a suspended organization's 403, a rate's 429); sign-in when the token no longer works."""
    session = session_of(request)
    services = request.app.state.services
    try:
        if session.user_id is not None:  # a person's session (docs/users.md): who they are now
            person = services.users.principal(session.tenant, session.user_id) if services.users is not None else None
            if person is None:  # disabled or deleted: their sessions end at once
                raise SignInRequired()
            principal = services.admission.admit_principal(person, client_address(request))
        else:
            principal = services.admission.admit_digest(session.digest, client_address(request))
    except Refusal as refusal:
        raise _not_admitted(refusal, session) from None
    # A person of any role signs in (a caller sees their account, and allows their AI clients);
    # a caller's token does not.
    if principal.role not in (ADMIN, AUDITOR, OPERATOR) and principal.user is None:
        raise SignInRequired()
    visitor = Visitor(principal, session)
    request.state.visitor = visitor
    if request.method not in SAFE_METHODS:
        await check_same_site(request, session)
    return visitor


async def current_visitor(visitor: Annotated[Visitor, Depends(signed_in)]) -> Visitor:
    """The signed-in admin or auditor of a tenant: every page inside a tenant (the one of the token)."""
    if visitor.principal.role == OPERATOR:
        raise Refused(403, "The operator's token manages the organizations and nothing inside them: "
                           "sign in with an organization's admin or auditor token to see its tools.",
                      title="Not for the operator")
    if visitor.principal.role not in (ADMIN, AUDITOR):  # a caller person: their account only
        raise Refused(403, "Your role (caller) uses tools through AI clients and scripts; the console shows you "
                           "your account.", title="Not for callers")
    return visitor


async def current_operator(visitor: Annotated[Visitor, Depends(signed_in)]) -> Visitor:
    """The service's operator (docs/tenants.md): the organizations' pages, which no tenant's token opens."""
    if visitor.principal.role != OPERATOR:
        raise Refused(403, "Only the service's operator token opens the organizations' pages; "
                           f"your token ({visitor.principal.role}) belongs to one organization.")
    return visitor


async def check_same_site(request: Request, session: Session | None) -> None:
    """A state-changing request must come from this origin: an `Origin` (or, without one, a
    `Sec-Fetch-Site`) naming this site, and the session's CSRF token in a header or a form field."""
    expected_origin = f"{request.url.scheme}://{request.url.netloc}"
    origin = request.headers.get("origin")
    if origin is not None and origin != expected_origin:
        raise Refused(403, "This request came from another site and was refused.")
    if origin is None and request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise Refused(403, "This request came from another site and was refused.")
    if session is None:
        return
    presented = request.headers.get(CSRF_HEADER)
    if presented is None:
        form = await request.form()
        value = form.get(CSRF_FIELD)
        presented = value if isinstance(value, str) else None
    if not Sessions.csrf_matches(session, presented):
        raise Refused(403, "This form has expired or did not come from this console; reload the page and try again.")


async def current_writer(visitor: Annotated[Visitor, Depends(current_visitor)]) -> Visitor:
    """An admin: auditors read everything and change nothing."""
    if not visitor.can_write:
        raise Refused(403, "Your token's role (auditor) can read but not change anything.")
    return visitor


Reader = Annotated[Visitor, Depends(current_visitor)]
Writer = Annotated[Visitor, Depends(current_writer)]
# Admin, auditor or operator: the pages every one of them has (home, sign-out).
Anyone = Annotated[Visitor, Depends(signed_in)]
Operator = Annotated[Visitor, Depends(current_operator)]


def sign_in_url(request: Request) -> str:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return "/console/sign-in?next=" + quote(target, safe="")
