"""Fair share of the code sandbox between tenants (docs/tenants.md): each tenant holds at most `limit`
sandbox sessions at once (`TOOLSMITH_TENANT_MAX_SESSIONS`), whichever sandbox runs them (the
embedded pool or the remote service), and its sessions beyond its first `foreground` ones are
marked background (`Execution.background`): the sandbox lets them yield the CPU entirely once they
run long, where any long program only yields some (`sandbox.embedded`). So one tenant's flood
neither takes every session nor slows another tenant's calls.

One more session than the limit is refused at once with `TenantBusy` (429): nothing queues, so no
API thread waits on another tenant's share. Every visit to the sandbox is one session: a tool call,
a test run, an example, and each check of a publish. A publish's checks spread over the sandbox's
workers, but never wider than the tenant's limit, and a check beyond the first starts only while
the tenant has a session to spare (`TenantSandbox.busy`, read by `checked_in_order`, which starts a
refused check again once one of its own ends): a publish never refuses itself; it is refused only
when the tenant's other calls hold every one of its sessions. The count is per API process.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from domain.errors import TenantBusy
from domain.ports import Execution, ExecutionResult, Sandbox


def foreground_sessions() -> int:
    """How many sessions of one tenant are not background: half the CPUs this process may use (at
    least one). Beyond them a tenant's long-running sessions could only take CPU from others."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, cpus // 2)


class TenantSessions:
    """The sandbox sessions each tenant holds right now, under one lock."""

    def __init__(self, limit: int, *, foreground: int | None = None) -> None:
        if limit < 1:
            raise ValueError("a tenant holds at least one sandbox session")
        self.limit = limit
        self.foreground = foreground_sessions() if foreground is None else foreground
        self._held: dict[str, int] = {}
        self.refused: dict[str, int] = {}  # each tenant's sessions refused (TenantBusy): the metrics read it
        self._lock = threading.Lock()

    def held(self, tenant: str) -> int:
        return self._held.get(tenant, 0)

    def held_now(self) -> dict[str, int]:
        """Each tenant's sessions held now (those holding any)."""
        with self._lock:
            return dict(self._held)

    def busy(self, tenant: str) -> bool:
        """Whether `tenant` holds every session of its share (a hint, as `Sandbox.busy` is)."""
        return self._held.get(tenant, 0) >= self.limit

    @contextmanager
    def session(self, tenant: str) -> Iterator[bool]:
        """One session of `tenant` for the `with` block, or `TenantBusy` at once; yields whether
        it is a background one (beyond the tenant's first `foreground` at once)."""
        with self._lock:
            held = self._held.get(tenant, 0)
            if held >= self.limit:
                self.refused[tenant] = self.refused.get(tenant, 0) + 1
                raise TenantBusy(self.limit)
            self._held[tenant] = held + 1
        try:
            yield held >= self.foreground
        finally:
            with self._lock:
                left = self._held[tenant] - 1
                if left:
                    self._held[tenant] = left
                else:
                    del self._held[tenant]

    def sandbox(self, tenant: str, sandbox: Sandbox) -> TenantSandbox:
        """`sandbox` as `tenant` uses it: each call a session of its share."""
        if isinstance(sandbox, TenantSandbox):
            return sandbox
        return TenantSandbox(sandbox, self, tenant)


class TenantSandbox(Sandbox):
    """A sandbox seen through one tenant's share: each call holds one of the tenant's sessions
    (`TenantBusy` when none is left) and is marked `background` beyond the tenant's first few."""

    def __init__(self, sandbox: Sandbox, sessions: TenantSessions, tenant: str) -> None:
        self.inner = sandbox
        self.sessions = sessions
        self.tenant = tenant

    @property
    def max_active_sessions(self) -> int:  # type: ignore[override]
        return self.inner.max_active_sessions

    def run(self, execution: Execution) -> ExecutionResult:
        with self.sessions.session(self.tenant) as background:
            return self.inner.run(_marked(execution, background))

    async def arun(self, execution: Execution) -> ExecutionResult:
        """`run` awaited on the event loop: the tenant's session is held while the inner sandbox's
        `arun` is awaited (no thread for the embedded sandbox), and freed when it ends or is cancelled."""
        with self.sessions.session(self.tenant) as background:
            return await self.inner.arun(_marked(execution, background))

    def check(self, execution: Execution) -> ExecutionResult:
        with self.sessions.session(self.tenant) as background:
            return self.inner.check(_marked(execution, background))

    def check_then_run(self, execution: Execution, inputs: Sequence[Any]) -> tuple[ExecutionResult, list[ExecutionResult]]:
        with self.sessions.session(self.tenant) as background:
            return self.inner.check_then_run(_marked(execution, background), inputs)

    def busy(self) -> bool:
        return self.sessions.busy(self.tenant) or self.inner.busy()

    def parallelism(self) -> int:
        return max(1, min(self.inner.parallelism(), self.sessions.limit))


def _marked(execution: Execution, background: bool) -> Execution:
    return dataclasses.replace(execution, background=True) if background and not execution.background else execution
