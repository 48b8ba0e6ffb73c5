"""The audit (docs/rules.md B5) on real event stores: verify names the first broken link after a byte
of a stored event changed in the database itself, and an export restores into an empty store
byte for byte, on SQLite and on PostgreSQL."""

from __future__ import annotations

import dataclasses
import io
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson
import pytest

from application.history import History
from application.store import Store
from domain import history
from domain.callers import PROFILE
from domain.chain import OWN_HASH, event_hash
from domain.model import graph_aggregate_id, module_aggregate_id
from domain.ports import ExecutionResult, Sandbox
from entrypoints.compose import build_application, build_kinds
from infrastructure import audit
from infrastructure.settings import Settings
from tests import engines

TENANT = "default"
SOURCE = "exports.run = function (input) { return input; };"
# A default of 1.5e-07: Python's JSON writes it so, orjson as 1.5e-7, so an import that re-encoded
# states instead of restoring their bytes would show.
TOOL = {"inputParameters": [{"name": "rate", "type": "decimal", "required": False, "default": 1.5e-07}], "exposeInChat": True}


class PassingSandbox(Sandbox):
    """Every check passes: these tests are about the events, not the JavaScript."""

    def run(self, execution: Any) -> ExecutionResult:
        return ExecutionResult()

    def check(self, execution: Any) -> ExecutionResult:
        return ExecutionResult()


