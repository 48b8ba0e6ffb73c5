"""OAuth 2.1 for MCP (docs/oauth.md): the MCP endpoint as a resource server (`resource`), the built-in
authorization server (`server`, its keys and store), their HTTP routes (`routes`), and `mount`,
which wires them onto the app and the admission from the settings. The consent and grants pages
are the console's (`console/routes/consent.py`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI

from api.oauth.keys import SigningKeys
from api.oauth.resource import BuiltInIssuer, ExternalIssuer, ResourceServer
from api.oauth.server import DocumentRefused, ToolsmithAuthorizationServer, validated_metadata
from api.oauth.store import OAuthStore
from application.principals import Principal
from domain.ports import OutboundError, OutboundRequest

DIGEST_REF = "digest:"
USER_REF = "user:"


@dataclass
class OAuth:
    """What `mount` made: the resource server always; the built-in authorization server unless an
    external issuer is configured."""

    resource: ResourceServer
    server: ToolsmithAuthorizationServer | None
    store: OAuthStore | None
    metadata: dict[str, Any] | None
    stop_watching: Any = None  # the revocations' poll, when replicas share the store

    def close(self) -> None:
        if self.stop_watching is not None:
            self.stop_watching()
        if self.store is not None:
            self.store.close()


def person_finder(services: Any) -> Any:
    """Who a grant's person is now (None: disabled, deleted, or their token revoked): a person of
    the people's registry (`user:<id>`), or the holder of a console token session (`digest:<sha256>`)."""

    def find(tenant: str, ref: str) -> Principal | None:
        if ref.startswith(USER_REF):
            users = getattr(services, "users", None)
            return users.principal(tenant, ref.removeprefix(USER_REF), via="oauth") if users is not None else None
        if ref.startswith(DIGEST_REF):
            found = services.authenticator.authenticate_digest(ref.removeprefix(DIGEST_REF))
            return found if found is not None and found.tenant == tenant else None
        return None

    return find


def mount(app: FastAPI, services: Any) -> OAuth:
    from api.oauth import routes  # the routes need `OAuth` from here

    # Authlib logs issued tokens at DEBUG ("Issue token …"): never, whatever TOOLSMITH_LOG_LEVEL says.
    logging.getLogger("authlib").setLevel(max(logging.INFO, logging.getLogger("authlib").level))

    settings = services.settings
    public = settings.public_url.rstrip("/")
    find = person_finder(services)
    if settings.oauth_issuer:
        issuer: BuiltInIssuer | ExternalIssuer = ExternalIssuer(
            settings.oauth_issuer, tenant_claim=settings.oauth_tenant_claim, default_tenant=settings.tenant,
            role_claim=settings.oauth_role_claim, role_map=settings.oauth_role_map,
            profile_claim=settings.oauth_profile_claim)
        oauth = OAuth(ResourceServer(public, issuer, find, required_scope=settings.oauth_required_scope), None, None, None)
    else:
        store = open_store(services)
        keys = SigningKeys(store, rotate_after_seconds=settings.oauth_key_days * 86_400,
                           keep_seconds=max(3_600, 2 * settings.oauth_access_token_seconds))
        outbound = services_outbound(settings)

        def fetch(url: str) -> bytes:
            try:
                answer = outbound.send(OutboundRequest("GET", url, {"Accept": "application/json"}), seconds=5,
                                       connect_seconds=3, max_bytes=16 * 1024, max_redirects=0)
            except OutboundError as error:
                raise DocumentRefused(str(error)) from None
            if answer.status != 200:
                raise DocumentRefused(f"it answered {answer.status}")
            return answer.body

        resource_server: ResourceServer | None = None

        def revoked(grant_id: str) -> None:
            if resource_server is not None:
                resource_server.revoked(grant_id)

        server = ToolsmithAuthorizationServer(issuer=public, store=store, keys=keys,
                                              access_seconds=settings.oauth_access_token_seconds,
                                              fetch_document=fetch, find_person=find, on_revoke=revoked)
        resource_server = ResourceServer(public, BuiltInIssuer(public, keys, store), find,
                                         required_scope=settings.oauth_required_scope)
        for grant_id in store.revoked_since(0):
            resource_server.revoked(grant_id)
        oauth = OAuth(resource_server, server, store, validated_metadata(server),
                      resource_server.watch_revocations() if store.shared else None)
    services.admission.oauth = oauth.resource
    app.state.oauth = oauth
    app.include_router(routes.router)
    return oauth


def open_store(services: Any) -> OAuthStore:
    """Beside the event store: the data dir's SQLite file, or the PostgreSQL store's schema."""
    datastore = getattr(getattr(services.store, "recorder", None), "datastore", None)
    if datastore is not None and type(datastore).__module__.startswith("eventsourcing.postgres"):
        from api.oauth.store_postgres import PostgresOAuthStore  # psycopg: only where PostgreSQL is

        return PostgresOAuthStore(datastore)
    return OAuthStore(services.settings.data_dir)


def services_outbound(settings: Any) -> Any:
    """The egress a client metadata document is fetched through: API URL tools' policy
    (public https, and what TOOLSMITH_EGRESS_ALLOW allows; metadata addresses never)."""
    from infrastructure.egress.outbound import ApiOutbound

    return ApiOutbound(settings.api_policy())
