"""The tool catalog's vocabulary (docs/rules.md R2, R14, R15; docs/rest-api.md catalog; docs/mcp.md registration).

Every kind of tool (`application/kinds/`) shares one name space. A `ToolEntry` describes a tool of
any kind the same way for the catalog, MCP's `tools/list`, plans and agents; its `call_type` names
its kind. When two tools share a name, R15 decides which one a call reaches (the kinds' order, which
the registry of kinds gives); the others stay listed with `shadowed_by`.

`Permissions` are what a caller may use (R14): everything for an admin, else the tools and tags of
the caller's usage profile. A caller whose token resolves no profile, or a profile that names
nothing, gets no tool at all.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from domain.ports import ExecutionResult


@dataclass(frozen=True)
class ToolEntry:
    """One tool as the catalog, MCP and the callers see it."""

    name: str
    description: str
    call_type: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    tags: tuple[str, ...] = ()
    expose_in_chat: bool = False
    enabled: bool = True
    # False for what MCP registration skips silently: an empty source (docs/kinds/code-modules.md).
    configured: bool = True
    # The call type that wins R15 over this entry, when another tool holds the same name.
    shadowed_by: str | None = None
    # Whose permissions a call of it runs with beyond its own: `caller` for a plan (R14).
    runs_with: str | None = None
    # True for a tool that only reads (MCP's readOnlyHint): a File Search tool's capabilities.
    read_only: bool = False
    # MCP's annotations (title and the four hints, wire names), derived by the kind and overlaid
    # by the admin's within what is true (domain.annotations, R17); None: none are shown. And its
    # icons (src, mimeType, sizes, theme), as listed.
    annotations: dict[str, Any] | None = None
    icons: tuple[dict[str, Any], ...] = ()
    # The tool this entry is one capability of (a File Search tool's name): naming the group on a
    # server or in a usage profile names all its capabilities.
    group: str | None = None
    # The version a call of it runs, for a kind whose tools have versions (a code module's
    # published version); what the call log records (docs/calls.md).
    version: int | None = None
    # The JSON Schema 2020-12 its results are checked against and listed with (MCP's outputSchema).
    output_schema: dict[str, Any] | None = None

    @property
    def offered_in_chat(self) -> bool:
        """Registration rules (docs/mcp.md): enabled, configured, callable in chat, not shadowed."""
        return self.enabled and self.configured and self.expose_in_chat and self.shadowed_by is None


@dataclass(frozen=True)
class Permissions:
    """R14: what a caller may use. `everything` for admins; else tools by name or by tag."""

    everything: bool = False
    tools: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()

    def allow(self, entry: ToolEntry) -> bool:
        if self.everything:
            return True
        return entry.name in self.tools or entry.group in self.tools or not self.tags.isdisjoint(entry.tags)

    @property
    def none(self) -> bool:
        return not self.everything and not self.tools and not self.tags


EVERYTHING = Permissions(everything=True)
NOTHING = Permissions()


# The call types of the tools the tools file declares: native tools and external MCP tools.
LOCAL = "LOCAL"
MCP = "MCP"


class DeclaredTool(ABC):
    """A native (`LOCAL`) or external MCP (`MCP`) tool declared in the tools file, not in the event store."""

    entry: ToolEntry

    @abstractmethod
    def call(self, arguments: dict[str, Any], context: dict[str, Any]) -> ExecutionResult:
        """Runs the tool. Never raises for what the tool does: a failure is an error result."""

    def close(self) -> None:
        """Releases what the tool keeps open."""


def resolve(entries: Iterable[ToolEntry], order: Sequence[str]) -> list[ToolEntry]:
    """Every entry, sorted by name, each one that loses R15 to another marked `shadowed_by`: when
    two tools share a name, the one whose call type comes first in `order` is the one called."""
    by_name: dict[str, list[ToolEntry]] = {}
    for entry in entries:
        by_name.setdefault(entry.name, []).append(entry)
    resolved: list[ToolEntry] = []
    for name in sorted(by_name):
        resolved.extend(ranked(sorted(by_name[name], key=lambda e: order.index(e.call_type))))
    return resolved


def ranked(holders: Sequence[ToolEntry]) -> tuple[ToolEntry, ...]:
    """R15 for one name: `holders` in the kinds' order, the first the one called, the others
    marked `shadowed_by` it."""
    if not holders:
        return ()
    winner = holders[0]
    return (winner, *(replace(e, shadowed_by=winner.call_type) for e in holders[1:]))


def shown_alike(before: ToolEntry, after: ToolEntry) -> bool:
    """Whether a client of MCP sees two entries of one name alike (description, schema, tags):
    when not, a session offered the tool is told its list changed."""
    return (before.description, before.input_schema, before.tags, before.read_only, before.annotations, before.icons,
            before.output_schema) == (
        after.description, after.input_schema, after.tags, after.read_only, after.annotations, after.icons, after.output_schema)
