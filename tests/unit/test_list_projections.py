"""Every list is a projection (issue 29, 3): the tool index, the changesets and the usage counts are
projections of the log with their own tracking records, so a tenant's list reads what it answers and
not every tenant's events; a create then a list shows it, in any process; the runner runs them all
and the health reports each one's position and lag."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from application.history import History
from application.projected import Follower, LiveIndex
from application.store import Store
from domain.model import CodeModule
from entrypoints.compose import build_kinds
from projections.memory import InMemoryModuleReadModel
from projections.modules import ModuleSummaries
from projections.runner import PullingProjectionRunner, health
from toolkinds.api_tools.kind import ApiToolKind
from toolkinds.api_tools.model import ApiTool, normalise

DEFINITION = {"description": "d", "content": "exports.run = function () { return 1 }", "imports": [], "tool": None}


def popo() -> Store:
    return Store({"PERSISTENCE_MODULE": "eventsourcing.popo"})


def api_tool(tenant: str, name: str) -> ApiTool:
    return ApiTool(tenant=tenant, tool_id=name, config=normalise({"urlTemplate": "https://example.com/x"}), by="t")


class Counting:
    """Counts the aggregates the repository loads, by tenant."""

    def __init__(self, store: Store) -> None:
        self.loaded: list[str] = []
        get = store.repository.get

        def counted(aggregate_id: Any, **kwargs: Any) -> Any:
            aggregate = get(aggregate_id, **kwargs)
            self.loaded.append(getattr(aggregate, "tenant", "?"))
            return aggregate

        store.repository.get = counted  # type: ignore[method-assign]


def test_a_tenants_tool_list_loads_its_own_tools_only() -> None:
    store = popo()
    store.save(*(api_tool("crowd", f"t{i}") for i in range(200)))
    store.save(api_tool("small", "b"), api_tool("small", "a"))
    kind = build_kinds(store).find(ApiToolKind)
    counting = Counting(store)
    assert [tool.tool_id for tool in kind.tools("small")] == ["a", "b"]
    assert counting.loaded == ["small", "small"]  # none of the 200 tools of the other tenant


def test_the_index_follows_deletes_and_creates_again() -> None:
    store = popo()
    kind = build_kinds(store).find(ApiToolKind)
    first = api_tool("t", "one")
    store.save(first, api_tool("t", "two"))
    assert [tool.tool_id for tool in kind.tools("t")] == ["one", "two"]
    first.delete("t")
    store.save(first)
    assert [tool.tool_id for tool in kind.tools("t")] == ["two"]
    first.recreate(normalise({"urlTemplate": "https://example.com/y"}), "t")
    store.save(first)
    assert [tool.tool_id for tool in kind.tools("t")] == ["one", "two"]
    assert kind.tools("nobody") == []


def test_another_process_sees_a_create_at_once(tmp_path: Path) -> None:
    """Two stores on one SQLite file: what one saves, the other's next list shows (read-your-writes
    holds for a list in any process, with no wait)."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "events.sqlite")}
    writer, reader = Store(env), Store(env)
    try:
        kind = build_kinds(reader).find(ApiToolKind)
        assert kind.tools("t") == []
        writer.save(api_tool("t", "new"))
        assert [tool.tool_id for tool in kind.tools("t")] == ["new"]
    finally:
        writer.close()
        reader.close()


def test_a_follower_reads_its_topics_only_and_records_the_head() -> None:
    store = popo()
    store.save(*(api_tool("crowd", f"t{i}") for i in range(5)))
    module = CodeModule(tenant="t", module_id="m", definition=DEFINITION, by="t")
    store.save(module)
    follower = Follower(store, LiveIndex([CodeModule], name="modules"))
    seen: list[Any] = []
    process = follower.projection.process_event
    follower.projection.process_event = lambda event, tracking: (seen.append(event), process(event, tracking))  # type: ignore[method-assign]
    assert follower.catch_up() == 1
    assert [type(event) for event in seen] == [CodeModule.Created]
    assert follower.position() == store.position()  # the head it read to, past the other events
    store.save(api_tool("crowd", "later"))
    assert follower.catch_up() == 0 and follower.position() == store.position()


