"""Capability profiles: what a call's JavaScript is given besides the language (docs/javascript.md V2, docs/sandbox.md).

The API names a profile (`CODESANDBOX_CAPABILITY_PROFILE`); the sandbox grants what the profile
lists. The HTTP allow-list is the sandbox's own configuration (`CODESANDBOX_ALLOWED_DOMAINS`),
never the caller's: a profile only says whether `http.fetch` exists at all.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    name: str
    log: bool = True  # log(value): into the call's trace and the service log
    context: bool = True  # ai.context(): the caller's context, never a token
    intl: bool = True  # Intl.NumberFormat / Intl.DateTimeFormat, toLocaleString
    http: bool = True  # http.fetch, limited to the sandbox's allow-list


PROFILES: dict[str, Capabilities] = {
    "default": Capabilities("default"),
    "no-network": Capabilities("no-network", http=False),
    "minimal": Capabilities("minimal", context=False, http=False),
}


class UnknownProfile(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"unknown capability profile {name!r}; known: {', '.join(PROFILES)}")
        self.name = name


def profile(name: str) -> Capabilities:
    try:
        return PROFILES[name]
    except KeyError:
        raise UnknownProfile(name) from None
