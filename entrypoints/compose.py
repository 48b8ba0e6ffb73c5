"""The composition root: builds every adapter from one `Settings` and wires them together."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eventsourcing.application import Application
from opensearchpy import OpenSearch

from application.commands import CommandRunner, ThreadGraphLock
from application.execution import Execution
from application.fair_share import TenantSessions
from application.history import History
from application.modules import Modules
from application.projected import followers_of
from application.quotas import Quotas
from application.records import CallerRecords
from application.secrets import Secrets
from application.store import Store
from application.tenants import Tenants
from application.tokens import Tokens
from application.users import Users
from application.usage import Usage
from application.toolbox import Toolbox
from domain.catalog import DeclaredTool
from domain.errors import SandboxUnavailable
from domain.ports import GraphLock, Outbound, Sandbox, SecretValues, SecretVault, ToolNames
from api.kinds import KindPlugin, Wiring
from application.kinds.base import KindDeps, ToolKinds
from entrypoints.kinds import DEFAULT_KINDS
from entrypoints.call_log import open_call_log
from entrypoints.metrics_sources import CountingTransport, count_postgres_errors, wire_metrics
from infrastructure.metrics import Metrics
from infrastructure import data_dir
from infrastructure.declared_tools import load_declared_tools
from infrastructure.postgres_store import created_despite_others
from application.principals import ADMIN, OPERATOR, Authenticator, Principal
from infrastructure.auth import admin_token_digest, operator_token_digest
from infrastructure.ratelimit import RateLimiter
from infrastructure.secret_vault import ephemeral_vault, open_vault
from infrastructure.settings import POSTGRES, Settings
from api.admission import Admission
from api.services import Services
from projections.interface import ModuleReadModel
from projections.memory import InMemoryModuleReadModel
from projections.modules import ModuleSummaries
from projections.opensearch import OpenSearchModuleReadModel
from projections.rebuild import rebuild
from projections.runner import Following, PullingProjectionRunner, TrackingWatcher, runner_id
from projections.store_identity import store_identity
from sandbox.config import sandbox_config
from sandbox.factory import embedded_sandbox
from sandbox.remote import RemoteSandbox

if TYPE_CHECKING:
    from infrastructure.notifications import StoreChannels

log = logging.getLogger("toolsmith.projections")


def sandbox_pool(settings: Settings) -> Sandbox:
    """The pool of QuickJS worker processes, for `serve` with the embedded sandbox and for the
    `toolsmith sandbox` service alike."""
    return embedded_sandbox(sandbox_config(settings))


def build_sandbox(settings: Settings) -> Sandbox | None:
    """docs/sandbox.md: empty switches code execution off, `embedded` runs it in process, and an
    http(s) URL (the only other value the settings accept) names a `toolsmith sandbox` service."""
    if settings.sandbox_url == "":
        return None
    if settings.sandbox_url == "embedded":
        return sandbox_pool(settings)
    secret = settings.sandbox_secret.get_secret_value() if settings.sandbox_secret else None
    return RemoteSandbox(
        settings.sandbox_url,
        secret=secret,
        caller_name=settings.sandbox_caller_name,
        capability_profile=settings.sandbox_capability_profile,
    )


def opensearch_client(settings: Settings) -> OpenSearch:
    assert settings.opensearch_url is not None
    return OpenSearch(
        hosts=[settings.opensearch_url.get_secret_value()],
        timeout=settings.opensearch_timeout_seconds,
        max_retries=0,
        http_compress=False,
        # Sized to the threads that share the client (urllib3 keeps one connection by default,
        # and warns each time it drops one that a concurrent request opened: issue 12, 11c).
        pool_maxsize=settings.opensearch_connections,
        transport_class=CountingTransport,  # its failed requests are counted (docs/observability.md)
    )


def build_read_model(settings: Settings, store: str | None = None) -> ModuleReadModel:
    """docs/architecture.md: OpenSearch when `OPENSEARCH_URL` is set, else in memory (rebuilt at start).
    `store` is the identity of the event store it follows (`projections/store_identity.py`)."""
    if settings.opensearch_url is None:
        return InMemoryModuleReadModel()
    return OpenSearchModuleReadModel(
        opensearch_client(settings),
        index=settings.opensearch_index,
        replicas=settings.opensearch_replicas,
        store=store,
    )


def build_runner(app: Application, view: ModuleReadModel, *, poll_seconds: float = 0.5,
                 channels: StoreChannels | None = None, announce: bool = False,
                 heartbeat_seconds: float | None = None, followers: Sequence[Following] = ()) -> PullingProjectionRunner:
    """The projection runner, in the API process or `toolsmith projections run`. On OpenSearch it
    rebuilds the index from `app`'s store when it finds another store's documents there. With a
    PostgreSQL store's `channels` it wakes on every write, and with `announce` (a runner of its
    own process) it tells the API processes of each position applied. With `heartbeat_seconds`
    (a runner of its own process, on OpenSearch) it beats in the index that often. It runs the
    `followers` too, the other projections (`projections_of`)."""
    beat = None
    if heartbeat_seconds is not None and isinstance(view, OpenSearchModuleReadModel):
        me = runner_id()
        def beat(beats: int) -> None:
            view.beat(app.name, me, beats)
    replace = None
    if isinstance(view, OpenSearchModuleReadModel):
        def replace() -> None:
            done = rebuild(app, view.client, view.index, replicas=view.replicas, store=view.store)
            log.warning("read model rebuilt from this event store", extra={
                "index": done.index, "replaced": done.replaced, "events": done.events, "store": view.store})
    return PullingProjectionRunner(app, ModuleSummaries(view=view), rebuild=replace, poll_seconds=poll_seconds,
                                   listen=channels.listen_to_writes if channels is not None else None,
                                   announce=channels.announce if channels is not None and announce else None,
                                   heartbeat=beat, heartbeat_seconds=heartbeat_seconds or 2.0, followers=followers)


def projections_of(app: ApplicationServices, kinds: ToolKinds) -> list[Following]:
    """Every projection besides the module summaries that the one runner runs (issue 29, 3): the
    services' (changesets, usage, the catalog's journal) and each installed kind's (its tool index)."""
    return followers_of([app.history, app.usage, app.toolbox, *kinds])


