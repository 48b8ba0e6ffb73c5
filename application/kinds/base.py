"""One interface for a kind of tool (docs/kinds/index.md; issue 13): what the catalog, R2, R14, R15, MCP
registration, admission, calls and the audit ask of every kind, so that none of them names one.

A kind says:

- who it is: its `call_type` (the catalog's `callType`, R15's unit) and its R2 `label` (what a 409
  and `availability` call a tool of this kind: `module`, `plan`, `native tool`, …);
- what it offers: its catalog `entries` (each a `ToolEntry` with its JSON Schema) and whether it
  `holds` a name (R2, which may reach further than the catalog: an unpublished module holds its
  name); whether it is `available` at all (code only while a sandbox is configured); which of
  its names an event `touched` and each one's `entry`, so the catalog keeps itself per change;
- how a call goes: `admit` refuses at once when the kind's own capacity is taken (only JavaScript
  waits on the JavaScript pool), `call` validates and executes, `check_permissions` adds what R14
  asks beyond the entry itself (a plan's nodes), `call_unlisted` explains a name the catalog does
  not list (a module's own reason);
- whose events are whose: `tenant_of` tells the audit export which tenant an event of its
  aggregates belongs to;
- what it keeps up to date from the log: `projections`, the read models it contributes (the one
  runner catches each up).

What it counts toward a tenant's quotas (`Counted`), which of its aggregates the store snapshots,
its CLI rebuild, its console navigation entry, the HTTP status of its own errors and the adapters
it needs from the settings are declared beside its routes (`api/kinds.py: KindPlugin`), so that the
core asks the registered kinds and names none.

Its REST and console routes are FastAPI routers, which this layer may not import: `api/kinds.py`
pairs a kind with them, and `entrypoints/kinds.py` is the one registry of the kinds.

A kind is built from `KindDeps` (the event store, the tools file's tools, the sandbox, and R2
over every kind). During a call it reaches the other kinds only through `Tools` (the toolbox), so
a plan runs any kind's tools without knowing which.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import contextmanager
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from jsonschema import Draft202012Validator

from application.context import CallContext
from domain.catalog import DeclaredTool, Permissions, ToolEntry
from domain.errors import InvalidInput, Violation
from domain.ports import ExecutionResult, Outbound, Sandbox, SecretValues, ToolNames

if TYPE_CHECKING:
    from application.commands import CommandRunner
    from application.execution import Execution
    from application.store import Store


class Tools(ABC):
    """What a kind may ask of the toolbox during a call: the catalog as R15 resolved it, and calls
    and admissions of any kind's tools (a plan's nodes)."""

    @abstractmethod
    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        """The tool a call of `name` reaches (R15), or None."""

    @abstractmethod
    def kind_of(self, entry: ToolEntry) -> ToolKind:
        """The kind an entry belongs to."""

    @abstractmethod
    def call_entry(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, depth: int) -> ExecutionResult:
        """Calls the tool of `entry` (its kind validates and runs it); the result is checked."""

    @abstractmethod
    def admit_entry(self, tenant: str, entry: ToolEntry, depth: int = 0) -> None:
        """Raises when the tool's kind cannot take a call now (its capacity is taken)."""

    @abstractmethod
    def answer(self, result: ExecutionResult) -> ExecutionResult:
        """The check every result passes before anyone sees it (for a run that is not a tool call)."""


class Ranked(Mapping[str, ToolEntry]):
    """The other kinds' winners by name, for a kind whose entries derive from theirs (a plan takes
    its first node's schema), with R15's order between call types."""

    def __init__(self, winners: Mapping[str, ToolEntry], order: Sequence[str]) -> None:
        self._winners = winners
        self._order = order

    def __getitem__(self, name: str) -> ToolEntry:
        return self._winners[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._winners)

    def __len__(self) -> int:
        return len(self._winners)

    def outranks(self, call_type: str, other: str) -> bool:
        """Whether R15 calls a tool of `call_type` rather than one of `other` of the same name."""
        return self._order.index(call_type) < self._order.index(other)


@dataclass(frozen=True)
class KindDeps:
    """What the composition root hands every kind it builds."""

    store: Store  # the event store
    execution: Execution  # runs code modules
    commands: CommandRunner  # load → change → save, for a kind's own commands
    names: ToolKinds  # R2 over every kind, for a kind's own commands
    declared: Sequence[DeclaredTool] = ()  # the tools file's native and external MCP tools
    sandbox: Sandbox | None = None  # None: code execution is switched off
    secrets: SecretValues | None = None  # the tenants' secrets, read by id during a call
    outbound: Outbound | None = None  # the one egress path for a kind's outbound requests (docs/kinds/api-url-tools.md)
    # What each kind's plugin built for it from the settings (`KindPlugin.resources`), by call type.
    resources: Mapping[str, Any] = field(default_factory=dict)
    quotas: Any = None  # the tenants' quotas, checked by a kind's creates (`application.quotas.Quotas`; None: none are)


