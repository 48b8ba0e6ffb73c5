"""A prompt: one tenant's published item (`domain.published.Versioned`) through all its lives."""

from __future__ import annotations

from uuid import NAMESPACE_URL, UUID, uuid5

from domain.published import Versioned

PROMPT = "PROMPT"
LABEL = "prompt"
_NAMESPACE = uuid5(NAMESPACE_URL, "https://toolsmith.invalid/aggregates")


def prompt_id(tenant: str, name: str) -> UUID:
    return uuid5(_NAMESPACE, f"prompt/{tenant}/{name}")


class Prompt(Versioned):
    label = LABEL

    @staticmethod
    def create_id(tenant: str, item_id: str) -> UUID:  # type: ignore[override]
        return prompt_id(tenant, item_id)