def store_channels(settings: Settings, app: Application, store: str) -> StoreChannels | None:
    """The store's notification channels (PostgreSQL's LISTEN/NOTIFY); None on SQLite, whose
    followers poll. `store` is the store's identity."""
    if settings.persistence_module != POSTGRES:
        return None
    from infrastructure.notifications import StoreChannels  # psycopg needs libpq, which SQLite deployments may lack

    return StoreChannels(settings.event_store_env(), writes_channel=app.recorder.channel_name, store=store)  # type: ignore[attr-defined]


def build_graph_lock(settings: Settings, event_store_env: dict[str, str]) -> GraphLock:
    """Several processes share a PostgreSQL store, so their lock must be PostgreSQL's; a SQLite
    store belongs to one process, whose threads a thread lock serializes."""
    if settings.persistence_module == POSTGRES:
        # Imported here: psycopg needs the libpq library, which a SQLite deployment may lack.
        from infrastructure.locks import AdvisoryGraphLock

        return AdvisoryGraphLock.from_env(event_store_env)
    return ThreadGraphLock()


def build_admission(settings: Settings, store: Store, authenticator: Authenticator, tenants: Tenants) -> Admission:
    """Who may make a request, with the rates of tokens, tenants and failed authentications: the
    buckets in this process, or, on a PostgreSQL store, in its table, shared by every replica (each
    would otherwise grant a key its rate once more)."""
    datastore = getattr(store.recorder, "datastore", None)

    def limiter(name: str, rate: float, burst: int) -> RateLimiter:
        if datastore is not None and type(datastore).__module__.startswith("eventsourcing.postgres"):
            from infrastructure.ratelimit import SharedRateLimiter  # psycopg needs libpq, which SQLite deployments may lack

            return SharedRateLimiter(datastore, name, rate, burst)
        return RateLimiter(rate, burst)

    failures = settings.auth_failures_per_minute
    return Admission(authenticator, tenants, limiter("token", settings.rate_per_second, settings.rate_burst),
                     tenant_limiter=limiter("tenant", settings.tenant_rate_per_second, settings.tenant_rate_burst),
                     failures=limiter("failed-authentication", failures / 60.0, max(1, failures)))


