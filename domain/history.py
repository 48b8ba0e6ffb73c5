"""A module's history as an auditor reads it (docs/rules.md B1, B2): every event, every published
version, and the module as it stood at any instant, all from the event store.

`as_of` replays the module's own events up to an instant: the same events, applied the same way,
as every live read. Events of one aggregate are recorded in order, so the replay stops at the first
event after the instant.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from domain.chain import OWN_HASH
from domain.model import CodeModule, ImportGraph

# Attributes every event has, shown once each rather than in `data`.
_ENVELOPE = ("originator_id", "originator_version", "timestamp", "tenant", "module_id", "by", "previous_hash", OWN_HASH)


def entry(event: Any) -> dict[str, Any]:
    """One event of `GET /{id}/history`: its type, version, time, author and what it recorded."""
    data = {_camel(k): v for k, v in event.__dict__.items() if k not in _ENVELOPE}
    return {
        "type": type(event).__name__,
        "version": event.originator_version,
        "at": event.timestamp,
        "by": getattr(event, "by", None),
        "data": data,
        "previousHash": event.previous_hash,
        "hash": event.__dict__.get(OWN_HASH),
    }


def versions(events: Iterable[Any]) -> list[dict[str, Any]]:
    """Every published version, oldest first (versions go on across a delete and a recreate)."""
    return [version(e) for e in events if isinstance(e, CodeModule.Published)]


def version(event: CodeModule.Published) -> dict[str, Any]:
    return {"version": event.version, "publishedAt": event.timestamp, "publishedBy": event.by, **event.definition,
            "changeset": getattr(event, "changeset", None), "message": getattr(event, "message", None)}


def replay(events: Iterable[Any], at: datetime) -> Any | None:
    """The aggregate as it stood at `at` (None when it did not exist yet)."""
    aggregate = None
    for event in events:
        if event.timestamp > at:
            break
        aggregate = event.mutate(aggregate)
    return aggregate


def module_as_of(events: Iterable[Any], at: datetime) -> CodeModule | None:
    """The module at `at`; None when it did not exist then or was deleted."""
    module = replay(events, at)
    return None if module is None or module.deleted else module


def importers_as_of(graph_events: Iterable[Any], module_id: str, at: datetime) -> list[str]:
    graph: ImportGraph | None = replay(graph_events, at)
    return [] if graph is None else [m for m in graph.importers_of(module_id) if m != module_id]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
