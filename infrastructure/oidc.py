"""The console's single sign-on: an OpenID Connect relying party of the provider the operator names
(`TOOLSMITH_SSO_*`, docs/sso.md), with Authlib's OAuth 2 client and joserfc (no JOSE written here).

It owns the protocol, not the session: `Provider.begin` makes an authorization request (code flow,
PKCE S256, `state`, `nonce`) and the `Pending` the browser keeps until it comes back;
`Provider.finish` checks the authorization response (its `state`, and its `iss` by RFC 9207),
exchanges the code, and checks the ID token (signature by the provider's JWKS, issuer, audience,
expiry, nonce, azp) into an `Identity`: who the person is, their organization (the tenant claim)
and their Toolsmith role (the role map). What the console does with it (a user found or made just
in time, a session) is console/routes/sso.py's.

The provider is configured by the operator and reached directly, as the event store and the read
model are, not through the tools' egress path (whose rules are for what a tenant configures).
Every refusal is a `SignInRefused` with a sentence for the person and a short `reason` for the log;
no token, code, verifier or secret is ever in either.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from authlib.common.security import generate_token
from authlib.integrations.base_client import OAuthError
from authlib.integrations.httpx_client import AsyncOAuth2Client
from authlib.oidc.core import CodeIDToken
from joserfc import jwt
from joserfc.errors import InvalidClaimError, InvalidKeyIdError, JoseError, MissingClaimError
from joserfc.jwk import KeySet
from joserfc.jws import JWSRegistry

ADMIN, AUDITOR, CALLER = "admin", "auditor", "caller"
# The strongest role wins when a person's provider roles map to several.
STRENGTH = {ADMIN: 3, AUDITOR: 2, CALLER: 1}
METADATA_SECONDS = 3600.0
# A key id the cached JWKS lacks makes it be fetched again (the provider rotated its keys), at most this often.
JWKS_REFETCH_SECONDS = 30.0
# Clock skew allowed on the ID token's exp/iat.
LEEWAY_SECONDS = 60
TIMEOUT_SECONDS = 10.0


class SignInRefused(Exception):
    """A sign-in that cannot go on: `message` for the person, `reason` (no secret in it) for the log,
    `status` for the page."""

    def __init__(self, message: str, reason: str, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.status = status


@dataclass(frozen=True)
class RoleGrant:
    role: str
    usage_profile: str | None = None


def parse_role_map(text: str) -> dict[str, RoleGrant]:
    """`value=admin,value=auditor,value=caller[:<usage profile>]` into a table; ValueError naming the
    entry that is not one of those."""
    table: dict[str, RoleGrant] = {}
    for entry in (item.strip() for item in text.split(",")):
        if not entry:
            continue
        value, sep, grant = entry.rpartition("=")
        value, grant = value.strip(), grant.strip()
        role, _, profile = grant.partition(":")
        role, profile = role.strip(), profile.strip()
        if not sep or not value or role not in STRENGTH:
            raise ValueError(f"TOOLSMITH_SSO_ROLE_MAP: {entry!r} is not value=admin, value=auditor or value=caller[:<usage profile>]")
        if role != CALLER and profile:
            raise ValueError(f"TOOLSMITH_SSO_ROLE_MAP: {entry!r}: only a caller has a usage profile")
        if value in table:
            raise ValueError(f"TOOLSMITH_SSO_ROLE_MAP: {value!r} is mapped twice")
        table[value] = RoleGrant(role, profile or None)
    return table


def claim(claims: dict[str, Any], path: str) -> Any:
    """The claim at a dotted path (`realm_access.roles`), or None; a top-level claim whose name has
    a dot in it is found first."""
    if path in claims:
        return claims[path]
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def claim_values(claims: dict[str, Any], path: str) -> list[str]:
    """A string claim as one value, a list claim's strings, else none."""
    value = claim(claims, path)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def map_role(values: list[str], table: dict[str, RoleGrant]) -> RoleGrant | None:
    """The strongest grant the person's provider roles map to (equal strength: the first in the
    person's claim), or None when none of them is in the table."""
    best: RoleGrant | None = None
    for value in values:
        grant = table.get(value)
        if grant is not None and (best is None or STRENGTH[grant.role] > STRENGTH[best.role]):
            best = grant
    return best


