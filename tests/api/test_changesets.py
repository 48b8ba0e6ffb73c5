"""Changesets (docs/rules.md B6, issue 18): several drafts published as one change, checked together
against the graph as it will be and recorded in one transaction, all or nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.helpers import expect

BASE = "/api/v1/admin/code-modules"
CHANGESETS = "/api/v1/admin/changesets"


def module(client: TestClient, module_id: str, content: str, imports: list[str] | None = None, *, tool: dict[str, Any] | None = None,
           publish: bool = True) -> None:
    body: dict[str, Any] = {"id": module_id, "description": module_id, "draftContent": content, "draftImports": imports or []}
    if tool is not None:
        body["tool"] = tool
    expect(client.post(BASE, json=body), 201)
    if publish:
        expect(client.post(f"{BASE}/{module_id}/publish"), 200)


def seed_004(client: TestClient) -> None:
    """Seed 004's `dates` library and the `report` tool that imports it."""
    module(client, "dates", "exports.year = function (d) { return d.slice(0, 4); };")
    module(client, "report", "exports.run = function (i) { return 'Report ' + dates.year(i.day); };", ["dates"],
           tool={"inputParameters": [{"name": "day", "type": "string", "required": True}],
                 "examples": [{"name": "leap", "input": {"day": "2024-02-29"}, "output": "Report 2024"}]})


def rename_drafts(client: TestClient) -> None:
    expect(client.put(f"{BASE}/dates", json={"draftContent": "exports.yearOf = function (d) { return d.slice(0, 4); };"}), 200)
    expect(client.put(f"{BASE}/report", json={"draftContent": "exports.run = function (i) { return 'Report ' + dates.yearOf(i.day); };"}), 200)


def versions(client: TestClient, *ids: str) -> dict[str, int | None]:
    return {i: (expect(client.get(f"{BASE}/{i}"), 200).json()["published"] or {}).get("version") for i in ids}


def test_a_library_renames_an_export_with_its_importer_in_one_changeset(client: TestClient) -> None:
    seed_004(client)
    rename_drafts(client)
    # Each alone is refused: the library breaks the published importer, the importer needs the new export.
    assert client.post(f"{BASE}/dates/publish").status_code == 422
    assert client.post(f"{BASE}/report/publish").status_code == 422

    preview = expect(client.post(f"{BASE}/publish", params={"dryRun": "true"}, json={"ids": ["report", "dates"]}), 200).json()
    assert preview["wouldPublish"] is True and [c["module"] for c in preview["checks"]] == ["dates", "report"]
    assert versions(client, "dates", "report") == {"dates": 1, "report": 1}  # a dry run records nothing

    done = expect(client.post(f"{BASE}/publish", json={"ids": ["report", "dates"], "message": "year becomes yearOf"}), 200).json()
    assert done["id"].startswith("cs_") and done["message"] == "year becomes yearOf" and done["by"] == "admin"
    assert sorted((m["id"], m["version"]) for m in done["modules"]) == [("dates", 2), ("report", 2)]
    assert versions(client, "dates", "report") == {"dates": 2, "report": 2}
    called = expect(client.post("/api/v1/tools/report/call", json={"day": "1999-12-31"}), 200).json()
    assert called["output"] == "Report 1999"

    # History, versions and the changesets list name it, with its message.
    for module_id in ("dates", "report"):
        published = [e for e in expect(client.get(f"{BASE}/{module_id}/history"), 200).json()["events"] if e["type"] == "Published"]
        assert published[-1]["data"]["changeset"] == done["id"] and published[-1]["data"]["message"] == "year becomes yearOf"
        assert published[0]["data"]["changeset"] is None
        second = expect(client.get(f"{BASE}/{module_id}/versions/2"), 200).json()
        assert second["changeset"] == done["id"] and second["message"] == "year becomes yearOf"
        card = expect(client.get(f"{BASE}/{module_id}"), 200).json()["published"]  # the Published version card
        assert (card["version"], card["changeset"], card["message"]) == (2, done["id"], "year becomes yearOf")
    listed = expect(client.get(CHANGESETS), 200).json()
    assert [c["id"] for c in listed] == [done["id"]]
    one = expect(client.get(f"{CHANGESETS}/{done['id']}"), 200).json()
    assert sorted(m["id"] for m in one["modules"]) == ["dates", "report"] and one["message"] == "year becomes yearOf"
    expect(client.get(f"{CHANGESETS}/cs_nosuch"), 404)


