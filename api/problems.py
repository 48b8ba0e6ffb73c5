"""RFC 9457 problem details: the one place where errors become HTTP responses.

Each domain error maps to a status here, or in its kind's plugin (`KindPlugin.statuses`, for the
errors that are one kind's own); request-shape errors, unknown routes and anything
unexpected get a problem too. No stack trace ever reaches a client.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.admission import Refusal
from api.methods import allowed_methods
from domain import errors
from domain.values import well_formed
from projections.interface import ReadModelUnavailable

log = logging.getLogger("toolsmith.api")

MEDIA_TYPE = "application/problem+json"

_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    412: "Precondition failed",
    413: "Request body too large",
    415: "Unsupported media type",
    421: "Misdirected request",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}


_DESCRIPTIONS = {
    400: "The request breaks a rule; `errors` names each field and rule",
    401: "No valid bearer token",
    403: "The token's role may not do this",
    404: "No such module or tool",
    409: "The request conflicts with the module's state (`usedBy` for R12)",
    412: "`If-Match` names a version of the module that is no longer current (B7)",
    413: "The request body is too large",
    415: "The body is not of the media type the route takes (JSON; multipart/form-data for a document upload)",
    422: "Publishing would break a module (`failingModule`) or close an import cycle (`cycle`)",
    429: "Every sandbox session (or the tenant's share of them) is busy, the token's or its organization's request rate is spent, "
         "or the address sent too many tokens that are not valid; retry after `Retry-After` seconds",
    503: "The code sandbox is not configured, or the read model is unavailable",
}


def documented(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for a route's problems (401 and 403 come with every protected route)."""
    from api.schemas import Problem

    wanted = sorted({*statuses, 401, 403})
    return {status: {"model": Problem, "description": _DESCRIPTIONS[status]} for status in wanted}


# What any operation may answer, whatever its route: a URL or header api.edge refuses (400), and,
# for one that needs a token (all but these), no valid token, a role or organization refused, and
# the token's or tenant's rate (api.admission).
_EVERY_OPERATION = {"400": "The URL or a header breaks a rule (a NUL or a surrogate in the path, two Authorization headers)"}
_WITH_A_TOKEN = {
    "401": _DESCRIPTIONS[401],
    "403": "The token's role may not do this, or its organization is suspended",
    "429": "Too many requests for the token or its organization (`Retry-After`), or too many bad tokens from the address",
}
_NO_TOKEN = frozenset({"/healthz"})


