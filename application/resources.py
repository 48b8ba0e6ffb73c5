"""MCP resources (docs/mcp.md, Resources): what a kind offers to read beside its tools.

A kind that has resources (a File Search tool's documents, each one a resource) is a
`ResourceSource`: it lists a tenant's resources, finds one by its URI, reads its text a page at a
time, and says which catalog names a caller must be offered for a resource to be shown to it (its
`shown_by`): the tenant and the usage profile rules, and a server's attached tools, are the tools'
own, so a caller sees a resource exactly when it is offered one of the tools it belongs to. The
MCP layer (`api/mcp_resources.py`) asks every installed kind that is one, never a kind by name.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# The most characters one `resources/read` answers with; a longer text is read in pages (its
# `nextUri`, the same URI with `?offset=`), as the `fetch` capability pages it.
READ_MAX_CHARS = 1_000_000


@dataclass(frozen=True)
class ResourceItem:
    """One resource as `resources/list` shows it. `stamp` changes whenever what a read answers, or
    how the resource is listed, changes (a document uploaded again after its delete, a new title)."""

    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str
    updated_at: str | None
    stamp: Hashable
    shown_by: tuple[str, ...]
    # A resource offered by its own name (`key`) and tags, as a tool is (an admin's published
    # resource), rather than by the tools it belongs to.
    key: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResourceTemplateItem:
    uri_template: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    shown_by: tuple[str, ...] = ()  # neither this nor `key`: a shape every caller may know
    key: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ResourceText:
    """A page of a resource's text: `text` starts at character `offset` of `total`; `next_uri`
    reads the next page (None: this page ends the text)."""

    uri: str
    mime_type: str
    text: str
    offset: int
    total: int
    next_uri: str | None
    source_media_type: str | None = None
    blob: str | None = None  # base64, for a binary resource (then `text` is empty)


@runtime_checkable
class ResourceSource(Protocol):
    def resource_stamp(self, tenant: str) -> Hashable:
        """Cheap, and changes whenever any of the tenant's resources of this kind may have changed."""

    def resource_items(self, tenant: str) -> Sequence[ResourceItem]:
        """Every resource of the tenant of this kind (blocking: the store)."""

    def resource_item(self, tenant: str, uri: str) -> ResourceItem | None:
        """The resource `uri` names (its `?offset=` aside), or None: not this kind's, or not there."""

    def resource_text(self, tenant: str, uri: str, limit: int, context: Any = None, tools: Any = None) -> ResourceText | None:
        """Up to `limit` characters of the resource's text from where `uri` says (a page's URI), or
        None if it is not there. Raises ValueError for a page past the text's end (or a rendering
        that failed, with why). `context` is the request's `CallContext` and `tools` the toolbox, for
        what a module renders."""

    def resource_templates(self, tenant: str) -> Sequence[ResourceTemplateItem]:
        """The URI templates the tenant's resources of this kind follow."""


@dataclass(frozen=True)
class ResourceMatch:
    """Which resource a URI is, as `ReadsOnTheLoop.resource_match_as_read` found it: the item (to
    decide who may see it) and what the kind needs to read it (`detail`, the kind's own)."""

    item: ResourceItem
    detail: Any


class NotKept:
    """`resource_match_as_read`'s answer when the kind could only tell by reading its store."""


NOT_KEPT = NotKept()


@runtime_checkable
class ReadsOnTheLoop(Protocol):
    """A `ResourceSource` that may be read on the event loop, without a worker thread, while what it
    keeps is current (an admin's published resources: what a module renders is an awaited tool call)."""

    def resource_match_as_read(self, tenant: str, uri: str) -> ResourceMatch | None | NotKept:
        """The resource `uri` is, found in what the kind keeps as of the store's position, with no
        I/O; None: none of this kind's; `NOT_KEPT`: it cannot tell without reading (then
        `resource_item` and `resource_text`, in a worker thread, answer)."""

    async def aresource_text(self, tenant: str, match: ResourceMatch, limit: int, context: Any, tools: Any) -> ResourceText:
        """`resource_text` of the matched resource, awaited on the loop (its module's call too)."""


def resource_sources(kinds: Sequence[object]) -> list[ResourceSource]:
    """The installed kinds that have resources, in the registry's order."""
    return [kind for kind in kinds if isinstance(kind, ResourceSource)]