@dataclass(frozen=True)
class Counted:
    """What one aggregate type of a kind counts toward a tenant's quotas (docs/tenants.md): each live
    `aggregate` (created, or created again, and not deleted since: its `Created`, `Recreated` and
    `Deleted` events, each naming its `tenant`) is one of `quota`; `contents` says what a live one
    holds of the quotas `holds` (a File Search tool's documents and their bytes), read from the
    aggregate as the store has it."""

    aggregate: type[Any]
    quota: str  # named as `domain/tenants.py` names the quotas
    contents: Callable[[Any], Mapping[str, int]] | None = None
    holds: tuple[str, ...] = ()


# What `ToolKind.touched` answers for a kind that cannot say which of its tools an event changed.
OPAQUE: frozenset[str] = frozenset({"*"})


class ToolKind(ABC):
    """One kind of tool. Subclasses set `call_type` and `label`, and are built from `KindDeps`."""

    call_type: str
    label: str
    # True for a kind whose entries derive from the other kinds' (see `entries`): built after them.
    derived = False

    def __init__(self, deps: KindDeps) -> None:
        self.deps = deps

    # -- the catalog and R2 --------------------------------------------------------------------

    @abstractmethod
    def entries(self, tenant: str, others: Ranked) -> list[ToolEntry]:
        """This kind's tools of `tenant`. `others` holds the other kinds' winners for a `derived`
        kind, and is empty for the rest."""

    def entry(self, tenant: str, name: str) -> ToolEntry | None:
        """This kind's tool `name` of `tenant` as the catalog lists it, or None: what the catalog
        reads again for a name an event `touched`. (This default reads every entry: a kind with
        many tools answers from one aggregate.) A `derived` kind is never asked."""
        return next((e for e in self.entries(tenant, Ranked({}, ())) if e.name == name), None)

    def touched(self, event: Any) -> Collection[str] | None:
        """The names of this kind's tools that `event` may have changed, so that the catalog reads
        only those again (in the event's tenant: its `tenant`, or its aggregate's); None when the
        event is none of this kind's. A kind that does not say (this default, `OPAQUE`) is read
        again in full whenever its tenant's catalog moves, as every kind was before."""
        return OPAQUE

    @abstractmethod
    def holds(self, tenant: str, name: str) -> bool:
        """R2: whether a tool of this kind holds `name` in `tenant`, listed in the catalog or not."""

    def users_of(self, tenant: str, name: str) -> Sequence[str]:
        """Which of this kind's items name the tool `name` (a prompt rendered by a module): R12
        refuses the tool's delete while one does, and its used-by lists them. None by default."""
        return ()

    def members(self, tenant: str, name: str) -> Sequence[str]:
        """The entries a name stands for when a server or a usage profile names it, besides itself
        (a File Search tool's capabilities); empty for a name that is one tool."""
        return ()

    @property
    def available(self) -> bool:
        """Whether this kind's tools can run at all; MCP leaves out the tools of a kind that cannot."""
        return True

    # -- calls ---------------------------------------------------------------------------------

    def saturated(self) -> bool:
        """Whether this kind's own capacity is taken right now (a hint for a fast refusal, not a
        promise). A kind without a bound is never saturated."""
        return False

    def admit(self, tenant: str, entry: ToolEntry, tools: Tools, depth: int) -> None:
        """Raises at once when a call of `entry` cannot be taken now, before any thread or queue."""

    def check_permissions(self, tenant: str, entry: ToolEntry, permissions: Permissions, tools: Tools) -> None:
        """R14 beyond the entry itself, for a caller that is not an admin (a plan's nodes)."""

    @abstractmethod
    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: CallContext, tools: Tools, depth: int) -> ExecutionResult:
        """Validates the arguments before anything runs, then runs the tool. Raises `InvalidInput`
        or `ToolNotCallable` for a refusal; a failure of the tool itself is an error result."""

    def call_unlisted(self, tenant: str, name: str, arguments: Any, context: CallContext) -> ExecutionResult | None:
        """An admin's call of a name the catalog does not list: this kind's own reason (raised),
        or None when the name is none of its tools."""
        return None

    @contextmanager
    def traced(self) -> Iterator[list[dict[str, Any]]]:
        """While open, collects what each call of this kind's tools made in this context sent out and
        got back (each a trace, its secrets already replaced), for the console's test of a call (the
        Playground): the list is filled when the block ends. A kind that keeps no trace (this
        default) leaves it empty."""
        yield []

    # -- secrets -------------------------------------------------------------------------------

    def secrets_used(self, tenant: str) -> Mapping[str, Sequence[str]]:
        """Which of `tenant`'s secrets this kind's tools refer to: secret id -> tool names (a
        secret in use cannot be deleted, and the console shows who uses each)."""
        return {}

    # -- the audit -----------------------------------------------------------------------------

    def tenant_of(self, state: Mapping[str, Any], aggregate_id: UUID) -> str | None:
        """The tenant an event of this kind's aggregates belongs to: the one its state names, when
        the aggregate's id (derived from the tenant) confirms it; None for any other event."""
        return None

    # -- read models ---------------------------------------------------------------------------

    def projections(self) -> Sequence[Any]:
        """The read models this kind contributes, each a follower the one projection runner
        catches up (`application/projected.py: Follower`); none by default."""
        return ()

    def start(self) -> None:
        """Starts what the kind does in the background (the service's start; a CLI never calls it)."""

    def close(self) -> None:
        """Releases what the kind keeps open."""


