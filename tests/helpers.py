"""Helpers shared by the tests."""

from __future__ import annotations

import itertools
import os
from typing import Any

from bench._server import free_port

__all__ = ["ADMIN_TOKEN", "environment_without_settings", "expect", "free_port", "unique_id"]

ADMIN_TOKEN = "tsa_test-admin-token"
_counter = itertools.count()


def unique_id(prefix: str = "m") -> str:
    """A module id no other test uses (tests may share one engine)."""
    return f"{prefix}_{os.getpid()}_{next(_counter)}"


def environment_without_settings() -> dict[str, str]:
    """This process's environment without any Toolsmith, OpenSearch or PostgreSQL setting, for a
    child process that must get only the settings a test gives it."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("TOOLSMITH_", "OPENSEARCH_", "POSTGRES_"))}


def expect(response: Any, status: int) -> Any:
    """`response`, after checking a setup call answered `status` (else its body says why)."""
    assert response.status_code == status, f"{response.request.method} {response.request.url}: {response.status_code} {response.text}"
    return response
