"""Changesets on PostgreSQL (docs/rules.md B6, issue 18): all or nothing when the connection fails
between the checks and the commit, and two processes racing overlapping changesets end with
exactly one accepted, round after round (the tenant's advisory graph lock and the aggregates'
versions, as single publishes have)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from application.store import Store
from domain.ports import Execution, ExecutionResult, Sandbox
from entrypoints.compose import ApplicationServices, build_application, build_graph_lock
from infrastructure.settings import Settings

TENANT = "default"
ROUNDS = 50


class InstantSandbox(Sandbox):
    """Passes every check at once: what is under test is the store's side."""

    def run(self, execution: Execution) -> ExecutionResult:
        return ExecutionResult(output=None)

    def check(self, execution: Execution) -> ExecutionResult:
        return ExecutionResult()


def application(env: dict[str, str], settings: Settings) -> ApplicationServices:
    sandbox = InstantSandbox()
    return build_application(Store(env), sandbox=lambda: sandbox, graph_lock=build_graph_lock(settings, env))


@pytest.fixture
def app(postgres_store: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ApplicationServices]:
    for name, value in postgres_store.items():
        monkeypatch.setenv(name, value)
    settings = Settings(data_dir=tmp_path, persistence_module="eventsourcing.postgres")
    made = application(settings.event_store_env(), settings)
    yield made
    made.store.close()


def published(app: ApplicationServices, module_id: str, content: str, imports: list[str] | None = None) -> None:
    app.modules.create(TENANT, module_id, description=module_id, content=content, imports=imports or [], tool=None, by="t")
    app.modules.publish(TENANT, module_id, by="t")


def test_a_connection_failing_before_the_commit_leaves_every_module_as_it_was(app: ApplicationServices,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    published(app, "dates", "exports.year = (d) => d;")
    published(app, "report", "exports.run = (i) => dates.year(i);", ["dates"])
    app.modules.update(TENANT, "dates", content="exports.yearOf = (d) => d;", by="t")
    app.modules.update(TENANT, "report", content="exports.run = (i) => dates.yearOf(i);", by="t")
    position = app.store.position()
    recorder = app.store.recorder
    original = recorder._insert_stored_events
    written: list[int] = []

    def insert_then_lose_the_connection(cursor: Any, stored_events: Any, **kwargs: Any) -> None:
        # Every event of the changeset is written in the transaction, then its server process
        # dies before the commit, as on a crash or a network cut.
        original(cursor, stored_events, **kwargs)
        written.append(len(stored_events))
        cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    monkeypatch.setattr(recorder, "_insert_stored_events", insert_then_lose_the_connection)
    with pytest.raises(Exception) as failed:  # noqa: PT011 - whatever psycopg raises for a lost connection
        app.modules.publish_changeset(TENANT, ["dates", "report"], by="t", message="rename")
    assert "terminat" in str(failed.value).lower() or "connection" in str(failed.value).lower(), failed.value
    monkeypatch.undo()
    assert written and written[0] == 4  # both Published events and both graph links were in the transaction
    assert app.store.position() == position
    for module_id in ("dates", "report"):
        module = app.store.module(TENANT, module_id)
        assert module.published_version == 1 and module.draft is not None
    done = app.modules.publish_changeset(TENANT, ["dates", "report"], by="t", message="rename")
    assert [m.published_version for m in done.modules] == [2, 2]


_RACER = """
import json, sys
from application.store import Store
from domain.errors import ModuleError
from entrypoints.compose import build_application, build_graph_lock
from infrastructure.settings import Settings
from tests.integration.test_changesets_postgres import InstantSandbox

settings = Settings(data_dir=sys.argv[1], persistence_module="eventsourcing.postgres")
env = settings.event_store_env()
sandbox = InstantSandbox()
app = build_application(Store(env), sandbox=lambda: sandbox, graph_lock=build_graph_lock(settings, env))
print("ready", flush=True)
for line in sys.stdin:
    ids = json.loads(line)
    try:
        done = app.modules.publish_changeset("default", ids, by=sys.argv[2])
        print(json.dumps({"accepted": done.id}), flush=True)
    except ModuleError as refused:
        print(json.dumps({"refused": refused.code}), flush=True)
app.store.close()
"""


@pytest.mark.timeout(300)
def test_two_processes_racing_overlapping_changesets_end_with_exactly_one_accepted(
        app: ApplicationServices, postgres_store: dict[str, str], tmp_path: Path) -> None:
    racers = [subprocess.Popen([sys.executable, "-c", _RACER, str(tmp_path / name), name], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
              for name in ("one", "two")]
    try:
        for racer in racers:
            assert racer.stdout is not None and racer.stdout.readline().strip() == "ready"
        outcomes = []
        for r in range(ROUNDS):
            a, b, c = f"a{r}", f"b{r}", f"c{r}"
            for module_id in (a, b, c):
                published(app, module_id, "exports.x = 1;")
                app.modules.update(TENANT, module_id, content="exports.x = 2;", by="t")
            # Both start at once; `b` is in both changesets.
            racers[0].stdin.write(json.dumps([a, b]) + "\n")  # type: ignore[union-attr]
            racers[1].stdin.write(json.dumps([c, b]) + "\n")  # type: ignore[union-attr]
            for racer in racers:
                racer.stdin.flush()  # type: ignore[union-attr]
            answers = [json.loads(racer.stdout.readline()) for racer in racers]  # type: ignore[union-attr]
            outcomes.append(answers)
            accepted = [x for x in answers if "accepted" in x]
            assert len(accepted) == 1, (r, answers)
            refused = next(x for x in answers if "refused" in x)
            assert refused["refused"] in ("nothing-to-publish", "concurrent-change"), (r, answers)
            # The winner's modules are all at version 2; the loser's own module kept its draft.
            versions = {m: app.store.module(TENANT, m).published_version for m in (a, b, c)}
            winner_first = "accepted" in answers[0]
            assert versions == ({a: 2, b: 2, c: 1} if winner_first else {a: 1, b: 2, c: 2}), (r, answers, versions)
    finally:
        for racer in racers:
            if racer.stdin:
                racer.stdin.close()
            racer.wait(30)
