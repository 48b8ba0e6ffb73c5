"""A handshake-era session's plain `prompts/get`, answered in the request's own task
(api/mcp_prompts.py `FastPrompts`, issue 33): the same answers as the SDK's session loop gives;
on a store that owns its writes (SQLite) the offer and the prompt are kept while the store has not
moved, so a second get goes to no worker thread; on a store others write too (PostgreSQL) the
store's position is a database read, never made on the event loop, and a change is seen at once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.mcp_prompts import FastPrompts
from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.api.test_mcp_direct import URL, client, headers, open_session  # noqa: F401 - `client` is the fixture
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, expect

PROMPTS = "/api/v1/admin/prompts"
GREETING = {"id": "greet", "description": "Greets someone",
            "arguments": [{"name": "who", "description": "whom to greet", "required": True}],
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello to {{who}}."}}]}


def publish(client: TestClient, text: str | None = None) -> None:  # noqa: F811
    if text is None:
        expect(client.post(PROMPTS, json=GREETING), 201)
    else:
        expect(client.put(f"{PROMPTS}/greet", json={"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}), 200)
    expect(client.post(f"{PROMPTS}/greet/publish"), 200)


def get(client: TestClient, session: str, name: str, arguments: dict[str, str] | None, *, sdk: bool = False,  # noqa: F811
        request_id: int = 9) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if sdk:  # not the plainest shape: the SDK's session loop answers it
        params["_meta"] = {"note": "through the SDK"}
    answered = client.post("/mcp", json={"jsonrpc": "2.0", "id": request_id, "method": "prompts/get", "params": params},
                           headers=headers(session))
    assert answered.status_code == 200, answered.text
    reply = answered.json()
    assert reply["id"] == request_id
    return reply


@pytest.fixture
def takes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The prompts whose offer and definition were taken in a worker thread (`FastPrompts._take`)."""
    seen: list[str] = []
    through = FastPrompts._take

    def counted(self: Any, principal: Any, server_id: Any, name: str, generation: Any) -> Any:
        seen.append(name)
        return through(self, principal, server_id, name, generation)

    monkeypatch.setattr(FastPrompts, "_take", counted)
    return seen


def test_a_plain_get_is_answered_as_the_sdk_answers_it_and_kept_while_the_store_has_not_moved(
        client: TestClient, takes: list[str]) -> None:  # noqa: F811
    publish(client)
    session = open_session(client)
    served = len(client.through_manager)  # type: ignore[attr-defined]
    first = get(client, session, "greet", {"who": "Ada"})
    again = get(client, session, "greet", {"who": "Ada"})
    missing = get(client, session, "nobody", None)
    no_argument = get(client, session, "greet", None)
    assert len(client.through_manager) == served  # type: ignore[attr-defined]  # none went to the SDK's manager
    assert takes == ["greet", "nobody"]  # the second get of greet went to no thread
    assert first == again and first["result"]["messages"] == [{"role": "user", "content": {"type": "text", "text": "Say hello to Ada."}}]
    assert missing["error"]["code"] == no_argument["error"]["code"] == -32602 and "'who'" in no_argument["error"]["message"]
    for plain, arguments in ((first, {"who": "Ada"}), (missing, None), (no_argument, None)):
        name = "nobody" if plain is missing else "greet"
        assert get(client, session, name, arguments, sdk=True) == plain
    publish(client, "Goodbye, {{who}}.")  # the store moved: the very next get takes them again
    assert get(client, session, "greet", {"who": "Ada"})["result"]["messages"][0]["content"]["text"] == "Goodbye, Ada."


def test_on_postgresql_the_store_s_position_is_never_read_on_the_event_loop(
        tmp_path: Path, shared_sandbox: object, postgres_store: dict[str, str], monkeypatch: pytest.MonkeyPatch,
        takes: list[str]) -> None:
    for key, value in postgres_store.items():
        monkeypatch.setenv(key, value)
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        persistence_module=postgres_store["PERSISTENCE_MODULE"])
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url=URL,
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as pg:
        store = pg.app.state.services.store  # type: ignore[attr-defined]
        assert not store.owns_its_writes
        publish(pg)
        session = open_session(pg)
        on_the_loop: list[str] = []
        read = store.recorder.max_notification_id

        def watched() -> Any:
            try:
                asyncio.get_running_loop()
            except RuntimeError:  # a worker thread: no loop runs here
                pass
            else:
                on_the_loop.append("max_notification_id")
            return read()

        monkeypatch.setattr(store.recorder, "max_notification_id", watched)
        for who in ("Ada", "Alan"):
            answer = get(pg, session, "greet", {"who": who})
            assert answer["result"]["messages"][0]["content"]["text"] == f"Say hello to {who}."
        assert get(pg, session, "nobody", None)["error"]["code"] == -32602
        assert on_the_loop == []
        assert takes == ["greet", "greet", "nobody"]  # one worker thread each, nothing kept
        publish(pg, "Goodbye, {{who}}.")
        assert get(pg, session, "greet", {"who": "Ada"})["result"]["messages"][0]["content"]["text"] == "Goodbye, Ada."
        assert on_the_loop == []
