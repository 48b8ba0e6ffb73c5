"""Tool search over MCP (issue 36, item 5; docs/mcp.md, "Tool search") against a running `toolsmith
serve`, with the SDK's own client in both eras: a server with `toolSearch` on lists find_tool,
call_tool and its pinned tools; find_tool finds what the caller may use and nothing else;
call_tool calls exactly as tools/call does; a tool published is found at once."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest

from tests.e2e.conftest import Server, mcp_client
from tests.e2e.test_mcp import MODERN, text_of, token
from tests.helpers import expect

pytestmark = pytest.mark.anyio

BASE = "/api/v1/admin/code-modules"
SERVERS = "/api/v1/admin/mcp-servers"
MODES = ["legacy", MODERN]

TOOLS = {
    "convert_currency": ("Converts an amount of money from one currency to another at today's exchange rate.",
                         "exports.run = function (i) { return {amount: i.amount * 2, currency: i.to}; };",
                         [("amount", "decimal", "how much money"), ("to", "string", "the currency code to convert into")]),
    "weather_now": ("Tells the current weather in a city: temperature, wind and rain.",
                    "exports.run = function (i) { return 'sunny in ' + i.city; };", [("city", "string", "the city's name")]),
    "run_payroll": ("Pays the monthly salaries of every employee into their bank accounts.",
                    "exports.run = function () { return 'paid'; };", []),
}


def put(http: httpx.Client, name: str, description: str, source: str, parameters: list[tuple[str, str, str]]) -> None:
    tool = {"inputParameters": [{"name": n, "type": t, "required": True, "description": d} for n, t, d in parameters],
            "exposeInChat": True}
    expect(http.post(BASE, json={"id": name, "description": description, "draftContent": source, "tool": tool}), 201)
    expect(http.post(f"{BASE}/{name}/publish"), 200)


def found_names(result: Any) -> list[str]:
    assert not result.is_error, text_of(result)
    assert orjson.loads(text_of(result)) == result.structured_content
    return [tool["name"] for tool in result.structured_content["tools"]]


@pytest.fixture
def catalog(server: Server) -> dict[str, str]:
    """The three tools on the server `big` with tool search on (weather_now pinned), and a caller
    whose usage profile leaves run_payroll out."""
    with server.client() as http:
        for name, (description, source, parameters) in TOOLS.items():
            put(http, name, description, source, parameters)
        expect(http.post(SERVERS, json={"id": "big", "tools": sorted(TOOLS),
                                        "toolSearch": {"enabled": True, "pinned": ["weather_now"]}}), 201)
        caller = token(http, "no-payroll", tools=["convert_currency", "weather_now"])
    return {"caller": caller}


@pytest.mark.parametrize("mode", MODES)
async def test_find_tool_and_call_tool_beside_the_pinned_tools(server: Server, catalog: dict[str, str], mode: str) -> None:
    async with mcp_client(server, path="/mcp/big", mode=mode) as admin:
        listing = {tool.name: tool for tool in (await admin.list_tools()).tools}
        assert set(listing) == {"find_tool", "call_tool", "weather_now"}
        assert listing["find_tool"].input_schema["required"] == ["query"]

        found = await admin.call_tool("find_tool", {"query": "pay staff wages", "limit": 2})
        assert found_names(found)[0] == "run_payroll"
        best = found.structured_content["tools"][0]
        assert best["description"] == TOOLS["run_payroll"][0] and best["inputSchema"]["type"] == "object"
        money = await admin.call_tool("find_tool", {"query": "exchange dollars into euros"})
        assert found_names(money)[0] == "convert_currency"
        assert money.structured_content["tools"][0]["inputSchema"]["required"] == ["amount", "to"]

        # call_tool answers what tools/call answers
        through = await admin.call_tool("call_tool", {"name": "convert_currency", "arguments": {"amount": 5, "to": "EUR"}})
        direct = await admin.call_tool("convert_currency", {"amount": 5, "to": "EUR"})
        assert not through.is_error and through.structured_content == direct.structured_content == {"amount": 10, "currency": "EUR"}
        bad = await admin.call_tool("call_tool", {"name": "convert_currency", "arguments": {"amount": "five", "to": "EUR"}})
        bad_direct = await admin.call_tool("convert_currency", {"amount": "five", "to": "EUR"})
        assert bad.is_error and text_of(bad) == text_of(bad_direct)
        # a tool that is not pinned is still called by its name (tool search changes what is listed)
        assert text_of(await admin.call_tool("run_payroll", {})) == "paid"
        refused = await admin.call_tool("find_tool", {"query": ""})
        assert refused.is_error and "query" in text_of(refused)
        too_many = await admin.call_tool("find_tool", {"query": "weather", "limit": 21})
        assert too_many.is_error and "limit" in text_of(too_many)


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_the_profile_hides_is_never_found_nor_called(server: Server, catalog: dict[str, str], mode: str) -> None:
    async with mcp_client(server, catalog["caller"], path="/mcp/big", mode=mode) as caller:
        assert {tool.name for tool in (await caller.list_tools()).tools} == {"find_tool", "call_tool", "weather_now"}
        # its own description, word for word, finds it not
        hidden = found_names(await caller.call_tool("find_tool", {"query": TOOLS["run_payroll"][0], "limit": 20}))
        assert "run_payroll" not in hidden and set(hidden) <= {"convert_currency", "weather_now"}
        through = await caller.call_tool("call_tool", {"name": "run_payroll", "arguments": {}})
        direct = await caller.call_tool("run_payroll", {})
        assert through.is_error and direct.is_error and text_of(through) == text_of(direct)
        assert "tool-not-found" in text_of(through)
        assert found_names(await caller.call_tool("find_tool", {"query": "exchange dollars into euros"}))[0] == "convert_currency"
    # both refusals are in the call log, alike
    with server.client() as http:
        calls = expect(http.get("/api/v1/admin/calls", params={"tool": "run_payroll"}), 200).json()
    assert [c["outcome"] for c in calls] == ["tool-not-found", "tool-not-found"], calls


async def test_a_published_tool_is_found_at_once_and_switching_notifies(server: Server, catalog: dict[str, str]) -> None:
    async with mcp_client(server, path="/mcp/big", mode=MODERN) as admin:
        before = found_names(await admin.call_tool("find_tool", {"query": "translate a sentence into French"}))
        assert "translate_text" not in before
        with server.client() as http:
            put(http, "translate_text", "Translates text from one language into another.",
                "exports.run = function (i) { return i.text; };", [("text", "string", "what to translate")])
            expect(http.put(f"{SERVERS}/big/tools/translate_text"), 200)
        after = found_names(await admin.call_tool("find_tool", {"query": "translate a sentence into French"}))
        assert after[0] == "translate_text"
        # switched off: the whole list again
        with server.client() as http:
            expect(http.put(f"{SERVERS}/big", json={"tools": [*sorted(TOOLS), "translate_text"]}), 200)
        assert {tool.name for tool in (await admin.list_tools()).tools} == {*TOOLS, "translate_text"}
        off = await admin.call_tool("find_tool", {"query": "weather"})
        assert off.is_error and "tool-not-found" in text_of(off)


def test_pinned_tools_must_be_attached(server: Server) -> None:
    with server.client() as http:
        put(http, "weather_now", *TOOLS["weather_now"])
        refused = http.post(SERVERS, json={"id": "small", "tools": [], "toolSearch": {"enabled": True, "pinned": ["weather_now"]}})
        assert refused.status_code == 400 and refused.headers["content-type"].startswith("application/problem+json")
        assert "toolSearch.pinned[0]" in refused.text, refused.text
        twice = http.post(SERVERS, json={"id": "small", "tools": ["weather_now"],
                                          "toolSearch": {"enabled": True, "pinned": ["weather_now", "weather_now"]}})
        assert twice.status_code == 400 and "toolSearch.pinned" in twice.text
        wrong = http.post(SERVERS, json={"id": "small", "tools": [], "toolSearch": {"enabled": "yes"}})
        assert wrong.status_code == 400 and "toolSearch" in wrong.text
        made = expect(http.post(SERVERS, json={"id": "small", "tools": ["weather_now"],
                                               "toolSearch": {"enabled": True, "pinned": ["weather_now"]}}), 201).json()
        assert made["toolSearch"] == {"enabled": True, "pinned": ["weather_now"]}
        plain = expect(http.post(SERVERS, json={"id": "plain", "tools": []}), 201).json()
        assert plain["toolSearch"] == {"enabled": False, "pinned": []}
