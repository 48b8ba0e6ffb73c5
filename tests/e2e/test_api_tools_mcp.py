"""API URL tools over MCP against a running `toolsmith serve` (issue 16; docs/kinds/index.md shape), driven
by the MCP SDK's own client, calling a local HTTP API that `TOOLSMITH_EGRESS_ALLOW` lets through."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.conftest import Server, mcp_client, printed_tokens
from tests.e2e.test_mcp import GET_STREAM_SETTLES, SERVERS, Inbox, listed, text_of
from tests.upstream import Upstream, running

pytestmark = pytest.mark.anyio

TOOLS = "/api/v1/admin/api-tools"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def server(tmp_path: Path, upstream: Upstream) -> Iterator[Server]:
    started = Server(data_dir=tmp_path / "data", env={"TOOLSMITH_EGRESS_ALLOW": upstream.allow}).start()
    started.token = printed_tokens(started.output)[0]
    yield started
    if started.process and started.process.poll() is None:
        started.stop()


def weather(upstream: Upstream, template: str = "/v1/weather/{city}{?units}", **extra: Any) -> dict[str, Any]:
    return {
        "description": "Current weather for a city",
        "urlTemplate": upstream.url + template,
        "parameters": [
            {"name": "city", "type": "string", "required": True, "location": "path"},
            {"name": "units", "type": "string", "location": "query"},
        ],
        "tags": ["weather"],
        **extra,
    }


async def test_one_api_tool_on_two_servers_detached_from_one_stays_on_the_other(server: Server, upstream: Upstream) -> None:
    with server.client() as http:
        assert http.post(TOOLS, json={"id": "weather", **weather(upstream)}).status_code == 201
        for server_id in ("alpha", "beta"):
            made = http.post(SERVERS, json={"id": server_id, "description": server_id, "tools": ["weather"]})
            assert made.status_code == 201, made.text
        alpha_inbox = Inbox()
        async with mcp_client(server, path="/mcp/alpha", on_message=alpha_inbox) as alpha, mcp_client(server, path="/mcp/beta") as beta:
            schemas = await listed(alpha)
            assert set(schemas) == {"weather"} and schemas["weather"]["required"] == ["city"]
            assert set(schemas["weather"]["properties"]) == {"city", "units"}
            answer = await alpha.call_tool("weather", {"city": "Oslo", "units": "metric"})
            assert not answer.is_error
            assert json.loads(text_of(answer))["city"] == "Oslo"
            assert upstream.last("/v1/weather/").path == "/v1/weather/Oslo?units=metric"

            await anyio.sleep(GET_STREAM_SETTLES)
            assert http.delete(f"{SERVERS}/alpha/tools/weather").status_code == 200
            await alpha_inbox.list_changed()
            assert await listed(alpha) == {}
            assert (await alpha.call_tool("weather", {"city": "Oslo"})).is_error
            # still on the other server, and called there
            assert set(await listed(beta)) == {"weather"}
            answer = await beta.call_tool("weather", {"city": "Bern"})
            assert not answer.is_error and json.loads(text_of(answer))["city"] == "Bern"


async def test_live_changes_reach_the_next_mcp_call(server: Server, upstream: Upstream) -> None:
    with server.client() as http:
        assert http.post(TOOLS, json={"id": "weather", **weather(upstream)}).status_code == 201
        inbox = Inbox()
        async with mcp_client(server, on_message=inbox) as client:
            await anyio.sleep(GET_STREAM_SETTLES)
            # a new URL: the next call goes there, with no publication
            changed = http.put(f"{TOOLS}/weather", json=weather(upstream, "/echo/{city}{?units}"))
            assert changed.status_code == 200, changed.text
            answer = await client.call_tool("weather", {"city": "Lima"})
            assert json.loads(text_of(answer))["path"] == "/echo/Lima"

            # a new parameter changes the schema: the client hears of it
            with_days = weather(upstream, "/echo/{city}{?units,days}")
            with_days["parameters"].append({"name": "days", "type": "integer", "location": "query"})
            assert http.put(f"{TOOLS}/weather", json=with_days).status_code == 200
            await inbox.list_changed()
            assert set((await listed(client))["weather"]["properties"]) == {"city", "units", "days"}
            answer = await client.call_tool("weather", {"city": "Lima", "days": 3})
            assert json.loads(text_of(answer))["path"] == "/echo/Lima?days=3"

            # a non-2xx answer is an error result naming the status
            assert http.put(f"{TOOLS}/weather", json=weather(upstream, "/status/404?city={city}{&units}")).status_code == 400
            assert http.put(f"{TOOLS}/weather", json=weather(upstream, "/status/404/{city}{?units}")).status_code == 200
            failed = await client.call_tool("weather", {"city": "Lima"})
            assert failed.is_error and "404" in text_of(failed)

            # disabled: gone from MCP at once, and a call is refused
            assert http.put(f"{TOOLS}/weather", json=weather(upstream, enabled=False)).status_code == 200
            await inbox.list_changed()
            assert "weather" not in await listed(client)
            assert (await client.call_tool("weather", {"city": "Lima"})).is_error
