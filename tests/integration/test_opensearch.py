"""The OpenSearch read model on a real node: its mapping, idempotent writes, bulk retries, the
rebuild with its alias swap, the runner as its own process (killed half-way), and what a query
gets when OpenSearch cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventsourcing.persistence import Tracking
from opensearchpy import OpenSearch
from opensearchpy.exceptions import RequestError

from application.store import Store
from entrypoints.compose import ApplicationServices, build_application
from projections.interface import ListQuery, ReadModelUnavailable
from projections.modules import ModuleSummaries
from projections.opensearch import MAPPINGS, OpenSearchModuleReadModel
from projections.rebuild import rebuild
from projections.runner import PullingProjectionRunner
from sandbox.embedded import EmbeddedSandbox
from tests.helpers import environment_without_settings, free_port

TENANT = "default"
TOOLSMITH = Path(sys.executable).parent / "toolsmith"


@pytest.fixture
def sqlite_app(tmp_path: Path, shared_sandbox: EmbeddedSandbox) -> Iterator[ApplicationServices]:
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "events.sqlite")}
    app = build_application(Store(env), sandbox=lambda: shared_sandbox)
    yield app
    app.store.close()


def _view(client: OpenSearch, alias: str, **options: Any) -> OpenSearchModuleReadModel:
    return OpenSearchModuleReadModel(client, index=alias, replicas=0, **options)


def _history(app: ApplicationServices) -> None:
    """Creates, publishes, drafts, discards, deletes and recreates: every kind of module event."""
    source = "exports.run = function () { return 1; }; exports.f = 1;"
    app.modules.create(TENANT, "lib", description="A library", content=source, imports=[], tool=None, by="ada")
    app.modules.publish(TENANT, "lib", by="ada")
    for n in range(6):
        app.modules.create(TENANT, f"tool{n}", description=f"Tool number {n}", content=source, imports=["lib"],
                   tool={"tags": [f"t{n % 3}", "all"]}, by="grace")
        if n % 2 == 0:
            app.modules.publish(TENANT, f"tool{n}", by="grace")
    app.modules.update(TENANT, "tool0", description="Tool zero, changed", by="ada")
    app.modules.update(TENANT, "tool2", description="Tool two, changed", by="ada")
    app.modules.discard_draft(TENANT, "tool2", by="ada")
    app.modules.delete(TENANT, "tool5", by="ada")
    app.modules.delete(TENANT, "tool3", by="ada")
    app.modules.create(TENANT, "tool3", description="Tool three again", content=source, imports=[], tool={"tags": ["again"]}, by="ada")


def _documents(client: OpenSearch, index: str) -> dict[str, dict[str, Any]]:
    """What the projection wrote: the modules and the tracking position (not a runner's
    heartbeat, which tells of the runner, not of the events: a rebuild writes none)."""
    client.indices.refresh(index=index)
    query = {"bool": {"must_not": [{"term": {"kind": "heartbeat"}}]}}
    found = client.search(index=index, body={"query": query, "size": 1000})
    return {hit["_id"]: hit["_source"] for hit in found["hits"]["hits"]}


def test_the_mapping_is_strict_and_user_data_adds_no_field(sqlite_app: ApplicationServices, opensearch: OpenSearch,
                                                           opensearch_index: str) -> None:
    view = _view(opensearch, opensearch_index)
    runner = PullingProjectionRunner(sqlite_app.store, ModuleSummaries(view=view))
    source = "exports.run = function (input) { return input; };"
    tool = {"tags": ["weird.tag", "x" * 64, "_source", "properties"],
            "parameters": [{"name": "nested_param", "type": "object", "required": False}]}
    sqlite_app.modules.create(TENANT, "odd", description="Odd tags", content=source, imports=[], tool=tool, by="t")
    runner.catch_up()
    mapping = next(iter(opensearch.indices.get_mapping(index=opensearch_index).values()))["mappings"]
    assert mapping["dynamic"] == "strict"
    assert set(mapping["properties"]) == set(MAPPINGS["properties"])
    assert view.list(TENANT, ListQuery(tags=("weird.tag",))).total == 1
    with pytest.raises(RequestError) as refused:
        opensearch.index(index=opensearch_index, id="x", body={"kind": "module", "surprise": 1})
    assert "strict_dynamic_mapping_exception" in str(refused.value)


def test_repeated_and_older_writes_change_nothing(sqlite_app: ApplicationServices, opensearch: OpenSearch,
                                                  opensearch_index: str) -> None:
    view = _view(opensearch, opensearch_index)
    runner = PullingProjectionRunner(sqlite_app.store, ModuleSummaries(view=view))
    _history(sqlite_app)
    runner.catch_up()
    before = _documents(opensearch, opensearch_index)

    # The whole log applied again, as a runner that lost its position would: every write is an
    # older or equal version, so OpenSearch keeps each document as it is.
    replay = OpenSearchModuleReadModel(opensearch, index=opensearch_index, replicas=0)
    for notification in sqlite_app.store.recorder.select_notifications(start=1, limit=1000):
        event = sqlite_app.store.mapper.to_domain_event(notification)
        ModuleSummaries(view=replay).process_event(event, Tracking("replay", notification.id))
        replay.flush()
    after = _documents(opensearch, opensearch_index)
    assert {k: v for k, v in after.items() if not k.startswith("tracking/")} == {
        k: v for k, v in before.items() if not k.startswith("tracking/")}
    assert after["tracking/toolsmith"] == before["tracking/toolsmith"]
    # A deleted module stays a tombstone, so no replay can bring it back.
    assert before["default/tool5"]["deleted"] is True
    assert not view.is_taken(TENANT, "tool5") and view.is_taken(TENANT, "tool3")


def test_a_position_can_be_read_only_once_its_documents_can_be_found(
        sqlite_app: ApplicationServices, opensearch: OpenSearch, opensearch_index: str) -> None:
    """A batch's documents are written and refreshed, then its position without a refresh (one
    refresh per write, issue 15). Whoever reads the position (another API process, however it
    reads it) must find what it covers; the runner's announcement comes between the two."""
    view = _view(opensearch, opensearch_index)
    announced: list[int] = []
    runner = PullingProjectionRunner(sqlite_app.store, ModuleSummaries(view=view), announce=announced.append)
    _history(sqlite_app)
    runner.catch_up()
    applied = sqlite_app.store.position()
    watcher = _view(opensearch, opensearch_index)  # another process's view of the same index
    assert watcher.max_tracking_id("toolsmith") == applied and announced[-1] == applied
    assert watcher.list(TENANT, ListQuery(limit=50)).total == 6  # read-your-writes, with no refresh after the position

    seen: list[tuple[int | None, list[str], list[int]]] = []
    view.on_documents_written = lambda: seen.append((
        watcher.max_tracking_id("toolsmith"),
        [m["id"] for m in watcher.list(TENANT, ListQuery(limit=50)).collection],
        list(announced),
    ))
    source = "exports.run = function () { return 2; };"
    sqlite_app.modules.create(TENANT, "late", description="Written late", content=source, imports=[], tool=None, by="t")
    runner.catch_up()
    position, listed, heard = seen[0]
    assert "late" in listed  # searchable ...
    assert position == applied and heard[-1] == applied  # ... before its position is stored or announced
    assert announced[-1] == applied + 1 == watcher.max_tracking_id("toolsmith")
    assert "late" in [m["id"] for m in watcher.list(TENANT, ListQuery(limit=50)).collection]