def openapi_with_problems(schema: dict[str, Any]) -> dict[str, Any]:
    """Serves problems as `application/problem+json` (the `Problem` schema) on every 4xx and 5xx an
    operation documents, adds those any operation may answer, and drops FastAPI's own 422 (bad
    input is 400 here)."""
    from api.schemas import Problem

    problem_content = {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    for path, operations in schema.get("paths", {}).items():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            default_422 = responses.get("422", {}).get("content", {}).get("application/json", {}).get("schema", {})
            if default_422.get("$ref", "").endswith("/HTTPValidationError"):
                del responses["422"]
            always = {**_EVERY_OPERATION, **({} if path in _NO_TOKEN else _WITH_A_TOKEN)}
            for status, description in always.items():
                responses.setdefault(status, {"description": description})
            if "requestBody" in operation:
                # The edge (api.edge's checks) refuses a body not declared as JSON before any route sees it, and a large one.
                media = "multipart/form-data" if "multipart/form-data" in operation["requestBody"].get("content", {}) else "JSON"
                responses.setdefault("415", {"description": f"the body is not declared as {media}"})
                responses.setdefault("413", {"description": _DESCRIPTIONS[413]})
            for status, response in responses.items():
                if status[0] in "45":
                    response["content"] = problem_content
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    if "Problem" not in components:
        components.update(Problem.model_json_schema(ref_template="#/components/schemas/{model}").get("$defs", {}))
        components["Problem"] = {k: v for k, v in Problem.model_json_schema(ref_template="#/components/schemas/{model}").items()
                                 if k != "$defs"}
    return schema


def problem(status: int, code: str, detail: str, *, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    body = {"type": f"/problems/{code}", "title": _TITLES.get(status, "Error"), "status": status, "detail": detail, "code": code}
    body.update({k: v for k, v in extra.items() if v is not None})
    # A message may quote what a module threw or a client sent: a lone surrogate becomes U+FFFD.
    return JSONResponse(well_formed(body), status_code=status, media_type=MEDIA_TYPE, headers=headers)


# The statuses of the kinds' own errors, as each kind declares them (`KindPlugin.statuses`).
_KIND_STATUSES: dict[type[errors.ModuleError], int] = {}


def add_statuses(statuses: Mapping[type[errors.ModuleError], int]) -> None:
    """A kind's errors and their statuses (by exact type), for every problem made from now on. An
    error keeps the one status it was given: two kinds cannot give it two."""
    for error, status in statuses.items():
        if _KIND_STATUSES.setdefault(error, status) != status:
            raise ValueError(f"{error.__name__} is given two statuses ({_KIND_STATUSES[error]} and {status})")


def _status(error: errors.ModuleError) -> int:
    if isinstance(error, errors.QuotaExceeded) and error.quota == "storedBytes":
        return 413
    if isinstance(error, (errors.ImportRefused, errors.ImportCycle)):
        return 422 if error.at_publish else 400
    if type(error) in _KIND_STATUSES:
        return _KIND_STATUSES[type(error)]
    return {
        errors.InvalidDefinition: 400,
        errors.InvalidInput: 400,
        errors.UnknownModule: 404,
        errors.ToolNotCallable: 404,
        errors.IdTaken: 409,
        errors.NothingToPublish: 409,
        errors.CannotDiscard: 409,
        errors.InUse: 409,
        errors.ConcurrentChange: 409,
        errors.CheckFailed: 422,
        errors.ChangesetRefused: 422,
        errors.SandboxBusy: 429,
        errors.SandboxUnavailable: 503,
        errors.UnknownRecord: 404,
        errors.UnknownVersion: 404,
        errors.PreconditionFailed: 412,
        errors.InvalidRecord: 400,
        errors.RecordTaken: 409,
        errors.SecretInUse: 409,
        errors.SecretUnreadable: 503,
        errors.QuotaExceeded: 409,
        errors.TenantBusy: 429,
        errors.TenantNotEmpty: 409,
    }.get(type(error), 400)


def if_match_version(if_match: str | None) -> int | None:
    """The version an `If-Match` names (B7): None for none or `*`; a tag this API did not give is a
    400 naming the header."""
    if if_match is None or if_match.strip() == "*":
        return None
    tag = if_match.split(",")[0].strip().removeprefix("W/").strip('"')
    if not tag.isdigit():
        raise errors.InvalidDefinition([errors.Violation("If-Match", "B7", "must be an ETag this API gave (a quoted version number)")])
    return int(tag)


def etag(version: int) -> str:
    """B7: a module's entity tag, its aggregate version (every change makes a new one)."""
    return f'"{version}"'


def _detail(error: errors.ModuleError) -> str:
    """The error's own words; a failed precondition names the versions as the ETags the client sent."""
    if isinstance(error, errors.PreconditionFailed):
        now = etag(error.current) if error.current is not None else "a newer version"
        return f"{error.module_id!r} is at {now}, not {etag(error.expected)} (If-Match); read it again and retry"
    return error.detail


def from_domain(error: errors.ModuleError) -> JSONResponse:
    extra: dict[str, Any] = {}
    headers = None
    if isinstance(error, (errors.InvalidDefinition, errors.ImportRefused, errors.InvalidInput, errors.InvalidRecord)):
        extra["errors"] = [v.as_dict() for v in error.violations]
    if isinstance(error, errors.ImportCycle):
        extra["cycle"] = error.cycle
    if isinstance(error, errors.InUse):
        extra["usedBy"] = error.used_by
    if isinstance(error, errors.SecretInUse):
        extra["usedBy"] = error.tools
    if isinstance(error, errors.CheckFailed):
        extra["failingModule"] = error.failing_module
        extra["error"] = {"type": error.error_type, "message": error.message}
    if isinstance(error, errors.ChangesetRefused):
        extra["failures"] = [{"module": m, "error": {"type": t, "message": msg}} for m, t, msg in error.failures]
    if isinstance(error, (errors.SandboxBusy, errors.TenantBusy)):
        headers = {"Retry-After": "1"}
    if isinstance(error, errors.QuotaExceeded):
        extra.update(quota=error.quota, limit=error.limit, used=error.used)
    if isinstance(error, errors.TenantNotEmpty):
        extra["holds"] = error.holds
    return problem(_status(error), error.code, _detail(error), headers=headers, **extra)


def _field(location: tuple[Any, ...]) -> str:
    parts = [str(p) for p in location if p not in ("body", "query", "path")]
    return ".".join(parts) or "body"


def install(app: FastAPI) -> None:
    @app.exception_handler(errors.ModuleError)
    async def domain_error(_: Request, error: errors.ModuleError) -> JSONResponse:
        return from_domain(error)

    @app.exception_handler(Refusal)
    async def refused(_: Request, refusal: Refusal) -> JSONResponse:
        return problem(refusal.status, refusal.code, refusal.detail, headers=refusal.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        found = []
        for item in error.errors():
            if item.get("type") == "json_invalid":
                return problem(400, "malformed-json", f"the body is not valid JSON: {item.get('ctx', {}).get('error', 'parse error')}")
            found.append({"field": _field(tuple(item.get("loc", ()))), "rule": item.get("type", "invalid"), "message": item.get("msg", "invalid")})
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in found)
        return problem(400, "invalid-request", detail, errors=found)

    @app.exception_handler(ReadModelUnavailable)
    async def read_model_unavailable(request: Request, error: ReadModelUnavailable) -> JSONResponse:
        log.warning("read model unavailable", extra={"path": request.url.path, "error": str(error)})
        detail = f"the read model cannot answer now ({error}); writes still work, retry the query shortly"
        return problem(503, "read-model-unavailable", detail, headers={"Retry-After": "5"})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        code = {404: "not-found", 405: "method-not-allowed"}.get(error.status_code, "http-error")
        detail = error.detail if isinstance(error.detail, str) else _TITLES.get(error.status_code, "error")
        headers = getattr(error, "headers", None)
        if error.status_code == 405:
            allowed = allowed_methods(request.app, request.scope["path"])
            if allowed:
                headers = {**(headers or {}), "Allow": ", ".join(allowed)}
                detail = f"{request.method} is not a method of this path; it answers {', '.join(allowed)}"
        return problem(error.status_code, code, detail, headers=headers)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("unhandled error", exc_info=error, extra={"path": request.url.path, "method": request.method})
        return problem(500, "internal-error", "the server failed to handle this request; it has been logged")
