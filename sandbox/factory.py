"""Builds the embedded runner from the sandbox configuration."""

from __future__ import annotations

from domain.ports import Sandbox
from sandbox.config import SandboxConfig


def embedded_sandbox(config: SandboxConfig) -> Sandbox:
    from sandbox.embedded import EmbeddedSandbox

    config.capabilities  # an unknown profile fails here, at start
    return EmbeddedSandbox(
        max_timeout_millis=config.max_timeout_millis,
        max_memory_mb=config.max_memory_mb,
        max_active_sessions=config.max_active_sessions,
    )
