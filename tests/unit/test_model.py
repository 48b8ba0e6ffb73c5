"""The `CodeModule` and `ImportGraph` aggregates on their own, without an event store (R7, R8, R10–R12)."""

from __future__ import annotations

from copy import deepcopy
from typing import Any

import pytest
from eventsourcing.domain import Aggregate, Snapshot
from eventsourcing.utils import get_topic

from domain.errors import CannotDiscard, NothingToPublish, UnknownModule
from domain.model import (
    DRAFT,
    PUBLISHED,
    UNPUBLISHED,
    CodeModule,
    ImportGraph,
    graph_aggregate_id,
    module_aggregate_id,
)


def definition(content: str = "exports.year = function (d) { return d.slice(0, 4); };", **changes: Any) -> dict[str, Any]:
    return {"description": "Date helpers", "content": content, "imports": [], "tool": None, **changes}


def new_module(module_id: str = "dates", tenant: str = "acme") -> CodeModule:
    return CodeModule(tenant=tenant, module_id=module_id, definition=definition(), by="alice")


def published_module() -> CodeModule:
    module = new_module()
    module.publish(by="bob")
    return module


def replay(events: list[Any]) -> Any:
    aggregate = None
    for event in events:
        aggregate = event.mutate(aggregate)
    return aggregate


def event_names(aggregate: Aggregate) -> list[str]:
    return [type(event).__name__ for event in aggregate.collect_events()]


# -- identity ------------------------------------------------------------------------------------


def test_the_aggregate_id_derives_from_tenant_and_module_id() -> None:
    assert CodeModule.create_id("t", "x") == module_aggregate_id("t", "x")
    assert new_module("x", tenant="t").id == module_aggregate_id("t", "x")


def test_the_same_module_id_in_two_tenants_is_two_aggregates() -> None:
    assert module_aggregate_id("t1", "x") != module_aggregate_id("t2", "x")
    assert module_aggregate_id("t", "x") != module_aggregate_id("t", "y")


def test_the_import_graph_id_derives_from_the_tenant_and_differs_from_any_module() -> None:
    assert ImportGraph.create_id("t") == graph_aggregate_id("t")
    assert ImportGraph(tenant="t").id == graph_aggregate_id("t")
    assert graph_aggregate_id("t1") != graph_aggregate_id("t2")
    assert graph_aggregate_id("t") != module_aggregate_id("t", "t")


# -- create, publish, change (R7, R8) ------------------------------------------------------------------


def test_a_created_module_is_unpublished_with_its_definition_as_draft() -> None:
    module = new_module()
    assert module.state == UNPUBLISHED
    assert module.draft == definition()
    assert module.published is None
    assert module.published_version == 0
    assert module.published_view() is None
    assert (module.tenant, module.module_id, module.created_by) == ("acme", "dates", "alice")
    assert event_names(module) == ["Created"]


def test_publishing_makes_the_draft_version_one() -> None:
    module = new_module()
    version = module.publish(by="bob")
    assert version == 1
    assert module.state == PUBLISHED
    assert module.published == definition()
    assert module.published_version == 1
    assert module.published_by == "bob"
    assert module.published_at is not None
    assert module.draft is None
    assert module.updated_by == "bob"


def test_the_published_view_carries_version_and_publisher() -> None:
    view = published_module().published_view()
    assert view is not None
    assert view["version"] == 1
    assert view["publishedBy"] == "bob"
    assert view["content"] == definition()["content"]


def test_changing_a_published_module_makes_a_draft_and_keeps_the_published_version() -> None:
    module = published_module()
    changed = definition(content="exports.year = function (d) { return +d.slice(0, 4); };")
    assert module.change_draft(changed, by="carol") is True
    assert module.state == DRAFT
    assert module.draft == changed
    # importers keep seeing version 1 until the draft is published
    assert module.published == definition()
    assert module.published_version == 1


def test_publishing_a_draft_makes_the_next_version() -> None:
    module = published_module()
    module.change_draft(definition(content="exports.year = 2;"), by="carol")
    assert module.publish(by="carol") == 2
    assert module.state == PUBLISHED
    assert module.published["content"] == "exports.year = 2;"  # type: ignore[index]


def test_changing_an_unpublished_draft_keeps_it_unpublished() -> None:
    module = new_module()
    module.change_draft(definition(content="exports.x = 1;"), by="alice")
    assert module.state == UNPUBLISHED
    assert module.draft["content"] == "exports.x = 1;"  # type: ignore[index]


