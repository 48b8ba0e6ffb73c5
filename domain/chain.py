"""Tamper evidence (DESIGN §7 B5): each event carries the hash of the event before it in its aggregate.

`Chained` aggregates give every event a `previous_hash`: the SHA-256 of the previous event of the
same aggregate (empty for the first). An event's hash covers its type, its aggregate, its version,
its time and every attribute (its `previous_hash` included), as canonical JSON, so changing any
byte of what an event says changes its hash and breaks the link the next event holds. The chain is
kept on the aggregate as it is built or replayed (`chain_head`), so recording an event costs one
hash of the event before it, already known.

What a chain cannot show alone is a change to the newest event of an aggregate, which no later
event links to: `toolsmith audit verify` prints a digest of every chain's head, for an auditor to
keep and compare with a later run.
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
    state = {k: v for k, v in domain_event.__dict__.items() if k != OWN_HASH}
    state["__type__"] = type(domain_event).__qualname__
    return hashlib.sha256(orjson.dumps(state, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


class Chained(Aggregate):
    """An aggregate whose events form a hash chain. Each event method takes `previous_hash: str = ""`."""

    chain_head = GENESIS  # not annotated: eventsourcing would make an annotated one a `Created` field

    class Event(Aggregate.Event):
        def mutate(self, aggregate: Any) -> Any:
            mutated = super().mutate(aggregate)
            digest = event_hash(self)
            if OWN_HASH not in self.__dict__:
                # A new event (a replayed one has its own already): recorded with it when it is
                # stored, as an attribute of its state rather than a field of its class.
                object.__setattr__(self, OWN_HASH, digest)
            # `Created` answers a new aggregate; the others change the one they are given.
            (mutated if mutated is not None else aggregate).chain_head = digest
            return mutated

    def trigger_event(self, event_class: Any, **kwargs: Any) -> None:
        kwargs["previous_hash"] = self.chain_head
        super().trigger_event(event_class, **kwargs)