@pytest.fixture(params=["sqlite", "postgres"])
def new_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Makes empty stores of the parameter's engine, opened with `serve`'s settings."""
    made: list[Store] = []
    with ExitStack() as stack:
        def make() -> Store:
            if request.param == "sqlite":
                env = Settings(data_dir=tmp_path / f"store{len(made)}").event_store_env()
                Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
            else:
                schema = stack.enter_context(engines.postgres_schema(request.getfixturevalue("postgres")))
                env = {**Settings(persistence_module="eventsourcing.postgres").event_store_env(), **schema}
            made.append(Store(env))
            return made[-1]

        yield make
        for app in made:
            app.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[tuple[Store, Path]]:
    env = Settings(data_dir=tmp_path / "data").event_store_env()
    Path(env["SQLITE_DBNAME"]).parent.mkdir(parents=True)
    app = Store(env)
    fill(app)
    yield app, Path(env["SQLITE_DBNAME"])
    app.close()


def fill(app: Store, tenant: str = TENANT) -> None:
    """A history with every kind of module event, the import graph, a usage profile and a token."""
    services = build_application(app, sandbox=PassingSandbox)
    def create(module_id: str, imports: list[str] | None = None, tool: dict[str, Any] | None = None) -> None:
        services.modules.create(tenant, module_id, description=f"The {module_id} module", content=SOURCE, imports=imports or [], tool=tool, by="ada")

    # dates: created, changed twice, published, changed, discarded, changed, published, reverted to 1
    create("dates", tool=TOOL)
    services.modules.update(tenant, "dates", description="Dates, changed", by="ada")
    services.modules.update(tenant, "dates", description="Dates, changed again", by="grace")
    services.modules.publish(tenant, "dates", by="grace")
    services.modules.update(tenant, "dates", content="exports.run = function () { return 2; };", by="ada")
    services.modules.discard_draft(tenant, "dates", by="grace")
    services.modules.update(tenant, "dates", content="exports.run = function () { return 3; };", by="ada")
    services.modules.publish(tenant, "dates", by="ada")
    services.modules.revert(tenant, "dates", 1, by="grace")
    # a library, and a module that imports it (the graph records both)
    create("lib")
    services.modules.publish(tenant, "lib", by="ada")
    create("report", imports=["lib"])
    services.modules.publish(tenant, "report", by="ada")
    # a module deleted, then created again on the same aggregate
    create("scratch")
    services.modules.delete(tenant, "scratch", by="ada")
    create("scratch")
    services.modules.update(tenant, "scratch", description="Scratch, second life", by="grace")
    services.records.save(tenant, PROFILE, {"id": "support", "description": "", "allowedTools": ["dates"], "allowedTags": []}, by="ada", create=True)
    services.tokens.issue_token(tenant, "auditor", "auditor", None, by="ada")


def stored_events(app: Store) -> list[tuple[Any, int, str, bytes]]:
    every = app.recorder.select_notifications(1, 1_000_000)
    return [(e.originator_id, e.originator_version, e.topic, e.state) for e in every]


def change_state(
    db: Path, module_id: str, version: int, change: Callable[[bytes], bytes], tenant: str = TENANT, *, same_length: bool = True
) -> None:
    """Changes one stored event in the SQLite file itself, as someone with the file could."""
    change_row(db, module_aggregate_id(tenant, module_id).hex, version, change, same_length=same_length)


def change_row(db: Path, originator_id: str, version: int, change: Callable[[bytes], bytes], *, same_length: bool = True) -> None:
    with sqlite3.connect(db) as connection:
        # The events table is the one with the aggregates' versions (not the tracking tables).
        (table,) = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%originator_version%'").fetchone()
        (state,) = connection.execute(f"SELECT state FROM {table} WHERE originator_id = ? AND originator_version = ?", (originator_id, version)).fetchone()
        changed = change(state)
        assert changed != state and (len(changed) == len(state) or not same_length)
        connection.execute(f"UPDATE {table} SET state = ? WHERE originator_id = ? AND originator_version = ?", (changed, originator_id, version))


def one_byte(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    assert len(old) == len(new)
    return lambda state: state.replace(old, new, 1)


def export_of(app: Store, **kwargs: Any) -> bytes:
    out = io.BytesIO()
    audit.export(app, out, kinds=build_kinds(app), **kwargs)
    return out.getvalue()


# -- verify ----------------------------------------------------------------------------------------

def test_an_intact_store_verifies_clean(new_store: Callable[[], Store]) -> None:
    app = new_store()
    fill(app)
    report = audit.verify(app)
    assert report.intact, report.first_broken
    assert report.events == app.position() == len(stored_events(app))
    # four modules, the tenant's import graph and caller registry, the token registry
    assert report.aggregates == 7
    assert audit.verify(app).heads_digest == report.heads_digest


def test_a_byte_changed_inside_a_string_names_the_module_and_version_that_changed(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    # version 2 of dates now says "Dates, chbnged": still valid JSON, and version 3 holds its old hash
    change_state(db, "dates", 2, one_byte(b"Dates, changed", b"Dates, chbnged"))
    report = audit.verify(app)
    assert not report.intact
    link = report.first_broken
    assert (link.aggregate, link.version) == ("module default/dates", 2)
    assert "no longer matches its own hash" in str(link)
    assert len(report.broken) == 1


def test_a_changed_event_whose_own_hash_was_recomputed_breaks_the_next_link(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    # someone changes version 2 of dates and writes the matching own hash: version 3 still holds the old one
    events = History(app).module_events(TENANT, "dates")
    forged = dataclasses.replace(events[1], definition={**events[1].definition, "description": "Dates, forged"})
    object.__setattr__(forged, OWN_HASH, event_hash(forged))
    stored = app.mapper.to_stored_event(forged)
    change_state(db, "dates", 2, lambda _: stored.state, same_length=False)
    link = audit.verify(app).first_broken
    assert link is not None and (link.aggregate, link.version) == ("module default/dates", 2)
    assert "version 3 recorded another hash" in str(link)


def test_a_byte_that_breaks_the_json_names_the_event_and_does_not_crash(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    change_state(db, "lib", 1, one_byte(b'"by":', b'"by"!'))
    link = audit.verify(app).first_broken
    assert link is not None
    assert (link.aggregate, link.version) == ("module default/lib", 1)
    assert "cannot be decoded" in link.reason


def test_the_first_broken_link_in_log_order_is_named(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    # scratch's break comes later in the log than dates's, however they are changed
    change_state(db, "scratch", 1, one_byte(b'"by":"ada"', b'"by":"adb"'))
    change_state(db, "dates", 4, one_byte(b'"by":"grace"', b'"by":"gracf"'))
    report = audit.verify(app)
    assert [(b.aggregate, b.version) for b in report.broken] == [("module default/dates", 4), ("module default/scratch", 1)]


def test_a_changed_import_graph_event_names_the_tenants_graph(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    change_row(db, graph_aggregate_id(TENANT).hex, 2, one_byte(b'"module_id":"dates"', b'"module_id":"datez"'))
    link = audit.verify(app).first_broken
    assert link is not None and (link.aggregate, link.version) == ("import graph of tenant default", 2)


def test_a_deleted_event_is_a_missing_version(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    with sqlite3.connect(db) as connection:
        connection.execute("DELETE FROM stored_events WHERE originator_id = ? AND originator_version = 3",
                           (module_aggregate_id(TENANT, "dates").hex,))
    link = audit.verify(app).first_broken
    assert link is not None and (link.aggregate, link.version) == ("module default/dates", 4)
    assert "version 3 missing" in link.reason


def test_a_changed_newest_event_is_named_by_its_own_hash(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    # scratch's newest event (version 4) has no successor to hold its hash, but holds its own
    change_state(db, "scratch", 4, one_byte(b'"by":"grace"', b'"by":"gracf"'))
    link = audit.verify(app).first_broken
    assert link is not None and (link.aggregate, link.version) == ("module default/scratch", 4)


def test_a_newest_event_rewritten_with_its_own_hash_shows_in_the_heads_digest(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    before = audit.verify(app)
    newest = History(app).module_events(TENANT, "scratch")[-1]
    forged = dataclasses.replace(newest, definition={**newest.definition, "description": "Scratch, forged"})
    object.__setattr__(forged, OWN_HASH, event_hash(forged))
    change_state(db, "scratch", newest.originator_version, lambda _: app.mapper.to_stored_event(forged).state, same_length=False)
    after = audit.verify(app)
    assert after.intact
    assert after.heads_digest != before.heads_digest


# -- export and import -----------------------------------------------------------------------------

def test_export_then_import_restores_every_event_byte_for_byte(new_store: Callable[[], Store]) -> None:
    original = new_store()
    fill(original)
    exported = export_of(original)
    imported = new_store()
    assert audit.import_events(imported, io.BytesIO(exported)) == original.position()
    assert stored_events(imported) == stored_events(original)
    # every aggregate's history, each of its versions, and its state now answer alike
    for aggregate_id in {e[0] for e in stored_events(original)}:
        recorded = [vars(e) for e in original.events.get(aggregate_id)]
        assert [vars(e) for e in imported.events.get(aggregate_id)] == recorded
        for version in range(1, len(recorded) + 1):
            assert _state(imported.repository.get(aggregate_id, version=version)) == _state(original.repository.get(aggregate_id, version=version))
    # and so do the queries of B2: a module's history, its published versions, the module at an instant
    for module_id in ("dates", "lib", "report", "scratch"):
        events = History(original).module_events(TENANT, module_id)
        assert [history.entry(e) for e in History(imported).module_events(TENANT, module_id)] == [history.entry(e) for e in events]
        assert History(imported).published_versions(TENANT, module_id) == History(original).published_versions(TENANT, module_id)
        for event in events:
            assert _as_of(imported, module_id, event.timestamp) == _as_of(original, module_id, event.timestamp)
    assert imported.module(TENANT, "dates").published_view() == original.module(TENANT, "dates").published_view()
    assert imported.graph(TENANT).nodes == original.graph(TENANT).nodes
    report = audit.verify(imported)
    assert report.intact and report.heads_digest == audit.verify(original).heads_digest
    # and the import exports as the original did (the time of export aside)
    assert export_of(imported).splitlines()[1:] == exported.splitlines()[1:]


def _state(aggregate: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(aggregate).items() if k != "_pending_events"}


def _as_of(app: Store, module_id: str, at: Any) -> dict[str, Any] | None:
    module = history.module_as_of(History(app).module_events(TENANT, module_id), at)
    return None if module is None else _state(module)


def test_the_export_is_a_header_one_line_per_event_and_an_end_line(sqlite_store: tuple[Store, Path]) -> None:
    app, _ = sqlite_store
    lines = [orjson.loads(line) for line in export_of(app).splitlines()]
    header, *events, end = lines
    assert header["format"] == "toolsmith-audit-export" and header["through"] == app.position()
    assert end == {"end": True, "events": app.position()}
    assert [e["position"] for e in events] == list(range(1, app.position() + 1))
    first = events[0]
    assert first["topic"] == "domain.model:CodeModule.Created"
    assert first["state"]["module_id"] == "dates" and first["state"]["by"] == "ada"


def test_a_state_that_is_not_json_is_exported_in_base64_and_restored(sqlite_store: tuple[Store, Path], tmp_path: Path) -> None:
    app, db = sqlite_store
    change_state(db, "lib", 1, one_byte(b"{", b"\x00"))
    exported = export_of(app)
    assert b'"stateBase64":' in exported
    imported = Store(Settings(data_dir=tmp_path).event_store_env())
    try:
        audit.import_events(imported, io.BytesIO(exported))
        assert stored_events(imported) == stored_events(app)
    finally:
        imported.close()


def test_import_into_a_store_that_holds_events_is_refused(sqlite_store: tuple[Store, Path]) -> None:
    app, _ = sqlite_store
    before = app.position()
    with pytest.raises(audit.ImportRefused, match="not empty"):
        audit.import_events(app, io.BytesIO(export_of(app)))
    assert app.position() == before


def _cut(lines: list[bytes]) -> list[bytes]:
    return lines[:-1]


def _bad_json(lines: list[bytes]) -> list[bytes]:
    return [*lines[:2], lines[2][:-5], *lines[3:]]


def _key_missing(lines: list[bytes]) -> list[bytes]:
    line = orjson.loads(lines[2])
    del line["topic"]
    return [*lines[:2], orjson.dumps(line), *lines[3:]]


def _swapped(lines: list[bytes]) -> list[bytes]:
    return [lines[0], lines[2], lines[1], *lines[3:]]


def _miscounted(lines: list[bytes]) -> list[bytes]:
    return [*lines[:3], *lines[4:]]


@pytest.mark.parametrize(("spoil", "line", "says"), [
    pytest.param(_bad_json, 3, "not JSON", id="invalid-json"),
    pytest.param(_key_missing, 3, "exactly position", id="key-missing"),
    pytest.param(_swapped, 3, "out of order", id="lines-swapped"),
    pytest.param(_miscounted, None, "counts", id="a-line-dropped"),
    pytest.param(_cut, None, "cut short", id="no-end-line"),
])
def test_a_malformed_file_is_refused_with_its_line_number_and_nothing_is_written(
    sqlite_store: tuple[Store, Path], tmp_path: Path, spoil: Callable[[list[bytes]], list[bytes]], line: int | None, says: str
) -> None:
    app, _ = sqlite_store
    lines = spoil(export_of(app).splitlines())
    empty = Store(Settings(data_dir=tmp_path).event_store_env())
    try:
        with pytest.raises(audit.ImportRefused, match=says) as refused:
            audit.import_events(empty, lines)
        expected = line if line is not None else len(lines) if says == "counts" else len(lines) + 1
        assert refused.value.line == expected
        assert str(refused.value).startswith(f"line {expected}: ")
        assert empty.position() == 0
    finally:
        empty.close()


def test_a_tenant_export_holds_that_tenants_aggregates_only(new_store: Callable[[], Store]) -> None:
    app = new_store()
    fill(app)
    fill(app, tenant="other")
    events = [orjson.loads(line) for line in export_of(app, tenant="other").splitlines()[1:-1]]
    states = [e["state"] for e in events]
    assert {s["tenant"] for s in states if "module_id" in s and "by" in s} == {"other"}
    assert all(not e["topic"].startswith("domain.callers:TokenRegistry") for e in events)
    ids = {e["originatorId"] for e in events}
    assert str(graph_aggregate_id("other")) in ids and str(graph_aggregate_id(TENANT)) not in ids
    # whole chains: the tenant's export imports and verifies clean on its own
    imported = new_store()
    audit.import_events(imported, io.BytesIO(export_of(app, tenant="other")))
    report = audit.verify(imported)
    assert report.intact and report.aggregates == 6


def test_an_event_that_claims_another_module_is_named_by_its_own_aggregate(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    # version 1 of dates now says it belongs to "datez": the report still names dates
    change_state(db, "dates", 1, one_byte(b'"module_id":"dates"', b'"module_id":"datez"'))
    link = audit.verify(app).first_broken
    assert link is not None and (link.aggregate, link.version) == ("module default/dates", 1)


def test_a_tenant_export_keeps_an_altered_event_of_its_module(sqlite_store: tuple[Store, Path]) -> None:
    app, db = sqlite_store
    before = export_of(app, tenant=TENANT).splitlines()[1:]
    # the first event of dates now claims another module: it is evidence, and stays in the export
    change_state(db, "dates", 1, one_byte(b'"module_id":"dates"', b'"module_id":"datez"'))
    after = export_of(app, tenant=TENANT).splitlines()[1:]
    assert len(after) == len(before)
    assert sum(b'"datez"' in line for line in after) == 1
