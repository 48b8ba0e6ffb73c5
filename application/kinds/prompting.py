"""What MCP asks of a kind that offers prompts (docs/kinds/prompts.md), so that the MCP layer names
no kind: `prompts/list`, `prompts/get` and `completion/complete` for `ref/prompt` ask every
installed kind that is an `OffersPrompts`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from application.context import CallContext
from domain.catalog import Permissions


@dataclass(frozen=True)
class Listed:
    """One published prompt as `prompts/list` shows it (`arguments`: name, description, required)."""

    name: str
    description: str
    title: str | None
    arguments: tuple[Mapping[str, Any], ...]
    tags: tuple[str, ...] = ()

    def allowed(self, permissions: Permissions, attached: frozenset[str] | None) -> bool:
        """Offered to a caller with `permissions` on a server with `attached` (None: the default
        server): as a tool is, by its name or its tags."""
        if attached is not None and self.name not in attached:
            return False
        return permissions.everything or self.name in permissions.tools or not permissions.tags.isdisjoint(self.tags)

    def wire(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "description": self.description,
                                 "arguments": [dict(a) for a in self.arguments]}
        if self.title:
            found["title"] = self.title
        return found


class OffersPrompts(ABC):
    """A kind whose published items are MCP prompts."""

    @abstractmethod
    def listed(self, tenant: str) -> Sequence[Listed]:
        """Every published prompt of `tenant`, by name."""

    @abstractmethod
    def listing(self, tenant: str, name: str) -> Listed | None:
        """The published prompt `name`, or None."""

    @abstractmethod
    async def render(self, tenant: str, name: str, arguments: Mapping[str, Any] | None, context: CallContext) -> dict[str, Any]:
        """`prompts/get`: `{"description", "messages"}` as MCP's wire shape. Raises `InvalidInput`
        naming the argument for arguments that break the prompt's, `ToolNotCallable` when its module fails."""

    @abstractmethod
    def listing_of(self, name: str, published: Any) -> Listed:
        """How `prompts/list` shows what `published` answered for `name`."""

    @abstractmethod
    def published(self, tenant: str, name: str) -> Any | None:
        """The published prompt `name` as `render_published` takes it (None when there is none):
        what a caller may keep while the store has not moved."""

    @abstractmethod
    async def render_published(self, published: Any, tenant: str, arguments: Mapping[str, Any] | None, context: CallContext,
                               tools: Any) -> dict[str, Any]:
        """`render` of what `published` answered."""

    @abstractmethod
    async def complete(self, tenant: str, name: str, argument: str, value: str, given: Mapping[str, str],
                       context: CallContext) -> list[str]:
        """`completion/complete` of one argument of the published prompt `name`: the values that
        start with `value` (at most 100)."""

    @abstractmethod
    def change_topics(self) -> Iterable[type]:
        """The event classes after which `prompts/list` may differ (a publish, a delete)."""
