"""The console's route class: what a page handler raises becomes a page or a message for a person
(never problem+json, never a stack trace). A domain error keeps the status the REST API gives it."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException

from api.problems import from_domain
from console.security import Refused, SignInRequired, sign_in_url
from domain import errors
from projections.interface import ReadModelUnavailable

log = logging.getLogger("toolsmith.console")

# Where htmx puts a message about a failed request (a live region in base.html).
PROBLEM_REGION = "#problem"


def problem_of(error: errors.ModuleError) -> dict[str, Any]:
    """The REST API's problem body for a domain error (status, code, detail, and its fields)."""
    import json

    return json.loads(from_domain(error).body)


def _message(request: Request, status: int, title: str, detail: str, problem: dict[str, Any] | None = None, *,
             template: str = "error.html", headers: dict[str, str] | None = None, **context: Any) -> Response:
    pages = request.app.state.console_pages
    if request.headers.get("hx-request") == "true":
        return pages.render(request, "fragments/problem.html", status=status, title=title, detail=detail,
                            problem=problem or {}, headers={**(headers or {}), "HX-Retarget": PROBLEM_REGION, "HX-Reswap": "innerHTML"})
    return pages.render(request, template, status=status, title=title, detail=detail, problem=problem or {},
                        headers=headers, **context)


# Starlette's limits on a form (Request.form's defaults), kept by `read_form`.
MAX_FIELDS = 1000
MAX_FIELD_BYTES = 1024 * 1024


async def read_form(request: Request) -> None:
    """A urlencoded form (every console form: none uploads a file) parsed at once by `parse_qsl`
    and kept where `request.form()` finds it, under Starlette's own limits (1,000 fields, 1 MB each:
    a 400 beyond). Starlette's streaming parser (python-multipart's callbacks, field by field) took
    four times as long: 0.6 ms of a Test's 28 fields, a fifth of the REST call the action is
    measured against (bench.console_browser). Were Starlette to keep its form elsewhere, `form()`
    would parse the body again (it is kept): slower, never wrong."""
    body = await request.body()
    try:
        fields = parse_qsl(body.decode("latin-1"), keep_blank_values=True, encoding="utf-8", max_num_fields=MAX_FIELDS)
    except ValueError:
        raise HTTPException(400, f"Too many fields. Maximum number of fields is {MAX_FIELDS}.") from None
    if any(len(value) > MAX_FIELD_BYTES for _, value in fields):
        raise HTTPException(400, f"Part exceeded maximum size of {MAX_FIELD_BYTES // 1024}KB.")
    request._form = FormData(fields)  # noqa: SLF001 - where Request.form() keeps what it parsed


def _urlencoded(request: Request) -> bool:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower() == "application/x-www-form-urlencoded"


class ConsoleRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            try:
                if request.method == "POST" and _urlencoded(request):
                    await read_form(request)
                return await handler(request)
            except SignInRequired:
                if request.headers.get("hx-request") == "true":
                    return Response(status_code=204, headers={"HX-Redirect": "/console/sign-in"})
                if request.method == "GET":
                    return RedirectResponse(sign_in_url(request), status_code=303)
                return _message(request, 401, "Signed out", "Your session has ended. Sign in again.")
            except Refused as refusal:
                return _message(request, refusal.status, refusal.title, refusal.message, template=refusal.template,
                                headers=refusal.headers, **refusal.context)
            except errors.ModuleError as error:
                problem = problem_of(error)
                return _message(request, problem["status"], problem["title"], problem["detail"], problem)
            except ReadModelUnavailable as error:
                log.warning("read model unavailable", extra={"path": request.url.path, "error": str(error)})
                return _message(request, 503, "Search is unavailable",
                                "The list cannot be read just now; changes still work. Try again shortly.")
            except RequestValidationError as error:
                detail = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ())[1:])}: {e.get('msg')}" for e in error.errors())
                return _message(request, 400, "Bad request", detail)
            except HTTPException as error:
                return _message(request, error.status_code, "Not found" if error.status_code == 404 else "Error", str(error.detail))

        return handle
