"""A handshake-era session's plain `resources/read`, answered in the request's own task
(api/mcp_resources.py `FastReads`, issue 33): the same answers as the SDK's session loop gives
(a read with `_meta` is the SDK's), the same refusals for a resource the caller is not shown and one
that is not there; once the caller's offer is kept, an admin's published resource is read on the
event loop (no worker thread), and a change of the store is seen by the very next read."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

import api.mcp_resources as mcp_resources
from tests.api.test_mcp_direct import ACCEPT, INITIALIZE, client, headers, open_session  # noqa: F401 - `client` is the fixture
from tests.helpers import expect

RESOURCES = "/api/v1/admin/resources"
MODULES = "/api/v1/admin/code-modules"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def publish(client: TestClient, collection: str, body: dict[str, Any]) -> None:  # noqa: F811
    expect(client.post(collection, json=body), 201)
    expect(client.post(f"{collection}/{body['id']}/publish"), 200)


def publish_world(client: TestClient) -> None:  # noqa: F811
    render = ("exports.run = function (input) { if (input.code === 'boom') { throw new Error('no such code'); }"
              " return 'Review this code: ' + input.code; };")
    publish(client, MODULES, {"id": "renderReview", "description": "Renders a review.", "draftContent": render,
                              "tool": {"inputParameters": [{"name": "code", "type": "string", "required": True, "description": "c"}]}})
    publish(client, RESOURCES, {"id": "review", "description": "A review", "tags": ["public"], "module": "renderReview",
                                "uriTemplate": "code://reviews/{code}", "mimeType": "text/plain"})
    publish(client, RESOURCES, {"id": "motd", "description": "The message", "tags": ["public"], "uri": "memo://motd",
                                "mimeType": "text/plain", "text": "Bring an umbrella."})
    publish(client, RESOURCES, {"id": "logo", "description": "The logo", "tags": ["public"], "uri": "memo://logo",
                                "mimeType": "image/png", "blob": PNG})
    publish(client, RESOURCES, {"id": "payroll", "description": "Salaries", "uri": "hr://payroll", "mimeType": "text/plain",
                                "text": "Everyone earns the same."})


def read(client: TestClient, session: str, uri: str, *, token: str | None = None, sdk: bool = False,  # noqa: F811
         request_id: int = 5) -> dict[str, Any]:
    params: dict[str, Any] = {"uri": uri}
    if sdk:  # not the plainest shape: the SDK's session loop answers it
        params["_meta"] = {"note": "through the SDK"}
    sent = headers(session) if token is None else headers(session, token)
    answered = client.post("/mcp", json={"jsonrpc": "2.0", "id": request_id, "method": "resources/read", "params": params}, headers=sent)
    assert answered.status_code == 200, answered.text
    assert answered.headers["mcp-session-id"] == session
    reply = answered.json()
    assert reply["id"] == request_id
    return reply


def caller_token(client: TestClient, name: str, tags: list[str]) -> str:  # noqa: F811
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": name, "allowedTools": [], "allowedTags": tags}), 201)
    made = client.post("/api/v1/admin/tokens", json={"name": name, "role": "caller", "usageProfile": name})
    assert made.status_code == 201, made.text
    return str(made.json()["token"])


@pytest.fixture
def threaded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URIs read through the worker thread's path (`_read_text`)."""
    seen: list[str] = []
    through = mcp_resources._read_text

    def counted(services: Any, resources: Any, offer: Any, uri: str, trace: Any) -> Any:
        seen.append(uri)
        return through(services, resources, offer, uri, trace)

    monkeypatch.setattr(mcp_resources, "_read_text", counted)
    return seen


URIS = ("code://reviews/x1", "memo://motd", "memo://logo", "code://reviews/boom", "hr://nothing",
        "toolsmith://search-tools/none/documents/1")


def test_a_plain_read_is_answered_without_the_session_loop_as_the_sdk_answers_it(client: TestClient, threaded: list[str]) -> None:  # noqa: F811
    publish_world(client)
    session = open_session(client)
    served = len(client.through_manager)  # type: ignore[attr-defined]
    fast = {uri: read(client, session, uri) for uri in URIS}
    assert len(client.through_manager) == served  # type: ignore[attr-defined]  # none went to the SDK's manager
    # The first read took the caller's offer in a worker thread; the admin's resources were then read on
    # the loop; a File Search document's URI is found by reading the store, in a worker thread.
    assert threaded == ["code://reviews/x1", "toolsmith://search-tools/none/documents/1"]
    sdk = {uri: read(client, session, uri, sdk=True) for uri in URIS}
    assert len(client.through_manager) == served + len(URIS)  # type: ignore[attr-defined]
    assert fast == sdk
    assert fast["code://reviews/x1"]["result"]["contents"] == [
        {"uri": "code://reviews/x1", "mimeType": "text/plain", "text": "Review this code: x1",
         "_meta": {"toolsmith/totalCharacters": 20, "toolsmith/offset": 0}}]
    assert fast["memo://logo"]["result"]["contents"][0]["blob"] == PNG
    failed = fast["code://reviews/boom"]["error"]
    assert failed["code"] == -32602 and "renderReview" in failed["message"] and "no such code" in failed["message"]
    assert fast["hr://nothing"]["error"]["data"] == {"uri": "hr://nothing"}


def test_on_the_loop_a_resource_the_caller_is_not_shown_is_not_found_and_a_change_is_seen_at_once(
        client: TestClient, threaded: list[str]) -> None:  # noqa: F811
    publish_world(client)
    reader = caller_token(client, "reader", ["public"])
    session = open_session(client)
    opened = client.post("/mcp", json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {reader}"})
    reader_session = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.post("/mcp", json=initialized, headers=headers(reader_session, reader)).status_code == 202
    first = read(client, reader_session, "memo://motd", token=reader)
    assert first["result"]["contents"][0]["text"] == "Bring an umbrella."
    before = len(threaded)
    hidden = read(client, reader_session, "hr://payroll", token=reader, request_id=6)["error"]
    missing = read(client, reader_session, "hr://nothing", token=reader, request_id=6)["error"]
    assert hidden["message"].replace("hr://payroll", "<uri>") == missing["message"].replace("hr://nothing", "<uri>")
    assert hidden["code"] == missing["code"] == -32602
    assert read(client, reader_session, "code://reviews/r2", token=reader)["result"]["contents"][0]["text"] == "Review this code: r2"
    assert len(threaded) == before  # all three on the loop
    assert read(client, session, "hr://payroll")["result"]["contents"][0]["text"] == "Everyone earns the same."  # the admin's
    # A new version: the store moved, the very next read takes the offer again and reads it.
    expect(client.put(f"{RESOURCES}/motd", json={"text": "Sunshine."}), 200)
    expect(client.post(f"{RESOURCES}/motd/publish"), 200)
    assert read(client, reader_session, "memo://motd", token=reader)["result"]["contents"][0]["text"] == "Sunshine."
    # Untagged: the reader is not shown it any more, on the loop as in the thread.
    expect(client.put(f"{RESOURCES}/motd", json={"tags": []}), 200)
    expect(client.post(f"{RESOURCES}/motd/publish"), 200)
    for _ in range(2):
        gone = read(client, reader_session, "memo://motd", token=reader)["error"]
        assert gone["code"] == -32602 and gone["data"] == {"uri": "memo://motd"}