K = TypeVar("K", bound=ToolKind)


class ToolKinds(ToolNames):
    """The kinds of one service, in R15's order: the one place the catalog, R2 and the audit learn
    which kinds exist. Made empty and filled once its kinds are built (they are handed it, for R2)."""

    def __init__(self) -> None:
        self._kinds: list[ToolKind] = []
        self._by_type: dict[str, ToolKind] = {}

    def install(self, kinds: Iterable[ToolKind]) -> None:
        for kind in kinds:
            if kind.call_type in self._by_type:
                raise ValueError(f"two kinds of tool have the call type {kind.call_type!r}")
            self._kinds.append(kind)
            self._by_type[kind.call_type] = kind

    def __iter__(self) -> Iterator[ToolKind]:
        return iter(self._kinds)

    @property
    def order(self) -> tuple[str, ...]:
        """R15: when two tools share a name, the kind listed first is the one called."""
        return tuple(kind.call_type for kind in self._kinds)

    def of(self, call_type: str) -> ToolKind:
        return self._by_type[call_type]

    def find(self, cls: type[K]) -> K:
        """The installed kind of class `cls` (for that kind's own routes)."""
        return next(kind for kind in self._kinds if isinstance(kind, cls))

    def holder_of(self, tenant: str, name: str, *, besides: str | None = None) -> str | None:
        """R2: the label of the first kind, in R15's order, holding `name` in `tenant`, leaving out
        the kind labelled `besides` (one asking about a tool of its own); None when free."""
        for kind in self._kinds:
            if kind.label != besides and kind.holds(tenant, name):
                return kind.label
        return None

    def users_of(self, tenant: str, name: str) -> dict[str, list[str]]:
        """Each kind's items that name the tool `name`, by the kind's plural (`prompts`)."""
        found = {f"{kind.label}s": list(users) for kind in self._kinds if (users := kind.users_of(tenant, name))}
        return found

    def members(self, tenant: str, name: str) -> list[str]:
        """`name` and every entry it stands for (a File Search tool's capabilities)."""
        return [name, *(member for kind in self._kinds for member in kind.members(tenant, name))]

    def start(self) -> None:
        for kind in self._kinds:
            kind.start()

    def close(self) -> None:
        for kind in self._kinds:
            kind.close()


def validated(schema: dict[str, Any], arguments: Any) -> Any:
    """The declared JSON Schema, checked before the tool runs; every problem named by its path."""
    if arguments is None:
        arguments = {}
    errors = sorted(Draft202012Validator(schema).iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidInput([Violation(_path(e), "V1", e.message) for e in errors])
    return arguments


def _path(error: Any) -> str:
    path = "input" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    if error.validator == "required":
        # "'amount' is a required property": name the missing argument itself.
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else ""
        return f"{path}.{missing}" if missing else path
    return path


def tagged(tags: Iterable[str], kind_tag: str) -> tuple[str, ...]:
    """A tool's tags with its kind's own tag last (R9: every code tool carries `code`)."""
    return tuple(dict.fromkeys([*tags, kind_tag]))
