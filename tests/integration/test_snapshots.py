"""Snapshots of the aggregates that grow forever (issue 13, 5): the import graph, the caller
registry and the token registry. A cold load starts from the newest snapshot and replays only the
events after it; the result is the aggregate a full replay builds, and the next event links to
its chain. Snapshots live outside the log: export and import carry only events, and verify checks
each snapshot against a replay of the log, so a snapshot changed in its table is named. On SQLite
and on PostgreSQL."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from application.store import SNAPSHOT_INTERVAL, Store
from domain.callers import PROFILE, TOKENS_ID, registry_id
from domain.chain import Chained
from domain.model import ImportGraph, graph_aggregate_id
from domain.versions import upcast
from infrastructure import audit
from infrastructure.settings import Settings
from tests import engines

TENANT = "default"
EVENTS = 2 * SNAPSHOT_INTERVAL + 50  # snapshots at 200 and 400, then 50 events


@pytest.fixture(params=["sqlite", "postgres"])
def new_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], dict[str, str]]]:
    """Makes the settings of empty stores of the parameter's engine, as `serve` opens them."""
    made = 0
    with ExitStack() as stack:
        def make() -> dict[str, str]:
            nonlocal made
            made += 1
            if request.param == "sqlite":
                env = Settings(data_dir=tmp_path / f"store{made}").event_store_env()
                Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
                return env
            schema = stack.enter_context(engines.postgres_schema(request.getfixturevalue("postgres")))
            return {**Settings(persistence_module="eventsourcing.postgres").event_store_env(), **schema}

        yield make


@pytest.fixture
def apps() -> Iterator[Callable[..., Store]]:
    made: list[Store] = []

    def open_app(env: dict[str, str], **overrides: str) -> Store:
        made.append(Store({**env, **overrides}))
        return made[-1]

    yield open_app
    for app in made:
        app.close()


def grow(app: Store) -> None:
    """`EVENTS` events on each growing aggregate, ten to a save (a snapshot is taken when a save
    holds an event whose version is a multiple of the interval)."""
    for start in range(0, EVENTS - 1, 10):  # the first event of each is its `Started`
        graph, registry, tokens = app.graph(TENANT, for_update=True), app.registry(TENANT, for_update=True), app.tokens(for_update=True)
        for i in range(start, min(start + 10, EVENTS - 1)):
            graph.link(f"m{i % 30}", published=[f"lib{i}"], draft=None)
            registry.save(PROFILE, {"id": f"p{i % 30}", "description": f"v{i}", "allowedTools": [], "allowedTags": []}, by="ada")
            tokens.issue(f"t{i}", f"digest{i}", f"token {i}", "caller", TENANT, None, by="ada")
        app.save(graph, registry, tokens)


GROWING = {"graph": graph_aggregate_id(TENANT), "registry": registry_id(TENANT), "tokens": TOKENS_ID}


def events_read(app: Store, monkeypatch: pytest.MonkeyPatch) -> dict[UUID, int]:
    """Counts the events the application reads from the log, by aggregate."""
    counted: dict[UUID, int] = {}
    select = app.recorder.select_events

    def counting(originator_id: Any, **kwargs: Any) -> Any:
        found = select(originator_id, **kwargs)
        counted[originator_id] = counted.get(originator_id, 0) + len(found)
        return found

    monkeypatch.setattr(app.recorder, "select_events", counting)
    return counted


def state(app: Store) -> dict[str, Any]:
    graph, registry, tokens = app.graph(TENANT), app.registry(TENANT), app.tokens()
    return {"graph": (graph.version, graph.chain_head, graph.nodes),
            "registry": (registry.version, registry.chain_head, registry.records),
            "tokens": (tokens.version, tokens.chain_head, tokens.tokens, tokens.by_digest)}