def open_event_store(settings: Settings, *, tool_names: ToolNames | None = None,
                     kinds: Sequence[KindPlugin] = DEFAULT_KINDS) -> Store:
    """The event store with `settings` (SQLite in the data dir, or PostgreSQL): for the service, and
    alone for a CLI command. It snapshots the aggregates `kinds` say grow for as long as they live."""
    store = Store(settings.event_store_env(), tool_names=tool_names, opening=created_despite_others)
    store.snapshot(aggregate for plugin in kinds for aggregate in plugin.snapshotted)
    return store


@dataclass(frozen=True)
class ApplicationServices:
    """The application layer over one store, wired: what `bootstrap` hands the presenters, and
    what a test or a benchmark drives without a web app."""

    store: Store
    commands: CommandRunner
    modules: Modules
    history: History
    execution: Execution
    toolbox: Toolbox
    records: CallerRecords
    tokens: Tokens
    secrets: Secrets
    tenants: Tenants
    usage: Usage
    users: Users


def build_application(store: Store, *, sandbox: Callable[[], Sandbox], graph_lock: GraphLock | None = None,
                      declared: Sequence[DeclaredTool] = (), code_sandbox: Sandbox | None = None,
                      names: ToolKinds | None = None, kinds: Sequence[KindPlugin] = DEFAULT_KINDS,
                      secrets: SecretValues | None = None, outbound: Outbound | None = None,
                      vault: SecretVault | None = None, resources: Mapping[str, Any] | None = None,
                      own_tenant: str = "default", tenant_sessions: int | None = None,
                      login_failures: int = 5, invitation_hours: float = 72.0) -> ApplicationServices:
    """Every application service over `store`: `sandbox` answers the sandbox that runs code (or
    refuses, when code execution is off; `code_sandbox` is that sandbox, None when off),
    `graph_lock` serializes each tenant's graph changes, and `kinds` are the kinds of tool
    installed in `names` (the registry `store` asks for R2; a new one by default); `secrets` and
    `outbound` are what a kind reads secrets with and sends its outbound requests through (the
    tenants' secrets, kept in `vault`, by default; without a vault, one whose key dies with it);
    `resources` what each kind's plugin built for it from the settings, by call type (`kind_resources`);
    `tenant_sessions` is the most sandbox sessions one tenant holds at once (None: no share)."""
    commands = CommandRunner(store, graph_lock)
    execution = Execution(store, sandbox, TenantSessions(tenant_sessions) if tenant_sessions is not None else None)
    history = History(store)
    names = names if names is not None else ToolKinds()
    # The secrets ask every kind which secrets its tools use, and the kinds read them: one registry.
    vault = vault or ephemeral_vault(store)
    secret_service = Secrets(store, commands, vault, names)
    usage = Usage(store, secret_service, counted=[counted for plugin in kinds for counted in plugin.quotas])
    # People's password hashes are credentials in the same vault (docs/users.md); a tenant with
    # people is not empty.
    users = Users(store, commands, vault, login_failures=login_failures, invitation_hours=invitation_hours)
    tenants = Tenants(store, commands, own=own_tenant, holdings=lambda tenant: [*usage.holdings(tenant), *users.holdings(tenant)])
    quotas = Quotas(tenants, usage)
    toolbox = Toolbox(store, build_kinds(store, execution, names, commands=commands, declared=declared,
                                         sandbox=code_sandbox, kinds=kinds, secrets=secrets or secret_service,
                                         outbound=outbound, resources=resources, quotas=quotas))
    return ApplicationServices(
        store=store,
        commands=commands,
        modules=Modules(store, commands, execution, history, quotas),
        history=history,
        execution=execution,
        toolbox=toolbox,
        records=CallerRecords(store, commands, toolbox),
        tokens=Tokens(store, commands),
        secrets=secret_service,
        tenants=tenants,
        usage=usage,
        users=users,
    )