class RejectingClient:
    """The real client, except that the first bulk request has two of its items answered with 429
    instead of being sent, as an overloaded node answers per item."""

    def __init__(self, client: OpenSearch, rejected: set[str]) -> None:
        self._client = client
        self._rejected = rejected
        self.bulks: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def bulk(self, body: bytes, **params: Any) -> dict[str, Any]:
        lines = [orjson.loads(line) for line in body.splitlines()]
        pairs = list(zip(lines[::2], lines[1::2], strict=True))
        self.bulks.append([action["index"]["_id"] for action, _ in pairs])
        if len(self.bulks) > 1 or not self._rejected:
            return self._client.bulk(body=body, **params)
        sent = [(a, s) for a, s in pairs if a["index"]["_id"] not in self._rejected]
        answer = self._client.bulk(body=[line for pair in sent for line in pair], **params)
        answered = iter(answer["items"])
        items = []
        for action, _ in pairs:
            if action["index"]["_id"] in self._rejected:
                items.append({"index": {"_id": action["index"]["_id"], "status": 429,
                                        "error": {"type": "rejected_execution_exception", "reason": "queue full"}}})
            else:
                items.append(next(answered))
        return {"errors": True, "items": items, "took": answer["took"]}


def test_a_bulk_retries_only_the_items_rejected_with_429(sqlite_app: ApplicationServices, opensearch: OpenSearch,
                                                         opensearch_index: str) -> None:
    source = "exports.f = 1;"
    for n in range(5):
        sqlite_app.modules.create(TENANT, f"m{n}", description=f"m{n}", content=source, imports=[], tool=None, by="t")
    client = RejectingClient(opensearch, rejected={"default/m1", "default/m3"})
    view = OpenSearchModuleReadModel(client, index=opensearch_index, replicas=0, retry_base_seconds=0.01)  # type: ignore[arg-type]
    view.open()
    PullingProjectionRunner(sqlite_app.store, ModuleSummaries(view=view)).catch_up()
    assert client.bulks[0] == [f"default/m{n}" for n in range(5)]
    assert client.bulks[1] == ["default/m1", "default/m3"]  # only those, then the tracking write
    assert client.bulks[2] == ["tracking/toolsmith"]
    assert view.list(TENANT, ListQuery()).total == 5


