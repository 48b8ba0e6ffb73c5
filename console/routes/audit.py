"""The audit export (docs/rules.md B5, docs/security.md) from the console: a page that says what it holds, and a
download that streams exactly what GET /api/v1/admin/audit/export answers (`api.presenters.audit_download`), as an
attachment. Admins and auditors."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from api import presenters
from console.routing import ConsoleRoute
from console.security import Reader

router = APIRouter(prefix="/console/audit", route_class=ConsoleRoute, include_in_schema=False)


@router.get("")
def audit_page(request: Request, visitor: Reader) -> Response:
    return request.app.state.console_pages.render(request, "audit/page.html")


@router.get("/export")
def audit_download(request: Request, visitor: Reader) -> StreamingResponse:
    answer = presenters.audit_download(request.app.state.services, visitor.principal.tenant)
    answer.headers["Cache-Control"] = "no-store"
    return answer
