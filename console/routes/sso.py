"""Single sign-on for the console (docs/sso.md): "Sign in with <provider>" sends the browser to the
OpenID provider (`/console/sso/start`), which sends it back to `/console/sso/callback`; the person
it vouched for is found, or made just in time, in the organization its tenant claim names, with
the role the role map gives, and gets a person's console session (console/routes/auth.py's).

The protocol is infrastructure/oidc.py's. Between the two legs the browser keeps the request's
`state`, `nonce` and PKCE verifier in a signed cookie of its own (`toolsmith_sso`, ten minutes,
sent only to /console/sso, SameSite=Lax: the provider's redirect back is a cross-site navigation),
used once. Every refusal is a page saying what happened and what to do, never a 500; the log says
why in a few words, never with a code, a token or the secret.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer

from api.admission import Refusal, client_address
from application.users import UserDisabled
from console.routes.auth import _safe_next, person_signed_in
from console.routing import ConsoleRoute
from console.session import session_key
from domain.errors import InvalidRecord, UnknownRecord
from infrastructure.oidc import Config, Pending, Provider, SignInRefused, redirect_uri, secure_cookie

router = APIRouter(prefix="/console/sso", route_class=ConsoleRoute, include_in_schema=False)
log = logging.getLogger("toolsmith.sso")

PENDING_COOKIE = "toolsmith_sso"
PENDING_PATH = "/console/sso"
PENDING_SECONDS = 600
NOT_SET_UP = "Single sign-on is not set up on this service. Sign in with your email and password, or with a token."


def provider_of(request: Request) -> Provider | None:
    """The app's provider, made from the settings on first use (None: single sign-on is off)."""
    state = request.app.state
    if not hasattr(state, "sso_provider"):
        config = Config.of(state.services.settings)
        state.sso_provider = Provider(config) if config is not None else None
    return state.sso_provider


def _serializer(request: Request) -> URLSafeTimedSerializer:
    settings = request.app.state.services.settings
    key = settings.session_key.get_secret_value() if settings.session_key else None
    return URLSafeTimedSerializer(session_key(settings.data_dir, key), salt="toolsmith-sso-pending")


def _callback(request: Request) -> str:
    return redirect_uri(request.app.state.services.settings.public_url)


def _refused(request: Request, message: str, status: int, *, reason: str) -> Response:
    log.warning("single sign-on refused: %s", reason)
    provider = provider_of(request)
    answer = request.app.state.console_pages.render(
        request, "sso/refused.html", status=status, message=message,
        provider=provider.name if provider is not None else None)
    answer.delete_cookie(PENDING_COOKIE, path=PENDING_PATH)
    return answer


@router.get("/start")
async def start(request: Request, next: str | None = None) -> Response:
    provider = provider_of(request)
    if provider is None:
        return _refused(request, NOT_SET_UP, 404, reason="not set up")
    try:
        url, pending = await provider.begin(_callback(request), _safe_next(next))
    except SignInRefused as refused:
        return _refused(request, refused.message, refused.status, reason=refused.reason)
    answer = RedirectResponse(url, status_code=303)
    answer.set_cookie(PENDING_COOKIE, _serializer(request).dumps(pending.as_dict()), max_age=PENDING_SECONDS,
                      path=PENDING_PATH, httponly=True, samesite="lax",
                      secure=secure_cookie(request.app.state.services.settings.public_url))
    return answer


@router.get("/callback")
async def callback(request: Request) -> Response:
    provider = provider_of(request)
    if provider is None:
        return _refused(request, NOT_SET_UP, 404, reason="not set up")
    try:
        pending = Pending.of(_serializer(request).loads(request.cookies.get(PENDING_COOKIE, ""), max_age=PENDING_SECONDS))
    except BadSignature:  # none, another key's, or older than ten minutes (SignatureExpired is one)
        pending = None
    if pending is None:
        return _refused(request, "This sign-in took more than ten minutes, or was started in another browser. Start "
                        "it again from the sign-in page.", 400, reason="no pending sign-in")
    try:
        identity = await provider.finish(pending, dict(request.query_params), _callback(request))
    except SignInRefused as refused:
        return _refused(request, refused.message, refused.status, reason=refused.reason)
    services = request.app.state.services
    try:
        services.tenants.get(identity.tenant)
    except UnknownRecord:
        return _refused(request, f"Your organization ({identity.tenant}) is not on this service. Ask your administrator.",
                        403, reason="unknown tenant")
    if services.users is None:
        return _refused(request, NOT_SET_UP, 404, reason="no people on this service")
    try:
        user = services.users.find_or_create(
            identity.tenant, identity.email, name=identity.name, role=identity.grant.role, locale=identity.locale,
            usage_profile=identity.grant.usage_profile, issuer=identity.issuer, subject=identity.subject,
            sync=True)  # the provider decides the role: it follows the role map at each sign-in
    except UserDisabled:
        return _refused(request, "Your account on this service is disabled. Ask one of your organization's admins.",
                        403, reason="person disabled")
    except InvalidRecord as invalid:
        said = "; ".join(v.message for v in invalid.violations)
        return _refused(request, f"Your account could not be made on this service: {said}. Tell the service's operator.",
                        403, reason="invalid person")
    principal = services.users.principal(identity.tenant, user["id"])
    if principal is None:
        return _refused(request, "Your account on this service is disabled. Ask one of your organization's admins.",
                        403, reason="no principal")
    try:
        services.admission.admit_principal(principal, client_address(request))
    except Refusal as refusal:
        if refusal.code == "tenant-suspended":
            message = ("Your organization is suspended by the service's operator: its people cannot sign in until the "
                       "operator resumes it. Nothing it holds is lost.")
        else:
            wait = (refusal.headers or {}).get("Retry-After", "1")
            message = f"Too many requests from your account. Try again in {wait} second{'s' if wait != '1' else ''}."
        return _refused(request, message, refusal.status, reason=f"admission: {refusal.code}")
    signed_in = person_signed_in(request, identity.tenant, user["id"], pending.next)
    # The session cookie is SameSite=Strict, and this answer ends a navigation that started on the
    # provider's site: a redirect from here would be part of it, and the cookie not sent. A page of
    # this site that goes on by itself starts a navigation of its own, which sends it.
    target = signed_in.headers["location"]
    answer = request.app.state.console_pages.render(request, "sso/signed_in.html", target=target, provider=provider.name)
    for value in signed_in.headers.getlist("set-cookie"):
        answer.headers.append("set-cookie", value)
    answer.delete_cookie(PENDING_COOKIE, path=PENDING_PATH)
    return answer