@dataclass(frozen=True)
class Config:
    """What the relying party is configured with (from `Settings`: `Config.of`)."""

    issuer: str
    client_id: str
    client_secret: str
    name: str
    scopes: tuple[str, ...]
    tenant_claim: str
    roles_claim: str
    role_map: dict[str, RoleGrant]
    default_tenant: str

    @classmethod
    def of(cls, settings: Any) -> Config | None:  # noqa: ANN401 - infrastructure.settings.Settings
        """The configuration the settings give, or None when single sign-on is off (no issuer).
        ValueError saying which setting is missing."""
        if not settings.sso_issuer:
            return None
        secret = settings.sso_client_secret.get_secret_value() if settings.sso_client_secret else ""
        if not secret and settings.sso_client_secret_file:
            secret = settings.sso_client_secret_file.read_text().strip()
        if not settings.sso_client_id:
            raise ValueError("TOOLSMITH_SSO_CLIENT_ID is needed with TOOLSMITH_SSO_ISSUER")
        if not secret:
            raise ValueError("TOOLSMITH_SSO_CLIENT_SECRET (or TOOLSMITH_SSO_CLIENT_SECRET_FILE) is needed with TOOLSMITH_SSO_ISSUER")
        table = parse_role_map(settings.sso_role_map)
        if not table:
            raise ValueError("TOOLSMITH_SSO_ROLE_MAP is needed with TOOLSMITH_SSO_ISSUER: which provider role gives which Toolsmith role")
        scopes = tuple(dict.fromkeys(("openid", *settings.sso_scopes.split())))
        return cls(issuer=settings.sso_issuer, client_id=settings.sso_client_id, client_secret=secret,
                   name=settings.sso_name, scopes=scopes, tenant_claim=settings.sso_tenant_claim.strip(),
                   roles_claim=settings.sso_roles_claim.strip(), role_map=table, default_tenant=settings.tenant)

    def __repr__(self) -> str:  # never the secret
        return f"Config(issuer={self.issuer!r}, client_id={self.client_id!r}, name={self.name!r})"


@dataclass(frozen=True)
class Pending:
    """An authorization request in flight, kept (signed) by the browser that started it."""

    state: str
    nonce: str
    code_verifier: str
    next: str

    def as_dict(self) -> dict[str, str]:
        return {"state": self.state, "nonce": self.nonce, "code_verifier": self.code_verifier, "next": self.next}

    @classmethod
    def of(cls, data: object) -> Pending | None:
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) for k in ("state", "nonce", "code_verifier", "next")):
            return None
        return cls(data["state"], data["nonce"], data["code_verifier"], data["next"])


@dataclass(frozen=True)
class Identity:
    """A person the provider vouched for, mapped to Toolsmith: their organization and role."""

    issuer: str
    subject: str
    email: str
    name: str
    locale: str
    tenant: str
    grant: RoleGrant


AGAIN = "Start the sign-in again from the sign-in page."


