"""An admin's resource: one tenant's published item (`domain.published.Versioned`) through all its lives."""

from __future__ import annotations

from uuid import NAMESPACE_URL, UUID, uuid5

from domain.published import Versioned

RESOURCE = "RESOURCE"
LABEL = "resource"
_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates")


def resource_id(tenant: str, name: str) -> UUID:
    return uuid5(_NAMESPACE, f"resource/{tenant}/{name}")


class PublishedResource(Versioned):
    label = LABEL

    @staticmethod
    def create_id(tenant: str, item_id: str) -> UUID:  # type: ignore[override]
        return resource_id(tenant, item_id)
