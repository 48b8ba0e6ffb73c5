"""The sandbox's own configuration (docs/sandbox.md), whichever process runs it: the API's embedded
runner or the `toolsmith sandbox` service."""

from __future__ import annotations

from dataclasses import dataclass

from infrastructure.settings import Settings
from sandbox.capabilities import Capabilities, profile


@dataclass(frozen=True)
class SandboxConfig:
    max_timeout_millis: int = 10_000
    max_memory_mb: int = 512
    max_active_sessions: int = 16
    # Comma-separated `host` or `host:port` that `http.fetch` may reach; empty: none.
    allowed_domains: str = ""
    # Worker processes kept running while idle; more start on demand, up to max_active_sessions.
    workers: int = 2
    capability_profile: str = "default"
    # Each worker bounds its whole process's memory per call to the call's memory limit plus this
    # allowance (sandbox.worker.MemoryBound); None turns the bound off (the benchmark's "before").
    memory_allowance_mb: int | None = 96

    @property
    def capabilities(self) -> Capabilities:
        return profile(self.capability_profile)


def sandbox_config(settings: Settings) -> SandboxConfig:
    """The embedded runner's configuration (also the `toolsmith sandbox` service's), from the settings."""
    return SandboxConfig(
        max_timeout_millis=settings.sandbox_max_timeout_millis,
        max_memory_mb=settings.sandbox_max_memory_mb,
        max_active_sessions=settings.sandbox_max_active_sessions,
        allowed_domains=settings.sandbox_allowed_domains,
        workers=min(settings.sandbox_workers, settings.sandbox_max_active_sessions),
        capability_profile=settings.sandbox_capability_profile,
    )
