"""The MCP endpoint as an OAuth 2.1 resource server (docs/oauth.md; MCP authorization 2025-11-25,
RFC 9728, RFC 8707, RFC 6750).

Each MCP URL is a resource of its own: `<TOOLSMITH_PUBLIC_URL>/mcp` and `…/mcp/{server}`. Its
Protected Resource Metadata is at `/.well-known/oauth-protected-resource` + the URL's path, and a
`401` names it (`WWW-Authenticate: Bearer resource_metadata="…"`, with `error="invalid_token"`
when a token was presented). The public URL comes from the setting, never from a Host header.

An access token is a JWT of the trusted issuer (the built-in authorization server, or the one
`TOOLSMITH_OAUTH_ISSUER` names): its signature (JWKS; a key id not known reads the keys once more,
at most every `REFETCH_SECONDS`), its issuer, its expiry and its audience, which must be the very
resource asked (a token for `/mcp/a` opens neither `/mcp` nor `/mcp/b`). A token of another
audience, an expired one, one whose grant was revoked or whose person may no longer sign in is
401 `invalid_token`; one without the `mcp:tools` scope is 403 `insufficient_scope` naming it.

What a token is found to be is kept by its SHA-256 until it expires (`Verified`): a request with
a token already seen costs a hash, a dictionary look-up and the person's check, as a static
token's does (`application/principals.py`): no signature check, no network round trip.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from api.admission import Refusal
from api.oauth.keys import ALGORITHM, SigningKeys
from api.oauth.server import MCP_SCOPE, SCOPES
from api.oauth.store import OAuthStore
from application.principals import CALLER, ROLES, Principal

log = logging.getLogger("toolsmith.oauth")

REFETCH_SECONDS = 30.0
# How often a process reads the grants revoked elsewhere (another replica, the console of another).
REVOKED_POLL_SECONDS = 2.0
KEPT_AT_MOST = 50_000
MCP_PATH = "/mcp"
PRM_PATH = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class Verified:
    """What a verified token is, kept by its digest until `expires` (epoch seconds)."""

    expires: float
    audience: tuple[str, ...]
    scopes: frozenset[str]
    principal: Principal | None  # an external issuer's: mapped from the claims once
    grant_id: str | None  # the built-in server's: the grant, whose person is asked each time
    person_ref: str | None
    tenant: str | None = None
    client: str | None = None  # the OAuth client the token was issued to (what the call log names)


class BuiltInIssuer:
    """Tokens of the built-in authorization server: keys from the data dir, grants from its store."""

    def __init__(self, issuer: str, keys: SigningKeys, store: OAuthStore) -> None:
        self.issuer = issuer
        self.keys = keys
        self.store = store
        self._refetched = 0.0

    def key_set(self, kid: str | None) -> KeySet:
        if not self.keys.knows(kid) and time.monotonic() - self._refetched > REFETCH_SECONDS:
            self._refetched = time.monotonic()
            self.keys.reload()
        return self.keys.public()

    def verified(self, claims: dict[str, Any], expires: float, audience: tuple[str, ...], scopes: frozenset[str]) -> Verified:
        gid = claims.get("gid")
        grant = self.store.grant(gid) if isinstance(gid, str) else None
        if grant is None:
            raise _Invalid("its grant is not known here")
        return Verified(expires, audience, scopes, None, grant.id, grant.person_ref, grant.tenant, grant.client_id)


class ExternalIssuer:
    """Tokens of a company's own authorization server (`TOOLSMITH_OAUTH_ISSUER`): its JWKS found by
    discovery (RFC 8414, then OpenID Connect Discovery), its claims mapped to a tenant, a role and
    a usage profile as the settings say (`TOOLSMITH_OAUTH_ROLE_MAP`: the strongest role a person's
    roles map to wins; a token whose roles map to none is refused)."""

    def __init__(self, issuer: str, *, tenant_claim: str, default_tenant: str, role_claim: str, role_map: str,
                 profile_claim: str, http: httpx.Client | None = None) -> None:
        self.issuer = issuer
        self.tenant_claim = tenant_claim
        self.default_tenant = default_tenant
        self.role_claim = role_claim
        self.role_map = parse_role_map(role_map)
        self.profile_claim = profile_claim
        self._http = http or httpx.Client(timeout=10, trust_env=False)
        self._keys: KeySet | None = None
        self._jwks_uri: str | None = None
        self._fetched = 0.0
        self._lock = threading.Lock()

    def discover(self) -> str:
        if self._jwks_uri is None:
            base = self.issuer.rstrip("/")
            for url in (f"{base}/.well-known/oauth-authorization-server", f"{base}/.well-known/openid-configuration"):
                try:
                    answer = self._http.get(url)
                except httpx.HTTPError:
                    continue
                if answer.status_code == 200:
                    document = answer.json()
                    if document.get("issuer") == self.issuer and isinstance(document.get("jwks_uri"), str):
                        self._jwks_uri = document["jwks_uri"]
                        break
            if self._jwks_uri is None:
                raise _Invalid(f"the issuer {self.issuer} publishes no metadata naming its jwks_uri")
        return self._jwks_uri

    def key_set(self, kid: str | None) -> KeySet:
        with self._lock:
            known = self._keys is not None and (kid is None or any(k.kid == kid for k in self._keys.keys))
            if not known and (self._keys is None or time.monotonic() - self._fetched > REFETCH_SECONDS):
                self._fetched = time.monotonic()
                try:
                    answer = self._http.get(self.discover())
                    answer.raise_for_status()
                    self._keys = KeySet.import_key_set(answer.json())
                except (httpx.HTTPError, ValueError, JoseError) as error:
                    log.warning("could not read the issuer's JWKS", extra={"issuer": self.issuer, "error": str(error)})
                    if self._keys is None:
                        raise _Invalid("the issuer's keys cannot be read just now") from None
            assert self._keys is not None
            return self._keys

    def verified(self, claims: dict[str, Any], expires: float, audience: tuple[str, ...], scopes: frozenset[str]) -> Verified:
        tenant = _claim(claims, self.tenant_claim) if self.tenant_claim else None
        tenant_name = tenant if isinstance(tenant, str) and tenant else self.default_tenant
        found = _claim(claims, self.role_claim)
        values = [found] if isinstance(found, str) else [v for v in found if isinstance(v, str)] if isinstance(found, list) else []
        grants = [self.role_map[v] if v in self.role_map else (v, None) for v in values if v in self.role_map or v in ROLES]
        if not grants:
            raise _Invalid("its roles map to no role here (TOOLSMITH_OAUTH_ROLE_MAP)")
        role, profile = max(grants, key=lambda grant: STRENGTH[grant[0]])
        named = _claim(claims, self.profile_claim) if self.profile_claim else None
        if role == CALLER and isinstance(named, str) and named:
            profile = named
        subject = str(claims.get("sub") or "")
        if not subject:
            raise _Invalid("it names no subject")
        name = str(claims.get("preferred_username") or claims.get("email") or subject)
        found_client = claims.get("client_id") or claims.get("azp")  # RFC 9068, else OpenID Connect's
        client = found_client if isinstance(found_client, str) and found_client else None
        principal = Principal(name=f"{name} (via {self.issuer})", role=role, tenant=tenant_name,
                              usage_profile=profile if role == CALLER else None, token_id=f"oauth:{self.issuer}:{subject}",
                              via="oauth", client=client)
        return Verified(expires, audience, scopes, principal, None, None, client=client)


STRENGTH = {"caller": 1, "auditor": 2, "admin": 3}


def parse_role_map(text: str) -> dict[str, tuple[str, str | None]]:
    """`value=admin,value=auditor,value=caller[:<usage profile>]`; ValueError naming a bad entry (the start stops)."""
    table: dict[str, tuple[str, str | None]] = {}
    for entry in (item.strip() for item in text.split(",") if item.strip()):
        value, sep, grant = entry.rpartition("=")
        role, _, profile = grant.strip().partition(":")
        if not sep or not value.strip() or role.strip() not in STRENGTH or (profile.strip() and role.strip() != CALLER):
            raise ValueError(f"TOOLSMITH_OAUTH_ROLE_MAP: {entry!r} is not value=admin, value=auditor or value=caller[:<usage profile>]")
        table[value.strip()] = (role.strip(), profile.strip() or None)
    return table


def _claim(claims: dict[str, Any], path: str) -> Any:
    """A claim by name, or by a dotted path into nested objects (`realm_access.roles`)."""
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


class _Invalid(Exception):
    """Why a token is not one: said in the 401's error_description."""


