"""GET / over HTTP: read-your-writes, search, filters, facets and paging as the console uses them."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.helpers import expect

BASE = "/api/v1/admin/code-modules"


def _make(client: TestClient, module_id: str, description: str, *, tool: dict | None = None, imports: list[str] = (), publish: bool = False) -> None:
    body = {"id": module_id, "description": description, "draftContent": "exports.run = () => 1; exports.x = 1;", "draftImports": list(imports)}
    if tool is not None:
        body["tool"] = tool
    expect(client.post(BASE, json=body), 201)
    if publish:
        expect(client.post(f"{BASE}/{module_id}/publish"), 200)


def test_the_list_answers_with_each_write_at_once(client: TestClient) -> None:
    for i in range(5):
        _make(client, f"m{i}", f"module {i}")
        assert client.get(BASE).json()["total"] == i + 1


def test_filters_facets_and_paging(client: TestClient) -> None:
    _make(client, "dates", "Date helpers", publish=True)
    _make(client, "report", "Yearly report", tool={"tags": ["text", "report"]}, imports=["dates"], publish=True)
    _make(client, "counter", "Counts lines", tool={"tags": ["text"]})
    expect(client.put(f"{BASE}/dates", json={"description": "Date helpers, improved"}), 200)

    everything = client.get(BASE).json()
    assert [m["id"] for m in everything["collection"]] == ["counter", "dates", "report"]
    assert everything["facets"] == {
        "state": {"PUBLISHED": 1, "DRAFT": 1, "UNPUBLISHED": 1},
        "role": {"tool": 2, "library": 1},
        "tags": {"text": 2, "report": 1},
    }
    summary = everything["collection"][1]
    assert summary["state"] == "DRAFT" and summary["role"] == "library" and summary["publishedVersion"] == 1
    assert "content" not in summary and "draftContent" not in summary

    tools = client.get(BASE, params={"tool": "true"}).json()
    assert tools["total"] == 2 and tools["facets"]["role"] == {"tool": 2, "library": 0}
    assert [m["id"] for m in client.get(BASE, params={"state": "PUBLISHED"}).json()["collection"]] == ["report"]
    assert [m["id"] for m in client.get(BASE, params={"search": "lines"}).json()["collection"]] == ["counter"]
    assert [m["id"] for m in client.get(BASE, params={"usedBy": "report"}).json()["collection"]] == ["dates"]
    assert [m["id"] for m in client.get(BASE, params={"tag": "report"}).json()["collection"]] == ["report"]

    page = client.get(BASE, params={"limit": 1, "offset": 1, "orderBy": "id", "ascending": "false"}).json()
    assert page["total"] == 3 and [m["id"] for m in page["collection"]] == ["dates"]
    by_state = client.get(BASE, params={"orderBy": "state"}).json()["collection"]
    assert [m["state"] for m in by_state] == sorted(m["state"] for m in by_state)


def test_get_shows_who_uses_a_module(client: TestClient) -> None:
    _make(client, "dates", "Date helpers", publish=True)
    _make(client, "report", "Yearly report", imports=["dates"])
    assert client.get(f"{BASE}/dates").json()["usedBy"] == ["report"]
    expect(client.put(f"{BASE}/report", json={"draftImports": []}), 200)
    assert client.get(f"{BASE}/dates").json()["usedBy"] == []
