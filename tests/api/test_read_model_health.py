"""Issue 12, finding 11b, with the runner in the API process: a write says when the list may not
show it yet (the `Toolsmith-Read-Your-Writes` header), and /healthz says when nothing follows the
event store. Before, a dead runner was invisible: `ok`, and every write answered 2xx unmarked."""

from __future__ import annotations

from fastapi.testclient import TestClient

BASE = "/api/v1/admin/code-modules"
HEADER = "Toolsmith-Read-Your-Writes"


def _create(client: TestClient, module_id: str) -> object:
    created = client.post(BASE, json={"id": module_id, "description": module_id, "draftContent": "exports.x = 1;"})
    assert created.status_code == 201, created.text
    return created


def test_with_the_runner_alive_writes_are_unmarked_and_health_is_ok(client: TestClient) -> None:
    created = _create(client, "alive")
    assert HEADER not in created.headers
    assert HEADER not in client.put(f"{BASE}/alive", json={"description": "changed"}).headers
    health = client.get("/healthz").json()
    assert health["status"] == "ok"
    assert health["readModel"]["lag"] == 0 and health["readModel"]["lagSeconds"] == 0
    assert health["readModel"]["runner"] == {"mode": "in-process", "alive": True}
    assert health["readModel"]["problems"] == []


def test_with_the_runner_stopped_a_write_says_so_at_once_and_health_is_degraded(client: TestClient) -> None:
    _create(client, "before")
    client.app.state.services.runner.stop()  # type: ignore[attr-defined]
    created = _create(client, "after")
    # the write happened (the event store is the truth) but the list will not show it
    # `unavailable`: it answered before its bound, without waiting for a runner that is not running
    assert created.headers[HEADER] == "unavailable"
    assert [m["id"] for m in client.get(BASE).json()["collection"]] == ["before"]
    assert client.get(f"{BASE}/after").status_code == 200
    deleted = client.delete(f"{BASE}/before")
    assert deleted.status_code == 204 and deleted.headers[HEADER] == "unavailable"
    health = client.get("/healthz").json()
    assert health["status"] == "degraded"
    assert health["readModel"]["lag"] == 2
    assert health["readModel"]["runner"] == {"mode": "in-process", "alive": False}
    assert health["readModel"]["problems"] == ["the projection runner is not running"]
