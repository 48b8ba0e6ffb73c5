"""The composition root: builds every adapter from one `Settings` and wires them together."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from eventsourcing.application import Application
from opensearchpy import OpenSearch

from application.repository import ModuleRepository, ThreadGraphLock
from domain.errors import SandboxUnavailable
from domain.ports import GraphLock, Sandbox, ToolNames
from api.kinds import KindPlugin
from application.kinds.base import KindDeps, ToolKinds
from application.records import CallerRecords
from application.toolbox import Toolbox
from domain.catalog import DeclaredTool
from entrypoints.kinds import DEFAULT_KINDS
from infrastructure import data_dir
from infrastructure.declared_tools import load_declared_tools
from infrastructure.auth import ADMIN, Authenticator, Principal, admin_token_digest
from infrastructure.settings import POSTGRES, Settings
from api.services import Services
from projections.interface import ModuleReadModel
from projections.memory import InMemoryModuleReadModel
from projections.modules import ModuleSummaries
from projections.opensearch import OpenSearchModuleReadModel
from projections.rebuild import rebuild
from projections.runner import PullingProjectionRunner, TrackingWatcher
from projections.store_identity import store_identity
from sandbox.factory import embedded_sandbox
from sandbox.remote import RemoteSandbox

log = logging.getLogger("toolsmith.projections")


def build_sandbox(settings: Settings) -> Sandbox | None:
    """DESIGN §6: empty switches code execution off, `embedded` runs it in process, and an
    http(s) URL (the only other value the settings accept) names a `toolsmith sandbox` service."""
    if settings.sandbox_url == "":
        return None
    if settings.sandbox_url == "embedded":
        return embedded_sandbox(settings.sandbox_config())
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
    )


def build_read_model(settings: Settings, store: str | None = None) -> ModuleReadModel:
    """DESIGN §1: OpenSearch when `OPENSEARCH_URL` is set, else in memory (rebuilt at start).
    `store` is the identity of the event store it follows (`projections/store_identity.py`)."""
    if settings.opensearch_url is None:
        return InMemoryModuleReadModel()
    return OpenSearchModuleReadModel(
        opensearch_client(settings),
        index=settings.opensearch_index,
        replicas=settings.opensearch_replicas,
        store=store,
    )


def build_runner(app: Application, view: ModuleReadModel) -> PullingProjectionRunner:
    """The projection runner, in the API process or `toolsmith projections run`. On OpenSearch it
    rebuilds the index from `app`'s store when it finds another store's documents there."""
    replace = None
    if isinstance(view, OpenSearchModuleReadModel):
        def replace() -> None:
            done = rebuild(app, view.client, view.index, replicas=view.replicas, store=view.store)
            log.warning("read model rebuilt from this event store", extra={
                "index": done.index, "replaced": done.replaced, "events": done.events, "store": view.store})
    return PullingProjectionRunner(app, ModuleSummaries(view=view), rebuild=replace)


def build_graph_lock(settings: Settings, event_store_env: dict[str, str]) -> GraphLock:
    """Several processes share a PostgreSQL store, so their lock must be PostgreSQL's; a SQLite
    store belongs to one process, whose threads a thread lock serializes."""
    if settings.persistence_module == POSTGRES:
        # Imported here: psycopg needs the libpq library, which a SQLite deployment may lack.
        from infrastructure.locks import AdvisoryGraphLock

        return AdvisoryGraphLock.from_env(event_store_env)
    return ThreadGraphLock()


def open_event_store(settings: Settings, *, purpose: str, sandbox: Callable[[], Sandbox] | None = None,
                     graph_lock: GraphLock | None = None, tool_names: ToolNames | None = None) -> ModuleRepository:
    """The event store with `settings` (SQLite in the data dir, or PostgreSQL): for the service, and
    alone for a CLI command (`purpose` says which, in the error a code run would get)."""

    def no_sandbox() -> Sandbox:
        raise SandboxUnavailable(f"{purpose} runs no code")

    return ModuleRepository(settings.event_store_env(), sandbox=sandbox or no_sandbox, graph_lock=graph_lock,
                            tool_names=tool_names)


def build_kinds(modules: ModuleRepository, names: ToolKinds | None = None, *, declared: Sequence[DeclaredTool] = (),
                sandbox: Sandbox | None = None, kinds: Sequence[KindPlugin] = DEFAULT_KINDS) -> ToolKinds:
    """Each kind of `kinds`, built on `modules`, installed in `names` (a new registry by default)
    in their order; a CLI command needs them without a sandbox or a tools file (the audit export
    asks them whose events are whose)."""
    installed = names if names is not None else ToolKinds()
    deps = KindDeps(modules=modules, names=installed, declared=tuple(declared), sandbox=sandbox)
    installed.install(plugin.kind(deps) for plugin in kinds)
    return installed


def build_toolbox(modules: ModuleRepository, *, declared: Sequence[DeclaredTool] = (), sandbox: Sandbox | None = None,
                  kinds: Sequence[KindPlugin] = DEFAULT_KINDS) -> Toolbox:
    """The toolbox over `modules` with `kinds` (for a test, or a command that calls tools)."""
    return Toolbox(modules, build_kinds(modules, declared=declared, sandbox=sandbox, kinds=kinds))


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
    modules = open_event_store(settings, purpose="the service", sandbox=sandbox_or_refuse, graph_lock=graph_lock,
                               tool_names=names)
    toolbox = Toolbox(modules, build_kinds(modules, names, declared=declared, sandbox=sandbox, kinds=kinds))  # type: ignore[arg-type]
    records = CallerRecords(modules, toolbox)
    read_model = build_read_model(settings, store_identity(modules))
    runner: PullingProjectionRunner | TrackingWatcher
    if settings.projection_runner == "external" and settings.opensearch_url is not None:
        runner = TrackingWatcher(modules, read_model, max_lag_seconds=settings.read_model_max_lag_seconds)
    else:
        runner = build_runner(modules, read_model)

    authenticator = Authenticator(records.find_token)
    token = settings.admin_token.get_secret_value() if settings.admin_token else None
    digest, new_token = admin_token_digest(settings.data_dir, token)
    authenticator.add(digest, Principal(name="admin", role=ADMIN, tenant=settings.tenant))
    return Services(
        settings=settings,
        modules=modules,
        read_model=read_model,
        runner=runner,
        authenticator=authenticator,
        sandbox=sandbox,  # type: ignore[arg-type]
        graph_lock=graph_lock,
        toolbox=toolbox,
        records=records,
        owns_sandbox=owns_sandbox,
        new_admin_token=new_token,
        plugins=tuple(kinds),
    )
