"""Who may make a request (DESIGN §8, §12): the bearer token, its tenant's state, its rate.

Every way in asks here first: the REST routes (`api/deps.py`), the MCP endpoint (`api/mcp.py`)
and the console's session (`console/security.py`). A token that is not one is 401; a token of a
suspended tenant is 403 `tenant-suspended`; a token past its request rate is 429 with
`Retry-After`. The operator's token belongs to no tenant and is never suspended.
"""

from __future__ import annotations

from application.tenants import Tenants
from infrastructure.auth import OPERATOR, Authenticator, Principal, token_digest
from infrastructure.ratelimit import RateLimiter, retry_after


class Refusal(Exception):
    """A request refused before any route: its status, problem code, detail and headers."""

    def __init__(self, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers


UNAUTHORIZED = "a valid bearer token is required"


class Admission:
    def __init__(self, authenticator: Authenticator, tenants: Tenants, limiter: RateLimiter) -> None:
        self.authenticator = authenticator
        self.tenants = tenants
        self.limiter = limiter

    def admit(self, token: str | None) -> Principal:
        if not token:
            raise Refusal(401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
        return self.admit_digest(token_digest(token))

    def admit_digest(self, digest: str) -> Principal:
        """The principal holding the token with this SHA-256, if it may make a request now."""
        principal = self.authenticator.authenticate_digest(digest)
        if principal is None:
            raise Refusal(401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
        if principal.role != OPERATOR:
            state = self.tenants.state(principal.tenant)
            if not state.exists:
                # Its tenant was deleted (its tokens with it): as if the token never was.
                raise Refusal(401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
            if state.suspended:
                raise Refusal(403, "tenant-suspended", "this token's organization is suspended; its operator can resume it")
        wait = self.limiter.take(principal.token_id or digest)
        if wait is not None:
            raise Refusal(429, "rate-limited",
                          f"this token made more than {self.limiter.burst} requests at once or more than "
                          f"{self.limiter.rate:g} a second (TOOLSMITH_RATE_PER_SECOND); retry after Retry-After seconds",
                          {"Retry-After": retry_after(wait)})
        return principal
