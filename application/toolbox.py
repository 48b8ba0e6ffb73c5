"""The tool catalog and every way a tool is called (DESIGN §2 R2, R14–R16; §3 catalog; §4 MCP).

The catalog of a tenant is every installed kind's entries (`application/kinds/`), resolved by R15
in the kinds' order. It is kept per tenant for as long as the event store's position does not
move, so MCP's `tools/list` and the change watch that sends `list_changed` cost one position query
while nothing changes.

A call resolves the name (R15), checks the caller's permissions (R14, and what the tool's kind adds
to them), and hands the call to the tool's kind, which validates the arguments before anything
runs and executes it. Admission comes first and is the kind's own: only a kind with a bound (code,
on the JavaScript pool) refuses when its capacity is taken; the toolbox never names a kind.

Every result, whatever kind of tool produced it, passes `answered` before anyone sees it: a value
nested deeper than `MAX_DEPTH` becomes a `result` error, and lone surrogates become U+FFFD.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from application.kinds.base import K, Ranked, ToolKind, ToolKinds, Tools
from application.store import Store
from domain import callers
from domain.catalog import EVERYTHING, NOTHING, Permissions, ToolEntry, resolve
from domain.errors import ToolNotCallable, UnknownRecord
from domain.ports import ExecutionError, ExecutionResult
from domain.values import TOO_DEEP_RESULT, lone_surrogate_at, too_deep, well_formed

ADMIN = "admin"
CALLER = "caller"


class _Catalog:
    """One tenant's resolved entries at one position, indexed for the call path."""

    __slots__ = ("position", "entries", "winners", "names")

    def __init__(self, position: int, entries: list[ToolEntry]) -> None:
        self.position = position
        self.entries = entries
        self.winners = {e.name: e for e in entries if e.shadowed_by is None}
        self.names = frozenset(e.name for e in entries)


