"""The audit export over HTTP (docs/rules.md B5, docs/security.md): the caller's tenant's events as JSON lines, for
admins and auditors."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from api.deps import Reader, ServicesDep
from api.problems import documented
from api.paths import ADMIN_API
from infrastructure.audit import export_chunks

router = APIRouter(prefix=f"{ADMIN_API}/audit", tags=["audit"])

_EXPORT = {
    200: {
        "description": "A header line, one line per stored event in log order, and an end line that counts them "
                       "(the format of `toolsmith audit export --tenant`)",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    },
}


@router.get("/export", response_class=StreamingResponse, responses={**_EXPORT, **documented()})
def audit_export(services: ServicesDep, principal: Reader) -> StreamingResponse:
    """Every stored event of the caller's tenant, as JSON lines that `toolsmith audit import` restores."""
    # A tenant sees only its own (docs/security.md): what its kinds of tool say is its (modules, …), its
    # import graph and caller registry. The chunks come from a plain generator, which Starlette
    # iterates in its thread pool: reading the store never blocks the event loop.
    chunks = export_chunks(services.store, tenant=principal.tenant, kinds=services.toolbox.kinds)
    return StreamingResponse(chunks, media_type="application/x-ndjson",
                             headers={"Content-Disposition": 'attachment; filename="toolsmith-audit.ndjson"'})
