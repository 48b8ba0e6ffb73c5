"""The boundaries the application drives: the code sandbox, and the names the tool kinds hold.

The embedded QuickJS runner (`sandbox/embedded.py`) and the client of the remote sandbox service
(`sandbox/remote.py`) implement `Sandbox`, held to the same contract tests.
"""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class SourceUnit:
    """One module of a bundle: its id, its source and the ids it imports."""

    name: str
    content: str
    imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class Execution:
    """What the sandbox runs: a bundle (dependencies first, the target last) and a call."""

    units: tuple[SourceUnit, ...]
    input: Any = None
    timeout_millis: int = 3_000
    memory_limit_mb: int = 128
    style: str = "module"
    is_tool: bool = True
    context: dict[str, Any] = field(default_factory=dict)
    # Parameters declared with V1's `date` type: their values become `Date` objects.
    date_parameters: tuple[str, ...] = ()
    # A tenant's session beyond its first few at once (docs/tenants.md, fair share): once it runs long,
    # the sandbox gives it the CPU only when nothing else wants it. Never changes its result.
    background: bool = False
    # Whether the sandbox writes the module's log lines to the service's log too. An API URL tool's
    # post-processing reads what the API answered, which may echo the tool's secrets: that call
    # writes its lines itself, once redacted (issue 28). Never changes its result.
    service_log: bool = True
    # Told of the call's log lines ("log", the line) and `ai.progress` reports ("progress", (done,
    # total, message)) while it runs (the embedded sandbox, and a `toolsmith sandbox` service that
    # streams them, sandbox.wire); never changes its result, and never compared (an MCP request's
    # notifications, api/mcp_progress.py).
    events: Callable[[str, Any], None] | None = field(default=None, compare=False, repr=False)

    @property
    def target(self) -> SourceUnit:
        return self.units[-1]


@dataclass(frozen=True)
class ExecutionError:
    """A typed failure: `syntax`, `runtime`, `timeout`, `memory`, `stack`, `link` or `result`."""

    type: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"type": self.type, "message": self.message}


@dataclass(frozen=True)
class ExecutionResult:
    output: Any = None
    error: ExecutionError | None = None
    logs: tuple[str, ...] = ()
    duration_millis: float = 0.0
    # A plan run's nodes in order, as far as it got: each {"node", "toolName", "output", "error",
    # "logs", "durationMillis"} (each output the next node's input). Empty for any other call.
    steps: tuple[dict[str, Any], ...] = ()
    # MCP content items (wire shapes: text, image, audio, resource, resource_link) when the code
    # returned content (domain.content); `output` is then the structured value, or None.
    content: tuple[dict[str, Any], ...] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Sandbox(ABC):
    """Runs JavaScript bundles in isolation. Implementations never raise for what the code does."""

    @abstractmethod
    def run(self, execution: Execution) -> ExecutionResult:
        """Loads the bundle and calls the target (`exports.run(input)` in module style)."""

    @abstractmethod
    def check(self, execution: Execution) -> ExecutionResult:
        """Loads the bundle without calling it, and checks that every import member used exists."""

    def check_then_run(self, execution: Execution, inputs: Sequence[Any]) -> tuple[ExecutionResult, list[ExecutionResult]]:
        """`check`, then, if it passed, `run` once per input (the bundle with that input), in order:
        the check's result and each run's (none when the check failed). Each run is a call of its
        own: a fresh context, the bundle's time and memory limits, its own error (a run that times
        out does not stop the next). A publish checks a module with its examples (B4) this way;
        the sandboxes make it one visit to one worker instead of 1 + len(inputs) calls."""
        checked = self.check(execution)
        if checked.error is not None:
            return checked, []
        return checked, [self.run(replace(execution, input=value)) for value in inputs]

    async def arun(self, execution: Execution) -> ExecutionResult:
        """`run` awaited from an event loop (an async route's tool call): by default `run` on a
        thread of anyio's pool, the one `run_in_threadpool` uses; the embedded runner awaits its
        worker's answer on the loop itself (`sandbox.embedded`)."""
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.run, execution)

    max_active_sessions: int = 0

    def busy(self) -> bool:
        """Whether every session is taken right now (a hint for a fast refusal, not a promise)."""
        return False

    def parallelism(self) -> int:
        """How many calls run side by side at full speed (the worker processes kept running): how
        many checks of one publish are given at once, so that the other sessions stay free for
        other callers' tool calls."""
        return 1


class ToolNames(ABC):
    """R2: the names every kind of tool holds (the registry of kinds answers, `application/kinds/`)."""

    @abstractmethod
    def holder_of(self, tenant: str, name: str) -> str | None:
        """What R2 calls the kind of tool that holds `name` (`MCP tool`, `native tool`, `plan`,
        `module`, …), or None when the name is free."""

    def users_of(self, tenant: str, name: str) -> dict[str, list[str]]:
        """R12 beyond plans and agents: what of the kinds names the tool `name` (a prompt its
        rendering module), by the kind's plural (`prompts`); empty when nothing does."""
        return {}


class NoOtherTools(ToolNames):
    """An event store opened without the kinds (a CLI command): no name is held."""

    def holder_of(self, tenant: str, name: str) -> str | None:
        return None


