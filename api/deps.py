"""Dependencies of the routes: the wired services and the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPBearer
from starlette.requests import HTTPConnection

from domain.catalog import Permissions
from application.principals import ADMIN, AUDITOR, CALLER, OPERATOR, Principal
from api.admission import Refusal, client_address
from api.services import Services

BEARER_DESCRIPTION = "Authorization: Bearer <token> (docs/security.md)"


# The dependencies are `async` although they do no I/O: FastAPI runs a plain `def` dependency in
# its thread pool, and a hop there costs more than the work itself.


async def get_services(request: Request) -> Services:
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(get_services)]


class _Admitted(HTTPBearer):
    """The caller of a route that needs one of `roles`, as one dependency: the bearer token read
    from `Authorization`, admitted (`Admission.admit`), the role checked.

    One dependency, not a chain (the bearer scheme, then admission, then the role, each with the
    services): FastAPI solves every dependency of a request anew, and solving the chain cost a
    fifth of a tool call's CPU (issue 30). Being an `HTTPBearer` it is still the bearer security
    scheme of the OpenAPI document on every route that takes it."""

    def __init__(self, *roles: str) -> None:
        super().__init__(auto_error=False, scheme_name="HTTPBearer", description=BEARER_DESCRIPTION)
        self.roles = frozenset(roles)
        self._needs = f"this route needs the role {' or '.join(roles)}"

    async def __call__(self, request: HTTPConnection) -> Principal:  # type: ignore[override]
        # 401 without a token that is one, 403 `tenant-suspended`, 429 past the token's rate or its
        # address's failed authentications (api/problems.py answers a Refusal).
        services: Services = request.app.state.services
        try:
            principal = services.admission.admit(bearer_token(request.headers.get("authorization")), client_address(request))
        except Refusal as refusal:
            if refusal.status == 401:  # as the REST routes always answered it
                raise HTTPException(401, refusal.detail, headers=refusal.headers) from None
            raise
        if principal.role not in self.roles:
            raise HTTPException(403, self._needs)
        return principal


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case), or None,
    as FastAPI's `HTTPBearer` reads it."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    token = token.strip()
    return token if scheme and token and scheme.lower() == "bearer" else None


Admin = Annotated[Principal, Depends(_Admitted(ADMIN))]
Reader = Annotated[Principal, Depends(_Admitted(ADMIN, AUDITOR))]
# The tool call route admits its caller itself (api/routes/tools.py), with this same dependency.
TOOL_CALLER = _Admitted(ADMIN, CALLER)
ToolCaller = Annotated[Principal, Depends(TOOL_CALLER)]
# Manages tenants and nothing inside them (docs/tenants.md): no other route takes its token.
Operator = Annotated[Principal, Depends(_Admitted(OPERATOR))]


def permissions_of(services: Services, principal: Principal) -> Permissions:
    """R14 for this caller: everything for an admin, a caller's usage profile, nothing otherwise."""
    return services.toolbox.permissions(principal.tenant, principal.role, principal.usage_profile)