class ResourceServer:
    def __init__(self, public_url: str, issuer: BuiltInIssuer | ExternalIssuer,
                 find_person: Callable[[str, str], Principal | None], *, required_scope: str = MCP_SCOPE) -> None:
        self.public_url = public_url.rstrip("/")
        self.required_scope = required_scope
        self.issuer = issuer
        self.find_person = find_person
        self._kept: dict[bytes, Verified] = {}
        self._revoked: set[str] = set()
        self._lock = threading.Lock()
        self._polled = time.time()

    # Metadata and challenges
    def resource(self, path: str) -> str:
        return self.public_url + path

    def metadata(self, path: str) -> dict[str, Any]:
        """RFC 9728 §2 for the MCP URL at `path` (`/mcp`, `/mcp/{server}`)."""
        return {
            "resource": self.resource(path),
            "authorization_servers": [self.issuer.issuer],
            "scopes_supported": ([self.required_scope] if self.required_scope else []) if isinstance(self.issuer, ExternalIssuer)
            else list(SCOPES),
            "bearer_methods_supported": ["header"],
            "resource_name": "Toolsmith MCP" + (f" server {path.removeprefix(MCP_PATH + '/')}" if path != MCP_PATH else ""),
        }

    def challenge(self, path: str, error: str | None = None, description: str | None = None) -> str:
        parts = [f'resource_metadata="{self.public_url}{PRM_PATH}{path}"']
        if self.required_scope:
            parts.append(f'scope="{self.required_scope}"')
        if error:
            parts.insert(0, f'error="{error}"')
        if description:
            parts.append('error_description="' + description.replace('"', "'").replace("\\", "/") + '"')
        return "Bearer " + ", ".join(parts)

    def unauthorized(self, path: str, presented: bool, description: str | None = None) -> Refusal:
        detail = description or "a valid bearer token is required"
        return Refusal(401, "invalid-token" if presented else "unauthorized", detail,
                       {"WWW-Authenticate": self.challenge(path, "invalid_token" if presented else None,
                                                           description if presented else None)})

    # Revocation seen at once by this process
    def revoked(self, grant_id: str) -> None:
        with self._lock:
            self._revoked.add(grant_id)
            self._kept = {key: kept for key, kept in self._kept.items() if kept.grant_id != grant_id}

    def watch_revocations(self) -> Callable[[], None]:
        """Reads the grants revoked by other processes every `REVOKED_POLL_SECONDS`, in a thread of
        its own (never in a request's path); what it answers stops it."""
        stopped = threading.Event()

        def poll() -> None:
            while not stopped.wait(REVOKED_POLL_SECONDS):
                if self.issuer.store.closed:  # type: ignore[union-attr] - the service stopped
                    return
                try:
                    self.poll_revoked(time.time())
                except Exception:  # noqa: BLE001 - the store is away a moment: the next poll reads it again
                    log.warning("could not read the revoked OAuth grants; trying again", exc_info=True)

        threading.Thread(target=poll, name="oauth-revocations", daemon=True).start()
        return stopped.set

    def poll_revoked(self, now: float) -> None:
        since, self._polled = self._polled, now
        assert isinstance(self.issuer, BuiltInIssuer)
        for grant_id in self.issuer.store.revoked_since(since - 10 * REVOKED_POLL_SECONDS):
            if grant_id not in self._revoked:
                self.revoked(grant_id)

    # The check of each request
    def admit(self, token: str, path: str) -> Principal:
        """The principal of a JWT access token for the MCP URL at `path`; a `Refusal` otherwise."""
        key = hashlib.sha256(token.encode()).digest()
        kept = self._kept.get(key)
        now = time.time()
        if kept is None or kept.expires <= now:
            try:
                kept = self._verify(token, now)
            except _Invalid as why:
                raise self.unauthorized(path, True, f"the access token is not valid: {why}") from None
            with self._lock:
                if len(self._kept) >= KEPT_AT_MOST:
                    self._kept = {k: v for k, v in self._kept.items() if v.expires > now}
                    if len(self._kept) >= KEPT_AT_MOST:
                        self._kept = {}
                self._kept[key] = kept
        resource = self.public_url + path
        if resource not in kept.audience:
            raise self.unauthorized(path, True, f"the access token is for another resource, not {resource}")
        if kept.grant_id is not None:
            if kept.grant_id in self._revoked:
                raise self.unauthorized(path, True, "the access token's grant was revoked")
            principal = self.find_person(kept.tenant or "", kept.person_ref or "")
            if principal is None:
                raise self.unauthorized(path, True, "the access token's person may no longer sign in")
            if kept.client is not None:
                principal = replace(principal, client=kept.client)
        else:
            principal = kept.principal
        assert principal is not None
        if self.required_scope and self.required_scope not in kept.scopes:
            raise Refusal(403, "insufficient-scope", f"this MCP URL needs the scope {self.required_scope}",
                          {"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{self.required_scope}", '
                                               f'resource_metadata="{self.public_url}{PRM_PATH}{path}"'})
        return principal

    def _verify(self, token: str, now: float) -> Verified:
        header = _header(token)
        if header.get("alg") != ALGORITHM and not isinstance(self.issuer, ExternalIssuer):
            raise _Invalid("it is not signed with RS256")
        try:
            decoded = jwt.decode(token, self.issuer.key_set(header.get("kid")),
                                 algorithms=[ALGORITHM, "RS384", "RS512", "ES256", "ES384", "PS256"])
        except (JoseError, ValueError) as error:
            raise _Invalid(f"its signature does not verify ({type(error).__name__})") from None
        claims = decoded.claims
        registry = jwt.JWTClaimsRegistry(now=int(now), leeway=0, iss={"essential": True, "value": self.issuer.issuer},
                                         exp={"essential": True})
        try:
            registry.validate(claims)
        except JoseError as error:
            raise _Invalid(_said(error)) from None
        audience = claims.get("aud")
        audiences = tuple(a for a in (audience if isinstance(audience, list) else [audience]) if isinstance(a, str))
        if not audiences:
            raise _Invalid("it names no audience")
        scopes = frozenset(str(claims.get("scope") or "").split())
        return self.issuer.verified(claims, float(claims["exp"]), audiences, scopes)


def _header(token: str) -> dict[str, Any]:
    import base64
    import json

    try:
        first = token.split(".", 1)[0]
        value = json.loads(base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)))
    except (ValueError, UnicodeDecodeError):
        raise _Invalid("it is not a JWT") from None
    if not isinstance(value, dict):
        raise _Invalid("it is not a JWT")
    return value


def _said(error: JoseError) -> str:
    name = type(error).__name__
    if name == "ExpiredTokenError":
        return "it has expired"
    if "iss" in str(error.description or ""):
        return "it is of another issuer"
    return f"its claims do not hold ({error.description or name})"


def looks_like_jwt(token: str) -> bool:
    """A JWS compact serialization: three parts, a JSON header (static tokens are `tsa_…`, `tsk_…`)."""
    return token.startswith("eyJ") and token.count(".") == 2
