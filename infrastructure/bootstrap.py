"""The composition root: builds every adapter from one `Settings` and wires them together."""

from __future__ import annotations

from dataclasses import dataclass, field

from domain.application import ModuleRepository
from domain.errors import SandboxUnavailable
from domain.ports import Sandbox
from infrastructure.auth import ADMIN, Authenticator, Principal, admin_token_digest
from infrastructure.settings import Settings
from projections.interface import ModuleReadModel
from projections.memory import InMemoryModuleReadModel
from projections.modules import ModuleSummaries
from projections.runner import PullingProjectionRunner
from sandbox.factory import embedded_sandbox
from sandbox.remote import RemoteSandbox


@dataclass
class Services:
    settings: Settings
    modules: ModuleRepository
    read_model: ModuleReadModel
    runner: PullingProjectionRunner
    authenticator: Authenticator
    sandbox: Sandbox | None
    # The admin token when this start generated it; shown once, then forgotten.
    new_admin_token: str | None = field(default=None, repr=False)

    def start(self) -> None:
        self.runner.start()

    def close(self) -> None:
        self.runner.stop()
        close = getattr(self.sandbox, "close", None)
        if close is not None:
            close()
        self.modules.close()


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


def bootstrap(settings: Settings) -> Services:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    sandbox = build_sandbox(settings)

    def sandbox_or_refuse() -> Sandbox:
        if sandbox is None:
            raise SandboxUnavailable()
        return sandbox

    modules = ModuleRepository(settings.event_store_env(), sandbox=sandbox_or_refuse)
    read_model = InMemoryModuleReadModel()
    runner = PullingProjectionRunner(modules, ModuleSummaries(view=read_model))

    authenticator = Authenticator()
    token = settings.admin_token.get_secret_value() if settings.admin_token else None
    digest, new_token = admin_token_digest(settings.data_dir, token)
    authenticator.add(digest, Principal(name="admin", role=ADMIN, tenant=settings.tenant))
    return Services(
        settings=settings,
        modules=modules,
        read_model=read_model,
        runner=runner,
        authenticator=authenticator,
        sandbox=sandbox,
        new_admin_token=new_token,
    )