def build_kinds(store: Store, execution: Execution | None = None, names: ToolKinds | None = None, *,
                commands: CommandRunner | None = None, declared: Sequence[DeclaredTool] = (),
                sandbox: Sandbox | None = None, kinds: Sequence[KindPlugin] = DEFAULT_KINDS,
                secrets: SecretValues | None = None, outbound: Outbound | None = None,
                resources: Mapping[str, Any] | None = None, quotas: Quotas | None = None) -> ToolKinds:
    """Each kind of `kinds`, built on `store`, installed in `names` (a new registry by default)
    in their order; a CLI command needs them without a sandbox or a tools file (the audit export
    asks them whose events are whose), and then runs nothing. `store` snapshots the aggregates
    the kinds say grow for as long as they live."""
    store.snapshot(aggregate for plugin in kinds for aggregate in plugin.snapshotted)
    if execution is None:
        execution = Execution(store, _runs_no_code)
    installed = names if names is not None else ToolKinds()
    deps = KindDeps(store=store, execution=execution, commands=commands or CommandRunner(store), names=installed,
                    declared=tuple(declared), sandbox=sandbox, secrets=secrets, outbound=outbound,
                    resources=dict(resources or {}), quotas=quotas)
    installed.install(plugin.kind(deps) for plugin in kinds)
    return installed


def api_outbound(settings: Settings) -> Outbound:
    """The egress path of API URL tools (docs/kinds/api-url-tools.md), under `TOOLSMITH_EGRESS_ALLOW`."""
    from infrastructure.egress.outbound import ApiOutbound  # httpcore: loaded by a service that sends

    return ApiOutbound(settings.api_policy())


def kind_resources(settings: Settings, store: Store, kinds: Sequence[KindPlugin] = DEFAULT_KINDS) -> dict[str, Any]:
    """What each of `kinds` needs built from `settings` (its adapters: a File Search tool's blobs,
    chunk index and extraction), by call type; a kind that needs nothing is not asked."""
    wiring = Wiring(settings=settings, store=store, opensearch=lambda: opensearch_client(settings))
    return {plugin.call_type: plugin.resources(wiring) for plugin in kinds if plugin.resources is not None}


def _runs_no_code() -> Sandbox:
    raise SandboxUnavailable("this command runs no code")


_BUILD = object()


