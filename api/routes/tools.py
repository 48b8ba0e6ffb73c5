"""Calling published tools directly: the DIRECT_TOOL path of plans (docs/rest-api.md)."""

from __future__ import annotations

import json

from fastapi import APIRouter, Request, Response

from api.admission import Refusal
from api.deps import TOOL_CALLER, bearer_token, permissions_of
from api.direct import HotRoute
from api.edge import body_problem
from api.problems import documented
from api.presenters import execution_json
from api.services import Services
from application.context import REST
from application.queries import call_context
from api.schemas import ExecutionOut
from api.paths import API_V1
from domain.errors import InvalidInput, Violation

router = APIRouter(prefix=f"{API_V1}/tools", tags=["tools"])


# The route most clients call most often takes what FastAPI would solve for it (the caller, the
# body) itself: solving them cost a tenth of a call (issue 30). The caller is admitted by the one
# dependency every tool caller's route takes (`TOOL_CALLER`: the same 401, 403 and 429), the body
# is the JSON api.edge already read strictly, and the document says both as FastAPI would
# (`security`, `requestBody`). The answer is written once, as the `ExecutionOut` the document shows
# (`execution_json`), not validated into the model and dumped again.
_ARGUMENTS = {"content": {"application/json": {"schema": {
    "description": "the tool's arguments, as a JSON object", "title": "Arguments"}}}}


@router.post("/{name}/call", response_model=None, openapi_extra={"security": [{"HTTPBearer": []}], "requestBody": _ARGUMENTS},
             responses={200: {"model": ExecutionOut, "description": "Successful Response"}, **documented(400, 404, 413, 429, 503)})
async def call_tool(name: str, request: Request) -> Response:
    """Run a tool (R15 resolves the name) with the given arguments, within the caller's permissions (R14)."""
    services: Services = request.app.state.services
    try:
        principal = await TOOL_CALLER(request)
    except Refusal as refusal:
        _record_rate_refusal(services, request, name, refusal)
        raise
    context = call_context(principal, REST)
    body = await request.body()
    try:
        arguments = json.loads(body) if body else None
    except ValueError:  # api.edge refuses such a body before any route; an app without it, here
        return body_problem(body)
    if arguments is not None and not isinstance(arguments, dict):
        # Every tool's inputSchema is an object, as MCP's arguments are; only a plan's later nodes
        # take another node's output, whatever it is, as their input.
        refusal = InvalidInput([Violation("input", "V1", "the arguments must be a JSON object of the tool's parameters")])
        services.toolbox.refused(principal.tenant, name, context, refusal, arguments)
        raise refusal
    # When the tool's kind has no capacity left (code, with every session of the JavaScript pool
    # taken) the answer is 429 at once, without a trip to a thread: a burst beyond the cap must not
    # queue behind itself. Tools of other kinds never wait on the pool. The kind has the last word.
    services.toolbox.admit(principal.tenant, name, context)
    # Awaited on the loop where nothing in the call blocks (`Toolbox.acall`), in a worker thread otherwise.
    result = await services.toolbox.acall(
        principal.tenant,
        name,
        arguments,
        permissions=permissions_of(services, principal),
        context=context,
    )
    return Response(execution_json(result), media_type="application/json")


def _record_rate_refusal(services: Services, request: Request, name: str, refusal: Refusal) -> None:
    """A call its caller's rate refused is a call of the log too (docs/calls.md): whose it was, the
    token says (it was admitted as far as its rate)."""
    if refusal.status != 429 or refusal.code != "rate-limited":
        return
    principal = services.authenticator.authenticate(bearer_token(request.headers.get("authorization")))
    if principal is not None:
        services.toolbox.refused(principal.tenant, name, call_context(principal, REST), refusal)


async def _call_directly(request: Request) -> Response:
    return await call_tool(request.path_params["name"], request)


# Served by `api.direct` without the router's search (the route above is its document, and what a
# request of another method meets).
HOT = HotRoute("POST", f"{router.prefix}/{{name}}/call", _call_directly)
