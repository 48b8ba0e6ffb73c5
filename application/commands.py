"""The one path every command takes: load → change → save, retried on a conflict that is not the
client's (docs/rules.md, R10, B7).

Publishes, and saves that change an import or a tool name, are serialized per tenant by a
`GraphLock` (a thread lock with SQLite, an advisory lock across processes with PostgreSQL), and
each of them also records an event on the tenant's `ImportGraph` or `CallerRegistry`: one that
raced another anyway fails on that aggregate's version, is run again against the new state, and
so two publishes can never close a cycle or break a dependent between them. Saves that leave
every import and name as it was touch neither the lock nor the graph.

A command whose own subject (the module it changes) moved under it is not retried: it is a 409
(`ConcurrentChange`), or a 412 (`PreconditionFailed`) when the client said which version it
expected, and the other writer's change stands.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from uuid import UUID

from application.store import Store
from domain.errors import ConcurrentChange, PreconditionFailed
from domain.ports import GraphLock, ThreadGraphLock

ATTEMPTS = 5
T = TypeVar("T")


@dataclass(frozen=True)
class Subject:
    """The aggregate a command is about, as one attempt loaded it."""

    aggregate_id: UUID
    name: str
    version: int
    expected: int | None = None


class Change(Generic[T]):
    """What one attempt decided: what the command answers, the aggregates to save (none, or only
    Nones: nothing changed and nothing is recorded), and its subject, if a conflict on it is the
    client's rather than a reason to run the attempt again."""

    __slots__ = ("value", "aggregates", "subjects")

    def __init__(self, value: T, *, save: Iterable[Any] = (), subject: Subject | None = None,
                 subjects: Iterable[Subject] = ()) -> None:
        self.value = value
        self.aggregates = tuple(a for a in save if a is not None)
        # A changeset (B6) has one subject per module it publishes.
        self.subjects = (subject, *subjects) if subject is not None else tuple(subjects)


class CommandRunner:
    def __init__(self, store: Store, graph_lock: GraphLock | None = None) -> None:
        self._store = store
        self._graph_lock = graph_lock or ThreadGraphLock()

    @property
    def graph_lock(self) -> GraphLock:
        return self._graph_lock

    def run(self, attempt: Callable[[], Change[T]], *, name: str, lock: str | None = None) -> tuple[T, int | None]:
        """Runs `attempt` (which loads what it changes, for update, and changes it) and saves what
        it changed, atomically; answers its value and the log position to wait for (None when
        nothing was recorded). A save that raced another writer is run again from a fresh load,
        up to `ATTEMPTS` times, then refused as a `ConcurrentChange` naming `name`.

        `lock` is the tenant whose graph lock the whole run holds: every command that changes
        imports or the names tools hold takes it.
        """
        with self._graph_lock.hold(lock) if lock is not None else contextlib.nullcontext():
            for _ in range(ATTEMPTS):
                change = attempt()
                if not change.aggregates:
                    return change.value, None
                position = self._store.save_or_conflict(*change.aggregates)
                if position is not None:
                    return change.value, position
                for subject in change.subjects:
                    self._refuse_if_moved(subject)
        raise ConcurrentChange(name)

    @staticmethod
    def subject(aggregate: Any, name: str, expected: int | None = None) -> Subject:
        """The command's subject as this attempt loaded it; refused at once (B7) when the client
        expected another version."""
        if expected is not None and aggregate.version != expected:
            raise PreconditionFailed(name, expected, aggregate.version)
        return Subject(aggregate.id, name, aggregate.version, expected)

    def _refuse_if_moved(self, subject: Subject) -> None:
        """After a failed save: a conflict on the subject itself is the client's, not a retry; one
        on the tenant's graph or registry alone (another module's import change or publish) is
        retried. The event store says, not the cache: a retry from a stale cached version would
        overwrite the other change."""
        if self._store.moved_since(subject.aggregate_id, subject.version):
            if subject.expected is not None:
                raise PreconditionFailed(subject.name, subject.expected, None)
            raise ConcurrentChange(subject.name)
