"""A kind of tool as the service mounts it: its application half (`application/kinds/`) with its
REST routes and its console routes, which the application layer may not hold (FastAPI is the API's),
and what the core asks of every kind instead of naming one (issue 29, 1).

The web app includes every kind's routers (`entrypoints/web.py`); the registry of kinds is
`entrypoints/kinds.py`. Console routes are the kind's pages in the admin console (docs/console.md), which
`console.web.mount` includes after the pages every kind shares. A kind declares only what it has:
one with no console page, no quota, no snapshot and no rebuild leaves those fields at their defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter

from api import problems
from api.schemas import PathRule
from application.kinds.base import Counted, ToolKind
from domain.errors import ModuleError

if TYPE_CHECKING:
    from application.store import Store


@dataclass(frozen=True)
class Nav:
    """A kind's entry in the console's navigation: where it leads, what it says, its `rank` among
    every entry (the console's own are ranked in tens, `console/pages.py: NAVIGATION`) and the
    sidebar's `group` it is shown in (`console/pages.py: GROUPS`: a kind's tools are built)."""

    path: str
    label: str
    rank: int
    group: str = "Build"


@dataclass(frozen=True)
class New:
    """What the console's "New tool" chooser and its command palette offer for a kind whose tools an
    admin makes there: its New page (`path`) and `when` to pick it."""

    path: str
    when: str


# What a person calls a tool of each registered kind on a page (`KindPlugin.words`), by call type:
# the console's words for it (`console/language.py: kind_words`), kept from the moment it is registered.
_WORDS: dict[str, str] = {}


def words_of(call_type: object) -> str | None:
    """What a registered kind calls one of its tools (`"API URL tool"`); None for a call type none says."""
    return _WORDS.get(str(call_type))


def registered_words() -> dict[str, str]:
    """Every registered kind's words, by call type."""
    return dict(_WORDS)


@dataclass(frozen=True)
class Wiring:
    """What the composition root hands a kind's `resources`: the settings, the event store, and a
    client for `OPENSEARCH_URL` (call it only when that is set)."""

    settings: Any  # infrastructure.settings.Settings
    store: Store
    opensearch: Callable[[], Any]


@dataclass(frozen=True)
class Rebuild:
    """What `toolsmith projections rebuild` makes again for a kind, after the module index: `run`
    rebuilds with the installed kind, reporting `progress(done, total)` in `unit`s, and answers the
    line the command prints."""

    what: str  # "the chunk index"
    unit: str  # "documents"
    run: Callable[[ToolKind, Callable[[int, int], None]], str]


@dataclass(frozen=True)
class KindPlugin:
    kind: type[ToolKind]
    routers: tuple[APIRouter, ...] = ()
    console: tuple[APIRouter, ...] = ()
    # The console page of one of this kind's tools (`{}` is its name); None when it has none.
    page: str | None = None
    # The folder of the kind's console templates (named `<kind>/…` inside it), searched after the console's own.
    templates: Path | None = None
    # Its entry in the console's navigation; None when it has none.
    navigation: Nav | None = None
    # What a person calls one of its tools on a page ("API URL tool"); None to leave it to the console.
    words: str | None = None
    # What "New tool" offers of it (with its `words`); None when its tools are not made in the console.
    new: New | None = None
    # What its aggregates count toward a tenant's quotas (`application/usage.py`).
    quotas: tuple[Counted, ...] = ()
    # Its aggregates that grow for as long as they live, snapshotted at the store's interval (`Store.snapshot`).
    snapshotted: tuple[type[Any], ...] = ()
    # The HTTP status of each of its own errors (`api/problems.py`; by the error's exact type).
    statuses: Mapping[type[ModuleError], int] = field(default_factory=dict)
    # What it needs built from the settings (its adapters), handed to it as `KindDeps.resources[call_type]`.
    resources: Callable[[Wiring], Any] | None = None
    # What `toolsmith projections rebuild` makes again for it; None for nothing.
    rebuild: Rebuild | None = None
    # The rules its path parameters follow, in the OpenAPI document (`api/schemas.py: PATH_RULES`).
    path_rules: tuple[PathRule, ...] = ()
    # Its routes that take uploads (regular expressions of whole paths, REST and console): streamed to
    # the route under the upload limit (`api/edge.py: Uploads`), not read whole under the body limit.
    uploads: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Its errors' statuses hold wherever a problem is made (REST, console, MCP), from the moment it is registered.
        problems.add_statuses(self.statuses)
        # And its words, on every page that names its call type.
        if self.words:
            _WORDS[self.call_type] = self.words

    @property
    def call_type(self) -> str:
        return self.kind.call_type
