"""MCP against a running `toolsmith serve`, driven by the SDK's own client (docs/mcp.md, docs/security.md; docs/kinds/code-modules.md).

Both eras of the protocol: the handshake era ("legacy": initialize, session id, a GET stream for
`tools/list_changed`) and the 2026-07-28 era (self-contained requests, `subscriptions/listen`).
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from mcp_types import CallToolResult, ToolListChangedNotification

from tests.e2e.conftest import Server, mcp_client
from tests.helpers import expect

pytestmark = pytest.mark.anyio

BASE = "/api/v1/admin/code-modules"
SERVERS = "/api/v1/admin/mcp-servers"
MODERN = "2026-07-28"
# The client opens its GET stream just after the handshake; a notification sent before it is open
# has nowhere to go (no event store), so scenarios wait this long before changing anything.
GET_STREAM_SETTLES = 0.5

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def param(name: str, type_: str = "string", required: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required, "description": f"the {name}"}


def put_tool(http: httpx.Client, name: str, source: str, parameters: list[dict[str, Any]] = (), *, tags: list[str] = (),
             expose: bool = True, style: str = "module", timeout_millis: int | None = None, publish: bool = True) -> None:
    tool: dict[str, Any] = {"inputParameters": list(parameters), "exposeInChat": expose, "tags": list(tags), "style": style}
    if timeout_millis is not None:
        tool["timeoutMillis"] = timeout_millis
    created = http.post(BASE, json={"id": name, "description": f"The tool {name}.", "draftContent": source, "tool": tool})
    assert created.status_code == 201, created.text
    if publish:
        published = http.post(f"{BASE}/{name}/publish")
        assert published.status_code == 200, published.text


def token(http: httpx.Client, name: str, role: str = "caller", *, tools: list[str] = (), tags: list[str] = ()) -> str:
    """A new token; a caller's comes with a usage profile of the same name allowing `tools` and `tags`."""
    body: dict[str, Any] = {"name": name, "role": role}
    if role == "caller":
        profile = http.post("/api/v1/admin/usage-profiles", json={"id": name, "allowedTools": list(tools), "allowedTags": list(tags)})
        assert profile.status_code == 201, profile.text
        body["usageProfile"] = name
    made = http.post("/api/v1/admin/tokens", json=body)
    assert made.status_code == 201, made.text
    return made.json()["token"]


class Inbox:
    """The `tools/list_changed` notifications one session receives."""

    def __init__(self) -> None:
        self.count = 0
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.count += 1
            self._arrived.set()

    async def list_changed(self, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            await self._arrived.wait()
        self._arrived = anyio.Event()


async def listed(client: Any) -> dict[str, dict[str, Any]]:
    """Each listed tool's input schema, by name."""
    return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}


