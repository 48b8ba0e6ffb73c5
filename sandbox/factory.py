"""Builds the embedded runner from the sandbox configuration."""

from __future__ import annotations

from domain.ports import Sandbox
from sandbox.config import SandboxConfig


def embedded_sandbox(config: SandboxConfig) -> Sandbox:
    from sandbox.embedded import EmbeddedSandbox

    config.capabilities  # an unknown profile fails here, at start
    return EmbeddedSandbox(config)
