"""The OAuth routes (docs/oauth.md): metadata for discovery, and the built-in authorization server's
endpoints. Their errors are OAuth's own JSON (`{"error", "error_description"}`, RFC 6749 §5.2), as
every OAuth client reads them, not problem details. What a browser-based MCP client (the MCP
Inspector) fetches across origins answers CORS with `*`: nothing here reads a cookie.

- `/.well-known/oauth-protected-resource[/mcp[/{server}]]`: Protected Resource Metadata (RFC 9728);
- `/.well-known/oauth-authorization-server`, `/.well-known/openid-configuration` (RFC 8414);
- `/oauth/jwks`; `/oauth/authorize` (on to the console's consent page); `/oauth/token`;
  `/oauth/revoke` (RFC 7009); `/oauth/register` (RFC 7591).
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, RedirectResponse, Response

from api.oauth.resource import MCP_PATH, PRM_PATH
from authlib.oauth2.rfc6749.errors import OAuth2Error

from api.oauth.server import Answer, Asked

router = APIRouter(include_in_schema=False)

CONSENT_PATH = "/console/oauth/consent"
CORS = {"Access-Control-Allow-Origin": "*"}
PREFLIGHT = {**CORS, "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
             "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
             "Access-Control-Max-Age": "600"}


def _oauth(request: Request) -> Any:
    return request.app.state.oauth


def _public(document: dict[str, Any]) -> JSONResponse:
    # Metadata may be cached a little by clients; it changes only with the settings.
    return JSONResponse(document, headers={**CORS, "Cache-Control": "public, max-age=300"})


def _not_here() -> JSONResponse:
    return JSONResponse({"error": "not_found", "error_description": "this service's tokens come from an external "
                         "authorization server: see the protected resource metadata"}, status_code=404, headers=CORS)


def _prm(request: Request) -> Response:
    path = request.url.path.removeprefix(PRM_PATH) or MCP_PATH
    return _public(_oauth(request).resource.metadata(path))


for _path in (PRM_PATH, PRM_PATH + MCP_PATH, PRM_PATH + MCP_PATH + "/{server_id}"):
    router.add_api_route(_path, _prm, methods=["GET"])
    router.add_api_route(_path, lambda: Response(status_code=204, headers=PREFLIGHT), methods=["OPTIONS"])


def _server_metadata(request: Request) -> Response:
    oauth = _oauth(request)
    return _not_here() if oauth.metadata is None else _public(oauth.metadata)


for _path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
    router.add_api_route(_path, _server_metadata, methods=["GET"])
    router.add_api_route(_path, lambda: Response(status_code=204, headers=PREFLIGHT), methods=["OPTIONS"])


@router.get("/oauth/jwks")
def jwks(request: Request) -> Response:
    oauth = _oauth(request)
    if oauth.server is None:
        return _not_here()
    return _public(oauth.server.keys.jwks())


@router.get("/oauth/authorize")
def authorize(request: Request) -> Response:
    """The authorization endpoint: the person answers on the console's consent page (signing in first)."""
    if _oauth(request).server is None:
        return _not_here()
    query = request.url.query
    return RedirectResponse(CONSENT_PATH + (f"?{query}" if query else ""), status_code=303)


def public_url(request: Request) -> str:
    """The request's URL under TOOLSMITH_PUBLIC_URL (never its Host header: behind a proxy the two differ)."""
    query = request.url.query
    return request.app.state.services.settings.public_url.rstrip("/") + request.url.path + (f"?{query}" if query else "")


def asked(request: Request, *, form: list[tuple[str, str]] | None = None, body: Any = None) -> Asked:
    return Asked(method=request.method, url=public_url(request), headers=dict(request.headers),
                 query=list(request.query_params.multi_items()), form=form or [], json=body)


def _answer(server: Any, make: Any, *args: Any) -> Answer:
    """What Authlib answers; an error it raises before its own handling (a public URL that is plain
    http on a host that is not loopback: OAuth needs TLS) as the OAuth error it is."""
    try:
        return make(*args)
    except OAuth2Error as error:
        return server.handle_error_response(None, error)


def answered(answer: Answer) -> Response:
    headers = {name: value for name, value in answer.headers if name.lower() != "content-type"}
    if answer.location is not None and answer.status in (301, 302, 303, 307):
        return RedirectResponse(answer.location, status_code=303)
    body = answer.body if isinstance(answer.body, (dict, list)) else (json.loads(answer.body) if answer.body else {})
    return JSONResponse(body, status_code=answer.status,
                        headers={**headers, **CORS, "Cache-Control": "no-store", "Pragma": "no-cache"})


async def _form(request: Request) -> list[tuple[str, str]] | Response:
    content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return JSONResponse({"error": "invalid_request", "error_description":
                             "the body must be application/x-www-form-urlencoded"}, status_code=400, headers=CORS)
    form = await request.form()
    return [(key, value) for key, value in form.multi_items() if isinstance(value, str)]


@router.post("/oauth/token")
async def token(request: Request) -> Response:
    server = _oauth(request).server
    if server is None:
        return _not_here()
    form = await _form(request)
    if isinstance(form, Response):
        return form
    return answered(await run_in_threadpool(_answer, server, server.create_token_response, asked(request, form=form)))


@router.post("/oauth/revoke")
async def revoke(request: Request) -> Response:
    server = _oauth(request).server
    if server is None:
        return _not_here()
    form = await _form(request)
    if isinstance(form, Response):
        return form
    return answered(await run_in_threadpool(_answer, server, server.create_endpoint_response, "revocation",
                                            asked(request, form=form)))


@router.post("/oauth/register")
async def register(request: Request) -> Response:
    server = _oauth(request).server
    if server is None:
        return _not_here()
    try:
        body = json.loads(await request.body() or b"null")
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return JSONResponse({"error": "invalid_client_metadata", "error_description":
                             "the body must be a JSON object of client metadata (RFC 7591)"}, status_code=400, headers=CORS)
    return answered(await run_in_threadpool(_answer, server, server.create_endpoint_response, "client_registration",
                                            asked(request, body=body)))


for _path in ("/oauth/jwks", "/oauth/token", "/oauth/revoke", "/oauth/register"):
    router.add_api_route(_path, lambda: Response(status_code=204, headers=PREFLIGHT), methods=["OPTIONS"])
