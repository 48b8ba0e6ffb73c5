"""Who may make a request (docs/security.md, docs/tenants.md): the bearer token, its tenant's state, its rate, and
how many tokens that are not one its client address sent.

Every way in asks here first: the REST routes (`api/deps.py`), the MCP endpoint (`api/mcp.py`),
the console's sign-in (`console/routes/auth.py`) and session (`console/security.py`), each with the
client's address (`client_address`). A token that is not one is 401; a token of a suspended tenant
is 403 `tenant-suspended`; a token past its request rate, or whose tenant's tokens together are past
the tenant's, is 429 `rate-limited` with `Retry-After`. An address that sent more tokens that are
not one than `TOOLSMITH_AUTH_FAILURES_PER_MINUTE` is 429 `too-many-failed-authentications` for every
request, a correct token's too, until one is back (as a login throttle is: a guesser who finds a
token learns nothing from the answer); a correct token's requests never count. The operator's token
belongs to no tenant and is never suspended.

On an MCP URL (`resource`, its path), a token shaped like a JWT is an OAuth access token, checked
by the resource server (`oauth`, `api/oauth/resource.py`; its verdict kept by the token's digest
until it expires), and a 401 names the URL's Protected Resource Metadata (RFC 9728). What follows
is the same for both: the tenant's state, the rates (an OAuth token counts on its person's).
"""

from __future__ import annotations

from typing import Any

from application.tenants import Tenants
from application.principals import OPERATOR, Authenticator, Principal
from domain.callers import token_digest
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
TOO_MANY_FAILURES = "too-many-failed-authentications"


def client_address(scope: Any) -> str | None:
    """The client's address: the connection's peer, or what a trusted proxy's X-Forwarded-For says
    (uvicorn puts it in the scope only for `TOOLSMITH_TRUSTED_PROXIES`); None when unknown."""
    client = scope.get("client") if isinstance(scope, dict) else getattr(scope, "client", None)
    if not client:
        return None
    return client[0] if isinstance(client, (tuple, list)) else getattr(client, "host", None)


def _off() -> RateLimiter:
    return RateLimiter(0, 1)


class Admission:
    def __init__(self, authenticator: Authenticator, tenants: Tenants, limiter: RateLimiter, *,
                 tenant_limiter: RateLimiter | None = None, failures: RateLimiter | None = None) -> None:
        self.authenticator = authenticator
        self.tenants = tenants
        self.limiter = limiter  # a token's requests
        self.tenant_limiter = tenant_limiter or _off()  # a tenant's, all its tokens together
        self.failures = failures or _off()  # a client address's tokens that are not one
        # Requests refused by each limiter ("token", "tenant", "address"): the metrics read them.
        self.refused: dict[str, int] = {"token": 0, "tenant": 0, "address": 0}
        self.oauth: Any = None  # the MCP endpoint's OAuth resource server (api/oauth/resource.py), once mounted

    def admit(self, token: str | None, client: str | None = None, resource: str | None = None) -> Principal:
        oauth = self.oauth if resource is not None else None
        if not token:
            self._not_throttled(client)
            raise oauth.unauthorized(resource, False) if oauth is not None else Refusal(
                401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
        if oauth is None:
            return self.admit_digest(token_digest(token), client)
        if token.startswith("eyJ") and token.count(".") == 2:  # a JWT: an OAuth access token
            self._not_throttled(client)
            try:
                principal = oauth.admit(token, resource)
            except Refusal as refusal:
                if refusal.status == 401:
                    self._failed(client)
                raise
            return self.admit_principal(principal, client)
        try:
            return self.admit_digest(token_digest(token), client)
        except Refusal as refusal:
            if refusal.status == 401:
                raise oauth.unauthorized(resource, True) from None
            raise

    def admit_digest(self, digest: str, client: str | None = None) -> Principal:
        """The principal holding the token with this SHA-256, if it may make a request now from the
        address `client` (None: unknown, never throttled)."""
        self._not_throttled(client)
        principal = self.authenticator.authenticate_digest(digest)
        if principal is None:
            self._failed(client)
            raise Refusal(401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
        return self.admit_principal(principal, client, key=digest)

    def admit_principal(self, principal: Principal, client: str | None = None, *, key: str | None = None) -> Principal:
        """A principal found otherwise than by a bearer token (a person's console session,
        docs/users.md), or by one (`key`: its digest): its tenant's state, then its rates. The
        rate counts the person wherever there is one (`Principal.rate_key`), whatever token,
        session or client they come through."""
        if principal.role != OPERATOR:
            state = self.tenants.state(principal.tenant)
            if not state.exists:
                # Its tenant was deleted (its tokens with it): as if the token never was.
                self._failed(client)
                raise Refusal(401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
            if state.suspended:
                raise Refusal(403, "tenant-suspended", "this token's organization is suspended; its operator can resume it")
        wait = self.limiter.take(principal.rate_key or key or principal.name)
        if wait is not None:
            self.refused["token"] += 1
            raise Refusal(429, "rate-limited",
                          f"this token made more than {self.limiter.burst} requests at once or more than "
                          f"{self.limiter.rate:g} a second (TOOLSMITH_RATE_PER_SECOND); retry after Retry-After seconds",
                          {"Retry-After": retry_after(wait)})
        if principal.role != OPERATOR:
            wait = self.tenant_limiter.take(principal.tenant)
            if wait is not None:
                self.refused["tenant"] += 1
                raise Refusal(429, "rate-limited",
                              f"this token's organization, all its tokens together, made more than "
                              f"{self.tenant_limiter.burst} requests at once or more than {self.tenant_limiter.rate:g} "
                              f"a second (TOOLSMITH_TENANT_RATE_PER_SECOND); retry after Retry-After seconds",
                              {"Retry-After": retry_after(wait)})
        return principal

    def throttled(self, client: str | None) -> None:
        """Refuses (429) an address past its failed authentications: the console's password sign-in
        asks before it checks a password (docs/users.md)."""
        self._not_throttled(client)

    def failed(self, client: str | None) -> None:
        """Counts a failed authentication that was no token (a wrong password) against its address."""
        self._failed(client)

    def _not_throttled(self, client: str | None) -> None:
        """Refuses every request of an address past its failed authentications, until one is back."""
        if client is not None and self.failures.enabled:
            wait = self.failures.waiting(client)
            if wait is not None:
                raise self._too_many_failures(wait)

    def _failed(self, client: str | None) -> None:
        """Counts a token that is not one against its address; the one past the limit is 429."""
        if client is not None and self.failures.enabled:
            wait = self.failures.take(client)
            if wait is not None:
                raise self._too_many_failures(wait)

    def _too_many_failures(self, wait: float) -> Refusal:
        self.refused["address"] += 1
        per_minute = round(self.failures.rate * 60)
        return Refusal(429, TOO_MANY_FAILURES,
                       f"this address sent more than {per_minute} tokens that are not valid in a minute "
                       f"(TOOLSMITH_AUTH_FAILURES_PER_MINUTE); every request from it is refused until "
                       f"Retry-After seconds pass", {"Retry-After": retry_after(wait)})