class GraphLock(ABC):
    """Serializes the changes of one tenant's import graph: publishes, and every save that changes
    an import. In one process a thread lock; across processes (PostgreSQL) an advisory lock.
    Correctness does not rest on it alone: each such change also advances the tenant's
    `ImportGraph` aggregate, whose version the event store checks. The lock keeps writers of one
    process from wasting work (a publish's sandbox checks) on conflicts they would then retry."""

    @abstractmethod
    def hold(self, tenant: str) -> AbstractContextManager[None]:
        """Holds the tenant's lock for the duration of a `with` block."""

    def close(self) -> None:
        """Releases what the lock keeps open (a cross-process lock's connections)."""


class ThreadGraphLock(GraphLock):
    """Serializes the graph changes of one tenant within this process (the cross-process lock
    takes it first, `infrastructure/locks.py`)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    @contextlib.contextmanager
    def hold(self, tenant: str) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(tenant, threading.Lock())
        with lock:
            yield


class SecretValues(ABC):
    """The tenant's secrets as a tool call reads them (docs/kinds/index.md): by id, decrypted only for the
    request that needs the value, never kept, logged or answered."""

    @abstractmethod
    def exists(self, tenant: str, secret_id: str) -> bool:
        """Whether `tenant` has a secret `secret_id` (a tool that names it may be saved)."""

    @abstractmethod
    def value(self, tenant: str, secret_id: str) -> str:
        """The secret's current value; raises `UnknownRecord` ("secret") when there is none."""


@dataclass(frozen=True)
class OutboundRequest:
    """One request a tool makes on the model's behalf (docs/kinds/api-url-tools.md), as the egress path sends it.
    `sensitive` names the (lower-case) headers whose values are secrets: dropped when a redirect
    leaves the origin, and never shown back."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    sensitive: frozenset[str] = frozenset()


@dataclass(frozen=True)
class OutboundResponse:
    status: int
    headers: list[tuple[str, str]]  # (lower-case name, value), in order
    body: bytes  # decoded (gzip, deflate)
    url: str  # the last hop's
    bytes_read: int = 0  # the body's bytes as they came off the network


class OutboundError(Exception):
    """Why an outbound request was refused or failed (the egress policy, a timeout, the byte cap,
    a connection); the message names no header value. `kind` is `refused`, `timeout`, `connect`
    or `response`."""

    def __init__(self, message: str, kind: str = "refused") -> None:
        super().__init__(message)
        self.kind = kind


class Outbound(ABC):
    """The one egress path for API URL tools and their token requests (docs/kinds/api-url-tools.md)."""

    @abstractmethod
    def send(self, request: OutboundRequest, *, seconds: float, connect_seconds: float, max_bytes: int,
             max_redirects: int) -> OutboundResponse:
        """The answer to `request` within the limits; raises `OutboundError`."""

    def close(self) -> None:
        """Releases the connections kept open."""


class SecretVault(ABC):
    """Where secret values are kept, encrypted, beside the event store (docs/kinds/index.md): one row per
    secret of a tenant, never in an event. Holds the value a secret's record names (by the
    fingerprint its newest event recorded) and, while a change is under way, the one before it,
    so that a reader between the new value's write and its event still gets the recorded one."""

    @abstractmethod
    def fingerprint(self, value: str) -> str:
        """What an event records of a value: a keyed hash (HMAC-SHA256 under a key derived from the
        service's secret key), 16 hex characters; the value cannot be found again from it."""

    @abstractmethod
    def put(self, tenant: str, secret_id: str, value: str, fingerprint: str, *, keeping: str | None) -> None:
        """Encrypts and stores `value` as the secret's newest; the stored value whose fingerprint
        is `keeping` (the one the record names now) is kept beside it, any other is dropped."""

    @abstractmethod
    def read(self, tenant: str, secret_id: str, fingerprint: str) -> str | None:
        """The stored value with this fingerprint, decrypted; None when none is stored. Raises
        `SecretUnreadable` when the ciphertext cannot be decrypted with the service's key."""

    @abstractmethod
    def delete(self, tenant: str, secret_id: str) -> None:
        """Forgets the secret's stored values."""

    @abstractmethod
    def ids(self, tenant: str) -> list[str]:
        """The ids of the tenant's stored secrets, sorted (a secret whose create was interrupted
        may be among them: its record says whether it exists)."""


# -- the read side (projections/interface.py implements it) ------------------------------------


@dataclass(frozen=True)
class ListQuery:
    """GET /api/v1/admin/code-modules's query, already validated."""

    search: str | None = None
    state: str | None = None
    tool: bool | None = None
    used_by: str | None = None
    # With `used_by`: the tools that the plan or agent of that id names, used by it too.
    also_used: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    offset: int = 0
    limit: int = 20
    order_by: str = "id"
    ascending: bool = True


@dataclass
class Page:
    collection: list[dict[str, Any]]
    total: int
    facets: dict[str, dict[str, int]] = field(default_factory=dict)


class ReadModelUnavailable(Exception):
    """The read model cannot answer now (its engine is down or overloaded); the API says 503."""
