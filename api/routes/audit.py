"""The audit export over HTTP (docs/rules.md B5, docs/security.md): the caller's tenant's events as JSON lines, for
admins and auditors."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from api.deps import Reader, ServicesDep
from api.paths import ADMIN_API
from api.presenters import audit_download
from api.problems import documented

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
    return audit_download(services, principal.tenant)
