"""Bearer tokens (docs/security.md): admins issue them (the secret is shown once) and revoke them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from api.deps import Admin, ServicesDep
from api.presenters import token_issued
from api.problems import documented
from api.schemas import TokenIn, TokenIssued, TokenPublic
from api.paths import ADMIN_API

router = APIRouter(prefix=f"{ADMIN_API}/tokens", tags=["tokens"])


@router.get("", response_model=list[TokenPublic], responses=documented())
def list_tokens(services: ServicesDep, principal: Admin) -> list[dict[str, Any]]:
    """The tenant's issued tokens, without their secrets."""
    return services.tokens.tokens(principal.tenant)


@router.post("", status_code=201, response_model=TokenIssued, responses=documented(400))
def issue_token(body: TokenIn, services: ServicesDep, principal: Admin) -> dict[str, Any]:
    """Issue a token; the answer holds the secret, which is never shown again."""
    token, secret = services.tokens.issue_token(principal.tenant, body.name, body.role, body.usageProfile, by=principal.name)
    if principal.user is not None and services.users is not None:  # a person's token is theirs (docs/users.md)
        services.users.own_token(principal.tenant, principal.user.id, token["id"], by=principal.name)
    return token_issued(token, secret)


@router.delete("/{id}", status_code=204, response_class=Response, responses=documented(404))
def revoke_token(id: str, services: ServicesDep, principal: Admin) -> Response:
    """Revoke a token: it stops working at once."""
    services.tokens.revoke_token(principal.tenant, id, by=principal.name)
    return Response(status_code=204)