def bootstrap(settings: Settings, *, sandbox: Sandbox | None | object = _BUILD,
              kinds: Sequence[KindPlugin] = DEFAULT_KINDS) -> Services:
    """Wires every adapter from `settings`; a `sandbox` handed in (tests share one pool of worker
    processes across many apps) is used instead of building one, and is not closed with them.
    `kinds` are the kinds of tool the service offers (a test adds its own)."""
    data_dir.prepare(settings)  # 0700, and the SQLite store's file 0600
    # First: a bad tools file refuses the start before any store or pool is opened.
    declared = load_declared_tools(settings.tools_file)
    owns_sandbox = sandbox is _BUILD
    if sandbox is _BUILD:
        sandbox = build_sandbox(settings)

    def sandbox_or_refuse() -> Sandbox:
        if sandbox is None:
            raise SandboxUnavailable()
        return sandbox  # type: ignore[return-value]

    event_store_env = settings.event_store_env()
    graph_lock = build_graph_lock(settings, event_store_env)
    # R2 asks every kind, and the kinds are built on the store: the registry is filled once they are.
    names = ToolKinds()
    store = open_event_store(settings, tool_names=names, kinds=kinds)
    app = build_application(store, sandbox=sandbox_or_refuse, graph_lock=graph_lock, declared=declared,
                            code_sandbox=sandbox, names=names, kinds=kinds,  # type: ignore[arg-type]
                            vault=open_vault(settings, store), outbound=api_outbound(settings),
                            resources=kind_resources(settings, store, kinds), own_tenant=settings.tenant,
                            tenant_sessions=settings.tenant_session_cap(),
                            login_failures=settings.login_failures, invitation_hours=settings.invitation_hours)
    # Every call, from every way in, recorded where the toolbox and a module's Test run it (docs/calls.md).
    app.toolbox.call_log = app.execution.call_log = open_call_log(settings, store)
    app.toolbox.call_log.redactor = app.secrets.redactor  # what value capture redacts (the tenant's secrets)
    identity = store_identity(store)
    read_model = build_read_model(settings, identity)
    channels = store_channels(settings, store, identity)
    runner: PullingProjectionRunner | TrackingWatcher
    if settings.projection_runner == "external" and settings.opensearch_url is not None:
        # The runner's heartbeat, in the index it writes (issue 28, 11).
        heard = read_model.heartbeat if isinstance(read_model, OpenSearchModuleReadModel) else None
        runner = TrackingWatcher(store, read_model, max_lag_seconds=settings.read_model_max_lag_seconds,
                                 listen=channels.listen_to_positions if channels is not None else None,
                                 heartbeat=(lambda: heard(store.name)) if heard is not None else None,
                                 heartbeat_seconds=settings.projection_heartbeat_seconds,
                                 followers=projections_of(app, names))
    else:
        runner = build_runner(store, read_model, poll_seconds=settings.projection_poll_seconds, channels=channels,
                              followers=projections_of(app, names))

    # A person's token stands for the person (docs/users.md).
    authenticator = Authenticator(app.tokens.find_digest, owner=app.users.token_principal)
    # Who holds an issued token is kept a second; a token or tenant changed here is seen at once.
    app.tokens.on_change(authenticator.forget)
    app.tenants.on_change(authenticator.forget)
    app.users.on_change(authenticator.forget)
    token = settings.admin_token.get_secret_value() if settings.admin_token else None
    digest, new_token = admin_token_digest(settings.data_dir, token)
    authenticator.add(digest, Principal(name="admin", role=ADMIN, tenant=settings.tenant))
    operator = settings.operator_token.get_secret_value() if settings.operator_token else None
    operator_digest, new_operator_token = operator_token_digest(settings.data_dir, operator)
    authenticator.add(operator_digest, Principal(name="operator", role=OPERATOR, tenant=""))
    admission = build_admission(settings, store, authenticator, app.tenants)
    # The process's metrics (docs/observability.md): each call counted once, by the call log's hook.
    metrics = Metrics(max_tools=settings.metrics_max_tools,
                      token=settings.metrics_token.get_secret_value() if settings.metrics_token else None)
    wire_metrics(metrics, call_log=app.toolbox.call_log, execution=app.execution, sandbox=sandbox, admission=admission,
                 store=store, runner=runner, toolbox=app.toolbox, max_lag_seconds=settings.read_model_max_lag_seconds)
    if settings.persistence_module == POSTGRES:
        count_postgres_errors(store.recorder)
    return Services(
        settings=settings,
        store=store,
        modules=app.modules,
        history=app.history,
        execution=app.execution,
        tokens=app.tokens,
        read_model=read_model,
        runner=runner,
        authenticator=authenticator,
        sandbox=sandbox,  # type: ignore[arg-type]
        graph_lock=graph_lock,
        toolbox=app.toolbox,
        records=app.records,
        secrets=app.secrets,
        owns_sandbox=owns_sandbox,
        new_admin_token=new_token,
        new_operator_token=new_operator_token,
        tenants=app.tenants,
        usage=app.usage,
        users=app.users,
        admission=admission,
        plugins=tuple(kinds),
        metrics=metrics,
    )
