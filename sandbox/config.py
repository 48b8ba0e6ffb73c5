"""The sandbox's own configuration (docs/sandbox.md), whichever process runs it: the API's embedded
runner or the `toolsmith sandbox` service."""

from __future__ import annotations

from dataclasses import dataclass

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
