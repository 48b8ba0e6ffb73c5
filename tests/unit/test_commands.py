"""The one command runner (issue 13): load → change → save, run again when the save raced another
writer on the graph or a registry, refused when it raced one on its own subject (409, or 412 with
an expected version), and under the tenant's graph lock when the command asks for it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from api.problems import from_domain
from application.commands import ATTEMPTS, Change, CommandRunner
from application.store import Store
from domain.errors import ConcurrentChange, PreconditionFailed
from domain.model import CodeModule, ImportGraph
from domain.ports import GraphLock
from entrypoints.compose import build_application

TENANT = "default"


def _no_sandbox() -> Any:
    raise AssertionError("no code runs here")


@pytest.fixture
def store() -> Iterator[Store]:
    made = Store({"PERSISTENCE_MODULE": "eventsourcing.popo"})
    yield made
    made.close()


def _another_writer_links(store: Store, name: str) -> None:
    graph = store.graph(TENANT, for_update=True)
    graph.link(name, published=None, draft=None)
    assert store.save_or_conflict(graph) is not None


def test_a_save_that_raced_another_on_the_graph_is_run_again_from_a_fresh_load(store: Store) -> None:
    runner = CommandRunner(store)
    calls = []

    def attempt() -> Change[str]:
        calls.append(1)
        graph = store.graph(TENANT, for_update=True)
        if len(calls) == 1:
            _another_writer_links(store, "theirs")
        graph.link("ours", published=None, draft=None)
        return Change("linked", save=(graph,))

    value, position = runner.run(attempt, name="ours")
    assert (value, len(calls)) == ("linked", 2)
    assert position == store.position()
    assert set(store.graph(TENANT).nodes) == {"theirs", "ours"}  # the other writer's change stands


def test_every_attempt_racing_is_a_concurrent_change_naming_the_command(store: Store) -> None:
    runner = CommandRunner(store)
    calls = []

    def attempt() -> Change[None]:
        calls.append(1)
        graph = store.graph(TENANT, for_update=True)
        _another_writer_links(store, f"theirs{len(calls)}")
        graph.link("ours", published=None, draft=None)
        return Change(None, save=(graph,))

    with pytest.raises(ConcurrentChange, match="'ours'"):
        runner.run(attempt, name="ours")
    assert len(calls) == ATTEMPTS
    assert "ours" not in store.graph(TENANT).nodes


def _module(store: Store) -> CodeModule:
    services = build_application(store, sandbox=_no_sandbox)
    services.modules.create(TENANT, "m", description="d", content="exports.x = 1;", imports=[], tool=None, by="t")
    return store.module(TENANT, "m")


def _edit_raced_on_its_subject(store: Store, expected: int | None) -> tuple[CommandRunner, Any, list[int]]:
    runner = CommandRunner(store)
    calls: list[int] = []
    other = build_application(store, sandbox=_no_sandbox).modules

    def attempt() -> Change[CodeModule]:
        calls.append(1)
        module = store.module(TENANT, "m", for_update=True)
        subject = runner.subject(module, "m", expected)
        other.update(TENANT, "m", description="theirs", by="other")
        module.change_draft({**module.current, "description": "ours"}, "t")
        return Change(module, save=(module,), subject=subject)

    return runner, attempt, calls


def test_a_save_that_raced_another_on_its_own_subject_is_a_409_and_is_not_run_again(store: Store) -> None:
    _module(store)
    runner, attempt, calls = _edit_raced_on_its_subject(store, expected=None)
    with pytest.raises(ConcurrentChange):
        runner.run(attempt, name="m")
    assert len(calls) == 1
    assert store.module(TENANT, "m").current["description"] == "theirs"


def test_with_an_expected_version_a_race_on_the_subject_is_a_failed_precondition(store: Store) -> None:
    version = _module(store).version
    runner, attempt, calls = _edit_raced_on_its_subject(store, expected=version)
    with pytest.raises(PreconditionFailed) as refused:
        runner.run(attempt, name="m")
    assert len(calls) == 1
    assert (refused.value.expected, refused.value.current) == (version, None)
    assert store.module(TENANT, "m").current["description"] == "theirs"


def test_an_expected_version_that_is_not_the_current_one_is_refused_before_any_change(store: Store) -> None:
    module = _module(store)
    with pytest.raises(PreconditionFailed) as refused:
        CommandRunner(store).subject(module, "m", expected=module.version - 1)
    assert (refused.value.expected, refused.value.current) == (module.version - 1, module.version)


def test_an_attempt_that_changes_nothing_records_nothing(store: Store) -> None:
    before = store.position()
    assert CommandRunner(store).run(lambda: Change("same", save=(None,)), name="x") == ("same", None)
    assert store.position() == before


class RecordingLock(GraphLock):
    def __init__(self) -> None:
        self.held: list[str] = []

    @contextlib.contextmanager
    def hold(self, tenant: str) -> Iterator[None]:
        self.held.append(tenant)
        try:
            yield
        finally:
            self.held.remove(tenant)


def test_the_graph_lock_is_held_through_every_attempt_only_when_asked(store: Store) -> None:
    lock = RecordingLock()
    runner = CommandRunner(store, lock)
    seen = []

    def attempt() -> Change[None]:
        seen.append(list(lock.held))
        return Change(None, save=(ImportGraph(tenant=f"t{len(seen)}"),))

    runner.run(attempt, name="x", lock=TENANT)
    runner.run(attempt, name="x")
    assert seen == [[TENANT], []]


@pytest.mark.parametrize(
    ("current", "detail"),
    [
        (3, "'m' is at \"3\", not \"2\" (If-Match); read it again and retry"),
        (None, "'m' is at a newer version, not \"2\" (If-Match); read it again and retry"),
    ],
)
def test_a_failed_precondition_names_the_versions_as_etags(current: int | None, detail: str) -> None:
    answer = from_domain(PreconditionFailed("m", 2, current))
    assert answer.status_code == 412
    assert json.loads(answer.body) == {
        "type": "/problems/precondition-failed", "title": "Precondition failed", "status": 412, "detail": detail,
        "code": "precondition-failed",
    }
