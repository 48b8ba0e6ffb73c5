"""Helpers shared by the tests."""

from __future__ import annotations

import itertools
import os
import socket

ADMIN_TOKEN = "tsa_test-admin-token"
_counter = itertools.count()


def unique_id(prefix: str = "m") -> str:
    """A module id no other test uses (tests may share one engine)."""
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment_without_settings() -> dict[str, str]:
    """This process's environment without any Toolsmith, OpenSearch or PostgreSQL setting, for a
    child process that must get only the settings a test gives it."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("TOOLSMITH_", "OPENSEARCH_", "POSTGRES_"))}