def test_an_identical_draft_records_no_event() -> None:
    module = new_module()
    module.collect_events()
    assert module.change_draft(definition(), by="alice") is False
    assert module.collect_events() == []


def test_a_draft_identical_to_the_published_version_records_no_event() -> None:
    module = published_module()
    module.collect_events()
    assert module.change_draft(definition(), by="carol") is False
    assert module.state == PUBLISHED
    assert module.collect_events() == []


def test_each_command_records_one_named_event() -> None:
    module = new_module()
    module.change_draft(definition(content="exports.a = 1;"), by="alice")
    module.publish(by="bob")
    module.change_draft(definition(content="exports.a = 2;"), by="alice")
    module.discard_draft(by="alice")
    module.delete(by="alice")
    assert event_names(module) == ["Created", "DraftChanged", "Published", "DraftChanged", "DraftDiscarded", "Deleted"]


# -- refusals (R10, R11) -------------------------------------------------------------------------------


def test_publishing_without_a_draft_is_refused() -> None:
    module = published_module()
    module.collect_events()
    with pytest.raises(NothingToPublish):
        module.publish(by="bob")
    assert module.collect_events() == []
    assert module.published_version == 1


def test_discarding_a_never_published_module_is_refused() -> None:
    module = new_module()
    with pytest.raises(CannotDiscard, match="never published"):
        module.discard_draft(by="alice")
    assert module.draft == definition()


def test_discarding_without_a_draft_is_refused() -> None:
    with pytest.raises(CannotDiscard, match="no draft"):
        published_module().discard_draft(by="alice")


def test_discarding_a_draft_returns_to_the_published_version() -> None:
    module = published_module()
    module.change_draft(definition(content="exports.broken = ;"), by="carol")
    module.discard_draft(by="carol")
    assert module.state == PUBLISHED
    assert module.draft is None
    assert module.current == definition()


# -- delete and recreate (R12) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(lambda m: m.change_draft(definition(content="exports.z = 1;"), by="x"), id="change_draft"),
        pytest.param(lambda m: m.publish(by="x"), id="publish"),
        pytest.param(lambda m: m.discard_draft(by="x"), id="discard_draft"),
        pytest.param(lambda m: m.delete(by="x"), id="delete"),
    ],
)
def test_commands_on_a_deleted_module_are_refused_as_unknown(command: Any) -> None:
    module = published_module()
    module.change_draft(definition(content="exports.pending = 1;"), by="carol")
    module.delete(by="carol")
    module.collect_events()
    with pytest.raises(UnknownModule) as raised:
        command(module)
    assert raised.value.module_id == "dates"
    assert module.collect_events() == []


def test_deleting_clears_draft_and_published_version() -> None:
    module = published_module()
    module.delete(by="carol")
    assert module.deleted is True
    assert module.draft is None
    assert module.published is None
    assert module.published_view() is None


def test_a_recreated_module_is_unpublished_and_numbers_its_publishes_on() -> None:
    # version 1 in its first life
    module = published_module()
    module.delete(by="carol")
    # a second life on the same aggregate
    module.recreate(definition(content="exports.second = true;"), by="dave")
    assert module.deleted is False
    assert module.state == UNPUBLISHED
    assert module.draft["content"] == "exports.second = true;"  # type: ignore[index]
    assert module.created_by == "dave"
    # its first publish is version 2, not a second version 1
    assert module.publish(by="dave") == 2
    assert module.published_version == 2
    assert module.id == module_aggregate_id("acme", "dates")


# -- replay -------------------------------------------------------------------------------------


def test_replaying_the_events_reproduces_the_module() -> None:
    module = new_module()
    module.change_draft(definition(content="exports.a = 1;"), by="alice")
    module.publish(by="bob")
    module.change_draft(definition(content="exports.a = 2;"), by="carol")
    module.discard_draft(by="carol")
    module.change_draft(definition(content="exports.a = 3;"), by="carol")
    module.delete(by="dave")
    module.recreate(definition(content="exports.b = 1;"), by="erin")
    module.publish(by="erin")
    module.change_draft(definition(content="exports.b = 2;"), by="frank")

    copy = replay(module.collect_events())

    assert isinstance(copy, CodeModule)
    assert copy.id == module.id
    assert copy.version == module.version == 10
    assert copy.state == module.state == DRAFT
    assert copy.draft == module.draft
    assert copy.published == module.published
    assert copy.published_version == module.published_version == 2
    assert copy.published_by == module.published_by == "erin"
    assert copy.published_at == module.published_at
    assert (copy.deleted, copy.created_by, copy.updated_by) == (module.deleted, "erin", "frank")


