"""A tenant's secrets (docs/kinds/index.md): one `Secret` aggregate per (tenant, id), whose events say who
created, rotated, described and deleted it, and when.

An event records the secret's id, its description and a fingerprint of its value, never the value:
the value is encrypted at rest beside the event store (the application's `SecretVault`). The
fingerprint is an HMAC of the value under a key of the service's own (a plain hash of a short value
could be reversed by trying every value), so an auditor sees that a rotation changed the value, and
to what fingerprint, without learning anything of it.

The aggregate's id derives from the tenant and the secret's id, so an id is taken once (two creates
race on version 1) and a deleted secret is created again on the same aggregate (`Recreated`),
keeping its history.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import event

from domain.chain import Chained
from domain.errors import Violation

# Like the ids of agents, MCP servers and usage profiles: a secret is no tool, and a header's
# `{"secret": id}` names it.
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")
MAX_VALUE_BYTES = 8 * 1024
MAX_DESCRIPTION = 4_000

_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates")


@lru_cache(maxsize=4_096)
def secret_aggregate_id(tenant: str, secret_id: str) -> UUID:
    return uuid5(_NAMESPACE, f"secret/{tenant}/{secret_id}")


class Secret(Chained):
    """One secret of one tenant: its description and its value's fingerprint, never its value."""

    @staticmethod
    def create_id(tenant: str, secret_id: str) -> UUID:  # type: ignore[override]
        return secret_aggregate_id(tenant, secret_id)

    @event("Created")
    def __init__(self, tenant: str, secret_id: str, description: str, fingerprint: str, by: str,
                 previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.tenant = tenant
        self.secret_id = secret_id
        self.deleted = False
        self._lived(description, fingerprint, by, timestamp)

    # -- queries -------------------------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        """The secret as the API shows it: everything but its value."""
        return {
            "id": self.secret_id, "description": self.description, "fingerprint": self.fingerprint,
            "createdAt": self.created_at, "createdBy": self.created_by,
            "updatedAt": self.updated_at, "updatedBy": self.updated_by,
        }

    # -- commands ------------------------------------------------------------------------------

    def rotate(self, fingerprint: str, by: str) -> None:
        self._rotated(tenant=self.tenant, secret_id=self.secret_id, fingerprint=fingerprint, by=by)

    def describe(self, description: str, by: str) -> None:
        self._description_changed(tenant=self.tenant, secret_id=self.secret_id, description=description, by=by)

    def delete(self, by: str) -> None:
        self._deleted(tenant=self.tenant, secret_id=self.secret_id, by=by)

    def recreate(self, description: str, fingerprint: str, by: str) -> None:
        self._recreated(tenant=self.tenant, secret_id=self.secret_id, description=description, fingerprint=fingerprint, by=by)

    @event("Rotated")
    def _rotated(self, tenant: str, secret_id: str, fingerprint: str, by: str, previous_hash: str = "",
                 timestamp: datetime | None = None) -> None:
        self.fingerprint = fingerprint
        self._touched(by, timestamp)

    @event("DescriptionChanged")
    def _description_changed(self, tenant: str, secret_id: str, description: str, by: str, previous_hash: str = "",
                             timestamp: datetime | None = None) -> None:
        self.description = description
        self._touched(by, timestamp)

    @event("Deleted")
    def _deleted(self, tenant: str, secret_id: str, by: str, previous_hash: str = "", timestamp: datetime | None = None) -> None:
        self.deleted = True
        self._touched(by, timestamp)

    @event("Recreated")
    def _recreated(self, tenant: str, secret_id: str, description: str, fingerprint: str, by: str, previous_hash: str = "",
                   timestamp: datetime | None = None) -> None:
        self.deleted = False
        self._lived(description, fingerprint, by, timestamp)

    def _lived(self, description: str, fingerprint: str, by: str, timestamp: datetime | None) -> None:
        self.description = description
        self.fingerprint = fingerprint
        self.created_at = timestamp
        self.created_by = by
        self._touched(by, timestamp)

    def _touched(self, by: str, timestamp: datetime | None) -> None:
        self.updated_at = timestamp
        self.updated_by = by


# -- rules -------------------------------------------------------------------------------------


def secret_id_violations(value: Any, field: str = "id") -> list[Violation]:
    if not isinstance(value, str) or not _ID.match(value):
        return [Violation(field, "docs/kinds/index.md", "must be 1–64 letters, digits, '_' or '-', starting with a letter or digit")]
    return []


def value_violations(value: Any, field: str = "value") -> list[Violation]:
    """A secret's value: a non-empty string of at most 8 KiB (UTF-8). The message never quotes it."""
    if not isinstance(value, str):
        return [Violation(field, "docs/kinds/index.md", "must be a string")]
    if not value:
        return [Violation(field, "docs/kinds/index.md", "must not be empty")]
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return [Violation(field, "docs/kinds/index.md", "must be Unicode text (it holds a lone surrogate)")]
    if size > MAX_VALUE_BYTES:
        return [Violation(field, "docs/kinds/index.md", f"must be at most {MAX_VALUE_BYTES} bytes (UTF-8), got {size}")]
    return []


def secret_description_violations(value: Any, field: str = "description") -> list[Violation]:
    if not isinstance(value, str):
        return [Violation(field, "docs/kinds/index.md", "must be a string")]
    if len(value) > MAX_DESCRIPTION:
        return [Violation(field, "docs/kinds/index.md", f"must be at most {MAX_DESCRIPTION} characters, got {len(value)}")]
    return []
