"""MCP resources against a running `toolsmith serve` (issue 33, 2), driven by the MCP SDK's own
client in both eras: each File Search document is a resource a caller may list and read when it is
offered the document's tool; another tenant's, a tool its usage profile does not allow, and a URI
that names nothing are one and the same error; `search` results link to the documents; a
subscription hears of a document's change, and a listener of the list hears documents come and go."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_types import INVALID_PARAMS, ResourceListChangedNotification, ResourceUpdatedNotification

from tests.e2e.conftest import Server, mcp_client, printed_tokens
from tests.e2e.test_mcp import GET_STREAM_SETTLES, MODERN, SERVERS, token
from tests.e2e.test_operator import printed_operator_tokens

# The handshake era's resources/subscribe is that era's own (the SDK warns that 2026-07-28 removed it).
pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore:resources/(un)?subscribe is removed")]

TOOLS = "/api/v1/admin/search-tools"
WORD = "quetzalcoatlus"
NOTES = f"Field notes.\n\nThe {WORD} was the largest flying animal known.\n".encode()
SECRET = b"The launch code is in the other drawer.\n"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    started = Server(data_dir=tmp_path / "data").start()
    started.token = printed_tokens(started.output)[0]
    started.operator = printed_operator_tokens(started.output)[0]  # type: ignore[attr-defined]
    yield started
    if started.process and started.process.poll() is None:
        started.stop()


def make_tool(http: httpx.Client, name: str) -> None:
    made = http.post(TOOLS, json={"id": name, "description": f"The {name} documents"})
    assert made.status_code == 201, made.text


def upload(http: httpx.Client, tool: str, filename: str, content: bytes) -> str:
    uploaded = http.post(f"{TOOLS}/{tool}/documents", files=[("files", (filename, content, "text/plain"))])
    assert uploaded.status_code == 202, uploaded.text
    doc_id = uploaded.json()["documents"][0]["id"]
    deadline = time.monotonic() + 60
    while (state := http.get(f"{TOOLS}/{tool}/documents/{doc_id}").json()["state"]) == "PROCESSING":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert state == "READY"
    return doc_id


def uri(tool: str, doc_id: str) -> str:
    return f"toolsmith://search-tools/{tool}/documents/{doc_id}"


class Inbox:
    """The resource notifications one session receives."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.seen.append(("updated", str(message.params.uri)))
            self._arrived.set()
        elif isinstance(message, ResourceListChangedNotification):
            self.seen.append(("list_changed", None))
            self._arrived.set()

    async def until(self, wanted: tuple[str, str | None], timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while wanted not in self.seen:
                await self._arrived.wait()
                self._arrived = anyio.Event()


async def not_found(client: Any, asked: str) -> str:
    with pytest.raises(MCPError) as refused:
        await client.read_resource(asked)
    assert refused.value.error.code == INVALID_PARAMS
    return refused.value.error.message.replace(asked, "<uri>")


async def test_documents_are_resources_to_whom_their_tool_is_offered_in_the_handshake_era(server: Server) -> None:
    with server.client() as http:
        make_tool(http, "handbook")
        make_tool(http, "vault")
        notes = upload(http, "handbook", "notes.txt", NOTES)
        secret = upload(http, "vault", "secret.txt", SECRET)
        reader = token(http, "reader", tools=["handbook"])
        with server.client(server.operator) as operator:  # type: ignore[attr-defined]
            other = operator.post("/api/v1/operator/tenants", json={"id": "acme", "name": "Acme"})
            assert other.status_code == 201, other.text
            acme = other.json()["adminToken"]

    inbox = Inbox()
    async with mcp_client(server, reader, on_message=inbox) as client:
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe is True and caps.list_changed is True
        listed = (await client.list_resources()).resources
        assert [str(r.uri) for r in listed] == [uri("handbook", notes)]
        assert listed[0].name == "notes.txt" and listed[0].mime_type == "text/plain"
        read = (await client.read_resource(uri("handbook", notes))).contents
        assert len(read) == 1 and WORD in read[0].text and read[0].mime_type == "text/plain"
        assert str(read[0].uri) == uri("handbook", notes)
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["toolsmith://search-tools/{tool}/documents/{id}"]

        # a tool the profile does not allow, and a URI that names nothing: the same answer
        hidden = await not_found(client, uri("vault", secret))
        assert hidden == await not_found(client, uri("vault", "0" * 20)) == await not_found(client, "test://nothing")
        assert "launch code" not in hidden

        # search results link to the documents they come from
        answer = await client.call_tool("handbook_search", {"query": WORD})
        assert not answer.is_error
        links = [c for c in answer.content if c.type == "resource_link"]
        assert [str(link.uri) for link in links] == [uri("handbook", notes)] and links[0].name == "notes.txt"
        assert json.loads(answer.content[0].text)["results"][0]["uri"] == uri("handbook", notes)

        # a subscription: the document's delete is an update of it; documents coming and going change the list
        await client.subscribe_resource(uri("handbook", notes))
        await client.subscribe_resource(uri("vault", secret))  # accepted, but never told of
        await anyio.sleep(GET_STREAM_SETTLES)
        with server.client() as http:
            more = upload(http, "handbook", "more.txt", b"More notes about pterosaurs.\n")
            await inbox.until(("list_changed", None))
            assert {str(r.uri) for r in (await client.list_resources()).resources} == {uri("handbook", notes), uri("handbook", more)}
            assert http.delete(f"{TOOLS}/vault/documents/{secret}").status_code == 204
            assert http.delete(f"{TOOLS}/handbook/documents/{notes}").status_code == 204
            await inbox.until(("updated", uri("handbook", notes)))
        assert ("updated", uri("vault", secret)) not in inbox.seen
        assert await not_found(client, uri("handbook", notes)) == hidden

        await client.unsubscribe_resource(uri("handbook", more))
        await client.subscribe_resource(uri("handbook", more))
        await client.unsubscribe_resource(uri("handbook", more))
        seen = len(inbox.seen)
        with server.client() as http:
            assert http.delete(f"{TOOLS}/handbook/documents/{more}").status_code == 204
        await inbox.until(("list_changed", None))
        assert ("updated", uri("handbook", more)) not in inbox.seen[seen:]

    # another tenant's admin sees none of these documents
    async with mcp_client(server, acme) as client:
        assert (await client.list_resources()).resources == []
        with server.client() as http:
            kept = upload(http, "handbook", "notes.txt", NOTES)
        assert await not_found(client, uri("handbook", kept)) == hidden


async def test_documents_are_resources_in_the_2026_era_and_a_listen_stream_hears_of_them(server: Server) -> None:
    with server.client() as http:
        make_tool(http, "handbook")
        notes = upload(http, "handbook", "notes.txt", NOTES)
        attached = http.post(SERVERS, json={"id": "docs", "description": "documents", "tools": ["handbook"]})
        assert attached.status_code == 201, attached.text
        assert http.post(SERVERS, json={"id": "empty", "description": "nothing", "tools": []}).status_code == 201

    async with mcp_client(server, mode="auto", path="/mcp/docs") as client:
        assert client.protocol_version == MODERN
        caps = client.server_capabilities.resources
        assert caps is not None and caps.list_changed is True and caps.subscribe is True
        assert [str(r.uri) for r in (await client.list_resources()).resources] == [uri("handbook", notes)]
        assert WORD in (await client.read_resource(uri("handbook", notes))).contents[0].text
        async with client.listen(resources_list_changed=True, resource_subscriptions=[uri("handbook", notes)]) as subscription:
            assert subscription.honored.resources_list_changed is True
            assert subscription.honored.resource_subscriptions == [uri("handbook", notes)]
            assert not subscription.honored.tools_list_changed
            with server.client() as http:
                assert http.delete(f"{TOOLS}/handbook/documents/{notes}").status_code == 204
            events = set()
            with anyio.fail_after(5):
                async for event in subscription:
                    events.add(event)
                    if len(events) == 2:
                        break
            assert events == {ResourcesListChanged(), ResourceUpdated(uri=uri("handbook", notes))}
        assert (await client.list_resources()).resources == []

    # a server without the tool attached offers none of its documents
    with server.client() as http:
        again = upload(http, "handbook", "notes.txt", NOTES)
    async with mcp_client(server, mode="auto", path="/mcp/empty") as client:
        assert (await client.list_resources()).resources == []
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri("handbook", again))
        assert refused.value.error.code == INVALID_PARAMS