def test_every_event_names_its_tenant_and_module() -> None:
    module = new_module(tenant="acme")
    module.publish(by="bob")
    module.delete(by="bob")
    for event in module.collect_events():
        assert (event.tenant, event.module_id) == ("acme", "dates")  # type: ignore[attr-defined]


# -- the import graph ------------------------------------------------------------------------------


def linked_graph() -> ImportGraph:
    graph = ImportGraph(tenant="acme")
    graph.link("dates", published=[], draft=None)
    graph.link("report", published=["dates"], draft=None)
    graph.link("summary", published=None, draft=["dates", "report"])
    graph.link("app", published=["report"], draft=["dates"])
    return graph


def test_importers_of_counts_draft_and_published_imports() -> None:
    graph = linked_graph()
    assert graph.importers_of("dates") == ["app", "report", "summary"]
    assert graph.importers_of("report") == ["app", "summary"]
    assert graph.importers_of("app") == []


def test_is_published_only_for_modules_with_published_imports_recorded() -> None:
    graph = linked_graph()
    assert graph.is_published("dates")
    assert graph.is_published("report")
    assert not graph.is_published("summary")
    assert not graph.is_published("unknown")


def test_published_imports_ignore_drafts_and_unpublished_modules() -> None:
    assert linked_graph().published_imports() == {"dates": [], "report": ["dates"], "app": ["report"]}


def test_relinking_a_module_replaces_its_edges() -> None:
    graph = linked_graph()
    # app publishes its draft, which dropped report
    graph.link("app", published=["dates"], draft=None)
    assert graph.importers_of("report") == ["summary"]
    assert graph.published_imports()["app"] == ["dates"]


def test_unlinking_a_module_removes_its_edges() -> None:
    graph = linked_graph()
    graph.unlink("summary")
    graph.unlink("app")
    assert graph.importers_of("dates") == ["report"]
    assert "app" not in graph.nodes
    graph.unlink("never-linked")


def test_the_graph_keeps_its_own_copy_of_the_import_lists() -> None:
    graph = ImportGraph(tenant="acme")
    imports = ["dates"]
    graph.link("report", published=imports, draft=None)
    imports.append("text")
    assert graph.published_imports() == {"report": ["dates"]}


def test_replaying_the_graph_events_reproduces_its_edges() -> None:
    graph = linked_graph()
    graph.unlink("summary")
    copy = replay(graph.collect_events())
    assert copy.id == graph_aggregate_id("acme")
    assert copy.nodes == graph.nodes
    assert copy.importers_of("dates") == ["app", "report"]


def test_a_copy_of_the_graph_changes_alone_and_the_original_stays_as_it_was_read() -> None:
    graph = linked_graph()
    graph.collect_events()
    copied = deepcopy(graph)
    copied.link("report", published=["dates"], draft=["summary"])
    copied.unlink("app")
    assert graph.importers_of("dates") == ["app", "report", "summary"] and graph.nodes["report"]["draft"] is None
    assert graph.published_importers()["report"] == {"app"}
    assert copied.importers_of("summary") == ["report"] and "app" not in copied.nodes
    assert "report" not in copied.published_importers()


def test_a_graph_restored_from_a_snapshot_of_any_release_indexes_its_nodes_and_takes_events() -> None:
    graph = linked_graph()
    # eventsourcing's own snapshot class, as releases before issue 15 stored it: `nodes` a plain dict
    state = {"tenant": "acme", "nodes": {m: dict(n) for m, n in graph.nodes.items()}, "chain_head": graph.chain_head,
             "_created_on": graph.created_on, "_modified_on": graph.modified_on}
    for snapshot_class in (Snapshot, ImportGraph.Snapshot):
        taken = snapshot_class(originator_id=graph.id, originator_version=graph.version, timestamp=graph.modified_on,
                               topic=get_topic(ImportGraph), state=state)
        restored = taken.mutate(None)
        assert restored.importers_of("dates") == ["app", "report", "summary"]
        assert restored.published_importers()["report"] == {"app"}
        restored.unlink("summary")
        assert restored.importers_of("report") == ["app"] and dict(restored.nodes) == {m: n for m, n in graph.nodes.items() if m != "summary"}
        assert ImportGraph.Snapshot.take(restored).state["nodes"] == {m: n for m, n in state["nodes"].items() if m != "summary"}
