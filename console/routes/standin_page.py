"""STAND-IN, to be dropped at merge: the editor part owns the module page (`console/routes/editor.py`,
`modules/page.html`). This minimal page renders the lifecycle includes with the same context
(`m`, `version`) so that the lifecycle part can be tested in a browser on its own branch."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from api import queries
from api.presenters import module_out
from console.routing import ConsoleRoute
from console.security import Reader

router = APIRouter(prefix="/console/modules", route_class=ConsoleRoute, include_in_schema=False)


@router.get("/{module_id}")
def module_page(module_id: str, request: Request, visitor: Reader) -> Response:
    view = queries.module_view(request.app.state.services, visitor.principal.tenant, module_id)
    return request.app.state.console_pages.render(
        request, "modules/page.html", m=module_out(view.module, view.used_by), version=view.module.version,
    )
