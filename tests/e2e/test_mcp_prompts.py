"""MCP prompts against a running `toolsmith serve` (issue 33, 1), driven by the MCP SDK's own client
in both eras: a published prompt is listed and rendered (placeholders filled, or by a published
module), a missing required argument is an error naming it, completions come from the prompt's
values, a prompt the caller's usage profile does not name, one not attached to the server, one of
another tenant and one that does not exist are the same error, and publishing or deleting a
prompt tells a session (`notifications/prompts/list_changed`) and a 2026-era listen stream."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged
from mcp_types import INVALID_PARAMS, PromptListChangedNotification, PromptReference

from tests.e2e.conftest import Server, mcp_client, printed_tokens
from tests.e2e.test_mcp import GET_STREAM_SETTLES, MODERN, SERVERS, token
from tests.e2e.test_operator import printed_operator_tokens

pytestmark = pytest.mark.anyio

PROMPTS = "/api/v1/admin/prompts"
GREET = {"id": "greet", "description": "Greets someone", "title": "Greeting",
         "arguments": [{"name": "who", "description": "whom to greet", "required": True,
                        "completion": {"values": ["Ada", "Alan", "Grace"]}},
                       {"name": "mood", "description": "how"}],
         "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello to {{who}}, {{ mood }}."}},
                      {"role": "assistant", "content": {"type": "resource", "resource": {
                          "uri": "note://{{who}}", "mimeType": "text/plain", "text": "A note on {{who}}"}}}]}
RENDERER = {"id": "reviewer", "description": "Renders a review prompt",
            "draftContent": "exports.run = (i) => [{role: 'user', content: 'Review this: ' + i.code}];",
            "tool": {"inputParameters": [{"name": "code", "description": "the code", "required": True}]}}
REVIEW = {"id": "review", "description": "Asks for a review", "module": "reviewer",
          "arguments": [{"name": "code", "description": "the code", "required": True}]}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    started = Server(data_dir=tmp_path / "data").start()
    started.token = printed_tokens(started.output)[0]
    started.operator = printed_operator_tokens(started.output)[0]  # type: ignore[attr-defined]
    yield started
    if started.process and started.process.poll() is None:
        started.stop()


def made(http: httpx.Client, url: str, body: dict[str, Any], publish: str) -> None:
    created = http.post(url, json=body)
    assert created.status_code == 201, created.text
    published = http.post(f"{url}/{body['id']}/publish")
    assert published.status_code == 200, published.text


def prompts(http: httpx.Client) -> None:
    made(http, PROMPTS, GREET, "greet")
    made(http, "/api/v1/admin/code-modules", RENDERER, "reviewer")
    made(http, PROMPTS, REVIEW, "review")


async def refusal(client: Any, name: str, arguments: dict[str, str] | None = None) -> str:
    with pytest.raises(MCPError) as refused:
        await client.get_prompt(name, arguments)
    assert refused.value.error.code == INVALID_PARAMS
    return refused.value.error.message.replace(repr(name), "<name>")


class Inbox:
    def __init__(self) -> None:
        self.changes = 0
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, PromptListChangedNotification):
            self.changes += 1
            self._arrived.set()

    async def next(self, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            await self._arrived.wait()
        self._arrived = anyio.Event()


async def test_prompts_are_listed_rendered_and_completed_in_the_handshake_era_for_whom_they_are_offered(server: Server) -> None:
    with server.client() as http:
        prompts(http)
        reader = token(http, "reader", tools=["greet"])
        with server.client(server.operator) as operator:  # type: ignore[attr-defined]
            other = operator.post("/api/v1/operator/tenants", json={"id": "acme", "name": "Acme"})
            assert other.status_code == 201, other.text
            acme = other.json()["adminToken"]

    inbox = Inbox()
    async with mcp_client(server, on_message=inbox) as client:
        caps = client.server_capabilities.prompts
        assert caps is not None and caps.list_changed is True
        assert client.server_capabilities.completions is not None
        listed = (await client.list_prompts()).prompts
        assert [p.name for p in listed] == ["greet", "review"]
        assert listed[0].title == "Greeting" and listed[0].description == "Greets someone"
        assert [(a.name, a.required) for a in listed[0].arguments] == [("who", True), ("mood", False)]
        got = await client.get_prompt("greet", {"who": "Ada", "mood": "warmly"})
        assert got.description == "Greets someone"
        assert got.messages[0].role == "user" and got.messages[0].content.text == "Say hello to Ada, warmly."
        assert got.messages[1].role == "assistant" and str(got.messages[1].content.resource.uri) == "note://Ada"
        assert got.messages[1].content.resource.text == "A note on Ada"
        assert (await client.get_prompt("greet", {"who": "Al"})).messages[0].content.text == "Say hello to Al, ."
        rendered = await client.get_prompt("review", {"code": "x = 1"})
        assert [(m.role, m.content.text) for m in rendered.messages] == [("user", "Review this: x = 1")]
        # a missing required argument is an error naming it
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("greet", {})
        assert missing.value.error.code == INVALID_PARAMS and "'who'" in missing.value.error.message
        completed = await client.complete(PromptReference(name="greet"), {"name": "who", "value": "a"})
        assert completed.completion.values == ["Ada", "Alan"]
        unknown = await refusal(client, "nothing")

        # publishing and deleting a prompt tells the session
        await anyio.sleep(GET_STREAM_SETTLES)
        with server.client() as http:
            made(http, PROMPTS, {**GREET, "id": "later"}, "later")
            await inbox.next()
            assert "later" in [p.name for p in (await client.list_prompts()).prompts]
            assert http.delete(f"{PROMPTS}/later").status_code == 204
            await inbox.next()
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet", "review"]

    # a caller sees what its usage profile names; the rest is unknown, as is another tenant's
    async with mcp_client(server, reader) as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
        assert (await client.get_prompt("greet", {"who": "Ada"})).messages[0].content.text == "Say hello to Ada, ."
        assert await refusal(client, "review", {"code": "x"}) == unknown
        with pytest.raises(MCPError) as hidden:
            await client.complete(PromptReference(name="review"), {"name": "code", "value": ""})
        assert hidden.value.error.code == INVALID_PARAMS
    async with mcp_client(server, acme) as client:
        assert (await client.list_prompts()).prompts == []
        assert await refusal(client, "greet", {"who": "Ada"}) == unknown


async def test_prompts_in_the_2026_era_follow_the_server_they_are_attached_to_and_a_listen_stream_hears_of_them(server: Server) -> None:
    with server.client() as http:
        prompts(http)
        attached = http.post(SERVERS, json={"id": "writing", "description": "writing", "tools": ["greet"]})
        assert attached.status_code == 201, attached.text

    async with mcp_client(server, mode="auto", path="/mcp/writing") as client:
        assert client.protocol_version == MODERN
        assert client.server_capabilities.prompts is not None and client.server_capabilities.prompts.list_changed is True
        assert [p.name for p in (await client.list_prompts()).prompts] == ["greet"]
        assert (await client.get_prompt("greet", {"who": "Grace"})).messages[0].content.text == "Say hello to Grace, ."
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("greet", {"mood": "x"})
        assert missing.value.error.code == INVALID_PARAMS and "'who'" in missing.value.error.message
        assert await refusal(client, "review", {"code": "x"}) == await refusal(client, "nothing")
        assert (await client.complete(PromptReference(name="greet"), {"name": "who", "value": "G"})).completion.values == ["Grace"]
        async with client.listen(prompts_list_changed=True) as subscription:
            assert subscription.honored.prompts_list_changed is True
            with server.client() as http:
                changed = http.put(f"{PROMPTS}/greet", json={"title": "Hello"})
                assert changed.status_code == 200, changed.text
                assert http.post(f"{PROMPTS}/greet/publish").status_code == 200
            with anyio.fail_after(5):
                async for event in subscription:
                    assert event == PromptsListChanged()
                    break
        assert (await client.list_prompts()).prompts[0].title == "Hello"

    # the default server, in this era too, renders a module's prompt
    async with mcp_client(server, mode="auto") as client:
        rendered = await client.get_prompt("review", {"code": "y = 2"})
        assert rendered.messages[0].content.text == "Review this: y = 2"