def test_rebuild_swaps_the_alias_to_an_equal_index(sqlite_app: ApplicationServices, opensearch: OpenSearch,
                                                   opensearch_index: str) -> None:
    view = _view(opensearch, opensearch_index)
    runner = PullingProjectionRunner(sqlite_app.store, ModuleSummaries(view=view), batch=3)
    _history(sqlite_app)
    runner.catch_up()
    first = next(iter(opensearch.indices.get_alias(name=opensearch_index)))
    live = _documents(opensearch, opensearch_index)
    seen: list[tuple[int, int]] = []
    done = rebuild(sqlite_app.store, opensearch, opensearch_index, replicas=0, progress=lambda p, h: seen.append((p, h)))
    assert done.replaced == [first] and not opensearch.indices.exists(index=first)
    assert list(opensearch.indices.get_alias(name=opensearch_index)) == [done.index]
    assert _documents(opensearch, opensearch_index) == live
    assert seen[-1] == (sqlite_app.store.position(), sqlite_app.store.position())
    # The live runner keeps going on the new index.
    sqlite_app.modules.create(TENANT, "late", description="After the rebuild", content="exports.f = 1;", imports=[], tool=None, by="t")
    runner.catch_up()
    assert view.summary(TENANT, "late")["description"] == "After the rebuild"


def test_queries_say_unavailable_when_opensearch_cannot_be_reached() -> None:
    view = OpenSearchModuleReadModel(OpenSearch(hosts=[f"http://127.0.0.1:{free_port()}"], timeout=2, max_retries=0))
    with pytest.raises(ReadModelUnavailable, match="cannot be reached"):
        view.list(TENANT, ListQuery())
    with pytest.raises(ReadModelUnavailable):
        view.used_by(TENANT, "x")
    assert not view.available()


