"""Versions of stored events and of snapshotted aggregate state, and the upcasters that read an
older one in today's shape (issue 13, 5).

eventsourcing gives every event class and every aggregate class a `class_version` (1 when it says
none). An event or a snapshot of version 1 is stored without one; a later version is stored with
`"class_version": N` in its state. On read, the mapper (events) and `Snapshot.mutate` (aggregate
state) call `upcast_v1_v2`, `upcast_v2_v3`, … on the class, in order, on the decoded state dict,
until it reaches the class's version. So an event stored by an older release reads as the current
class expects, and nothing stored is ever rewritten.

Every event of this project is version 1 (`Chained` and `Chained.Event` say so), stored as
eventsourcing always stored it, with no `class_version` key, except `CodeModule.Published`, which is
version 2: since changesets (B6) it names its changeset and message, and `upcast_v1_v2` in
`domain/model.py` reads a version 1 `Published` with neither as a single publish with no message.

**Adding a field with a default** (say a definition gains `notes`, default ""):

1. Let the commands write it: `domain/rules.py` and the API fill the default for new definitions.
2. Bump every event class that carries the changed shape, with an upcaster that fills the default
   into an older state: here the module events that carry a definition.

       @upcast(CodeModule.Created, CodeModule.DraftChanged, CodeModule.Reverted,
               CodeModule.Recreated, to=2)
       @upcast(CodeModule.Published, to=3)  # already at 2 (B6): each class goes up one at a time
       def _definition_gains_notes(state: dict[str, Any]) -> None:
           state["definition"] = {**state["definition"], "notes": ""}

3. If the aggregate is snapshotted (`Store.snapshotting_intervals`), bump the aggregate
   class too, with an upcaster of its state (`vars(aggregate)`, as a snapshot stores it). It
   must build what a replay of the events builds: `toolsmith audit verify` compares the two, and
   names a snapshot that upcasts to anything else.

       @upcast(CodeModule, to=2)
       def _module_gains_notes(state: dict[str, Any]) -> None:
           for key in ("draft", "published"):
               if state[key] is not None:
                   state[key] = {**state[key], "notes": ""}

4. Never change or remove an upcaster once released: stores keep their old events forever. Add a
   test that reads the fixture of the release before (tests/fixtures/) in the new shape.

An upcaster changes what an event says when read, never what was stored: an event's hash, and so
the audit's chains (`domain/chain.py`), cover the stored state as it was recorded, before any
upcaster ran.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

State = dict[str, Any]


def upcast(*classes: type, to: int) -> Callable[[Callable[[State], None]], Callable[[State], None]]:
    """Registers the decorated function as `upcast_v{to-1}_v{to}` of each class, and makes `to`
    the class's version. Each class must be at version `to - 1`: versions go up one at a time."""

    def register(function: Callable[[State], None]) -> Callable[[State], None]:
        for cls in classes:
            current = getattr(cls, "class_version", 1)
            if current != to - 1:
                raise TypeError(f"{cls.__qualname__} is at version {current}: an upcaster to {to} needs {to - 1}")
            setattr(cls, f"upcast_v{to - 1}_v{to}", staticmethod(function))
            cls.class_version = to  # type: ignore[attr-defined]
        return function

    return register