def text_of(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


# -- tools/list ----------------------------------------------------------------------------------


async def test_tools_list_offers_exactly_the_permitted_chat_tools_with_their_schemas(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "price", "exports.run = function (i) { return i.amount; };", [param("amount", "decimal"), param("note", required=False)], tags=["money"])
        put_tool(http, "shout", "exports.run = function (i) { return i.text.toUpperCase(); };", [param("text")], tags=["text"])
        # not chat-exposed, never published: both absent
        put_tool(http, "hidden", "exports.run = function () { return 1; };", expose=False)
        put_tool(http, "unpublished", "exports.run = function () { return 1; };", publish=False)
        price_schema = expect(http.get(f"{BASE}/price"), 200).json()["inputSchema"]
        money = token(http, "money", tags=["money"])
        by_name = token(http, "byname", tools=["shout"])
        nothing = token(http, "nothing")

    async with mcp_client(server) as admin:
        assert admin.server_capabilities.tools.list_changed is True
        tools = await listed(admin)
        assert set(tools) == {"price", "shout"}
        assert tools["price"] == price_schema
        assert set(tools["price"]["properties"]) == {"amount", "note"} and tools["price"]["required"] == ["amount"]
        assert tools["price"]["properties"]["amount"]["type"] == "number"
        listing = {tool.name: tool for tool in (await admin.list_tools()).tools}
        assert listing["price"].description == "The tool price."
        assert "money" in listing["price"].meta["toolsmith/tags"]
    # a caller sees what its usage profile allows, by tag or by name; an empty profile sees nothing
    async with mcp_client(server, money) as caller:
        assert set(await listed(caller)) == {"price"}
    async with mcp_client(server, by_name) as caller:
        assert set(await listed(caller)) == {"shout"}
    async with mcp_client(server, nothing) as caller:
        assert await listed(caller) == {}
        refused = await caller.call_tool("shout", {"text": "hi"})
        assert refused.is_error and "shout" in text_of(refused)
    # the 2026 era offers the same
    async with mcp_client(server, money, mode=MODERN) as caller:
        assert set(await listed(caller)) == {"price"}


# -- tools/call ----------------------------------------------------------------------------------


async def test_tools_call_returns_results_and_every_failure_is_a_tool_error(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "add", "exports.run = function (i) { return {sum: i.a + i.b}; };", [param("a", "integer"), param("b", "integer")])
        put_tool(http, "greet", "exports.run = function (i) { log('greeting ' + i.who); return 'hello ' + i.who; };", [param("who")])
        put_tool(http, "spin", "exports.run = function () { while (true) {} };", timeout_millis=100)
        put_tool(http, "hidden", "exports.run = function () { return 1; };", expose=False)
        put_tool(http, "fail", "exports.run = function () { throw new Error('no luck'); };")

    for mode in ("legacy", MODERN):
        async with mcp_client(server, mode=mode) as client:
            added = await client.call_tool("add", {"a": 1, "b": 2})
            assert not added.is_error and added.structured_content == {"sum": 3} and text_of(added) == '{"sum":3}'
            greeted = await client.call_tool("greet", {"who": "Ada"})
            assert text_of(greeted) == "hello Ada" and greeted.structured_content is None
            assert greeted.meta["toolsmith/logs"] == ["greeting Ada"]
            # a missing argument is refused before any JavaScript runs, by name
            missing = await client.call_tool("add", {"a": 1})
            assert missing.is_error and "'b'" in text_of(missing), text_of(missing)
            wrong = await client.call_tool("add", {"a": 1, "b": "two"})
            assert wrong.is_error and "b" in text_of(wrong)
            thrown = await client.call_tool("fail", {})
            assert thrown.is_error and "no luck" in text_of(thrown)
            # a JavaScript timeout is a tool error, and the session keeps working
            spun = await client.call_tool("spin", {})
            assert spun.is_error and text_of(spun).startswith("timeout:"), text_of(spun)
            assert (await client.call_tool("add", {"a": 2, "b": 2})).structured_content == {"sum": 4}
            # a published tool that is not chat-exposed cannot be called through MCP, not even by an admin
            hidden = await client.call_tool("hidden", {})
            assert hidden.is_error and "hidden" in text_of(hidden)
            unknown = await client.call_tool("nosuchtool", {})
            assert unknown.is_error and "nosuchtool" in text_of(unknown)


async def test_seed_000_format_currency_through_mcp(server: Server) -> None:
    body = "const formatter = new Intl.NumberFormat('en-US', {\n    style: 'currency',\n    currency: currency_code,\n});\nformatter.format(amount);"
    with server.client() as http:
        put_tool(http, "format_currency", body, [param("amount", "decimal"), param("currency_code")], style="script")
    async with mcp_client(server) as client:
        schema = (await listed(client))["format_currency"]
        assert schema["required"] == ["amount", "currency_code"]
        result = await client.call_tool("format_currency", {"amount": 1234.5, "currency_code": "USD"})
        assert not result.is_error and text_of(result) == "$1,234.50"


# -- tools/list_changed ---------------------------------------------------------------------------


async def test_publishing_a_new_parameter_notifies_and_lists_the_new_schema(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "convert", "exports.run = function (i) { return i.x; };", [param("x")])
        inbox = Inbox()
        async with mcp_client(server, on_message=inbox) as client:
            assert set((await listed(client))["convert"]["properties"]) == {"x"}
            await anyio.sleep(GET_STREAM_SETTLES)
            # a draft changes nothing a client sees; its publication does
            tool = {"inputParameters": [param("x"), param("y", required=False)], "exposeInChat": True}
            assert http.put(f"{BASE}/convert", json={"tool": tool}).status_code == 200
            assert http.post(f"{BASE}/convert/publish").status_code == 200
            await inbox.list_changed()
            assert set((await listed(client))["convert"]["properties"]) == {"x", "y"}
            assert (await client.call_tool("convert", {"x": "a", "y": "b"})).structured_content is None


async def test_disabling_a_tool_notifies_and_removes_it(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "toggle", "exports.run = function () { return 1; };")
        put_tool(http, "stays", "exports.run = function () { return 2; };")
        inbox = Inbox()
        async with mcp_client(server, on_message=inbox) as client:
            assert set(await listed(client)) == {"toggle", "stays"}
            await anyio.sleep(GET_STREAM_SETTLES)
            # the enable switch is live (no publication needed)
            assert http.put(f"{BASE}/toggle", json={"tool": {"enabled": False, "exposeInChat": True}}).status_code == 200
            await inbox.list_changed()
            assert set(await listed(client)) == {"stays"}
            assert (await client.call_tool("toggle", {})).is_error


async def test_a_tool_detached_from_one_server_stays_on_the_other(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "shared", "exports.run = function () { return 'ok'; };")
        put_tool(http, "elsewhere", "exports.run = function () { return 'no'; };")
        for server_id in ("alpha", "beta"):
            made = http.post(SERVERS, json={"id": server_id, "description": server_id, "tools": ["shared"]})
            assert made.status_code == 201, made.text
        alpha_inbox = Inbox()
        async with mcp_client(server, path="/mcp/alpha", on_message=alpha_inbox) as alpha, mcp_client(server, path="/mcp/beta") as beta:
            # a server offers only what is attached to it
            assert set(await listed(alpha)) == {"shared"} and set(await listed(beta)) == {"shared"}
            assert (await alpha.call_tool("elsewhere", {})).is_error
            await anyio.sleep(GET_STREAM_SETTLES)
            assert http.delete(f"{SERVERS}/alpha/tools/shared").status_code == 200
            await alpha_inbox.list_changed()
            assert await listed(alpha) == {}
            assert (await alpha.call_tool("shared", {})).is_error
            assert set(await listed(beta)) == {"shared"}
            assert text_of(await beta.call_tool("shared", {})) == "ok"
            # attaching notifies too
            assert http.put(f"{SERVERS}/alpha/tools/elsewhere").status_code == 200
            await alpha_inbox.list_changed()
            assert set(await listed(alpha)) == {"elsewhere"}


async def test_a_caller_hears_only_of_changes_to_what_it_is_offered(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "mine", "exports.run = function () { return 1; };", tags=["mine"])
        caller = token(http, "narrow", tags=["mine"])
        inbox = Inbox()
        async with mcp_client(server, caller, on_message=inbox) as client:
            await anyio.sleep(GET_STREAM_SETTLES)
            # another tool is published: nothing this caller sees changed
            put_tool(http, "theirs", "exports.run = function () { return 2; };", tags=["theirs"])
            await anyio.sleep(1.0)
            assert inbox.count == 0
            # its profile now allows that tag too (a permissions change): it hears of it
            assert http.put("/api/v1/admin/usage-profiles/narrow", json={"allowedTools": [], "allowedTags": ["mine", "theirs"]}).status_code == 200
            await inbox.list_changed()
            assert set(await listed(client)) == {"mine", "theirs"}


async def test_listen_stream_hears_changes_in_the_2026_era(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "first", "exports.run = function () { return 1; };")
        # "auto": the client asks `server/discover` and picks the 2026 era it finds there
        async with mcp_client(server, mode="auto") as client:
            assert client.protocol_version == MODERN
            assert client.server_capabilities.tools.list_changed is True
            async with client.listen(tools_list_changed=True) as subscription:
                assert subscription.honored.tools_list_changed is True
                put_tool(http, "second", "exports.run = function () { return 2; };")
                with anyio.fail_after(5):
                    async for _ in subscription:
                        break
            assert set(await listed(client)) == {"first", "second"}


async def test_ended_sessions_and_listen_streams_are_forgotten(server: Server) -> None:
    def watchers() -> int:
        return httpx.get(f"{server.url}/healthz", timeout=10).json()["mcp"]["watchers"]

    async def settles_at(expected: int) -> None:
        with anyio.fail_after(5):
            while watchers() != expected:
                await anyio.sleep(0.05)

    assert watchers() == 0
    async with mcp_client(server) as legacy:
        await legacy.list_tools()
        assert watchers() == 1
        async with mcp_client(server, mode="auto") as modern, modern.listen(tools_list_changed=True):
            assert watchers() == 2
        # the listen stream was dropped by its client
        await settles_at(1)
    # the session was ended by its client (DELETE)
    await settles_at(0)


# -- the HTTP gate ---------------------------------------------------------------------------------


def test_http_refusals_are_problems(server: Server) -> None:
    with server.client() as http:
        auditor = token(http, "reader", "auditor")
        assert http.post(SERVERS, json={"id": "known", "tools": []}).status_code == 201

    def post(path: str, bearer: str | None, **headers: str) -> httpx.Response:
        sent = {**MCP_HEADERS, **headers}
        if bearer is not None:
            sent["Authorization"] = f"Bearer {bearer}"
        return httpx.post(server.url + path, json=INITIALIZE, headers=sent, timeout=30)

    for path in ("/mcp", "/mcp/known"):
        missing = post(path, None)
        # The 401 names the URL's Protected Resource Metadata (docs/oauth.md, RFC 9728).
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer resource_metadata=")
        assert missing.headers["content-type"] == "application/problem+json"
        assert post(path, "tsa_not-a-token").status_code == 401
        assert post(path, auditor).status_code == 403
        assert post(path, server.token).status_code == 200
    unknown = post("/mcp/unknown", server.token)
    assert unknown.status_code == 404 and unknown.json()["code"] == "not-found"
    # DNS rebinding: a Host or an Origin the settings do not name is refused, before the token is looked at
    assert post("/mcp", server.token, Host="evil.example:80").status_code == 421
    assert post("/mcp", None, Host="evil.example").status_code == 421
    assert post("/mcp", server.token, Origin="http://evil.example").status_code == 403
    assert post("/mcp", server.token, Origin=f"http://localhost:{server.port}").status_code == 200


def test_a_session_belongs_to_the_token_and_the_server_that_opened_it(server: Server) -> None:
    with server.client() as http:
        other = token(http, "other", tags=["x"])
        assert http.post(SERVERS, json={"id": "s1", "tools": []}).status_code == 201
    opened = httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"Bearer {server.token}"})
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}

    def post(path: str, bearer: str) -> httpx.Response:
        headers = {**MCP_HEADERS, "Authorization": f"Bearer {bearer}", "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
        return httpx.post(server.url + path, json=listing, headers=headers, timeout=30)

    assert post("/mcp", server.token).status_code == 200
    assert post("/mcp", other).status_code == 404
    assert post("/mcp/s1", server.token).status_code == 404


def test_allowed_hosts_and_origins_come_from_the_settings(tmp_path: Any) -> None:
    from tests.e2e.conftest import printed_tokens

    env = {"TOOLSMITH_MCP_ALLOWED_HOSTS": "tools.example:*", "TOOLSMITH_MCP_ALLOWED_ORIGINS": "https://chat.example"}
    running = Server(data_dir=tmp_path / "data", env=env).start()
    try:
        bearer = printed_tokens(running.output)[0]

        def post(**headers: str) -> int:
            sent = {**MCP_HEADERS, "Authorization": f"Bearer {bearer}", **headers}
            return httpx.post(f"{running.url}/mcp", json=INITIALIZE, headers=sent, timeout=30).status_code

        assert post() == 421  # 127.0.0.1 is no longer allowed
        assert post(Host="tools.example:443") == 200
        assert post(Host="tools.example:443", Origin="https://chat.example") == 200
        assert post(Host="tools.example:443", Origin=f"http://localhost:{running.port}") == 403
    finally:
        running.stop()


# -- issue 12: checked results, plans with the caller's permissions, Host/Origin patterns ---------


async def test_deep_and_surrogate_results_are_tool_results_never_protocol_errors(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "deep", "exports.run = function (i) { let v = 0; for (let k = 0; k < i.n; k++) v = [v]; return {v: v}; };",
                 [param("n", "integer")])
        put_tool(http, "odd", "exports.run = function () { log('x\\ud800'); return {s: 'a\\udfffb'}; };")
    for mode in ("legacy", MODERN):
        async with mcp_client(server, mode=mode) as client:
            for n in (150, 300):  # deeper code results are the sandbox's to bound (it decodes them first)
                deep = await client.call_tool("deep", {"n": n})
                assert deep.is_error and text_of(deep).startswith("result: "), text_of(deep)
                assert "more than 100 levels" in text_of(deep)
            # the session is still fine, and a shallow result comes back whole
            shallow = await client.call_tool("deep", {"n": 3})
            assert not shallow.is_error and shallow.structured_content == {"v": [[[0]]]}
            odd = await client.call_tool("odd", {})
            assert not odd.is_error and odd.structured_content == {"s": "a\ufffdb"}
            assert odd.meta["toolsmith/logs"] == ["x\ufffd"]


async def test_a_plan_reaches_only_the_tools_its_caller_may_use(server: Server) -> None:
    with server.client() as http:
        put_tool(http, "first", "exports.run = function (i) { return {n: i.n + 1}; };", [param("n", "integer")])
        put_tool(http, "secret", "exports.run = function (i) { return 'secret ' + i.n; };", [param("n", "integer")], expose=False)
        plan = {"id": "chain", "description": "first, then the secret", "nodes": [{"toolName": "first"}, {"toolName": "secret"}],
                "exposeAsTool": True, "exposeInChat": True}
        assert http.post("/api/v1/admin/plans", json=plan).status_code == 201
        entry = next(t for t in http.get("/api/v1/admin/tools").json() if t["name"] == "chain")
        assert entry["callType"] == "PLAN" and entry["runsWith"] == "caller"
        limited = token(http, "limited", tools=["chain", "first"])
        allowed = token(http, "allowed", tools=["chain", "first", "secret"])
    async with mcp_client(server) as admin:
        assert text_of(await admin.call_tool("chain", {"n": 1})) == "secret 2"
    async with mcp_client(server, limited) as caller:
        assert set(await listed(caller)) == {"chain", "first"}
        refused = await caller.call_tool("chain", {"n": 1})
        assert refused.is_error and "node 2 (secret) is not allowed for this caller (R14)" in text_of(refused), text_of(refused)
        assert (await caller.call_tool("first", {"n": 1})).structured_content == {"n": 2}
    async with mcp_client(server, allowed) as caller:
        assert text_of(await caller.call_tool("chain", {"n": 1})) == "secret 2"


def test_host_and_origin_ports_are_digits_and_names_match_in_any_case(server: Server) -> None:
    def post(*extra: tuple[str, str]) -> httpx.Response:
        headers = [*MCP_HEADERS.items(), ("Authorization", f"Bearer {server.token}"), *extra]
        return httpx.post(f"{server.url}/mcp", json=INITIALIZE, headers=headers, timeout=30)

    port = server.port
    for host in (f"127.0.0.1:{port}.evil", f"127.0.0.1:{port}evil", "127.0.0.1:", "127.0.0.1:80:80", f"localhost:{port}/x", "localhost"):
        refused = post(("Host", host))
        assert refused.status_code == 421 and refused.json()["code"] == "invalid-host", host
    for host in (f"LOCALHOST:{port}", "Localhost:8000", f"127.0.0.1:{port}", "[::1]:8000"):
        assert post(("Host", host)).status_code == 200, host
    for origin in (f"http://127.0.0.1:{port}.evil.example", f"http://localhost:{port}@evil.example", "http://localhost"):
        refused = post(("Origin", origin))
        assert refused.status_code == 403 and refused.json()["code"] == "invalid-origin", origin
    for origin in (f"HTTP://LOCALHOST:{port}", f"http://Localhost:{port}", "http://[::1]:3000"):
        assert post(("Origin", origin)).status_code == 200, origin
    # two Authorization headers: which one is meant is not guessed
    twice = post(("Authorization", f"Bearer {server.token}"))
    assert twice.status_code == 400 and twice.json()["code"] == "duplicate-authorization"