def _projections_run(tmp_path: Path, url: str, alias: str, **extra: str) -> subprocess.Popen[bytes]:
    env = environment_without_settings()
    env.update(OPENSEARCH_URL=url, TOOLSMITH_OPENSEARCH_INDEX=alias, TOOLSMITH_OPENSEARCH_REPLICAS="0",
               SQLITE_DBNAME=str(tmp_path / "events.sqlite"), TOOLSMITH_DATA_DIR=str(tmp_path), **extra)
    return subprocess.Popen([str(TOOLSMITH), "projections", "run"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_a_runner_killed_between_documents_and_tracking_resumes_to_what_a_rebuild_gives(
    sqlite_app: ApplicationServices, opensearch: OpenSearch, opensearch_index: str, opensearch_url: str, tmp_path: Path
) -> None:
    _history(sqlite_app)
    killed = _projections_run(tmp_path, opensearch_url, opensearch_index, TOOLSMITH_FAILPOINT="kill-after-documents")
    assert killed.wait(timeout=60) == -9, killed.stdout.read().decode() if killed.stdout else ""
    # Documents were written, the tracking position was not.
    written = _documents(opensearch, opensearch_index)
    assert "default/lib" in written and "tracking/toolsmith" not in written

    resumed = _projections_run(tmp_path, opensearch_url, opensearch_index)
    try:
        view = _view(opensearch, opensearch_index)
        deadline = time.monotonic() + 60
        while (view.max_tracking_id("toolsmith") or 0) < sqlite_app.store.position():
            assert time.monotonic() < deadline and resumed.poll() is None, "the restarted runner did not catch up"
            time.sleep(0.1)
    finally:
        resumed.terminate()
        assert resumed.wait(timeout=30) == 0
    fresh = rebuild(sqlite_app.store, opensearch, f"{opensearch_index}-fresh", replicas=0)
    assert _documents(opensearch, opensearch_index) == _documents(opensearch, fresh.index)


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = environment_without_settings()
    return subprocess.run([str(TOOLSMITH), *args], env={**clean, **env}, capture_output=True, text=True, timeout=120)


def test_the_rebuild_command_swaps_the_alias_and_shows_progress(sqlite_app: ApplicationServices, opensearch: OpenSearch,
                                                                opensearch_index: str, opensearch_url: str,
                                                                tmp_path: Path) -> None:
    _history(sqlite_app)
    env = {"OPENSEARCH_URL": opensearch_url, "TOOLSMITH_OPENSEARCH_INDEX": opensearch_index,
           "TOOLSMITH_OPENSEARCH_REPLICAS": "0", "SQLITE_DBNAME": str(tmp_path / "events.sqlite"),
           "TOOLSMITH_DATA_DIR": str(tmp_path)}
    first = _cli("projections", "rebuild", env=env)
    assert first.returncode == 0, first.stderr
    assert f"{sqlite_app.store.position()}/{sqlite_app.store.position()} events" in first.stderr  # the progress bar's end
    assert "replacing nothing" in first.stdout
    index = next(iter(opensearch.indices.get_alias(name=opensearch_index)))
    second = _cli("projections", "rebuild", "--keep-old", env=env)
    assert second.returncode == 0 and f"replacing {index}" in second.stdout
    assert opensearch.indices.exists(index=index)  # kept
    assert next(iter(opensearch.indices.get_alias(name=opensearch_index))) != index
    view = _view(opensearch, opensearch_index)
    assert view.list(TENANT, ListQuery()).total == 6  # lib, tool0–tool4 (tool5 deleted, tool3 recreated)


def test_commands_refuse_settings_they_cannot_use(tmp_path: Path) -> None:
    refused = _cli("projections", "run", env={"TOOLSMITH_DATA_DIR": str(tmp_path)})
    assert refused.returncode == 2
    assert "OPENSEARCH_URL is not set" in refused.stderr and "Traceback" not in refused.stderr
    # Without OpenSearch, a rebuild makes the File Search chunk index again (the module read model
    # lives in each API process and is rebuilt at its start).
    rebuilt = _cli("projections", "rebuild", env={"TOOLSMITH_DATA_DIR": str(tmp_path)})
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "the module read model is in memory" in rebuilt.stdout and "the chunk index holds 0 chunks" in rebuilt.stdout
    bad = _cli("serve", "--data-dir", str(tmp_path), env={"OPENSEARCH_URL": "opensearch:9200"})
    assert bad.returncode == 2 and "OPENSEARCH_URL" in bad.stderr and "Traceback" not in bad.stderr
    unreachable = _cli("projections", "rebuild", env={"OPENSEARCH_URL": f"http://user:pw-{os.getpid()}@127.0.0.1:{free_port()}",
                                                     "TOOLSMITH_DATA_DIR": str(tmp_path)})
    assert unreachable.returncode == 2 and "Connection refused" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr and f"pw-{os.getpid()}" not in unreachable.stderr + unreachable.stdout
    no_store = _cli("serve", "--data-dir", str(tmp_path), env={"PERSISTENCE_MODULE": "eventsourcing.postgres"})
    assert no_store.returncode == 2 and "needs POSTGRES_DBNAME, POSTGRES_HOST, POSTGRES_USER" in no_store.stderr


def test_a_bulk_rejected_as_a_whole_with_429_is_sent_again(sqlite_app: ApplicationServices, opensearch: OpenSearch,
                                                           opensearch_index: str) -> None:
    from opensearchpy.exceptions import TransportError

    class Overloaded(RejectingClient):
        def bulk(self, body: bytes, **params: Any) -> dict[str, Any]:
            self.bulks.append([orjson.loads(line)["index"]["_id"] for line in body.splitlines()[::2]])
            if len(self.bulks) == 1:
                raise TransportError(429, "circuit_breaking_exception", {"error": {"type": "circuit_breaking_exception"}})
            return self._client.bulk(body=body, **params)

    sqlite_app.modules.create(TENANT, "m", description="m", content="exports.f = 1;", imports=[], tool=None, by="t")
    client = Overloaded(opensearch, rejected=set())
    view = OpenSearchModuleReadModel(client, index=opensearch_index, replicas=0, retry_base_seconds=0.01)  # type: ignore[arg-type]
    view.open()
    PullingProjectionRunner(sqlite_app.store, ModuleSummaries(view=view)).catch_up()
    assert client.bulks == [["default/m"], ["default/m"], ["tracking/toolsmith"]]
    assert view.summary(TENANT, "m") is not None


def test_a_runner_whose_index_was_deleted_builds_it_again(sqlite_app: ApplicationServices, opensearch: OpenSearch,
                                                          opensearch_index: str) -> None:
    view = _view(opensearch, opensearch_index)
    runner = PullingProjectionRunner(sqlite_app.store, ModuleSummaries(view=view), poll_seconds=0.05)
    _history(sqlite_app)
    runner.start()
    try:
        assert runner.wait(sqlite_app.store.position(), timeout=30)
        opensearch.indices.delete(index=f"{opensearch_index}-*")
        with pytest.raises(ReadModelUnavailable, match="does not exist"):
            view.list(TENANT, ListQuery())
        sqlite_app.modules.create(TENANT, "after", description="After the loss", content="exports.f = 1;", imports=[], tool=None, by="t")
        deadline = time.monotonic() + 30
        while True:
            try:
                if view.list(TENANT, ListQuery()).total == 7:
                    break
            except ReadModelUnavailable:
                pass
            assert time.monotonic() < deadline, "the runner did not build the index again"
            time.sleep(0.1)
        assert view.summary(TENANT, "after")["description"] == "After the loss"
    finally:
        runner.stop()


def test_a_runners_heartbeat_is_read_back_and_never_makes_an_index_of_its_own(opensearch: OpenSearch, opensearch_index: str) -> None:
    """Issue 28, finding 11: the heartbeat of `toolsmith projections run` is a document of the index
    (its runner and counter read back by id, by this store's views only); a beat after the index was
    deleted fails, instead of making a concrete index of the alias's name with a dynamic mapping."""
    view = _view(opensearch, opensearch_index, store="this-store")
    with pytest.raises(ReadModelUnavailable, match="not prepared"):
        view.beat("toolsmith", "runner-1", 1)  # before `open`: nowhere to beat yet
    view.open()
    assert view.heartbeat("toolsmith") is None
    view.beat("toolsmith", "runner-1", 1)
    view.beat("toolsmith", "runner-1", 2)
    assert view.heartbeat("toolsmith") == ("runner-1", 2)
    assert _view(opensearch, opensearch_index, store="another-store").heartbeat("toolsmith") is None
    assert view.list(TENANT, ListQuery()).total == 0  # no module

    for index in opensearch.indices.get_alias(name=opensearch_index):
        opensearch.indices.delete(index=index)
    # As a cluster does by default (the test node refuses it): a write to a missing index makes it,
    # here for this test's index name only.
    opensearch.cluster.put_settings(body={"transient": {"action.auto_create_index": f"+{opensearch_index},-*"}})
    try:
        with pytest.raises(Exception):  # noqa: B017 - whichever way OpenSearch refuses it
            view.beat("toolsmith", "runner-1", 3)
    finally:
        opensearch.cluster.put_settings(body={"transient": {"action.auto_create_index": None}})
    assert not opensearch.indices.exists(index=opensearch_index)
