"""The OAuth consent page and the grants page (docs/oauth.md).

`/oauth/authorize` leads here (`/console/oauth/consent`, with the authorization request's query):
the person signs in first (password, single sign-on or a token), then sees which application asks
(its name and URL), for which MCP server and what, and presses **Allow** or **Deny**. Both answers
go back to the application's redirect URI (a code, or `error=access_denied`), with `iss` (RFC 9207).
A request whose client or redirect URI is not right is never sent back: the page says why.

The form is posted with the session's CSRF token and from this origin only (`console.security`):
a consent posted from another site is refused. The page's Content-Security-Policy lets that one
form lead to the application's redirect origin (Chromium applies `form-action` to the redirect
that follows a form post).

`/console/oauth/grants` lists the person's grants (an admin: the organization's), each revocable:
a revoked grant's refresh tokens and access tokens stop at once.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from authlib.common.urls import add_params_to_uri
from authlib.oauth2.rfc6749.errors import OAuth2Error
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from api.oauth import DIGEST_REF, USER_REF
from api.oauth.resource import MCP_PATH
from api.oauth.routes import public_url
from api.oauth.server import MCP_SCOPE, Asked, Person
from application.principals import ADMIN, CALLER
from console.routing import ConsoleRoute
from console.security import CSRF_FIELD, Anyone, Refused, consent_policy
from console.session import Visitor
from console.toast import toast
from domain.errors import UnknownRecord

router = APIRouter(prefix="/console/oauth", route_class=ConsoleRoute, include_in_schema=False)

SCOPE_WORDS = {
    MCP_SCOPE: "See and call the tools you may use",
    "profile": "Know your name",
}
MCP_ROLES = (ADMIN, CALLER)


def person_of(visitor: Visitor) -> Person:
    """Who consents: a person of the organization, or the holder of the token this session signed in with."""
    principal = visitor.principal
    if principal.user is not None:
        return Person(subject=principal.user.id, name=principal.user.name, ref=USER_REF + principal.user.id,
                      principal=principal)
    return Person(subject=f"token:{principal.tenant}:{principal.token_id or principal.name}", name=principal.name,
                  ref=DIGEST_REF + visitor.session.digest, principal=principal)


def _server(request: Request) -> Any:
    oauth = getattr(request.app.state, "oauth", None)
    if oauth is None or oauth.server is None:
        raise Refused(404, "This service's AI clients sign in with the organization's own authorization server, "
                           "not here.", title="Not here")
    return oauth.server


def _redirect_error(error: OAuth2Error, issuer: str) -> Response | None:
    """An error the application is told of at its redirect URI (once that URI is known good), with `iss`."""
    if not error.redirect_uri:
        return None
    _, _, headers = error()
    location = dict(headers).get("Location")
    if not location:
        return None
    return RedirectResponse(add_params_to_uri(location, {"iss": issuer}), status_code=303)


def _not_answerable(request: Request, error: OAuth2Error) -> Response:
    detail = error.description or error.error
    detail = detail[:1].upper() + detail[1:].rstrip(".")  # a sentence, as the console's messages are
    return request.app.state.console_pages.render(
        request, "oauth/refused.html", status=400, title="This application's request cannot be answered",
        detail=f"{detail}. Nothing was sent back to it; tell its maker, or try connecting it again.")


def _target(request: Request, visitor: Visitor, resource: str | None) -> tuple[str | None, str | None]:
    """The MCP server a `resource` names (None: the default `/mcp`), or why it cannot be granted."""
    public = request.app.state.services.settings.public_url.rstrip("/")
    if not resource:
        return None, "the request names no resource (RFC 8707): which MCP URL the token is for"
    if resource == public + MCP_PATH:
        return None, None
    prefix = public + MCP_PATH + "/"
    server_id = resource.removeprefix(prefix) if resource.startswith(prefix) else ""
    if not server_id or "/" in server_id or "?" in server_id or "#" in server_id:
        return None, f"{resource} is not one of this service's MCP URLs"
    try:
        request.app.state.services.toolbox.attached(visitor.principal.tenant, server_id)
    except UnknownRecord:
        # Another organization's server is as unknown as one that never was.
        return None, f"your organization has no MCP server {server_id}"
    return server_id, None


async def _validated(request: Request, visitor: Visitor, pairs: list[tuple[str, str]]) -> Any:
    """The Authlib grant of a valid authorization request, the MCP server, or the answer instead."""
    server = _server(request)
    asked = Asked(method="GET", url=public_url(request), headers=dict(request.headers), query=pairs)
    person = person_of(visitor)
    try:
        grant = await run_in_threadpool(server.consent_grant, asked, person)
    except OAuth2Error as error:
        return _redirect_error(error, server.issuer) or _not_answerable(request, error)
    data = dict(pairs)
    server_id, why = _target(request, visitor, data.get("resource"))
    if why is not None:
        params = {"error": "invalid_target", "error_description": why, "iss": server.issuer}
        if data.get("state"):
            params["state"] = data["state"]
        return RedirectResponse(add_params_to_uri(grant.redirect_uri, params), status_code=303)
    return grant, server_id, person


def _origin(uri: str) -> str:
    """The redirect URI as a CSP source: its origin (`http://127.0.0.1:33333`), or its scheme alone
    for an app's own scheme (`cursor:`); 'none' of anything that could not be one (never injected)."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https") and _HOST.fullmatch(parts.netloc):
        return f"{parts.scheme}://{parts.netloc}"
    if _SCHEME.fullmatch(parts.scheme) and parts.scheme not in ("javascript", "data", "blob", "file"):
        return f"{parts.scheme}:"
    return "'self'"


_HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*")


@router.get("/consent")
async def consent_page(request: Request, visitor: Anyone) -> Response:
    pairs = list(request.query_params.multi_items())
    validated = await _validated(request, visitor, pairs)
    if isinstance(validated, Response):
        return validated
    grant, server_id, person = validated
    client = grant.client
    scopes = (grant.request.scope or "").split()
    may_use_mcp = visitor.principal.role in MCP_ROLES
    redirect_uri = grant.redirect_uri
    return request.app.state.console_pages.render(
        request, "oauth/consent.html", headers={"Content-Security-Policy": consent_policy(_origin(redirect_uri))},
        client_name=client.name, client_url=client.client_id if client.document else client.uri,  # a document's URL is who it is
        redirect_host=urlsplit(redirect_uri).netloc, server_id=server_id, scopes=[SCOPE_WORDS.get(s, s) for s in scopes],
        person=person, may_use_mcp=may_use_mcp, role=visitor.principal.role,
        fields=[(k, v) for k, v in pairs if k != CSRF_FIELD and k != "decision"])


@router.post("/consent")
async def consent_answer(request: Request, visitor: Anyone) -> Response:
    form = await request.form()
    pairs = [(k, v) for k, v in form.multi_items() if isinstance(v, str) and k not in (CSRF_FIELD, "decision")]
    decision = form.get("decision")
    validated = await _validated(request, visitor, pairs)
    if isinstance(validated, Response):
        return validated
    grant, _, person = validated
    server = _server(request)
    allowed = decision == "allow" and visitor.principal.role in MCP_ROLES
    asked = Asked(method="POST", url=public_url(request), headers=dict(request.headers), query=pairs)
    try:
        answer = await run_in_threadpool(lambda: server.create_authorization_response(
            server.create_oauth2_request(asked), grant_user=person if allowed else None, grant=grant))
    except OAuth2Error as error:
        return _not_answerable(request, error)
    location = answer.location
    if location is None:
        raise Refused(400, "This application's request could not be answered. Try connecting it again.")
    return RedirectResponse(location, status_code=303)


@router.get("/grants")
def grants_page(request: Request, visitor: Anyone) -> Response:
    server = _server(request)
    principal = visitor.principal
    person = person_of(visitor)
    everyone = principal.role == ADMIN
    listed = server.store.grants(principal.tenant, None if everyone else person.subject)
    public = request.app.state.services.settings.public_url.rstrip("/")
    rows = [{
        "id": grant.id, "client": grant.client_name, "client_id": grant.client_id, "person": grant.person,
        "server": grant.resource.removeprefix(public + MCP_PATH).removeprefix("/") or None,
        "scopes": [SCOPE_WORDS.get(s, s) for s in grant.scope.split()], "since": grant.created,
        "own": grant.subject == person.subject,
    } for grant in listed]
    return request.app.state.console_pages.render(request, "oauth/grants.html", grants=rows, everyone=everyone)


@router.post("/grants/{grant_id}/revoke")
def revoke_grant(request: Request, grant_id: str, visitor: Anyone) -> Response:
    server = _server(request)
    grant = server.store.grant(grant_id)
    person = person_of(visitor)
    mine = grant is not None and grant.tenant == visitor.principal.tenant and (
        grant.subject == person.subject or visitor.principal.role == ADMIN)
    if grant is None or not mine or grant.revoked is not None:
        raise Refused(404, "There is no such access to revoke: it may have been revoked already.", title="Not found")
    server.revoke(grant.id, f"revoked in the console by {person.name}")
    answer = RedirectResponse("/console/oauth/grants", status_code=303)
    return toast(request, answer, f"{grant.client_name} can no longer reach the tools it was allowed")

