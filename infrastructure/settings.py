"""Every setting of the service, read once from the environment (docs/architecture.md, docs/sandbox.md, docs/security.md).

Names follow the design's environment variables (`CODESANDBOX_URL`, `TOOLSMITH_ADMIN_TOKEN`, …);
`eventsourcing`'s own variables (`PERSISTENCE_MODULE`, `SQLITE_DBNAME`, `POSTGRES_*`) pass through
to the event store untouched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


if TYPE_CHECKING:
    from infrastructure.egress.policy import ApiPolicy

POSTGRES = "eventsourcing.postgres"


def default_data_dir() -> Path:
    """`$XDG_DATA_HOME/toolsmith`, that is `~/.local/share/toolsmith` by default."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "toolsmith"


def _env(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", populate_by_name=True)

    data_dir: Path = Field(default_factory=default_data_dir, validation_alias=_env("data_dir", "TOOLSMITH_DATA_DIR"),
        description=("Where the embedded SQLite event store, blobs, the chunk index and the generated keys and token "
            "hashes live (created 0700, its files 0600)."))
    admin_token: SecretStr | None = Field(None, validation_alias=_env("admin_token", "TOOLSMITH_ADMIN_TOKEN"),
        description=("The first admin bearer token (of the tenant TOOLSMITH_TENANT). Unset: generated on the first "
            "start, printed once, only its SHA-256 kept."))
    # The deployment's own tenant (the first admin token's); any name a single-tenant release took.
    tenant: str = Field("default", min_length=1, validation_alias=_env("tenant", "TOOLSMITH_TENANT"),
        description=("The deployment's own tenant, the one the admin token belongs to; it exists from the start and is "
            "never deleted."))
    # Organizations (docs/tenants.md): the operator's token (unset: generated on the first start, its
    # SHA-256 kept in the data dir, the token printed once), and each token's request rate: a token
    # bucket refilled at `rate_per_second` up to `rate_burst` requests (0: no limit).
    operator_token: SecretStr | None = Field(None, validation_alias=_env("operator_token", "TOOLSMITH_OPERATOR_TOKEN"),
        description=("The operator's token: manages tenants and nothing inside them. Unset: generated on the first "
            "start, printed once, only its SHA-256 kept."))
    rate_per_second: float = Field(100.0, ge=0, validation_alias=_env("rate_per_second", "TOOLSMITH_RATE_PER_SECOND"),
        description=("Each token's request rate: its bucket refills at this many requests a second (0: no limit); past "
            "it, 429 with Retry-After."))
    rate_burst: int = Field(200, ge=1, validation_alias=_env("rate_burst", "TOOLSMITH_RATE_BURST"),
        description="The size of each token's request bucket: how many requests it may send at once.")
    # Each tenant's request rate, all its tokens together, so that minting tokens buys no rate (0: no limit).
    tenant_rate_per_second: float = Field(200.0, ge=0, validation_alias=_env("tenant_rate_per_second", "TOOLSMITH_TENANT_RATE_PER_SECOND"),
        description=("Each tenant's request rate, all its tokens together (0: no limit), so that minting tokens buys "
            "no rate."))
    tenant_rate_burst: int = Field(400, ge=1, validation_alias=_env("tenant_rate_burst", "TOOLSMITH_TENANT_RATE_BURST"),
        description="The size of each tenant's request bucket.")
    # Requests with a token that is not one a client address may send a minute; past them, every
    # request from it is refused until one is back, a correct token's too (0: no limit).
    auth_failures_per_minute: int = Field(30, ge=0, validation_alias=_env("auth_failures_per_minute", "TOOLSMITH_AUTH_FAILURES_PER_MINUTE"),
        description=("Invalid tokens one client address may send a minute (0: no limit); past them every request from "
            "it gets 429 too-many-failed-authentications."))
    # The reverse proxies whose X-Forwarded-For names the client and X-Forwarded-Proto the scheme
    # (comma-separated addresses or CIDRs, `*` any); empty: the client is the connection's peer.
    trusted_proxies: str = Field("", validation_alias=_env("trusted_proxies", "TOOLSMITH_TRUSTED_PROXIES"),
        description=("Reverse proxies (addresses, CIDRs, `*`) whose X-Forwarded-For names the client and "
            "X-Forwarded-Proto the scheme; empty: both headers are ignored."))
    # The console's session cookies are signed with this key: set it to the same value on every
    # replica; unset, one is generated into the data dir (mode 0600) on the first start.
    session_key: SecretStr | None = Field(None, validation_alias=_env("session_key", "TOOLSMITH_SESSION_KEY"),
        description=("Signs the console's session cookies; give every replica the same value. Unset: generated into "
            "the data dir (session.key, 0600)."))
    # Secret values are encrypted with this Fernet key (docs/kinds/index.md); several, comma-separated: the
    # first encrypts, all decrypt. Unset, one is generated into the data dir (mode 0600) on the first
    # start: set it to the same value on every replica of a PostgreSQL store.
    secret_key: SecretStr | None = Field(None, validation_alias=_env("secret_key", "TOOLSMITH_SECRET_KEY"),
        description=("Fernet key(s) that encrypt secret values at rest; comma-separated, the first encrypts and all "
            "decrypt. Unset: generated into the data dir (0600)."))
    session_hours: float = Field(8.0, gt=0, le=24 * 30, validation_alias=_env("session_hours", "TOOLSMITH_SESSION_HOURS"),
        description="How long a console session lasts after sign-in.")
    # People (docs/users.md): wrong passwords for one (organization, email) before it is locked for 15 minutes.
    login_failures: int = Field(5, ge=1, le=100, validation_alias=_env("login_failures", "TOOLSMITH_LOGIN_FAILURES"),
        description="Wrong passwords for one person (organization and email) before their sign-in is locked for 15 minutes.")
    invitation_hours: float = Field(72.0, gt=0, le=24 * 30, validation_alias=_env("invitation_hours", "TOOLSMITH_INVITATION_HOURS"),
        description="How long a person's invitation link (to set their first password) stays valid.")
    # Single sign-on for the console (docs/sso.md): an OpenID Connect provider; off while the issuer is empty.
    sso_issuer: str = Field("", validation_alias=_env("sso_issuer", "TOOLSMITH_SSO_ISSUER"),
        description=("The OpenID provider people sign in to the console with (its issuer URL, exactly as its discovery "
            "document says). Empty: no single sign-on."))
    sso_name: str = Field("single sign-on", min_length=1, max_length=60, validation_alias=_env("sso_name", "TOOLSMITH_SSO_NAME"),
        description="The provider's name on the sign-in page's button: Sign in with <name>.")
    sso_client_id: str = Field("", validation_alias=_env("sso_client_id", "TOOLSMITH_SSO_CLIENT_ID"),
        description="The console's client id at the provider (a confidential client, redirect URI <public URL>/console/sso/callback).")
    sso_client_secret: SecretStr | None = Field(None, validation_alias=_env("sso_client_secret", "TOOLSMITH_SSO_CLIENT_SECRET"),
        description="The console's client secret at the provider; never logged or shown.")
    sso_client_secret_file: Path | None = Field(None, validation_alias=_env("sso_client_secret_file", "TOOLSMITH_SSO_CLIENT_SECRET_FILE"),
        description="A file holding the client secret instead (a container secret, for example); read at start.")
    sso_scopes: str = Field("openid email profile", validation_alias=_env("sso_scopes", "TOOLSMITH_SSO_SCOPES"),
        description="The scopes the console asks the provider for, space-separated; openid is always among them.")
    sso_tenant_claim: str = Field("tenant", validation_alias=_env("sso_tenant_claim", "TOOLSMITH_SSO_TENANT_CLAIM"),
        description=("The ID token claim naming the person's organization (a dotted path for a nested one). Empty: "
            "everyone who signs in belongs to TOOLSMITH_TENANT."))
    sso_roles_claim: str = Field("roles", min_length=1, validation_alias=_env("sso_roles_claim", "TOOLSMITH_SSO_ROLES_CLAIM"),
        description="The ID token claim holding the person's roles at the provider (a string or a list; a dotted path for a nested one).")
    sso_role_map: str = Field("", validation_alias=_env("sso_role_map", "TOOLSMITH_SSO_ROLE_MAP"),
        description=("Which provider role gives which Toolsmith role: value=admin, value=auditor or value=caller (or "
            "value=caller:<usage profile>), comma-separated. Several matches: the strongest role wins; none: sign-in refused."))

    # The event store: SQLite in the data dir unless PERSISTENCE_MODULE says otherwise
    # (`eventsourcing.postgres`, with eventsourcing's POSTGRES_* variables).
    persistence_module: str = Field("eventsourcing.sqlite", validation_alias=_env("persistence_module", "PERSISTENCE_MODULE"),
        description=("The event store: eventsourcing.sqlite (a file in the data dir) or eventsourcing.postgres (with "
            "eventsourcing's POSTGRES_* variables)."))
    aggregate_cache_size: int = Field(10_000, validation_alias=_env("aggregate_cache_size", "TOOLSMITH_AGGREGATE_CACHE_SIZE"),
        description="How many aggregates the event-sourced application keeps in its cache.")
    # The call log (docs/calls.md): beside the event store (calls.sqlite in the data dir, or its PostgreSQL schema).
    call_log_days: int = Field(30, ge=1, le=36_500, validation_alias=_env("call_log_days", "TOOLSMITH_CALL_LOG_DAYS"),
        description="How many days call records are kept; older ones are removed, and each removal is recorded in the log.")
    call_log_queue: int = Field(50_000, ge=100, le=10_000_000, validation_alias=_env("call_log_queue", "TOOLSMITH_CALL_LOG_QUEUE"),
        description=("How many call records may wait to be written; past it, records are dropped and counted, never a "
            "call slowed."))
    # Metrics (docs/observability.md): /metrics for the operator's token or this one; without a token on
    # an address of their own when one is set; a tenant's tools past the bound fold into tool="other".
    metrics_token: SecretStr | None = Field(None, validation_alias=_env("metrics_token", "TOOLSMITH_METRICS_TOKEN"),
        description=("A token that may read /metrics besides the operator's (for a Prometheus scraper); it reaches "
            "nothing else. Unset: the operator's token only."))
    metrics_address: str | None = Field(None, pattern=r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]*):[0-9]{1,5}$",
                                        validation_alias=_env("metrics_address", "TOOLSMITH_METRICS_ADDRESS"),
        description=("host:port where the metrics are also served without a token (a listener of their own, e.g. "
            "127.0.0.1:9464). Unset: none; /metrics on the service's port needs a token either way."))
    metrics_max_tools: int = Field(200, ge=1, le=100_000, validation_alias=_env("metrics_max_tools", "TOOLSMITH_METRICS_MAX_TOOLS"),
        description=("How many of each tenant's tools get a metrics label of their own; the calls of the others are "
            "counted under tool=\"other\"."))

    # The read models (docs/architecture.md): OpenSearch when a URL is set, else in memory, rebuilt at start.
    opensearch_url: SecretStr | None = Field(None, validation_alias=_env("opensearch_url", "OPENSEARCH_URL"),
        description=("The OpenSearch read side (http(s)://, credentials may be in it; treated as a secret). Empty: "
            "read models in memory, the chunk index in SQLite FTS5."))
    opensearch_index: str = Field("toolsmith-modules", pattern=r"^[a-z0-9][a-z0-9_.-]{0,200}$",
                                  validation_alias=_env("opensearch_index", "TOOLSMITH_OPENSEARCH_INDEX"),
        description="The alias the module read model uses on OpenSearch; give each deployment its own.")
    opensearch_replicas: int = Field(1, ge=0, validation_alias=_env("opensearch_replicas", "TOOLSMITH_OPENSEARCH_REPLICAS"),
        description="Replicas of each OpenSearch index (0 on a one-node cluster).")
    opensearch_timeout_seconds: float = Field(10.0, gt=0, validation_alias=_env("opensearch_timeout_seconds", "TOOLSMITH_OPENSEARCH_TIMEOUT_SECONDS"),
        description="Timeout of each OpenSearch request.")
    # Connections kept open to OpenSearch: one per thread that may query at once, that is the
    # API's worker threads (40, the thread pool FastAPI runs requests in) plus the projection
    # runner's (3). Fewer, and the client opens and drops a connection per request over the pool.
    opensearch_connections: int = Field(48, ge=1, validation_alias=_env("opensearch_connections", "TOOLSMITH_OPENSEARCH_CONNECTIONS"),
        description="Connections kept open to OpenSearch: the API's request threads plus the projection runner's.")
    # `in-process`: the API applies events itself; `external`: `toolsmith projections run` does.
    projection_runner: Literal["in-process", "external"] = Field(
        "in-process", validation_alias=_env("projection_runner", "TOOLSMITH_PROJECTION_RUNNER"),
        description=("`in-process`: the API applies events to the read models itself; `external`: a `toolsmith "
            "projections run` does and the API waits for it."))
    # How often the projection runner looks for new events when nothing told it of one. On
    # PostgreSQL the store's notifications wake it at once; this is the fallback for a lost one.
    projection_poll_seconds: float = Field(0.5, gt=0, le=60, validation_alias=_env(
        "projection_poll_seconds", "TOOLSMITH_PROJECTION_POLL_SECONDS"),
        description=("How often the projection runner looks for events nobody told it of (on PostgreSQL each write's "
            "NOTIFY wakes it at once)."))
    # How often `toolsmith projections run` proves it is alive (a heartbeat in the index): the API
    # processes count it dead, in /healthz and for the writes waiting on it, after two missed.
    projection_heartbeat_seconds: float = Field(2.0, gt=0, le=300, validation_alias=_env(
        "projection_heartbeat_seconds", "TOOLSMITH_PROJECTION_HEARTBEAT_SECONDS"),
        description=("How often `toolsmith projections run` writes its heartbeat; the API counts it dead after two "
            "silent ones (give runner and APIs the same value)."))

    # The code sandbox (docs/sandbox.md).
    sandbox_url: str = Field("embedded", validation_alias=_env("sandbox_url", "CODESANDBOX_URL"),
        description=("`embedded` (worker processes of this service), an http(s):// URL of a `toolsmith sandbox`, or "
            "empty to switch code execution off (test and publish answer 503)."))
    sandbox_secret: SecretStr | None = Field(None, validation_alias=_env("sandbox_secret", "CODESANDBOX_SECRET"),
        description="The shared secret of the remote sandbox service, required on every call (set on both sides).")
    sandbox_caller_name: str = Field("toolsmith", validation_alias=_env("sandbox_caller_name", "CODESANDBOX_CALLER_NAME"),
        description="The name the API presents to the sandbox service, which logs it.")
    sandbox_capability_profile: str = Field("default", validation_alias=_env("sandbox_capability_profile", "CODESANDBOX_CAPABILITY_PROFILE"),
        description=("What calls are given: `default` (log, ai.context, Intl, http.fetch), `no-network` (no "
            "http.fetch), `minimal` (log and Intl only)."))
    sandbox_max_active_sessions: int = Field(16, ge=1, validation_alias=_env("sandbox_max_active_sessions", "CODESANDBOX_MAX_ACTIVE_SESSIONS"),
        description="The most sandbox executions at once; one more is refused at once with 429 and Retry-After.")
    sandbox_allowed_domains: str = Field("", validation_alias=_env("sandbox_allowed_domains", "CODESANDBOX_ALLOWED_DOMAINS"),
        description=("Comma-separated `host` (ports 80 and 443) or `host:port` entries that http.fetch may reach; "
            "empty: none."))
    sandbox_max_timeout_millis: int = Field(10_000, ge=100, validation_alias=_env("sandbox_max_timeout_millis", "CODESANDBOX_MAX_TIMEOUT_MILLIS"),
        description="The platform's time cap: every call's timeout is clamped to it.")
    sandbox_max_memory_mb: int = Field(512, ge=8, validation_alias=_env("sandbox_max_memory_mb", "CODESANDBOX_MAX_MEMORY_MB"),
        description="The platform's memory cap: every call's memory limit is clamped to it.")
    # Worker processes kept running while idle; more start on demand, up to the session cap.
    sandbox_workers: int = Field(2, ge=1, validation_alias=_env("sandbox_workers", "CODESANDBOX_WORKERS"),
        description="Sandbox worker processes kept running while idle; more start on demand, up to the session cap.")

    # The sandbox reads these settings itself (`sandbox.config.sandbox_config`): the adapters read the
    # settings, the settings know no adapter.

    # docs/tenants.md, fair share: the most sandbox sessions one tenant holds at once; unset, half of
    # CODESANDBOX_MAX_ACTIVE_SESSIONS (at least one).
    tenant_max_sessions: int | None = Field(None, ge=1, validation_alias=_env("tenant_max_sessions", "TOOLSMITH_TENANT_MAX_SESSIONS"),
        description=("Sandbox executions one tenant holds at once; one more gets 429 tenant-busy. Unset: half of "
            "CODESANDBOX_MAX_ACTIVE_SESSIONS (at least 1)."))

    def tenant_session_cap(self) -> int:
        """`tenant_max_sessions`, or its default from the sandbox's session cap."""
        return self.tenant_max_sessions or max(1, self.sandbox_max_active_sessions // 2)

    # What API URL tools may reach beyond public https hosts (docs/kinds/api-url-tools.md): comma-separated
    # `host:port` entries (`[::1]:8080`) and CIDRs (`10.0.0.0/8`); `http` and any address that is
    # not public need one. Metadata addresses never. A bad entry stops the start, named.
    egress_allow: str = Field("", validation_alias=_env("egress_allow", "TOOLSMITH_EGRESS_ALLOW"),
        description=("What API URL tools may reach beyond public https hosts: comma-separated `host:port` and CIDRs; "
            "metadata addresses never. A bad entry stops the start."))
    # Tests and operators: the DNS server (`ip:port`) that resolves every outbound request's names
    # instead of the system resolver; read from the environment by infrastructure/egress/resolve.py
    # (the sandbox's workers get it too). A bad value stops the start.
    egress_nameserver: str = Field("", validation_alias=_env("egress_nameserver", "TOOLSMITH_EGRESS_NAMESERVER"),
        description=("One DNS server (`ip:port`) that resolves the names of every outbound request instead of the "
            "system resolver (tests, operators). A bad value stops the start."))

    def api_policy(self) -> ApiPolicy:
        """The egress policy of API URL tools, from `TOOLSMITH_EGRESS_ALLOW`."""
        from infrastructure.egress.policy import ApiPolicy, EgressAllow

        return ApiPolicy(EgressAllow.parse(self.egress_allow))

    # File Search tools (docs/kinds/file-search-tools.md): an upload's cap (refused with 413 before the body is read
    # past it), and the extraction processes: how many run at once, and each one's time and memory.
    max_upload_mb: int = Field(25, ge=1, le=2_048, validation_alias=_env("max_upload_mb", "TOOLSMITH_MAX_UPLOAD_MB"),
        description=("The largest document upload to a File Search tool; beyond it 413, before the body is read past "
            "the cap."))
    extract_workers: int = Field(2, ge=1, le=64, validation_alias=_env("extract_workers", "TOOLSMITH_EXTRACT_WORKERS"),
        description="Document extractions at once, each in a process of its own.")
    extract_timeout_seconds: float = Field(60.0, gt=0, le=3_600, validation_alias=_env(
        "extract_timeout_seconds", "TOOLSMITH_EXTRACT_TIMEOUT_SECONDS"),
        description="Each extraction's time limit; past it the document is FAILED.")
    extract_memory_mb: int = Field(512, ge=64, le=65_536, validation_alias=_env("extract_memory_mb", "TOOLSMITH_EXTRACT_MEMORY_MB"),
        description="The address space one document's extraction may take in its process, beyond what the "
        "process maps once loaded (its libraries and the embedding model); past it the document is FAILED.")
    # docs/kinds/file-search-tools.md, "Embedding model": both ship in the wordllama wheel (never downloaded).
    embedding_model: Literal["l2_supercat_256", "l2_supercat_128"] = Field("l2_supercat_256", validation_alias=_env(
        "embedding_model", "TOOLSMITH_EMBEDDING_MODEL"),
        description=("File Search's embedding model: l2_supercat_256 (WordLlama's 256 dimensions) or l2_supercat_128 "
            "(their first 128, coarser). Documents embedded by another model (or another version of the package) are "
            "embedded again in the background at start; search answers meanwhile."))
    # docs/tenants.md, fair share of extraction: the most extractions one tenant runs at once (unset: half
    # of TOOLSMITH_EXTRACT_WORKERS, at least one), and the longest one upload's documents may take in all.
    tenant_max_extractions: int | None = Field(None, ge=1, le=64, validation_alias=_env(
        "tenant_max_extractions", "TOOLSMITH_TENANT_MAX_EXTRACTIONS"),
        description=("The most extractions one tenant runs at once. Unset: half of TOOLSMITH_EXTRACT_WORKERS (at least "
            "1)."))
    upload_max_seconds: float = Field(900.0, gt=0, le=86_400, validation_alias=_env("upload_max_seconds", "TOOLSMITH_UPLOAD_MAX_SECONDS"),
        description=("The longest one upload's documents may take to extract in all; past it the rest end FAILED, "
            "saying why."))
    # The chunk index on OpenSearch (with OPENSEARCH_URL; else an SQLite FTS5 file in the data dir).
    opensearch_chunks_index: str = Field("toolsmith-chunks", pattern=r"^[a-z0-9][a-z0-9_.-]{0,200}$",
                                         validation_alias=_env("opensearch_chunks_index", "TOOLSMITH_OPENSEARCH_CHUNKS_INDEX"),
        description=("The File Search chunk index on OpenSearch (without OPENSEARCH_URL: documents.sqlite in the data "
            "dir)."))

    # Native and external MCP tools (the catalog's LOCAL and MCP kinds), declared in a JSON file.
    tools_file: Path | None = Field(None, validation_alias=_env("tools_file", "TOOLSMITH_TOOLS_FILE"),
        description=("A JSON file declaring native (LOCAL) and external MCP tools; a bad file stops the start, naming "
            "each problem."))

    # The HTTP API.
    max_body_bytes: int = Field(2 * 1024 * 1024, ge=1024, validation_alias=_env("max_body_bytes", "TOOLSMITH_MAX_BODY_BYTES"),
        description="The largest request body; larger ones get 413.")
    read_your_writes_seconds: float = Field(5.0, gt=0, validation_alias=_env("read_your_writes_seconds", "TOOLSMITH_READ_YOUR_WRITES_SECONDS"),
        description=("How long a write waits for the read model before answering with Toolsmith-Read-Your-Writes: "
            "timeout."))
    # /healthz says `degraded` once the oldest event the read model has not applied is older.
    read_model_max_lag_seconds: float = Field(30.0, gt=0, validation_alias=_env("read_model_max_lag_seconds", "TOOLSMITH_READ_MODEL_MAX_LAG_SECONDS"),
        description="/healthz says degraded once the oldest event the read model has not applied is older than this.")
    log_level: str = Field("INFO", validation_alias=_env("log_level", "TOOLSMITH_LOG_LEVEL"),
        description=("The log level; logs are JSON lines on stderr, never with a secret, request paths without their "
            "query string. At INFO each request is one access-log line (logger `uvicorn.access`, with its method, path, "
            "status, durationMillis and client); WARNING leaves them out, at no cost to a request."))

    # MCP (docs/mcp.md, docs/security.md): the Host and Origin headers an MCP request may carry, comma-separated;
    # `name:*` allows any port. Anything else is refused, so that a web page cannot reach a local
    # server through DNS rebinding. Add the public name here when serving behind a proxy.
    mcp_allowed_hosts: str = Field("127.0.0.1:*,localhost:*,[::1]:*",
                                   validation_alias=_env("mcp_allowed_hosts", "TOOLSMITH_MCP_ALLOWED_HOSTS"),
        description=("The Host headers MCP answers (DNS-rebinding protection), comma-separated, `name:*` for any port; "
            "add your public host name behind a proxy."))
    mcp_allowed_origins: str = Field("http://127.0.0.1:*,http://localhost:*,http://[::1]:*",
                                     validation_alias=_env("mcp_allowed_origins", "TOOLSMITH_MCP_ALLOWED_ORIGINS"),
        description="The Origin headers MCP accepts from browsers, comma-separated, `scheme://name:*` for any port.")
    # How many tools one `tools/list` page holds (MCP's cursor pagination): a client asks for the
    # next page with the cursor it was given, and no answer grows with the tenant's catalog.
    mcp_page_size: int = Field(100, ge=1, le=1000, validation_alias=_env("mcp_page_size", "TOOLSMITH_MCP_PAGE_SIZE"),
        description="How many tools one MCP tools/list page holds; the client pages on with nextCursor.")
    # Tool search on the default server `/mcp` of every tenant (docs/mcp.md, "Tool search"): its
    # tools/list then offers find_tool and call_tool beside the pinned tools. A server record has
    # its own `toolSearch`.
    mcp_tool_search: str = Field("off", pattern=r"^(on|off)$",
                                 validation_alias=_env("mcp_tool_search", "TOOLSMITH_MCP_TOOL_SEARCH"),
        description="`on`: every tenant's /mcp lists find_tool and call_tool (tool search) beside the pinned tools instead of every tool.")
    mcp_tool_search_pinned: str = Field("", validation_alias=_env("mcp_tool_search_pinned", "TOOLSMITH_MCP_TOOL_SEARCH_PINNED"),
        description="The tools /mcp lists beside find_tool and call_tool when tool search is on, comma-separated (a caller sees those it may use).")
    # OAuth 2.1 for MCP (docs/oauth.md): the service's public base URL (resources, issuer and metadata
    # name it; never taken from a Host header), the built-in authorization server's token lifetimes
    # and key rotation, or an external issuer whose tokens are accepted instead.
    public_url: str = Field("http://127.0.0.1:8000", pattern=r"^https?://[^/?#]+$", validation_alias=_env("public_url", "TOOLSMITH_PUBLIC_URL"),
        description=("The service's public base URL (scheme, host and port, no path): the MCP resources, the OAuth "
            "issuer and their metadata are named by it, never by a request's Host header."))
    oauth_access_token_seconds: int = Field(300, ge=1, le=3_600, validation_alias=_env(
        "oauth_access_token_seconds", "TOOLSMITH_OAUTH_ACCESS_TOKEN_SECONDS"),
        description="How long an access token of the built-in authorization server is valid; clients refresh it.")
    oauth_key_days: float = Field(90.0, gt=0, validation_alias=_env("oauth_key_days", "TOOLSMITH_OAUTH_KEY_DAYS"),
        description=("How old the built-in authorization server's signing key may grow before a new one signs "
            "(kept with the grants: oauth.sqlite in the data dir, or the PostgreSQL store; the old one verifies until its tokens have expired)."))
    oauth_issuer: str = Field("", validation_alias=_env("oauth_issuer", "TOOLSMITH_OAUTH_ISSUER"),
        description=("An external authorization server whose access tokens MCP accepts instead of the built-in one's "
            "(its JWKS discovered from its metadata); empty: the built-in server."))
    oauth_tenant_claim: str = Field("tenant", validation_alias=_env("oauth_tenant_claim", "TOOLSMITH_OAUTH_TENANT_CLAIM"),
        description="The external issuer's claim naming the tenant (a dotted path for a nested one); absent: TOOLSMITH_TENANT.")
    oauth_role_claim: str = Field("roles", validation_alias=_env("oauth_role_claim", "TOOLSMITH_OAUTH_ROLE_CLAIM"),
        description="The external issuer's claim holding the person's roles (a string or a list; a dotted path for a nested one).")
    oauth_role_map: str = Field("", validation_alias=_env("oauth_role_map", "TOOLSMITH_OAUTH_ROLE_MAP"),
        description=("Which of the external issuer's roles gives which Toolsmith role: value=admin, value=auditor or "
            "value=caller:<usage profile>, comma-separated; a role named admin, auditor or caller is itself. A token "
            "whose roles map to none is refused."))
    oauth_required_scope: str = Field("mcp:tools", validation_alias=_env("oauth_required_scope", "TOOLSMITH_OAUTH_REQUIRED_SCOPE"),
        description=("The scope an access token needs for MCP (403 insufficient_scope without it); empty for an external "
            "issuer whose tokens carry no such scope (the audience is still checked)."))
    oauth_profile_claim: str = Field("usage_profile", validation_alias=_env("oauth_profile_claim", "TOOLSMITH_OAUTH_PROFILE_CLAIM"),
        description="The external issuer's claim naming a caller's usage profile.")

    @field_validator("opensearch_url", mode="before")
    @classmethod
    def _opensearch_url(cls, value: object) -> object:
        if isinstance(value, str):
            value = value.strip()
            if value == "":
                return None
            if not value.startswith(("http://", "https://")):
                raise ValueError("OPENSEARCH_URL is an http(s):// URL (credentials may be in it), or empty")
        return value

    @field_validator("tools_file", mode="before")
    @classmethod
    def _tools_file(cls, value: object) -> object:
        if isinstance(value, str) and value.strip() == "":
            return None
        return value

    @field_validator("egress_allow")
    @classmethod
    def _egress_allow(cls, value: str) -> str:
        # Imported here: reading settings should not load the HTTP stack (a sandbox worker reads them too).
        from infrastructure.egress.policy import EgressAllow

        EgressAllow.parse(value)  # ValueError naming the bad entry
        return value.strip()

    @field_validator("egress_nameserver")
    @classmethod
    def _egress_nameserver(cls, value: str) -> str:
        from infrastructure.egress.resolve import parse_nameserver

        if value.strip():
            parse_nameserver(value)  # ValueError saying the form expected
        return value.strip()

    @field_validator("trusted_proxies")
    @classmethod
    def _trusted_proxies(cls, value: str) -> str:
        import ipaddress

        for entry in cls.listed(value):
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"TOOLSMITH_TRUSTED_PROXIES: {entry!r} is not an address, a CIDR or '*'") from None
        return ",".join(cls.listed(value))

    @field_validator("sandbox_url")
    @classmethod
    def _sandbox_url(cls, value: str) -> str:
        value = value.strip()
        if value not in ("", "embedded") and not value.startswith(("http://", "https://")):
            raise ValueError("CODESANDBOX_URL is 'embedded', an http(s):// URL, or empty (feature off)")
        return value

    @field_validator("sso_issuer")
    @classmethod
    def _sso_issuer(cls, value: str) -> str:
        value = value.strip()
        if value and not value.startswith(("https://", "http://")):
            raise ValueError("TOOLSMITH_SSO_ISSUER is the provider's issuer URL (https://…), or empty (no single sign-on)")
        return value

    @field_validator("sso_role_map")
    @classmethod
    def _sso_role_map(cls, value: str) -> str:
        from infrastructure.oidc import parse_role_map

        parse_role_map(value)  # ValueError naming the bad entry
        return value.strip()

    @model_validator(mode="after")
    def _sso_complete(self) -> Settings:
        """Single sign-on needs its client and its role map: a start without them says which is missing."""
        if self.sso_issuer:
            from infrastructure.oidc import Config

            Config.of(self)  # ValueError naming the missing setting
        return self

    @field_validator("sso_client_secret_file", mode="before")
    @classmethod
    def _sso_client_secret_file(cls, value: object) -> object:
        if isinstance(value, str) and value.strip() == "":
            return None
        return value

    @staticmethod
    def listed(value: str) -> list[str]:
        """The items of a comma-separated setting, blanks dropped."""
        return [item.strip() for item in value.split(",") if item.strip()]

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "events.sqlite"

    def event_store_env(self) -> dict[str, str]:
        """The environment the `eventsourcing` application is built from."""
        env = {
            "PERSISTENCE_MODULE": self.persistence_module,
            "AGGREGATE_CACHE_MAXSIZE": str(self.aggregate_cache_size),
            # Writes what eventsourcing's JSONTranscoder writes, and reads it faster.
            "TRANSCODER_TOPIC": "infrastructure.transcoder:FastJSONTranscoder",
        }
        if self.persistence_module == "eventsourcing.sqlite":
            env["SQLITE_DBNAME"] = os.environ.get("SQLITE_DBNAME", str(self.sqlite_path))
            env["SQLITE_LOCK_TIMEOUT"] = os.environ.get("SQLITE_LOCK_TIMEOUT", "10")
            # One serving process owns a SQLite data dir, so every write passes through its cache
            # and a cached aggregate need not look for newer events before each read.
            env["AGGREGATE_CACHE_FASTFORWARD"] = os.environ.get("AGGREGATE_CACHE_FASTFORWARD", "n")
        elif self.persistence_module == POSTGRES:
            env.update({k: v for k, v in os.environ.items() if k.startswith("POSTGRES_")})
            # Several processes write one PostgreSQL store: a cached aggregate must look for newer
            # events before each read, or a command would start from a stale version.
            env["AGGREGATE_CACHE_FASTFORWARD"] = "y"
        return env