# -- resources an admin publishes ------------------------------------------------------------------

RESOURCES = "/api/v1/admin/resources"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def publish(http: httpx.Client, body: dict[str, Any]) -> None:
    made = http.post(RESOURCES, json=body)
    assert made.status_code == 201, made.text
    published = http.post(f"{RESOURCES}/{body['id']}/publish")
    assert published.status_code == 200, published.text


async def test_admins_publish_resources_text_bytes_templates_and_modules_offered_as_tools_are(server: Server) -> None:
    with server.client() as http:
        publish(http, {"id": "motd", "description": "The message of the day", "tags": ["public"],
                       "uri": "memo://motd", "mimeType": "text/plain", "text": "Bring an umbrella."})
        publish(http, {"id": "logo", "description": "The logo", "tags": ["public"],
                       "uri": "memo://logo", "mimeType": "image/png", "blob": PNG})
        publish(http, {"id": "customer", "description": "A customer's card", "tags": ["public"],
                       "uriTemplate": "crm://customers/{id}", "mimeType": "application/json",
                       "text": '{"id": "{{id}}", "kind": "customer"}'})
        module = http.post("/api/v1/admin/code-modules", json={
            "id": "renderOrder", "description": "Renders an order",
            "draftContent": "exports.run = function (i) { return 'Order ' + i.order + ' of ' + i.customer + ' (' + i.uri + ')'; };",
            "tool": {"inputParameters": [{"name": "order", "description": "o"}, {"name": "customer", "description": "c"},
                                         {"name": "uri", "description": "u"}], "exposeInChat": False}})
        assert module.status_code == 201, module.text
        assert http.post("/api/v1/admin/code-modules/renderOrder/publish").status_code == 200
        publish(http, {"id": "order", "description": "An order", "tags": ["public"],
                       "uriTemplate": "crm://customers/{customer}/orders/{order}", "mimeType": "text/plain", "module": "renderOrder"})
        publish(http, {"id": "payroll", "description": "Salaries", "uri": "hr://payroll", "mimeType": "text/plain",
                       "text": "Everyone earns the same."})
        # the rules, each naming its field
        bomb = http.post(RESOURCES, json={"id": "bomb", "uriTemplate": "x://{a}", "mimeType": "text/plain",
                                          "text": "{{a}}" * 1_000})
        assert bomb.status_code == 400 and "text" in bomb.text and "placeholders" in bomb.text
        ours = http.post(RESOURCES, json={"id": "ours", "uri": "toolsmith://search-tools/x/documents/1", "mimeType": "text/plain", "text": "x"})
        assert ours.status_code == 400 and "uri" in ours.text
        level2 = http.post(RESOURCES, json={"id": "level2", "uriTemplate": "x://{+path}", "mimeType": "text/plain", "text": "x"})
        assert level2.status_code == 400 and "uriTemplate" in level2.text
        unknown = http.post(RESOURCES, json={"id": "unknown", "uri": "x://y", "mimeType": "text/plain", "text": "{{who}}"})
        assert unknown.status_code == 400 and "who" in unknown.text
        tested = http.post(f"{RESOURCES}/order/test", json={"uri": "crm://customers/acme/orders/7"})
        assert tested.status_code == 200 and tested.json()["contents"][0]["text"].startswith("Order 7 of acme"), tested.text
        reader = token(http, "public_reader", tags=["public"])

    for mode in ("legacy", "auto"):
        async with mcp_client(server, reader, mode=mode) as client:
            listed = {str(r.uri): r for r in (await client.list_resources()).resources}
            assert set(listed) == {"memo://motd", "memo://logo"}  # not payroll: its tags are not the profile's
            assert listed["memo://motd"].mime_type == "text/plain" and listed["memo://motd"].name == "motd"
            templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
            assert templates == {"crm://customers/{id}", "crm://customers/{customer}/orders/{order}",
                                 "toolsmith://search-tools/{tool}/documents/{id}"}
            assert (await client.read_resource("memo://motd")).contents[0].text == "Bring an umbrella."
            logo = (await client.read_resource("memo://logo")).contents[0]
            assert logo.blob == PNG and logo.mime_type == "image/png"
            card = (await client.read_resource("crm://customers/c42")).contents[0]
            assert json.loads(card.text) == {"id": "c42", "kind": "customer"} and card.mime_type == "application/json"
            order = (await client.read_resource("crm://customers/acme/orders/9")).contents[0]
            assert order.text == "Order 9 of acme (crm://customers/acme/orders/9)"
            assert await not_found(client, "hr://payroll") == await not_found(client, "memo://nothing")

    # the admin sees everything; a new version is an update of the subscribed resource
    async with mcp_client(server, mode="auto") as client:
        assert "hr://payroll" in {str(r.uri) for r in (await client.list_resources()).resources}
        async with client.listen(resource_subscriptions=["memo://motd"]) as subscription:
            with server.client() as http:
                assert http.put(f"{RESOURCES}/motd", json={"text": "Sunshine."}).status_code == 200
                assert http.post(f"{RESOURCES}/motd/publish").status_code == 200
            with anyio.fail_after(5):
                async for event in subscription:
                    assert event == ResourceUpdated(uri="memo://motd")
                    break
        assert (await client.read_resource("memo://motd")).contents[0].text == "Sunshine."


