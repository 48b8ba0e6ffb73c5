"""Event versions (issue 13, 5): the events release 1 stored (tests/fixtures/release-1.events.jsonl,
made by tests/fixtures/make_release_events.py) read unchanged with today's code, and still load,
list and export after the module definition gains a field with a default, through the upcasters
of `domain/versions.py`. The audit's hashes cover what was stored, so the chains verify alike.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from application.history import History
from application.store import Store
from domain.callers import AGENT, PLAN, PROFILE, SERVER, CallerRegistry, TokenRegistry
from domain.model import CodeModule, ImportGraph, graph_aggregate_id
from domain.versions import upcast
from entrypoints.compose import bootstrap
from entrypoints.web import create_app
from infrastructure import audit
from infrastructure.settings import Settings
from tests.helpers import ADMIN_TOKEN, expect

FIXTURE = Path(__file__).parents[1] / "fixtures" / "release-1.events.jsonl"
TENANT = "default"
BASE = "/api/v1/admin/code-modules"
# The module events that carry a definition, and so gain the field.
WITH_DEFINITION = (CodeModule.Created, CodeModule.DraftChanged, CodeModule.Published, CodeModule.Reverted, CodeModule.Recreated)


def fixture_events() -> list[bytes]:
    """The fixture's event lines (neither its header nor its end line)."""
    return [line for line in FIXTURE.read_bytes().splitlines() if line.startswith(b'{"position":')]


def event_lines(export: bytes) -> list[bytes]:
    return [line for line in export.splitlines() if line.startswith(b'{"position":')]


def restored(data_dir: Path, source: bytes | None = None) -> Settings:
    """A data dir whose SQLite store holds the fixture (or `source`), imported as `toolsmith audit import` does."""
    settings = Settings(data_dir=data_dir, admin_token=ADMIN_TOKEN)
    data_dir.mkdir(parents=True)
    app = opened(settings)
    try:
        audit.import_events(app, io.BytesIO(source if source is not None else FIXTURE.read_bytes()))
    finally:
        app.close()
    return settings


def opened(settings: Settings) -> Store:
    """A cold application on the store: nothing cached, every aggregate read from the store."""
    return Store(settings.event_store_env())


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    app = opened(restored(tmp_path / "data"))
    yield app
    app.close()


@pytest.fixture
def definition_gains_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next release, as it would be written (see `domain/versions.py`): every definition has
    `notes`, default "", so the events that carry one, and the module's state, are version 2."""
    for cls in (*WITH_DEFINITION, CodeModule):
        # Recorded, so that the test's end puts each class back at its version, without the new upcaster.
        monkeypatch.setattr(cls, "class_version", cls.class_version)
        monkeypatch.setattr(cls, f"upcast_v{cls.class_version}_v{cls.class_version + 1}", None, raising=False)

    def _definition_gains_notes(state: dict[str, Any]) -> None:
        state["definition"] = {**state["definition"], "notes": ""}

    # Each event class goes up one version from where it is (`Published` is at 2 since B6).
    for cls in WITH_DEFINITION:
        upcast(cls, to=cls.class_version + 1)(_definition_gains_notes)

    @upcast(CodeModule, to=2)
    def _module_gains_notes(state: dict[str, Any]) -> None:
        for key in ("draft", "published"):
            if state[key] is not None:
                state[key] = {**state[key], "notes": ""}


# -- today's code ----------------------------------------------------------------------------------

def test_every_event_type_is_at_its_version_and_release_1_is_stored_as_before() -> None:
    aggregates = (CodeModule, ImportGraph, CallerRegistry, TokenRegistry)
    events = [value for aggregate in aggregates for value in vars(aggregate).values()
              if isinstance(value, type) and issubclass(value, aggregate.Event)]
    assert len(events) >= 18
    # `Published` names its changeset and message since B6 (version 2); every other is version 1.
    assert {cls: cls.class_version for cls in (*aggregates, *events) if cls.class_version != 1} == {CodeModule.Published: 2}
    # version 1 is stored as no version at all, as release 1 stored it
    assert all(b'"class_version"' not in line for line in fixture_events())


def test_the_current_code_reads_the_release_fixture_unchanged(store: Store) -> None:
    report = audit.verify(store)
    assert report.intact, report.first_broken
    # textlib and greet, the tenant's import graph and caller registry, the token registry
    assert (report.events, report.aggregates) == (16, 5)

    textlib, greet = store.module(TENANT, "textlib"), store.module(TENANT, "greet")
    assert (textlib.state, textlib.published_version, textlib.created_by) == ("PUBLISHED", 1, "admin")
    assert textlib.published == {"description": "Text helpers, shouting", "imports": [], "tool": None,
                                 "content": "exports.shout = function (s) { return s.toUpperCase(); };"}
    assert greet.published["imports"] == ["textlib"]
    assert greet.published["tool"]["inputParameters"][0]["name"] == "name"
    assert store.graph(TENANT).published_imports() == {"textlib": [], "greet": ["textlib"]}
    registry = store.registry(TENANT)
    assert [n["toolName"] for n in registry.get(PLAN, "greet_twice")["nodes"]] == ["greet", "greet"]
    assert registry.get(AGENT, "concierge")["allowedTools"] == ["greet"]
    assert registry.get(SERVER, "front-desk")["tools"] == ["greet"]
    assert registry.get(PROFILE, "visitors")["allowedTags"] == ["greeting"]
    [token] = store.tokens().tokens.values()
    assert (token["name"], token["role"], token["usageProfile"]) == ("kiosk", "caller", "visitors")
    # release 1's publishes read as single publishes without a message (B6's upcaster)
    published = [e for e in History(store).module_events(TENANT, "textlib") if isinstance(e, CodeModule.Published)]
    assert [(e.changeset, e.message) for e in published] == [(None, None)]
    # and its export is the fixture again, byte for byte
    assert event_lines(export_of(store)) == fixture_events()


