"""Dependencies of the routes: the wired services and the authenticated caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from domain.catalog import Permissions
from application.principals import ADMIN, AUDITOR, CALLER, OPERATOR, Principal
from api.admission import Refusal, client_address
from api.services import Services

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <token> (docs/security.md)")


# The dependencies are `async` although they do no I/O: FastAPI runs a plain `def` dependency in
# its thread pool, and a hop there costs more than the work itself.


async def get_services(request: Request) -> Services:
    return request.app.state.services


ServicesDep = Annotated[Services, Depends(get_services)]


async def _principal(request: Request, services: ServicesDep,
                     credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> Principal:
    # 401 without a token that is one, 403 `tenant-suspended`, 429 past the token's rate or its
    # address's failed authentications (api/problems.py answers a Refusal).
    try:
        return services.admission.admit(credentials.credentials if credentials else None, client_address(request))
    except Refusal as refusal:
        if refusal.status == 401:  # as the REST routes always answered it
            raise HTTPException(401, refusal.detail, headers=refusal.headers) from None
        raise


def _role(*roles: str):  # noqa: ANN202 - a dependency factory
    async def check(principal: Annotated[Principal, Depends(_principal)]) -> Principal:
        if principal.role not in roles:
            raise HTTPException(403, f"this route needs the role {' or '.join(roles)}")
        return principal

    return check


Admin = Annotated[Principal, Depends(_role(ADMIN))]
Reader = Annotated[Principal, Depends(_role(ADMIN, AUDITOR))]
ToolCaller = Annotated[Principal, Depends(_role(ADMIN, CALLER))]
# Manages tenants and nothing inside them (docs/tenants.md): no other route takes its token.
Operator = Annotated[Principal, Depends(_role(OPERATOR))]


def permissions_of(services: Services, principal: Principal) -> Permissions:
    """R14 for this caller: everything for an admin, a caller's usage profile, nothing otherwise."""
    return services.toolbox.permissions(principal.tenant, principal.role, principal.usage_profile)