def test_changesets_are_read_from_the_projection_not_the_log_each_time() -> None:
    store = popo()
    for tenant in ("crowd", "t"):
        module = CodeModule(tenant=tenant, module_id="m", definition=DEFINITION, by="t")
        module.publish("t", changeset=f"cs-{tenant}", message="first")
        store.save(module)
    history = History(store)
    assert [c["id"] for c in history.changesets("t")] == ["cs-t"]
    selects: list[Any] = []
    select = store.recorder.select_notifications
    store.recorder.select_notifications = lambda *a, **k: (selects.append(a), select(*a, **k))[1]  # type: ignore[method-assign]
    listed = history.changesets("t")
    assert [(c["id"], c["modules"]) for c in listed] == [("cs-t", [{"id": "m", "version": 1}])]
    assert selects == []  # nothing new since: the log is not read again


def test_the_runner_runs_every_projection_and_the_health_reports_each() -> None:
    store = popo()
    store.save(api_tool("t", "a"))
    kind = build_kinds(store).find(ApiToolKind)
    history = History(store)
    runner = PullingProjectionRunner(store, ModuleSummaries(view=InMemoryModuleReadModel()), poll_seconds=0.05,
                                     followers=[*kind.projections(), *history.projections()])
    runner.start()
    try:
        # The start replays every projection (its tracking record is at the log's head).
        assert all(follower.position() == store.position() for follower in runner.followers)
        module = CodeModule(tenant="t", module_id="m", definition=DEFINITION, by="t")
        module.publish("t", changeset="cs", message="m")
        position = store.save_or_conflict(module)
        assert runner.wait(position, timeout=10)
        assert all(follower.position() >= position for follower in runner.followers)
        reported = health(store, runner, max_lag_seconds=60)["readModel"]["projections"]
        assert reported == {"module_summaries": {"position": position, "lag": 0},
                            "api tool index": {"position": position, "lag": 0},
                            "changesets": {"position": position, "lag": 0}}
    finally:
        runner.stop()


@pytest.mark.parametrize("failing", ["changesets"])
def test_a_failing_projection_is_reported_and_the_others_run(failing: str) -> None:
    store = popo()
    history = History(store)
    kind = build_kinds(store).find(ApiToolKind)

    def broken(event: Any, tracking: Any) -> None:
        raise RuntimeError("broken view")

    history.changesets_follower.projection.process_event = broken  # type: ignore[method-assign]
    runner = PullingProjectionRunner(store, ModuleSummaries(view=InMemoryModuleReadModel()), poll_seconds=0.05,
                                     followers=[*kind.projections(), *history.projections()])
    module = CodeModule(tenant="t", module_id="m", definition=DEFINITION, by="t")
    module.publish("t", changeset="cs", message="m")
    store.save(module, api_tool("t", "a"))
    runner.start()
    try:
        answer = health(store, runner, max_lag_seconds=60)
        assert answer["status"] == "degraded"
        assert f"the projection {failing!r} fails (its error is in the log); it is retried" in answer["readModel"]["problems"]
        assert answer["readModel"]["projections"]["api tool index"]["lag"] == 0
    finally:
        runner.stop()


def test_a_reset_follower_replays_from_the_start() -> None:
    store = popo()
    store.save(api_tool("t", "a"))
    kind = build_kinds(store).find(ApiToolKind)
    assert [tool.tool_id for tool in kind.tools("t")] == ["a"]
    follower = kind.index.follower
    follower.reset(lambda: follower.projection._view.__init__())  # an empty view, tracking record and all
    assert follower.position() == 0
    assert [tool.tool_id for tool in kind.tools("t")] == ["a"]  # replayed at the next read
    assert follower.position() == store.position()
