"""What the presenters (REST, MCP) are handed: the application's services and the adapters behind
them, built by the composition root (`entrypoints/compose.py`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from application.execution import Execution
from application.history import History
from application.modules import Modules
from api.kinds import KindPlugin
from application.records import CallerRecords
from application.secrets import Secrets
from application.store import Store
from application.tenants import Tenants
from application.tokens import Tokens
from application.usage import Usage
from application.users import Users
from api.admission import Admission
from application.toolbox import Toolbox
from domain.ports import GraphLock, Sandbox
from application.principals import Authenticator
from infrastructure.metrics import Metrics
from infrastructure.settings import Settings
from projections.interface import ModuleReadModel
from projections.runner import PullingProjectionRunner, TrackingWatcher

log = logging.getLogger("toolsmith.services")


@dataclass
class Services:
    settings: Settings
    store: Store
    modules: Modules
    history: History
    execution: Execution
    tokens: Tokens
    read_model: ModuleReadModel
    runner: PullingProjectionRunner | TrackingWatcher
    authenticator: Authenticator
    sandbox: Sandbox | None
    graph_lock: GraphLock
    toolbox: Toolbox
    records: CallerRecords
    secrets: Secrets
    tenants: Tenants
    usage: Usage
    # Every request's token, its tenant's state and its rate (docs/security.md, docs/tenants.md).
    admission: Admission
    # The people of each tenant (docs/users.md).
    users: Users | None = None
    # The admin and operator tokens when this start generated them; shown once, then forgotten.
    new_admin_token: str | None = field(default=None, repr=False)
    new_operator_token: str | None = field(default=None, repr=False)
    # Whether `close` ends the sandbox too (not when the caller handed in one it shares).
    owns_sandbox: bool = True
    # The kinds of tool with their routes, as the registry (`entrypoints/kinds.py`) lists them.
    plugins: tuple[KindPlugin, ...] = ()
    # The process's metrics (docs/observability.md): /metrics, and TOOLSMITH_METRICS_ADDRESS when set.
    metrics: Metrics = field(default_factory=Metrics)

    def start(self) -> None:
        address = self.settings.metrics_address
        if address is not None:
            try:
                host, port = self.metrics.listen(address)
                log.info("metrics served without a token", extra={"address": f"{host}:{port}"})
            except OSError as error:  # another worker of this host took it: this process's figures stay on /metrics
                log.warning("metrics address taken; this process's metrics are on /metrics only",
                            extra={"address": address, "error": type(error).__name__})
        self.runner.start()
        self.toolbox.start()
        try:
            self.toolbox.warm(self.settings.tenant)
        except Exception as error:  # noqa: BLE001 - the first request that needs the catalog builds it, or answers why not
            log.warning("tool catalog not built at start; the first request that needs it builds it",
                        extra={"error": type(error).__name__})

    def close(self) -> None:
        self.metrics.close()
        self.runner.stop()
        self.toolbox.close()
        self.read_model.close()
        close = getattr(self.sandbox, "close", None)
        if close is not None and self.owns_sandbox:
            close()
        self.store.close()
        self.graph_lock.close()
