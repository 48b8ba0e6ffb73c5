"""Issue 12, finding 11a, without I/O: the aggregate cache hands out objects that never change.

A read shares the cached aggregate (no copy). eventsourcing's fast-forward used to apply newer
events to that very object, under the reader's feet; here it makes a new object instead, and a
put of an older version (a thread that read before another's save) never replaces a newer one.
"""

from __future__ import annotations

from typing import Any

from application.store import NewestAggregateCache, Store
from entrypoints.compose import ApplicationServices, build_application

TENANT = "default"


def _no_sandbox() -> Any:
    raise AssertionError("no code runs here")


def _repository(fastforward: str) -> ApplicationServices:
    return build_application(Store({"PERSISTENCE_MODULE": "eventsourcing.popo", "AGGREGATE_CACHE_MAXSIZE": "100",
                                    "AGGREGATE_CACHE_FASTFORWARD": fastforward}), sandbox=_no_sandbox)


def test_a_fast_forward_makes_a_new_aggregate_and_leaves_the_one_a_reader_holds() -> None:
    app = _repository("y")  # as on PostgreSQL: a save does not refresh the cache, the next read fast-forwards
    app.modules.create(TENANT, "m", description="first", content="exports.x = 1;", imports=[], tool=None, by="t")
    held = app.store.module(TENANT, "m")
    app.modules.update(TENANT, "m", description="second", by="t")
    again = app.store.module(TENANT, "m")
    assert (again.version, again.current["description"]) == (2, "second")
    assert (held.version, held.current["description"]) == (1, "first")
    assert app.store.module(TENANT, "m") is again  # the new object is what the cache shares now
    for_update = app.store.module(TENANT, "m", for_update=True)
    assert for_update is not again and for_update.version == 2


def test_reads_without_newer_events_share_one_object() -> None:
    app = _repository("n")  # as on SQLite: a save puts the saved aggregate in the cache
    app.modules.create(TENANT, "m", description="first", content="exports.x = 1;", imports=[], tool=None, by="t")
    assert app.store.module(TENANT, "m") is app.store.module(TENANT, "m")


class _Versioned:
    def __init__(self, version: int) -> None:
        self.version = version


def test_the_cache_never_goes_back_to_an_older_version() -> None:
    cache: NewestAggregateCache = NewestAggregateCache(maxsize=10)
    newer, older = _Versioned(3), _Versioned(2)
    cache.put("id", newer)
    cache.put("id", older)  # read before the save of version 3, put after it
    assert cache.get("id") is newer
    newest = _Versioned(4)
    cache.put("id", newest)
    assert cache.get("id") is newest


def test_a_store_that_owns_its_writes_knows_its_position_from_its_saves() -> None:
    app = _repository("n")  # as on SQLite: every write passes through this store
    assert app.store.owns_its_writes
    assert app.store.position() == 0
    app.modules.create(TENANT, "m", description="first", content="exports.x = 1;", imports=[], tool=None, by="t")
    app.modules.update(TENANT, "m", description="second", by="t")
    stored = app.store.recorder.max_notification_id()
    assert stored == 2 and app.store.position() == stored  # seen at once, without asking the recorder
    app.store._advance(1)  # a read of the database begun before the last save, answered after it
    assert app.store.position() == 2


def test_a_store_with_other_writers_asks_the_database_for_its_position(monkeypatch: Any) -> None:
    app = _repository("y")  # as on PostgreSQL: other replicas write
    assert not app.store.owns_its_writes
    app.modules.create(TENANT, "m", description="first", content="exports.x = 1;", imports=[], tool=None, by="t")
    assert app.store.position() == 1
    # Another replica writes events past this store object: its position says so at once.
    monkeypatch.setattr(app.store.recorder, "max_notification_id", lambda: 7)
    assert app.store.position() == 7