class Provider:
    """One OpenID provider: its discovery document and keys (cached), and the two legs of a sign-in."""

    def __init__(self, config: Config, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self._transport = transport
        self._metadata: dict[str, Any] | None = None
        self._metadata_at = 0.0
        self._jwks: dict[str, Any] | None = None
        self._jwks_at = 0.0
        self._lock = asyncio.Lock()

    @property
    def name(self) -> str:
        return self.config.name

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=TIMEOUT_SECONDS, trust_env=False, transport=self._transport)

    def _oauth(self, redirect_uri: str, metadata: dict[str, Any]) -> AsyncOAuth2Client:
        methods = metadata.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        method = "client_secret_basic" if "client_secret_basic" in methods else "client_secret_post"
        return AsyncOAuth2Client(client_id=self.config.client_id, client_secret=self.config.client_secret,
                                 scope=" ".join(self.config.scopes), redirect_uri=redirect_uri,
                                 code_challenge_method="S256", token_endpoint_auth_method=method,
                                 timeout=TIMEOUT_SECONDS, trust_env=False, transport=self._transport)

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document, whose `issuer` must be the configured one (OpenID
        Connect Discovery 1.0, 4.3); kept an hour."""
        async with self._lock:
            if self._metadata is not None and time.monotonic() - self._metadata_at < METADATA_SECONDS:
                return self._metadata
            url = self.config.issuer.rstrip("/") + "/.well-known/openid-configuration"
            try:
                async with self._http() as http:
                    answer = await http.get(url)
                answer.raise_for_status()
                found = answer.json()
            except (httpx.HTTPError, ValueError) as error:
                raise SignInRefused(f"{self.name} cannot be reached right now. Try again in a moment.",
                                    f"discovery failed: {type(error).__name__}", 502) from None
            if not isinstance(found, dict) or found.get("issuer") != self.config.issuer:
                raise SignInRefused(f"{self.name} is not set up as this service expects; tell the service's operator.",
                                    "discovery: the issuer is not TOOLSMITH_SSO_ISSUER", 502)
            for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                if not isinstance(found.get(key), str):
                    raise SignInRefused(f"{self.name} is not set up as this service expects; tell the service's operator.",
                                        f"discovery: no {key}", 502)
            if "S256" not in (found.get("code_challenge_methods_supported") or ["S256"]):
                raise SignInRefused(f"{self.name} does not offer PKCE with S256; tell the service's operator.",
                                    "discovery: no S256", 502)
            self._metadata, self._metadata_at = found, time.monotonic()
            return found

    async def _keys(self, *, again: bool = False) -> KeySet:
        metadata = await self.metadata()
        async with self._lock:
            stale = self._jwks is None or time.monotonic() - self._jwks_at > METADATA_SECONDS
            if again and time.monotonic() - self._jwks_at > JWKS_REFETCH_SECONDS:
                stale = True
            if stale:
                try:
                    async with self._http() as http:
                        answer = await http.get(metadata["jwks_uri"])
                    answer.raise_for_status()
                    self._jwks, self._jwks_at = answer.json(), time.monotonic()
                except (httpx.HTTPError, ValueError):
                    raise SignInRefused(f"{self.name} cannot be reached right now. Try again in a moment.",
                                        "jwks fetch failed", 502) from None
            return KeySet.import_key_set(self._jwks)

    async def begin(self, redirect_uri: str, next_path: str) -> tuple[str, Pending]:
        """The authorization request's URL (to send the browser to) and what to keep until it is back."""
        metadata = await self.metadata()
        verifier = generate_token(64)  # 64 characters of [A-Za-z0-9]: RFC 7636's 43 to 128
        pending = Pending(state=generate_token(32), nonce=generate_token(32), code_verifier=verifier, next=next_path)
        async with self._oauth(redirect_uri, metadata) as client:
            url, _ = client.create_authorization_url(metadata["authorization_endpoint"], state=pending.state,
                                                     code_verifier=verifier, nonce=pending.nonce)
        return url, pending

    async def finish(self, pending: Pending, params: dict[str, str], redirect_uri: str) -> Identity:
        """The authorization response (`params`: the callback's query) checked and its code
        exchanged; the ID token checked; the person mapped."""
        metadata = await self.metadata()
        state = params.get("state", "")
        if not state or not hmac.compare_digest(state.encode(), pending.state.encode()):
            raise SignInRefused("This answer from the sign-in provider does not belong to the sign-in this browser "
                                f"started. {AGAIN}", "state mismatch")
        # RFC 9207: the response names who sent it; a provider that says it does must, and it must be ours.
        issuer = params.get("iss")
        if issuer is None and metadata.get("authorization_response_iss_parameter_supported"):
            raise SignInRefused(f"The answer did not say which provider sent it. {AGAIN}", "iss missing")
        if issuer is not None and issuer != self.config.issuer:
            raise SignInRefused(f"The answer came from another sign-in provider than {self.name}. {AGAIN}", "iss mismatch")
        if params.get("error"):
            if params["error"] == "access_denied":
                raise SignInRefused(f"{self.name} did not sign you in (the sign-in was cancelled or refused).",
                                    "provider: access_denied", 403)
            raise SignInRefused(f"{self.name} could not sign you in ({params['error']}). {AGAIN}",
                                f"provider error: {params['error'][:64]}")
        code = params.get("code")
        if not code:
            raise SignInRefused(f"The answer from {self.name} carried no authorization code. {AGAIN}", "no code")
        try:
            async with self._oauth(redirect_uri, metadata) as client:
                token = await client.fetch_token(metadata["token_endpoint"], code=code, code_verifier=pending.code_verifier)
        except OAuthError as error:
            raise SignInRefused(f"{self.name} refused this sign-in's code (it may have been used already or have "
                                f"expired). {AGAIN}", f"token endpoint: {str(error.error)[:64]}") from None
        except httpx.HTTPError as error:
            raise SignInRefused(f"{self.name} cannot be reached right now. Try again in a moment.",
                                f"token endpoint: {type(error).__name__}", 502) from None
        if not isinstance(token, dict) or not isinstance(token.get("id_token"), str):
            raise SignInRefused(f"{self.name} sent no ID token; tell the service's operator (is the openid scope allowed?).",
                                "no id_token", 502)
        claims = await self._id_token(token, pending, metadata)
        return self._identity(claims)

    async def _id_token(self, token: dict[str, Any], pending: Pending, metadata: dict[str, Any]) -> dict[str, Any]:
        algorithms = [a for a in (metadata.get("id_token_signing_alg_values_supported") or ["RS256"]) if a != "none"]
        registry = JWSRegistry(algorithms=algorithms, strict_check_header=False)
        try:
            try:
                decoded = jwt.decode(token["id_token"], await self._keys(), registry=registry)
            except InvalidKeyIdError:  # the provider rotated its keys since they were fetched
                decoded = jwt.decode(token["id_token"], await self._keys(again=True), registry=registry)
        except JoseError as error:
            raise SignInRefused(f"The ID token from {self.name} is not signed by it. {AGAIN}",
                                f"id_token signature: {error.error}") from None
        options = {"iss": {"essential": True, "value": self.config.issuer},
                   "aud": {"essential": True, "value": self.config.client_id},
                   "sub": {"essential": True}, "exp": {"essential": True}, "iat": {"essential": True}}
        params = {"nonce": pending.nonce, "client_id": self.config.client_id}
        if isinstance(token.get("access_token"), str):
            params["access_token"] = token["access_token"]
        claims = CodeIDToken(decoded.claims, decoded.header, options, params)
        try:
            claims.validate(leeway=LEEWAY_SECONDS)
        except (InvalidClaimError, MissingClaimError) as error:
            raise SignInRefused(self._claim_message(error.claim), f"id_token claim: {error.claim}") from None
        except JoseError as error:  # expired, not yet valid
            raise SignInRefused(f"The ID token from {self.name} has expired or is not valid yet; check the "
                                f"clocks. {AGAIN}", f"id_token: {error.error}") from None
        return dict(claims)

    def _claim_message(self, name: str) -> str:
        if name in ("aud", "azp"):
            return f"The ID token from {self.name} is meant for another application, not this console. {AGAIN}"
        if name == "iss":
            return f"The ID token was issued by another provider than {self.name}. {AGAIN}"
        if name == "nonce":
            return f"The ID token does not belong to the sign-in this browser started. {AGAIN}"
        return f"The ID token from {self.name} is not valid ({name}). {AGAIN}"

    def _identity(self, claims: dict[str, Any]) -> Identity:
        config = self.config
        email = claims.get("email")
        if not isinstance(email, str) or "@" not in email:
            raise SignInRefused(f"{self.name} did not tell this service your email address; ask your administrator "
                                "to release it (the email scope).", "no email claim", 403)
        if claims.get("email_verified") is False:
            raise SignInRefused(f"{self.name} has not verified your email address yet; verify it there, then sign in "
                                "again.", "email not verified", 403)
        if config.tenant_claim:
            tenants = claim_values(claims, config.tenant_claim)
            if len(tenants) != 1 or not tenants[0].strip():
                raise SignInRefused(f"{self.name} did not say which organization you belong to; ask your administrator "
                                    "to give your account one.", f"tenant claim {config.tenant_claim!r}: {len(tenants)} values", 403)
            tenant = tenants[0].strip()
        else:
            tenant = config.default_tenant
        grant = map_role(claim_values(claims, config.roles_claim), config.role_map)
        if grant is None:
            raise SignInRefused(f"Your account at {self.name} has no role in this service; ask your administrator for "
                                "one.", "no mapped role", 403)
        name = next((claims[k] for k in ("name", "preferred_username") if isinstance(claims.get(k), str) and claims[k].strip()), email)
        locale = claims.get("locale") if isinstance(claims.get("locale"), str) else "en"
        return Identity(issuer=config.issuer, subject=str(claims["sub"]), email=email.strip().lower(), name=name.strip(),
                        locale=locale or "en", tenant=tenant, grant=grant)


def redirect_uri(base_url: str) -> str:
    """The callback's absolute URL under the service's base URL."""
    return base_url.rstrip("/") + "/console/sso/callback"


def secure_cookie(base_url: str) -> bool:
    return urlsplit(base_url).scheme == "https"