def test_a_cold_load_starts_from_the_newest_snapshot_and_builds_what_a_full_replay_builds(
    new_env: Callable[[], dict[str, str]], apps: Callable[..., Store], monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = new_env()
    grow(apps(env))

    cold = apps(env)
    read = events_read(cold, monkeypatch)
    snapshotted = state(cold)
    # each aggregate: its snapshot at version 400, then the 50 events after it
    assert {name: read[aggregate_id] for name, aggregate_id in GROWING.items()} == {name: 50 for name in GROWING}
    for aggregate_id in GROWING.values():
        assert [s.originator_version for s in cold.snapshots.get(aggregate_id)] == [SNAPSHOT_INTERVAL, 2 * SNAPSHOT_INTERVAL]

    replayed = apps(env, IS_SNAPSHOTTING_ENABLED="n")
    read = events_read(replayed, monkeypatch)
    assert state(replayed) == snapshotted
    assert {name: read[aggregate_id] for name, aggregate_id in GROWING.items()} == {name: EVENTS for name in GROWING}
    assert snapshotted["graph"][0] == EVENTS and len(snapshotted["tokens"][2]) == EVENTS - 1


def test_the_next_event_after_a_snapshot_links_to_the_chain_and_the_log_holds_only_events(
    new_env: Callable[[], dict[str, str]], apps: Callable[..., Store],
) -> None:
    env = new_env()
    grow(apps(env))
    cold = apps(env)
    graph = cold.graph(TENANT, for_update=True)  # from the snapshot at 400
    graph.unlink("m1")
    cold.save(graph)

    report = audit.verify(cold)
    assert report.intact, report.first_broken
    # the log holds the events and nothing else: no snapshot is an event of verify or export
    events = 3 * EVENTS + 1
    assert report.events == cold.position() == events
    exported = export_of(cold)
    assert exported.count(b'{"position":') == events
    assert b"eventsourcing.domain:Snapshot" not in exported


def test_an_export_imports_into_an_empty_store_that_verifies_and_loads_alike(
    new_env: Callable[[], dict[str, str]], apps: Callable[..., Store],
) -> None:
    env = new_env()
    original = apps(env)
    grow(original)
    imported = apps(new_env())
    assert audit.import_events(imported, io.BytesIO(export_of(original))) == 3 * EVENTS
    report = audit.verify(imported)
    assert report.intact, report.first_broken
    assert report.heads_digest == audit.verify(original).heads_digest
    # the imported store has no snapshot yet: its aggregates replay in full, to the same state
    assert state(imported) == state(apps(env))


def export_of(app: Store) -> bytes:
    out = io.BytesIO()
    audit.export(app, out)
    return out.getvalue()


def test_an_import_is_refused_where_snapshots_of_an_earlier_store_remain(tmp_path: Path, apps: Callable[..., Store]) -> None:
    env = Settings(data_dir=tmp_path / "data").event_store_env()
    Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
    used = apps(env)
    grow(used)
    exported = export_of(used)
    # someone empties the log, and only the log, to import again
    with sqlite3.connect(env["SQLITE_DBNAME"]) as connection:
        connection.execute("DELETE FROM stored_events")
    with pytest.raises(audit.ImportRefused, match="snapshots"):
        audit.import_events(apps(env), io.BytesIO(exported))
    assert apps(env).position() == 0  # nothing was written


# -- the audit checks the snapshots ----------------------------------------------------------------

GRAPH = "import graph of tenant default"


def snapshot_table(env: dict[str, str]) -> tuple[Any, Callable[[str], Any], Callable[[UUID], Any]]:
    """The store's snapshots table itself, as someone with the database could open it: a
    connection, a query maker (`{table}` and `?` placeholders) and how the table spells an id."""
    if "POSTGRES_SCHEMA" in env:
        from psycopg import sql

        table = sql.SQL("{}.{}").format(sql.Identifier(env["POSTGRES_SCHEMA"]), sql.Identifier("toolsmith_snapshots"))
        return engines._connect(env), lambda query: sql.SQL(query.replace("?", "%s")).format(table=table), lambda i: i
    return sqlite3.connect(env["SQLITE_DBNAME"]), lambda query: query.format(table="stored_snapshots"), lambda i: i.hex


def change_snapshot(env: dict[str, str], aggregate_id: UUID, version: int, change: Callable[[bytes], bytes]) -> None:
    connection, query, key = snapshot_table(env)
    with connection:
        (state,) = connection.execute(query("SELECT state FROM {table} WHERE originator_id = ? AND originator_version = ?"),
                                      (key(aggregate_id), version)).fetchone()
        changed = change(bytes(state))
        assert changed != bytes(state) and len(changed) == len(state)
        connection.execute(query("UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = ?"),
                           (changed, key(aggregate_id), version))
    connection.close()


def copy_snapshot(env: dict[str, str], aggregate_id: UUID, version: int, to_version: int) -> None:
    connection, query, key = snapshot_table(env)
    with connection:
        connection.execute(query("INSERT INTO {table} (originator_id, originator_version, topic, state) "
                                 "SELECT originator_id, ?, topic, state FROM {table} WHERE originator_id = ? AND originator_version = ?"),
                           (to_version, key(aggregate_id), version))
    connection.close()


def test_verify_checks_every_snapshot_against_a_replay_of_its_events(
    new_env: Callable[[], dict[str, str]], apps: Callable[..., Store],
) -> None:
    env = new_env()
    grow(apps(env))
    report = audit.verify(apps(env))
    assert report.intact, report.first_broken
    assert report.snapshots == 2 * len(GROWING)  # at 200 and 400, of each growing aggregate


def test_a_changed_newest_snapshot_changes_what_loads_and_verify_reports_it(
    new_env: Callable[[], dict[str, str]], apps: Callable[..., Store],
) -> None:
    env = new_env()
    grow(apps(env))
    # one byte of the graph's newest snapshot: its tenant, which no event after version 400 sets
    change_snapshot(env, GROWING["graph"], 2 * SNAPSHOT_INTERVAL, lambda state: state.replace(b'"default"', b'"defaulx"', 1))
    cold = apps(env)
    assert cold.graph(TENANT).tenant == "defaulx"  # what a cold load now builds

    report = audit.verify(cold)
    assert not report.intact
    assert [str(link) for link in report.broken] == [f"snapshot at version 400 of {GRAPH} does not match its events"]
    assert report.events == 3 * EVENTS  # every chain of the log is intact: only the snapshot is named


def test_a_snapshot_beyond_the_log_is_reported(new_env: Callable[[], dict[str, str]], apps: Callable[..., Store]) -> None:
    env = new_env()
    grow(apps(env))
    # the newest snapshot again, as if the graph were at version 600: the log ends at 450
    copy_snapshot(env, GROWING["graph"], 2 * SNAPSHOT_INTERVAL, 3 * SNAPSHOT_INTERVAL)
    report = audit.verify(apps(env))
    assert [str(link) for link in report.broken] == [
        f"snapshot at version 600 of {GRAPH} is beyond its events: the log's newest is version {EVENTS}"]


def test_a_snapshot_that_does_not_decode_is_reported_not_a_crash(tmp_path: Path, apps: Callable[..., Store]) -> None:
    env = Settings(data_dir=tmp_path / "data").event_store_env()
    Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
    grow(apps(env))
    change_snapshot(env, TOKENS_ID, SNAPSHOT_INTERVAL, lambda state: state.replace(b'"state":', b'"state"!', 1))
    report = audit.verify(apps(env))
    (link,) = report.broken
    assert str(link).startswith("snapshot at version 200 of token registry cannot be decoded (")


def test_a_snapshot_of_an_aggregate_without_events_is_reported(tmp_path: Path, apps: Callable[..., Store]) -> None:
    env = Settings(data_dir=tmp_path / "data").event_store_env()
    Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
    grow(apps(env))
    # the tenant's caller registry: only its snapshot remains, which a load would take as the registry
    with sqlite3.connect(env["SQLITE_DBNAME"]) as connection:
        connection.execute("DELETE FROM stored_events WHERE originator_id = ?", (GROWING["registry"].hex,))
        connection.execute("DELETE FROM stored_snapshots WHERE originator_id = ? AND originator_version = ?",
                           (GROWING["registry"].hex, SNAPSHOT_INTERVAL))
    cold = apps(env)
    assert cold.registry(TENANT).version == 2 * SNAPSHOT_INTERVAL
    report = audit.verify(cold)
    assert [str(link) for link in report.broken] == [
        "snapshot at version 400 of caller registry of tenant default is beyond its events: the log holds none"]


def test_a_snapshot_of_an_older_shape_is_compared_in_todays_shape(
    tmp_path: Path, apps: Callable[..., Store], monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = Settings(data_dir=tmp_path / "data").event_store_env()
    Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
    grow(apps(env))  # the graph's snapshots hold today's state, version 1 of its shape
    # the next release: a graph records an owner, and an upcaster fills it into older snapshots
    replay = Chained.Event.mutate

    def mutate(self: Any, aggregate: Any) -> Any:
        mutated = replay(self, aggregate)
        graph = mutated if mutated is not None else aggregate
        if isinstance(graph, ImportGraph):
            graph.owner = "nobody"
        return mutated

    monkeypatch.setattr(Chained.Event, "mutate", mutate)
    monkeypatch.setattr(ImportGraph, "class_version", 1)
    monkeypatch.setattr(ImportGraph, "upcast_v1_v2", None, raising=False)

    @upcast(ImportGraph, to=2)
    def _graph_gains_owner(state: dict[str, Any]) -> None:
        state["owner"] = "nobody"

    report = audit.verify(apps(env))
    assert report.intact, report.first_broken
    assert report.snapshots == 2 * len(GROWING)
    # an upcaster that reads the snapshots otherwise than the events build the graph: loads differ
    monkeypatch.setattr(ImportGraph, "upcast_v1_v2", staticmethod(lambda state: state.update(owner="somebody")))
    assert [str(link) for link in audit.verify(apps(env)).broken] == [
        f"snapshot at version {v} of {GRAPH} does not match its events" for v in (200, 400)]
