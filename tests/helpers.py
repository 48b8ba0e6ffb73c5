"""Helpers shared by the tests."""

from __future__ import annotations

import itertools
import os

ADMIN_TOKEN = "tsa_test-admin-token"
_counter = itertools.count()


def unique_id(prefix: str = "m") -> str:
    """A module id no other test uses (tests may share one engine)."""
    return f"{prefix}_{os.getpid()}_{next(_counter)}"
