"""History, versions, time travel, revert, publish preview and If-Match (docs/rules.md B1–B3, B5, B7),
and the auditor's read-only token (docs/security.md), as an admin and an auditor use them."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from fastapi.testclient import TestClient

from domain.chain import GENESIS
from tests.helpers import expect, unique_id

BASE = "/api/v1/admin/code-modules"


def now() -> str:
    # The next event's timestamp comes strictly later than this instant.
    instant = datetime.now(timezone.utc)
    time.sleep(0.002)
    return instant.isoformat()


def create(client: TestClient, module_id: str, content: str, **fields: Any) -> dict[str, Any]:
    answer = client.post(BASE, json={"id": module_id, "description": f"about {module_id}", "draftContent": content, **fields})
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_as_of_answers_what_a_read_then_answered(client: TestClient) -> None:
    lib, user = unique_id("lib"), unique_id("user")
    seen: list[tuple[str, int, Any]] = []  # (instant, status, body) of the read at that instant

    def snapshot() -> None:
        at = now()
        answer = client.get(f"{BASE}/{lib}")
        seen.append((at, answer.status_code, answer.json() if answer.status_code == 200 else None))

    snapshot()  # before it exists
    create(client, lib, "exports.v = 1;")
    snapshot()
    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    snapshot()
    expect(client.put(f"{BASE}/{lib}", json={"draftContent": "exports.v = 2;"}), 200)
    snapshot()
    create(client, user, "exports.run = function () { return 1; };", draftImports=[lib])  # used by someone now
    snapshot()
    expect(client.delete(f"{BASE}/{user}"), 204)
    expect(client.delete(f"{BASE}/{lib}/draft"), 200)  # discard
    snapshot()
    expect(client.put(f"{BASE}/{lib}", json={"description": "changed"}), 200)
    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    snapshot()
    assert client.delete(f"{BASE}/{lib}").status_code == 204
    snapshot()  # deleted
    create(client, lib, "exports.v = 3;")  # a new life of the same id
    snapshot()

    assert [status for _, status, _ in seen] == [404, 200, 200, 200, 200, 200, 200, 404, 200]
    assert seen[4][2]["usedBy"] == [user]
    for at, status, body in seen:
        past = client.get(f"{BASE}/{lib}", params={"asOf": at})
        assert past.status_code == status, at
        if status == 200:
            assert past.json() == body, at
    # the present, as of a moment in the future, is the present
    assert client.get(f"{BASE}/{lib}", params={"asOf": "2999-01-01T00:00:00Z"}).json() == seen[-1][2]
    assert client.get(f"{BASE}/{lib}", params={"asOf": "yesterday"}).status_code == 400


def test_history_lists_every_event_chained_by_hashes(client: TestClient) -> None:
    name = unique_id("mod")
    create(client, name, "exports.v = 1;")
    expect(client.post(f"{BASE}/{name}/publish"), 200)
    expect(client.put(f"{BASE}/{name}", json={"draftContent": "exports.v = 2;"}), 200)
    expect(client.delete(f"{BASE}/{name}/draft"), 200)
    expect(client.delete(f"{BASE}/{name}"), 204)

    events = client.get(f"{BASE}/{name}/history").json()["events"]
    assert [(e["type"], e["version"], e["by"]) for e in events] == [
        ("Created", 1, "admin"), ("Published", 2, "admin"), ("DraftChanged", 3, "admin"),
        ("DraftDiscarded", 4, "admin"), ("Deleted", 5, "admin"),
    ]
    assert events[0]["data"]["definition"]["content"] == "exports.v = 1;"
    assert events[1]["data"]["version"] == 1
    # B5: each event names the one before it; the first names none, and no two are alike
    assert events[0]["previousHash"] == GENESIS
    hashes = [e["previousHash"] for e in events[1:]]
    assert all(len(h) == 64 for h in hashes) and len(set(hashes)) == len(hashes)
    # a deleted module keeps its history; one that never existed has none
    assert client.get(f"{BASE}/nobodyEver/history").status_code == 404


def test_revert_makes_an_old_version_the_draft_and_publishing_it_restores_it(client: TestClient) -> None:
    name = unique_id("mod")
    tool = {"inputParameters": [{"name": "n", "type": "integer", "required": True}]}
    create(client, name, "exports.run = function (i) { return 1; };", tool=tool)
    expect(client.post(f"{BASE}/{name}/publish"), 200)
    for n in (2, 3):
        expect(client.put(f"{BASE}/{name}", json={"description": f"version {n}", "draftContent": f"exports.run = function () {{ return {n}; }};"}), 200)
        expect(client.post(f"{BASE}/{name}/publish"), 200)
    versions = client.get(f"{BASE}/{name}/versions").json()
    assert [(v["version"], v["description"], v["publishedBy"]) for v in versions] == [
        (1, f"about {name}", "admin"), (2, "version 2", "admin"), (3, "version 3", "admin"),
    ]
    first = client.get(f"{BASE}/{name}/versions/1").json()

    reverted = client.post(f"{BASE}/{name}/revert", json={"version": 1})
    assert reverted.status_code == 200
    assert reverted.json()["state"] == "DRAFT" and reverted.json()["published"]["version"] == 3
    published = client.post(f"{BASE}/{name}/publish").json()["published"]
    assert published["version"] == 4
    for part in ("description", "content", "imports", "tool"):
        assert published[part] == first[part], part
    assert client.post(f"/api/v1/tools/{name}/call", json={"n": 5}).json()["output"] == 1

    assert client.get(f"{BASE}/{name}/history").json()["events"][-2]["type"] == "Reverted"
    assert client.post(f"{BASE}/{name}/revert", json={"version": 9}).status_code == 404
    assert client.get(f"{BASE}/{name}/versions/9").status_code == 404
    assert client.post(f"{BASE}/{name}/revert", json={"version": "1"}).status_code == 400


def test_publish_dry_run_reports_every_dependent_and_publishes_nothing(client: TestClient) -> None:
    lib, good, bad = unique_id("lib"), unique_id("good"), unique_id("bad")
    create(client, lib, "exports.one = function () { return 1; }; exports.two = function () { return 2; };")
    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    create(client, good, f"exports.run = function () {{ return {lib}.one(); }};", draftImports=[lib])
    expect(client.post(f"{BASE}/{good}/publish"), 200)
    create(client, bad, f"exports.run = function () {{ return {lib}.two(); }};", draftImports=[lib])
    expect(client.post(f"{BASE}/{bad}/publish"), 200)
    expect(client.put(f"{BASE}/{lib}", json={"draftContent": "exports.one = function () { return 1; };"}), 200)  # drops `two`

    preview = client.post(f"{BASE}/{lib}/publish", params={"dryRun": "true"})
    assert preview.status_code == 200
    report = preview.json()
    assert report["wouldPublish"] is False and report["version"] == 2
    by_module = {c["module"]: c for c in report["checks"]}
    assert set(by_module) == {lib, good, bad} and report["checks"][0]["module"] == lib
    assert by_module[lib]["ok"] and by_module[good]["ok"]
    assert not by_module[bad]["ok"] and "two" in by_module[bad]["error"]["message"]
    # nothing was published
    assert client.get(f"{BASE}/{lib}").json()["published"]["version"] == 1
    assert client.post(f"{BASE}/{good}/publish", params={"dryRun": "true"}).status_code == 409  # nothing to publish


def test_if_match_refuses_a_write_based_on_a_stale_read(client: TestClient) -> None:
    name = unique_id("mod")
    create(client, name, "exports.v = 1;")
    read = client.get(f"{BASE}/{name}")
    tag = read.headers["ETag"]
    assert tag == '"1"'

    # someone else changes it after our read
    other = client.put(f"{BASE}/{name}", json={"description": "theirs"})
    assert other.headers["ETag"] == '"2"'

    stale = client.put(f"{BASE}/{name}", json={"description": "ours"}, headers={"If-Match": tag})
    assert stale.status_code == 412 and stale.json()["code"] == "precondition-failed"
    assert client.post(f"{BASE}/{name}/publish", headers={"If-Match": tag}).status_code == 412
    assert client.put(f"{BASE}/{name}", json={"description": "x"}, headers={"If-Match": "nonsense"}).status_code == 412
    assert client.get(f"{BASE}/{name}").json()["description"] == "theirs"  # nothing written

    fresh = client.put(f"{BASE}/{name}", json={"description": "ours"}, headers={"If-Match": other.headers["ETag"]})
    assert fresh.status_code == 200 and fresh.headers["ETag"] == '"3"'
    assert client.post(f"{BASE}/{name}/publish", headers={"If-Match": 'W/"3"'}).status_code == 200
    assert client.put(f"{BASE}/{name}", json={"description": "any"}, headers={"If-Match": "*"}).status_code == 200


def test_an_auditor_reads_everything_and_every_write_is_403(client: TestClient) -> None:
    name = unique_id("mod")
    create(client, name, "exports.run = function () { return 1; };", tool={})
    expect(client.post(f"{BASE}/{name}/publish"), 200)
    secret = expect(client.post("/api/v1/admin/tokens", json={"name": "auditor", "role": "auditor"}), 201).json()["token"]
    auditor = TestClient(client.app, headers={"Authorization": f"Bearer {secret}"})

    for path in (BASE, f"{BASE}/{name}", f"{BASE}/{name}/history", f"{BASE}/{name}/versions", f"{BASE}/{name}/versions/1",
                 f"{BASE}/{name}/usage", f"{BASE}/availability?id=x", "/api/v1/admin/tools", "/api/v1/admin/plans",
                 "/api/v1/admin/agents", "/api/v1/admin/mcp-servers", "/api/v1/admin/usage-profiles"):
        assert auditor.get(path).status_code == 200, path

    # every write route the API documents
    paths = client.get("/openapi.json").json()["paths"]
    writes = [(method.upper(), path) for path, operations in paths.items() for method in operations if method in ("post", "put", "patch", "delete")]
    assert len(writes) >= 20
    for method, path in writes:
        concrete = path.replace("{id}", name).replace("{name}", name).replace("{version}", "1")
        if path.endswith("/documents"):  # a document upload is multipart
            answer = auditor.request(method, concrete, files=[("files", ("a.txt", b"a document"))])
        else:
            answer = auditor.request(method, concrete, json={})
        assert answer.status_code == 403, (method, path, answer.status_code)
    # and nothing changed
    assert [e["type"] for e in client.get(f"{BASE}/{name}/history").json()["events"]] == ["Created", "Published"]
