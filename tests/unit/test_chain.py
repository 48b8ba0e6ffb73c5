"""B5: the events of an aggregate form a hash chain, built as they are recorded and as they replay."""

from __future__ import annotations

import dataclasses

from domain.chain import GENESIS, event_hash
from domain.model import CodeModule


def definition(content: str) -> dict[str, object]:
    return {"description": "d", "content": content, "imports": [], "tool": None}


def recorded() -> tuple[CodeModule, list[object]]:
    module = CodeModule(tenant="t", module_id="m", definition=definition("exports.v = 1;"), by="ann")
    module.publish("ann")
    module.change_draft(definition("exports.v = 2;"), "bob")
    module.discard_draft("bob")
    return module, module.collect_events()


def test_each_event_carries_the_hash_of_the_one_before_and_its_own() -> None:
    module, events = recorded()
    assert [e.previous_hash for e in events] == [GENESIS, *(event_hash(e) for e in events[:-1])]
    assert [e.own_hash for e in events] == [event_hash(e) for e in events]
    assert module.chain_head == event_hash(events[-1])


def test_a_replay_rebuilds_the_same_chain_head() -> None:
    module, events = recorded()
    replayed = None
    for event in events:
        replayed = event.mutate(replayed)
    assert replayed.chain_head == module.chain_head
    # and the next event links to it
    replayed.change_draft(definition("exports.v = 3;"), "cy")
    assert replayed.collect_events()[0].previous_hash == module.chain_head


def test_any_change_to_what_an_event_says_changes_its_hash() -> None:
    _, events = recorded()
    changed_by = dataclasses.replace(events[2], by="mallory")
    changed_content = dataclasses.replace(events[2], definition=definition("exports.v = 666;"))
    changed_link = dataclasses.replace(events[2], previous_hash="0" * 64)
    hashes = {event_hash(events[2]), event_hash(changed_by), event_hash(changed_content), event_hash(changed_link)}
    assert len(hashes) == 4