async def test_healthz_counts_the_resource_watchers_and_forgets_ended_ones(server: Server) -> None:
    def mcp() -> dict[str, int]:
        return httpx.get(f"{server.url}/healthz", timeout=10).json()["mcp"]

    async def settles_at(expected: dict[str, int]) -> None:
        with anyio.fail_after(5):
            while {key: mcp()[key] for key in expected} != expected:
                await anyio.sleep(0.05)

    with server.client() as http:
        publish(http, {"id": "motd", "description": "The message", "uri": "memo://motd", "mimeType": "text/plain", "text": "Hi."})
    assert mcp() == {"watchers": 0, "resourceWatchers": 0, "promptWatchers": 0}
    async with mcp_client(server) as legacy:
        await legacy.list_tools()  # told of tools and prompts, not yet of resources
        assert mcp() == {"watchers": 1, "resourceWatchers": 0, "promptWatchers": 1}
        await legacy.subscribe_resource("memo://motd")
        assert mcp()["resourceWatchers"] == 1
        async with mcp_client(server, mode="auto") as modern:
            async with modern.listen(tools_list_changed=True):  # no resource part: no resource watcher
                assert mcp()["watchers"] == 2 and mcp()["resourceWatchers"] == 1
            await settles_at({"watchers": 1})
            async with modern.listen(resource_subscriptions=["memo://motd"]):
                assert mcp()["watchers"] == 2 and mcp()["resourceWatchers"] == 2
            # the listen stream was dropped by its client
            await settles_at({"watchers": 1, "resourceWatchers": 1})
    # the session was ended by its client (DELETE)
    await settles_at({"watchers": 0, "resourceWatchers": 0, "promptWatchers": 0})