class Toolbox(Tools):
    def __init__(self, store: Store, kinds: ToolKinds) -> None:
        self._store = store
        self._kinds = kinds
        self._cache: dict[str, _Catalog] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self._kinds.close()

    @property
    def kinds(self) -> ToolKinds:
        return self._kinds

    def kind(self, cls: type[K]) -> K:
        """The installed kind of class `cls`, for that kind's own routes."""
        return self._kinds.find(cls)

    def kind_of(self, entry: ToolEntry) -> ToolKind:
        return self._kinds.of(entry.call_type)

    @property
    def call_types(self) -> tuple[str, ...]:
        """Every kind's call type, in R15's order."""
        return self._kinds.order

    # -- the catalog -------------------------------------------------------------------------

    def generation(self) -> int:
        """Changes whenever what the catalog or any MCP server shows may have changed."""
        return self._store.position()

    def entries(self, tenant: str) -> list[ToolEntry]:
        """Every tool of the tenant, sorted by name; those that lose R15 carry `shadowed_by`."""
        return self._catalog(tenant).entries

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        """The tool a call of `name` reaches (R15), or None."""
        return self._catalog(tenant).winners.get(name)

    def names(self, tenant: str) -> frozenset[str]:
        return self._catalog(tenant).names

    def holder_of(self, tenant: str, name: str, *, besides: str | None = None) -> str | None:
        """R2: what the kind holding `name` calls its tools (other than kind `besides`), or None."""
        return self._kinds.holder_of(tenant, name, besides=besides)

    def listed_besides(self, tenant: str, name: str, besides: str) -> bool:
        """Whether the catalog lists a tool `name` of a kind other than the one labelled `besides`."""
        return any(e.name == name and self.kind_of(e).label != besides for e in self.entries(tenant))

    def _catalog(self, tenant: str) -> _Catalog:
        """The tenant's catalog as of the event store's position, built once per position."""
        position = self.generation()
        with self._lock:
            cached = self._cache.get(tenant)
        if cached is not None and cached.position == position:
            return cached
        built = _Catalog(position, resolve(self._build(tenant), self._kinds.order))
        with self._lock:
            self._cache[tenant] = built
        return built

    def _build(self, tenant: str) -> list[ToolEntry]:
        """Every kind's entries; a kind whose entries derive from the others' (a plan takes its first
        node's schema) is built after them, handed their winners."""
        order = self._kinds.order
        nothing = Ranked({}, order)
        entries = [e for kind in self._kinds if not kind.derived for e in kind.entries(tenant, nothing)]
        others = Ranked({e.name: e for e in resolve(entries, order) if e.shadowed_by is None}, order)
        entries += [e for kind in self._kinds if kind.derived for e in kind.entries(tenant, others)]
        return entries

    def offered(self, tenant: str, permissions: Permissions, server_id: str | None = None) -> list[ToolEntry]:
        """MCP registration (DESIGN §4): the chat-exposed, enabled, configured tools the caller may
        use; on a named server, only those attached to it. A kind that cannot run (code without a
        sandbox) offers nothing."""
        attached: set[str] | None = None
        if server_id is not None:
            server = self._store.registry(tenant).get(callers.SERVER, server_id)
            if server is None:
                raise UnknownRecord(callers.SERVER, server_id)
            attached = set(server["tools"])
        if permissions.none:
            return []
        return [
            entry
            for entry in self.entries(tenant)
            if entry.offered_in_chat
            and (attached is None or entry.name in attached)
            and self.kind_of(entry).available
            and permissions.allow(entry)
        ]

    def permissions(self, tenant: str, role: str, usage_profile: str | None) -> Permissions:
        """R14: an admin may use every tool; a caller what its usage profile allows; others none."""
        if role == ADMIN:
            return EVERYTHING
        if role != CALLER or usage_profile is None:
            return NOTHING
        profile = self._store.registry(tenant).get(callers.PROFILE, usage_profile)
        if profile is None:
            return NOTHING
        return Permissions(tools=frozenset(profile["allowedTools"]), tags=frozenset(profile["allowedTags"]))

    # -- admission ---------------------------------------------------------------------------

    def admit(self, tenant: str, name: str) -> None:
        """Refuses at once (the kind's own error: `SandboxBusy` for code) a call of `name` whose
        kind's capacity is taken, before the call goes to a thread. While no kind is saturated (the
        usual case) this asks nothing of the event store."""
        if not any(kind.saturated() for kind in self._kinds):
            return
        entry = self.entry(tenant, name)
        if entry is not None:
            self.admit_entry(tenant, entry)

    def admit_entry(self, tenant: str, entry: ToolEntry, depth: int = 0) -> None:
        self.kind_of(entry).admit(tenant, entry, self, depth)

    # -- calls -------------------------------------------------------------------------------

    def call(self, tenant: str, name: str, arguments: Any, *, permissions: Permissions, context: dict[str, Any]) -> ExecutionResult:
        """Runs the tool `name` resolves to; refuses before anything runs when it may not."""
        entry = self.entry(tenant, name)
        if entry is None or not permissions.allow(entry):
            if permissions.everything:
                for kind in self._kinds:
                    # A kind's own reason for a tool the catalog does not list (a module not published).
                    result = kind.call_unlisted(tenant, name, arguments, context)
                    if result is not None:
                        return answered(result)
            raise ToolNotCallable(name, "no such tool" if permissions.everything or entry is None else "not allowed for this caller (R14)")
        if not permissions.everything:
            self.kind_of(entry).check_permissions(tenant, entry, permissions, self)
        return self.call_entry(tenant, entry, arguments, context, depth=0)

    def call_entry(self, tenant: str, entry: ToolEntry, arguments: Any, context: dict[str, Any], depth: int) -> ExecutionResult:
        """Hands the call to the tool's kind; whatever it answers passes `answered`."""
        if not entry.enabled:
            raise ToolNotCallable(entry.name, "the tool is disabled")
        return answered(self.kind_of(entry).call(tenant, entry, arguments, context, self, depth))

    def answer(self, result: ExecutionResult) -> ExecutionResult:
        return answered(result)


def answered(result: ExecutionResult) -> ExecutionResult:
    """The one check every tool result passes before it is answered, over REST and MCP alike: an
    output nested deeper than `MAX_DEPTH` is a `result` error (no encoder has to recurse into it),
    and a lone surrogate in the output, the logs or the error's message becomes U+FFFD."""
    if result.error is None and too_deep(result.output):
        error = ExecutionError("result", TOO_DEEP_RESULT)
        result = dataclasses.replace(result, output=None, error=error)
    message = result.error.message if result.error is not None else None
    if lone_surrogate_at([result.output, list(result.logs), message]) is None:
        return result
    return dataclasses.replace(
        result,
        output=well_formed(result.output),
        logs=tuple(well_formed(list(result.logs))),
        error=None if result.error is None else ExecutionError(result.error.type, well_formed(result.error.message)),
    )