def test_a_changeset_closing_a_cycle_through_two_of_its_drafts_is_refused(client: TestClient) -> None:
    module(client, "a", "exports.x = 1;")
    module(client, "b", "exports.y = 2;")
    # Each draft alone closes no cycle with the published graph (R5 at save), so both are saved...
    expect(client.put(f"{BASE}/a", json={"draftContent": "exports.x = b.y;", "draftImports": ["b"]}), 200)
    expect(client.put(f"{BASE}/b", json={"draftContent": "exports.y = 2; exports.z = a.x;", "draftImports": ["a"]}), 200)
    # ...but published together they would import each other.
    answer = client.post(f"{BASE}/publish", json={"ids": ["a", "b"]})
    assert answer.status_code == 422 and answer.json()["code"] == "import-cycle"
    assert answer.json()["cycle"][0] == answer.json()["cycle"][-1] and set(answer.json()["cycle"]) == {"a", "b"}
    dry = client.post(f"{BASE}/publish", params={"dryRun": "true"}, json={"ids": ["a", "b"]})
    assert dry.status_code == 422 and dry.json()["code"] == "import-cycle"
    assert versions(client, "a", "b") == {"a": 1, "b": 1}


def test_a_changeset_that_breaks_a_third_unchanged_importer_is_refused_naming_it(client: TestClient) -> None:
    seed_004(client)
    module(client, "summary", "exports.run = function (i) { return dates.year(i.day) + '!'; };", ["dates"], tool={})
    rename_drafts(client)
    answer = client.post(f"{BASE}/publish", json={"ids": ["dates", "report"], "message": "rename"})
    assert answer.status_code == 422, answer.text
    problem = answer.json()
    assert problem["code"] == "changeset-refused" and [f["module"] for f in problem["failures"]] == ["summary"]
    assert "summary" in problem["detail"]
    assert versions(client, "dates", "report", "summary") == {"dates": 1, "report": 1, "summary": 1}
    assert expect(client.get(CHANGESETS), 200).json() == []


def test_a_refusal_names_every_failing_module_and_examples_count(client: TestClient) -> None:
    seed_004(client)
    module(client, "summary", "exports.run = function (i) { return dates.year(i.day) + '!'; };", ["dates"], tool={})
    # A library change that keeps its exports but changes a result: report's example fails too.
    expect(client.put(f"{BASE}/dates", json={"draftContent": "exports.yearOf = function (d) { return d.slice(0, 4); }; "
                                                            "exports.year = function (d) { return 'y' + d.slice(0, 4); };"}), 200)
    answer = client.post(f"{BASE}/publish", json={"ids": ["dates"]})
    assert answer.status_code == 422
    failures = {f["module"]: f["error"] for f in answer.json()["failures"]}
    assert set(failures) == {"report"} and failures["report"]["type"] == "example" and "'leap'" in failures["report"]["message"]


