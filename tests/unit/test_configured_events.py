"""The configured kinds' lifecycle is declared once (`domain/configured.py`), yet every event is still
its kind's own: stored under the kind's topic and qualified name, so the events an older release
stored load, their hashes verify (B5: a hash covers the qualified name) and they replay to the same
tool; and what the commands store now is, byte for byte, what that release stored.

`tests/fixtures/configured-kinds.events.jsonl` was written by the release before the base (commit
4aaa35e) with `tests/fixtures/make_configured_kinds_events.py`, which this test runs again now.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic, resolve_topic

from domain.chain import OWN_HASH, state_hash
from toolkinds.api_tools.model import ApiTool
from toolkinds.search_tools.model import SearchTool

FIXTURES = Path(__file__).parent.parent / "fixtures"
STORED = [json.loads(line) for line in (FIXTURES / "configured-kinds.events.jsonl").read_text().splitlines()]


def _maker() -> Any:
    spec = importlib.util.spec_from_file_location("make_configured_kinds_events", FIXTURES / "make_configured_kinds_events.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stored(row: dict[str, Any]) -> StoredEvent:
    return StoredEvent(originator_id=UUID(row["originatorId"]), originator_version=row["originatorVersion"],
                       topic=row["topic"], state=json.dumps(row["state"]).encode())


def test_the_events_the_release_before_stored_load_verify_and_replay_to_the_same_tools() -> None:
    app = Application()
    app.recorder.insert_events([_stored(row) for row in STORED])
    for row in STORED:
        cls = resolve_topic(row["topic"])
        module, _, qualname = row["topic"].partition(":")
        assert (cls.__module__, cls.__qualname__) == (module, qualname)
        state = app.mapper.transcoder.decode(json.dumps(row["state"]).encode())
        state.update(originator_id=UUID(row["originatorId"]), originator_version=row["originatorVersion"])
        assert state_hash(cls, state) == row["state"][OWN_HASH], row["topic"]
    api = app.repository.get(ApiTool.create_id("acme", "weather"))
    assert isinstance(api, ApiTool) and not api.deleted and api.version == 4
    assert (api.config, api.created_by, api.updated_by) == ({"description": "the weather again", "enabled": True}, "cy", "cy")
    search = app.repository.get(SearchTool.create_id("acme", "guides"))
    assert isinstance(search, SearchTool) and not search.deleted and search.documents == {}
    assert (search.config, search.created_by) == ({"description": "guides again"}, "cy")
    before = app.repository.get(SearchTool.create_id("acme", "guides"), version=4)  # changed, its document ready
    assert before.config == {"description": "our guides"} and before.documents["ab" * 10]["state"] == "READY"
    after_delete = app.repository.get(SearchTool.create_id("acme", "guides"), version=5)
    assert after_delete.deleted and after_delete.documents == {}


def test_the_commands_store_now_exactly_what_the_release_before_stored() -> None:
    app = Application()
    _maker().record(app)
    now = [{"originatorId": str(stored.originator_id), "originatorVersion": stored.originator_version,
            "topic": stored.topic, "state": json.loads(stored.state)}
           for stored in app.recorder.select_notifications(start=1, limit=100)]
    assert now == STORED


def test_each_kinds_lifecycle_event_is_its_own_and_not_the_other_kinds() -> None:
    for aggregate, kind in ((ApiTool, "api_tools"), (SearchTool, "search_tools")):
        for name in ("Created", "Changed", "Deleted", "Recreated"):
            assert get_topic(getattr(aggregate, name)) == f"toolkinds.{kind}.model:{aggregate.__name__}.{name}"
    tool = ApiTool(tenant="acme", tool_id="weather", config={}, by="ann")
    tool.change({"enabled": False}, "bob")
    tool.delete("ann")
    changed, deleted = tool.collect_events()[1:]
    assert type(changed) is ApiTool.Changed and type(deleted) is ApiTool.Deleted
    assert isinstance(changed, ApiTool.Event) and not isinstance(changed, SearchTool.Event)
