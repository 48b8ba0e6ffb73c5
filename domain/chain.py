"""Tamper evidence (docs/rules.md B5): each event carries the hash of the event before it in its aggregate.

`Chained` aggregates give every event a `previous_hash`: the SHA-256 of the previous event of the
same aggregate (empty for the first). An event's hash covers its type, its aggregate, its version,
its time and every attribute (its `previous_hash` included), as canonical JSON, so changing any
byte of what an event says changes its hash and breaks the link the next event holds. The chain is
kept on the aggregate as it is built or replayed (`chain_head`), so recording an event costs one
hash of the event before it, already known.

What a chain cannot show alone is a change to the newest event of an aggregate, which no later
event links to: `toolsmith audit verify` prints a digest of every chain's head, for an auditor to
keep and compare with a later run.

A hash covers an event as it was stored. An event stored by an older release may read in a newer
shape (`domain/versions.py`: its upcasters fill in what it lacks), but what it said, and so its
hash, does not change: a replayed event keeps, as the chain's head, the own hash it was recorded
with, and `toolsmith audit verify` recomputes each hash from the stored state before any upcaster
runs (`infrastructure/audit.py`).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from eventsourcing.domain import Aggregate

GENESIS = ""
# Each event also records its own hash, so that a change to the newest event of a chain, which no
# later event vouches for, shows too (unless whoever changed it also recomputed this).
OWN_HASH = "own_hash"


def event_hash(domain_event: Any) -> str:
    """The SHA-256 of an event's canonical JSON (type, aggregate, version, time and attributes,
    its `previous_hash` included, its own hash left out)."""
    return state_hash(type(domain_event), domain_event.__dict__)


def state_hash(event_class: type, state: dict[str, Any]) -> str:
    """`event_hash` of an event of `event_class` whose attributes are `state` (its originator id and
    version included, its `class_version` not): what the audit computes from a stored state."""
    hashed = {k: v for k, v in state.items() if k != OWN_HASH}
    hashed["__type__"] = event_class.__qualname__
    return hashlib.sha256(orjson.dumps(hashed, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


class Chained(Aggregate):
    """An aggregate whose events form a hash chain. Each event method takes `previous_hash: str = ""`."""

    chain_head = GENESIS  # not annotated: eventsourcing would make an annotated one a `Created` field
    # The version of the aggregate's state, as a snapshot stores it (`domain/versions.py`).
    class_version = 1

    class Event(Aggregate.Event):
        # Every event type's version (`domain/versions.py`); 1 is stored as no version at all.
        class_version = 1

        def mutate(self, aggregate: Any) -> Any:
            mutated = super().mutate(aggregate)
            digest = self.__dict__.get(OWN_HASH)
            if digest is None:
                # A new event (a replayed one has its own already): recorded with it when it is
                # stored, as an attribute of its state rather than a field of its class. A replayed
                # one keeps the hash it was stored with, whatever shape an upcaster read it in.
                digest = event_hash(self)
                object.__setattr__(self, OWN_HASH, digest)
            # `Created` answers a new aggregate; the others change the one they are given.
            (mutated if mutated is not None else aggregate).chain_head = digest
            return mutated

    def trigger_event(self, event_class: Any, **kwargs: Any) -> None:
        kwargs["previous_hash"] = self.chain_head
        super().trigger_event(event_class, **kwargs)