def inject_failure_in_the_transaction(store: Any, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The recorder writes every event of the save into its transaction, then fails before the
    commit: what a crash or a lost connection at that moment does. Answers how many were written."""
    recorder = store.recorder
    original = recorder._insert_events
    written: list[int] = []

    def insert_then_fail(cursor: Any, stored_events: Any, **kwargs: Any) -> Any:
        original(cursor, stored_events, **kwargs)
        written.append(len(stored_events))
        raise RuntimeError("injected: the connection failed before the commit")

    monkeypatch.setattr(recorder, "_insert_events", insert_then_fail)
    return written


def test_atomicity_a_failure_after_the_checks_leaves_every_module_as_it_was(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    seed_004(client)
    rename_drafts(client)
    store = client.app.state.services.store  # type: ignore[attr-defined]
    before = client.get("/healthz").json()["eventStore"]["position"]
    written = inject_failure_in_the_transaction(store, monkeypatch)
    with pytest.raises(RuntimeError, match="injected"):
        client.post(f"{BASE}/publish", json={"ids": ["dates", "report"]})
    assert written == [4]  # two Published events and the graph's two links, in the one transaction rolled back
    monkeypatch.undo()
    assert client.get("/healthz").json()["eventStore"]["position"] == before
    assert versions(client, "dates", "report") == {"dates": 1, "report": 1}
    assert expect(client.get(f"{BASE}/dates"), 200).json()["draft"] is not None
    # and the same changeset goes through once the store works
    expect(client.post(f"{BASE}/publish", json={"ids": ["dates", "report"]}), 200)
    assert versions(client, "dates", "report") == {"dates": 2, "report": 2}


def test_single_publishes_take_a_message(client: TestClient) -> None:
    module(client, "lib", "exports.x = 1;", publish=False)
    expect(client.post(f"{BASE}/lib/publish", json={"message": "first cut"}), 200)
    assert expect(client.get(f"{BASE}/lib/versions/1"), 200).json()["message"] == "first cut"
    events = expect(client.get(f"{BASE}/lib/history"), 200).json()["events"]
    assert events[-1]["data"]["message"] == "first cut" and events[-1]["data"]["changeset"] is None


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"ids": []}, 400, "ids"),
    ({"ids": ["a", "a"]}, 400, "ids[1]"),
    ({"ids": [f"m{i}" for i in range(101)]}, 400, "ids"),
    ({"ids": ["Not An Id!"]}, 400, "ids[0]"),
    ({"ids": ["a"], "ifMatch": {"b": '"1"'}}, 400, "ifMatch.b"),
    ({"ids": ["nosuch"]}, 404, None),
    ({"ids": ["a"]}, 409, None),  # published, no draft
])
def test_bad_changesets_get_clear_problems_and_record_nothing(client: TestClient, body: dict[str, Any], status: int,
                                                              field: str | None) -> None:
    module(client, "a", "exports.x = 1;")
    before = client.get("/healthz").json()["eventStore"]["position"]
    answer = client.post(f"{BASE}/publish", json=body)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    if field is not None:
        assert field in [e["field"] for e in answer.json()["errors"]]
    assert client.get("/healthz").json()["eventStore"]["position"] == before


def test_if_match_per_module(client: TestClient) -> None:
    seed_004(client)
    rename_drafts(client)
    stale = client.post(f"{BASE}/publish", json={"ids": ["dates", "report"], "ifMatch": {"dates": '"1"'}})
    assert stale.status_code == 412
    current = expect(client.get(f"{BASE}/dates"), 200).headers["ETag"]
    expect(client.post(f"{BASE}/publish", json={"ids": ["dates", "report"], "ifMatch": {"dates": current}}), 200)


def test_an_export_and_a_reimport_keep_changesets_and_audit_verify_stays_clean(client: TestClient, tmp_path: Any) -> None:
    import io

    from application.history import History
    from application.store import Store
    from infrastructure import audit
    from infrastructure.settings import Settings

    seed_004(client)
    rename_drafts(client)
    done = expect(client.post(f"{BASE}/publish", json={"ids": ["dates", "report"], "message": "rename"}), 200).json()
    store = client.app.state.services.store  # type: ignore[attr-defined]
    report = audit.verify(store)
    assert report.intact, report.first_broken
    exported = io.BytesIO()
    audit.export(store, exported)

    (tmp_path / "again").mkdir()
    again = Store(Settings(data_dir=tmp_path / "again").event_store_env())
    try:
        audit.import_events(again, io.BytesIO(exported.getvalue()))
        assert audit.verify(again).intact
        listed = History(again).changesets("default")
        assert [(c["id"], c["message"], sorted(m["id"] for m in c["modules"])) for c in listed] == [
            (done["id"], "rename", ["dates", "report"])]
    finally:
        again.close()