# -- the next release: the definition gains a field with a default ------------------------------------

@pytest.mark.usefixtures("definition_gains_notes")
def test_a_module_of_the_fixture_loads_with_the_new_field_at_its_default(store: Store) -> None:
    textlib = store.module(TENANT, "textlib")
    assert textlib.published["notes"] == "" and textlib.published["description"] == "Text helpers, shouting"
    assert History(store).published_versions(TENANT, "greet")[1]["notes"] == ""
    assert all(e.definition["notes"] == "" for e in History(store).module_events(TENANT, "textlib") if isinstance(e, WITH_DEFINITION))


@pytest.mark.usefixtures("definition_gains_notes")
def test_a_module_of_the_fixture_lists_through_the_api(tmp_path: Path) -> None:
    settings = restored(tmp_path / "data")
    with TestClient(create_app(bootstrap(settings, sandbox=None)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        listed = expect(client.get(BASE), 200).json()
        assert {(m["id"], m["state"], m["description"]) for m in listed["collection"]} == {
            ("textlib", "PUBLISHED", "Text helpers, shouting"), ("greet", "PUBLISHED", "Greets loudly")}
        greet = expect(client.get(f"{BASE}/greet"), 200).json()
        assert greet["published"]["version"] == 1 and greet["published"]["imports"] == ["textlib"]
        # the history shows what each event says, in the new shape
        history = expect(client.get(f"{BASE}/textlib/history"), 200).json()["events"]
        assert [(e["type"], e["data"]["definition"]["notes"]) for e in history] == [
            ("Created", ""), ("DraftChanged", ""), ("Published", "")]


@pytest.mark.usefixtures("definition_gains_notes")
def test_a_module_of_the_fixture_exports_and_its_export_imports_and_verifies(store: Store, tmp_path: Path) -> None:
    before = audit.verify(store)
    assert before.intact, before.first_broken
    # the next release writes a definition with the field: a version 2 event after release 1's
    module = store.module(TENANT, "textlib", for_update=True)
    module.change_draft({**module.current, "description": "Text helpers, noted", "notes": "say it loud"}, "ada")
    store.save(module)
    stored = store.recorder.select_notifications(store.position(), 1)[0]
    assert orjson.loads(stored.state)["class_version"] == 2

    exported = export_of(store)
    # release 1's events leave as they were stored: an upcaster changes what they read as, not them
    assert event_lines(exported)[:16] == fixture_events()
    report = audit.verify(store)
    assert report.intact, report.first_broken
    assert report.events == 17

    again = opened(restored(tmp_path / "again", exported))
    try:
        assert audit.verify(again).intact
        textlib = again.module(TENANT, "textlib")
        assert textlib.published["notes"] == "" and textlib.draft["notes"] == "say it loud"
        assert again.module(TENANT, "greet").published["notes"] == ""
    finally:
        again.close()


def test_the_hashes_cover_what_was_stored_not_what_an_upcaster_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = restored(tmp_path / "data")
    app = opened(settings)
    today = audit.verify(app).heads_digest
    chain_head = app.module(TENANT, "textlib").chain_head
    app.close()
    monkeypatch.setattr(CodeModule.Published, "class_version", 3)
    monkeypatch.setattr(CodeModule.Published, "upcast_v2_v3", staticmethod(lambda state: state.update(by="someone else")), raising=False)
    cold = opened(settings)
    try:
        assert History(cold).module_events(TENANT, "textlib")[2].by == "someone else"
        assert audit.verify(cold).heads_digest == today
        assert cold.module(TENANT, "textlib").chain_head == chain_head
    finally:
        cold.close()


def test_an_upcaster_also_reads_a_snapshot_of_older_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = restored(tmp_path / "data")
    app = opened(settings)
    app.take_snapshot(graph_aggregate_id(TENANT))
    app.close()
    monkeypatch.setattr(ImportGraph, "class_version", 1)
    monkeypatch.setattr(ImportGraph, "upcast_v1_v2", None, raising=False)

    @upcast(ImportGraph, to=2)
    def _graph_gains_owner(state: dict[str, Any]) -> None:
        state["owner"] = "nobody"

    cold = opened(settings)
    try:
        graph = cold.graph(TENANT)
        assert graph.owner == "nobody"  # only a snapshot's state goes through the aggregate's upcaster
        assert graph.published_imports() == {"textlib": [], "greet": ["textlib"]}
    finally:
        cold.close()


def export_of(app: Store) -> bytes:
    out = io.BytesIO()
    audit.export(app, out)
    return out.getvalue()
