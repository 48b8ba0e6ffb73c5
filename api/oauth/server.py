"""The built-in authorization server (docs/oauth.md): Authlib's, with what Toolsmith decides.

- Authorization code with PKCE `S256` only (OAuth 2.1): a request without a challenge, or with
  `plain`, is refused; `iss` in every authorization response (RFC 9207).
- Redirect URIs match exactly as registered, but for loopback ones (`http://127.0.0.1`, `[::1]`,
  `localhost`), whose port may differ (RFC 8252 §7.3: a native app takes any free port).
- The `resource` parameter (RFC 8707) is required and must be one of Toolsmith's MCP URLs, of a
  server the person's tenant has: it is the access token's one audience.
- Clients: a `client_id` that is an `https` URL is a Client ID Metadata Document, fetched through
  Toolsmith's egress (the SSRF policy of API URL tools: `TOOLSMITH_EGRESS_ALLOW`), kept a few
  minutes; any other was registered by Dynamic Client Registration (RFC 7591).
- Access tokens are JWTs (RFC 9068) signed by `SigningKeys`, for minutes
  (`TOOLSMITH_OAUTH_ACCESS_TOKEN_SECONDS`); refresh tokens are opaque, rotated on every use, and a
  used one presented again revokes its whole family (the grant), as a code used twice does
  (RFC 9700 §4.14, §4.2.4). Revocation by RFC 7009.

Requests arrive already read (`Asked`): the routes (`api/oauth/routes.py`) read the form or JSON
body and hand it here; what comes back is an `Answer` for the route to send.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import secrets
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from authlib.common.security import generate_token
from authlib.oauth2 import rfc8414
from authlib.oauth2.rfc6749 import AuthorizationServer, ClientMixin, OAuth2Request
from authlib.oauth2.rfc6749 import grants
from authlib.oauth2.rfc6749.errors import InvalidClientError, InvalidGrantError, InvalidRequestError, OAuth2Error
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload, JsonPayload, JsonRequest
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7591 import ClientMetadataClaims, ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from authlib.oauth2.rfc9207 import IssuerParameter
from joserfc import jwt
from joserfc.errors import JoseError

from api.oauth.keys import ALGORITHM, SigningKeys
from api.oauth.store import Code, Grant, OAuthStore, Refresh
from application.principals import Principal

# What a token may be asked for: the MCP tools (list and call them). `profile` asks nothing of MCP:
# a token with it alone is refused by MCP with 403 insufficient_scope naming `mcp:tools`.
MCP_SCOPE = "mcp:tools"
SCOPES = (MCP_SCOPE, "profile")
CODE_SECONDS = 300
REFRESH_SECONDS = 30 * 24 * 3600
CIMD_SECONDS = 300
CIMD_MAX_BYTES = 16 * 1024
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
# Set while the consent page validates a request: only then may a client metadata document be fetched anew.
INTERACTIVE: ContextVar[bool] = ContextVar("oauth_interactive", default=False)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Person:
    """Who consents: the principal the console session stands for, how to find them again."""

    subject: str
    name: str
    ref: str
    principal: Principal


@dataclass
class Holder:
    """Authlib's "user" of a grant: the person's grant (its resource is the token's audience)."""

    grant: Grant

    def get_user_id(self) -> str:
        return self.grant.subject


@dataclass
class Asked:
    """One HTTP request as the routes read it."""

    method: str
    url: str
    headers: dict[str, str]
    query: list[tuple[str, str]] = field(default_factory=list)
    form: list[tuple[str, str]] = field(default_factory=list)
    json: Any = None


@dataclass
class Answer:
    status: int
    body: Any
    headers: list[tuple[str, str]]

    @property
    def location(self) -> str | None:
        return next((value for name, value in self.headers if name.lower() == "location"), None)

    @location.setter
    def location(self, value: str) -> None:
        self.headers = [(n, v) for n, v in self.headers if n.lower() != "location"] + [("Location", value)]


class _Payload(BasicOAuth2Payload):
    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        data: dict[str, str] = {}
        listed: dict[str, list[str]] = {}
        for key, value in pairs:
            data.setdefault(key, value)
            listed.setdefault(key, []).append(value)
        self._data = data
        self._datalist = listed


class _Request(OAuth2Request):
    def __init__(self, asked: Asked) -> None:
        super().__init__(method=asked.method, uri=asked.url, headers=asked.headers)
        self._args = dict(asked.query)
        self._form = dict(asked.form)
        self.payload = _Payload(asked.query + asked.form)

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _Json(JsonPayload):
    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def data(self) -> Any:
        return self._data


def is_loopback(host: str | None) -> bool:
    host = (host or "").strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redirect_matches(registered: str, presented: str) -> bool:
    """Exact, but for a loopback `http` redirect, whose port is the client's to choose (RFC 8252)."""
    if registered == presented:
        return True
    a, b = urlsplit(registered), urlsplit(presented)
    return (a.scheme == b.scheme == "http" and is_loopback(a.hostname) and a.hostname == b.hostname
            and a.path == b.path and a.query == b.query and not b.fragment)


class Client(ClientMixin):
    def __init__(self, client_id: str, metadata: dict[str, Any], secret_digest: str | None = None, *,
                 document: bool = False) -> None:
        self.client_id = client_id
        self.metadata = metadata
        self.secret_digest = secret_digest
        self.document = document  # a Client ID Metadata Document

    @property
    def name(self) -> str:
        return str(self.metadata.get("client_name") or self.client_id)

    @property
    def uri(self) -> str | None:
        uri = self.metadata.get("client_uri")
        return uri if isinstance(uri, str) else None

    @property
    def auth_method(self) -> str:
        return str(self.metadata.get("token_endpoint_auth_method") or "client_secret_basic")

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return None  # OAuth 2.1: the request names it

    def get_allowed_scope(self, scope: str | None) -> str:
        asked = (scope or self.metadata.get("scope") or MCP_SCOPE).split()
        return " ".join(s for s in asked if s in SCOPES)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return any(redirect_matches(uri, redirect_uri) for uri in self.metadata.get("redirect_uris") or [])

    def check_client_secret(self, client_secret: str) -> bool:
        return self.secret_digest is not None and hmac.compare_digest(self.secret_digest, digest(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type in (self.metadata.get("response_types") or ["code"])

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (self.metadata.get("grant_types") or ["authorization_code"])


class _CodeRecord:
    def __init__(self, code: Code) -> None:
        self.code = code
        self.code_challenge = code.challenge
        self.code_challenge_method = code.challenge_method

    def get_redirect_uri(self) -> str:
        return self.code.redirect_uri

    def get_scope(self) -> str:
        return self.code.scope


class _RefreshRecord:
    def __init__(self, refresh: Refresh) -> None:
        self.refresh = refresh

    def check_client(self, client: Client) -> bool:
        return self.refresh.client_id == client.client_id

    def get_scope(self) -> str:
        return self.refresh.scope

    def get_expires_in(self) -> int:
        return int(self.refresh.expires - time.time())

    def is_expired(self) -> bool:
        return self.refresh.expires < time.time()

    def is_revoked(self) -> bool:
        return self.refresh.used is not None


class _AccessRecord:
    """An access token presented for revocation: its grant is revoked (RFC 7009 §2: an access
    token revoked may end its refresh tokens too; here the family ends)."""

    def __init__(self, grant: Grant) -> None:
        self.grant = grant

    def check_client(self, client: Client) -> bool:
        return self.grant.client_id == client.client_id


class S256Only(CodeChallenge):
    """PKCE with `S256` only, required of every client (OAuth 2.1 §4.1.1, RFC 9700 §2.1.1)."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: 'code_challenge' with code_challenge_method=S256")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256")
        super().validate_code_challenge(grant, redirect_uri)


class ToolsmithAuthorizationServer(AuthorizationServer):
    def __init__(self, *, issuer: str, store: OAuthStore, keys: SigningKeys, access_seconds: int,
                 fetch_document: Callable[[str], bytes], find_person: Callable[[str, str], Principal | None],
                 on_revoke: Callable[[str], None]) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.issuer = issuer
        self.store = store
        self.keys = keys
        self.access_seconds = access_seconds
        self._fetch_document = fetch_document
        self._find_person = find_person
        self._on_revoke = on_revoke
        self._documents: dict[str, tuple[float, Client]] = {}
        self._documents_lock = threading.Lock()
        server = self

        class Tokens(JWTBearerTokenGenerator):
            def get_jwks(self) -> Any:
                return server.keys.current()

            def get_audiences(self, client: Any, user: Any, scope: Any) -> str:
                return user.grant.resource

            def get_extra_claims(self, client: Any, grant_type: Any, user: Any, scope: Any) -> dict[str, Any]:
                grant = user.grant
                claims = {"tenant": grant.tenant, "role": grant.role, "gid": grant.id, "name": grant.person}
                if grant.usage_profile:
                    claims["profile"] = grant.usage_profile
                return claims

        self.register_token_generator("default", Tokens(
            issuer, alg=ALGORITHM, refresh_token_generator=lambda **_: generate_token(48),
            expires_generator=lambda client, grant_type: access_seconds))
        self.register_grant(_AuthorizationCode, [S256Only(required=True)])
        self.register_grant(_RefreshToken)
        self.register_endpoint(_Revocation)
        self.register_endpoint(_Registration)
        issuer_parameter = IssuerParameter()
        issuer_parameter.get_issuer = lambda: issuer  # type: ignore[method-assign]
        self.register_extension(issuer_parameter)

    # What Authlib asks of a framework
    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return request if isinstance(request, OAuth2Request) else _Request(request)

    def create_json_request(self, request: Asked) -> JsonRequest:
        made = JsonRequest(request.method, request.url, request.headers)
        made.payload = _Json(request.json)
        return made

    def handle_response(self, status: int, body: Any, headers: Any) -> Answer:
        return Answer(status, body, list(headers.items()) if isinstance(headers, dict) else list(headers or []))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        return None

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        refresh = token.get("refresh_token")
        if refresh:
            holder: Holder = request.user
            self.store.add_refresh(Refresh(digest(refresh), holder.grant.id, request.client.client_id,
                                           token.get("scope") or holder.grant.scope, time.time() + REFRESH_SECONDS, None))

    def query_client(self, client_id: str) -> Client | None:
        if client_id.startswith("https://"):
            # A document is fetched for a signed-in person's consent; the token and revocation
            # endpoints, which anyone may call, fetch only the documents of clients a person allowed
            # (so that they are no way to make this service fetch any URL).
            if not INTERACTIVE.get() and not self._kept_document(client_id) and not self.store.knows_client(client_id):
                return None
            return self.document_client(client_id)
        found = self.store.client(client_id)
        return None if found is None else Client(client_id, found[1], found[0])

    # Client ID Metadata Documents
    def _kept_document(self, url: str) -> bool:
        with self._documents_lock:
            return url in self._documents

    def consent_grant(self, asked: Asked, person: Person) -> Any:
        """Authlib's consent grant for the console's consent page: a client's metadata document may be fetched."""
        token = INTERACTIVE.set(True)
        try:
            return self.get_consent_grant(asked, person)
        finally:
            INTERACTIVE.reset(token)

    def document_client(self, url: str) -> Client:
        """The client a metadata document describes, fetched through the egress; kept for
        `CIMD_SECONDS`. A document that cannot be fetched or is not one is `invalid_client` naming why."""
        now = time.monotonic()
        with self._documents_lock:
            kept = self._documents.get(url)
        if kept is not None and now - kept[0] < CIMD_SECONDS:
            return kept[1]
        parts = urlsplit(url)
        if parts.path in ("", "/") or parts.fragment or parts.username or parts.password:
            raise InvalidClientError(description="a client_id URL needs a path, and no fragment or credentials")
        try:
            body = self._fetch_document(url)
        except DocumentRefused as refused:
            raise InvalidClientError(description=f"the client metadata document could not be fetched: {refused}") from None
        try:
            document = json.loads(body)
        except ValueError:
            raise InvalidClientError(description="the client metadata document is not JSON") from None
        if not isinstance(document, dict) or document.get("client_id") != url:
            raise InvalidClientError(description="the client metadata document's client_id must be its own URL")
        if "client_secret" in document or document.get("token_endpoint_auth_method", "none") != "none":
            raise InvalidClientError(description="a client metadata document's client authenticates with 'none' only")
        claims = ClientMetadataClaims(document, {}, ClientMetadataClaims.get_claims_options(self.metadata()), self.metadata())
        try:
            claims.validate()
        except JoseError as error:
            raise InvalidClientError(description=f"the client metadata document is not valid: {error.description}") from None
        if not document.get("redirect_uris"):
            raise InvalidClientError(description="the client metadata document names no redirect_uris")
        metadata = {**claims.get_registered_claims(), "token_endpoint_auth_method": "none"}
        client = Client(url, metadata, document=True)
        with self._documents_lock:
            self._documents[url] = (now, client)
        return client

    # People and grants
    def holder(self, grant_id: str) -> Holder | None:
        """The grant, if it stands and its person may still sign in."""
        grant = self.store.grant(grant_id)
        if grant is None or grant.revoked is not None:
            return None
        principal = self._find_person(grant.tenant, grant.person_ref)
        if principal is None or principal.tenant != grant.tenant:
            return None
        return Holder(grant)

    def grant_of_access_token(self, token: str) -> str | None:
        """The grant an access token of this server was issued under (signature checked, expired or not)."""
        try:
            decoded = jwt.decode(token, self.keys.public(), algorithms=[ALGORITHM])
        except (JoseError, ValueError):
            return None
        gid = decoded.claims.get("gid")
        return gid if decoded.claims.get("iss") == self.issuer and isinstance(gid, str) else None

    def revoke(self, grant_id: str, why: str) -> None:
        if self.store.revoke_grant(grant_id, why):
            self._on_revoke(grant_id)

    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        return {
            "issuer": base,
            "authorization_endpoint": f"{base}/oauth/authorize",
            "token_endpoint": f"{base}/oauth/token",
            "registration_endpoint": f"{base}/oauth/register",
            "revocation_endpoint": f"{base}/oauth/revoke",
            "jwks_uri": f"{base}/oauth/jwks",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": True,
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [ALGORITHM],
        }


class DocumentRefused(Exception):
    """A client metadata document the egress would not fetch, or whose answer is not one."""


def validated_metadata(server: ToolsmithAuthorizationServer) -> dict[str, Any]:
    """The RFC 8414 document, validated by Authlib (a wrong one stops the start)."""
    document = server.metadata()
    rfc8414.AuthorizationServerMetadata(document).validate()
    return document


class _AuthorizationCode(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
    server: ToolsmithAuthorizationServer

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        person: Person = request.user
        data = request.payload.data
        principal = person.principal
        grant = Grant(id=secrets.token_urlsafe(12), tenant=principal.tenant, subject=person.subject, person=person.name,
                      person_ref=person.ref, role=principal.role, usage_profile=principal.usage_profile,
                      client_id=request.client.client_id, client_name=request.client.name, resource=data["resource"],
                      scope=request.scope, created=time.time())
        self.server.store.add_grant(grant)
        self.server.store.add_code(Code(digest(code), grant.id, request.client.client_id, data["redirect_uri"],
                                        request.scope, data["code_challenge"], data.get("code_challenge_method", "S256"),
                                        time.time() + CODE_SECONDS, None))

    def query_authorization_code(self, code: str, client: Client) -> _CodeRecord | None:
        found = self.server.store.code(digest(code))
        if found is None or found.client_id != client.client_id:
            return None
        if not self.server.store.use_code(found.digest):
            # A code used twice: whoever holds it is not the client alone; its tokens end (RFC 9700 §4.2.4).
            self.server.revoke(found.grant_id, "an authorization code was used twice")
            return None
        if found.expires < time.time():
            return None
        resource = self.request.payload.data.get("resource")
        grant = self.server.store.grant(found.grant_id)
        if grant is not None and resource and resource != grant.resource:
            raise InvalidTargetError(f"the resource must be the one authorized: {grant.resource}")
        return _CodeRecord(found)

    def delete_authorization_code(self, authorization_code: _CodeRecord) -> None:
        return None  # used already, when it was queried

    def authenticate_user(self, authorization_code: _CodeRecord) -> Holder | None:
        return self.server.holder(authorization_code.code.grant_id)


class _RefreshToken(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
    INCLUDE_NEW_REFRESH_TOKEN = True
    server: ToolsmithAuthorizationServer

    def authenticate_refresh_token(self, refresh_token: str) -> _RefreshRecord | None:
        found = self.server.store.refresh(digest(refresh_token))
        if found is None:
            return None
        if found.used is not None:
            # Rotated already: a second use means it leaked; the whole family ends (RFC 9700 §4.14.2).
            self.server.revoke(found.grant_id, "a refresh token was used twice")
            return None
        if found.expires < time.time():
            return None
        grant = self.server.store.grant(found.grant_id)
        if grant is None or grant.revoked is not None:
            return None
        resource = self.request.payload.data.get("resource")
        if resource and resource != grant.resource:
            raise InvalidTargetError(f"the resource must be the one authorized: {grant.resource}")
        return _RefreshRecord(found)

    def authenticate_user(self, refresh_token: _RefreshRecord) -> Holder | None:
        holder = self.server.holder(refresh_token.refresh.grant_id)
        if holder is None:
            raise InvalidGrantError("the grant was revoked, or its person may no longer sign in")
        return holder

    def revoke_old_credential(self, refresh_token: _RefreshRecord) -> None:
        if not self.server.store.use_refresh(refresh_token.refresh.digest):
            self.server.revoke(refresh_token.refresh.grant_id, "a refresh token was used twice")
            raise InvalidGrantError()


class _Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]
    server: ToolsmithAuthorizationServer

    def query_token(self, token_string: str, token_type_hint: str | None) -> Any:
        if token_type_hint != "access_token":
            found = self.server.store.refresh(digest(token_string))
            if found is not None:
                return _RefreshRecord(found)
        if token_type_hint != "refresh_token":
            grant_id = self.server.grant_of_access_token(token_string)
            grant = self.server.store.grant(grant_id) if grant_id else None
            if grant is not None:
                return _AccessRecord(grant)
        return None

    def revoke_token(self, token: Any, request: Any) -> None:
        grant_id = token.refresh.grant_id if isinstance(token, _RefreshRecord) else token.grant.id
        self.server.revoke(grant_id, "revoked by its client")


class _Registration(ClientRegistrationEndpoint):
    server: ToolsmithAuthorizationServer

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration (RFC 7591 §3): what a client may do is what its person consents to

    def get_server_metadata(self) -> dict[str, Any]:
        return self.server.metadata()

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        if not isinstance(request.payload.data, dict):
            raise InvalidRequestError("the registration request is a JSON object of client metadata")
        metadata = super().extract_client_metadata(request)
        if not metadata.get("redirect_uris"):
            raise InvalidRedirectUriError("redirect_uris is required")
        return metadata

    def generate_client_secret(self, request: Any) -> str | None:
        data = request.payload.data
        return None if data.get("token_endpoint_auth_method") == "none" else secrets.token_urlsafe(32)

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info = super().generate_client_info(request)
        if info.get("client_secret") is None:  # a public client: no secret, nothing of one shown
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any) -> Client:
        secret = client_info.get("client_secret")
        self.server.store.add_client(client_info["client_id"], digest(secret) if secret else None, client_metadata)
        return Client(client_info["client_id"], client_metadata)


class InvalidTargetError(OAuth2Error):
    """RFC 8707 §2: the resource asked for is not one this server issues tokens for."""

    error = "invalid_target"


class InvalidRedirectUriError(OAuth2Error):
    """RFC 7591 §3.2.2."""

    error = "invalid_redirect_uri"
