"""The topics the event store records, across moves of the code that defines them.

An event is stored with its class's topic, `module:Class.Event`. When a module moves (the kinds of
tool moved into packages of their own, `toolkinds/<kind>/`), the events an older release recorded
keep the old topic: `moved(former, module)` registers the old module name with eventsourcing, so
those events still resolve to their classes, and `stored_topics(cls)` answers every topic a class's
events may be stored under, the new one first, for whatever selects notifications by topic.
"""

from __future__ import annotations

import threading
from types import ModuleType

from eventsourcing.utils import get_topic, register_topic

_former: dict[str, list[str]] = {}  # a module's name -> the names it was recorded under before
_lock = threading.Lock()


def moved(former: str, module: ModuleType | str) -> None:
    """Says that the classes of `module` (a module, or its name as `__name__` gives it) were once
    defined in the module named `former`: events recorded with the old topic resolve to them."""
    import sys

    target = sys.modules[module] if isinstance(module, str) else module
    with _lock:
        names = _former.setdefault(target.__name__, [])
        if former not in names:
            register_topic(former, target)
            names.append(former)


def stored_topics(cls: type) -> list[str]:
    """Every topic an event (or aggregate) of class `cls` may be stored under: its topic now, then
    its topics under the names its module had before."""
    topic = get_topic(cls)
    module, _, name = topic.partition(":")
    return [topic, *(f"{former}:{name}" for former in _former.get(module, ()))]
