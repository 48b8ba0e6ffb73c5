"""Rich results and a tool's own schemas through the Python SDK's client against a running
`toolsmith serve` (issue 33, points 3 and 4), in both eras (the handshake's session and
2026-07-28's self-contained requests): MCP content in any mix, `outputSchema` listed and its
`structuredContent` (which the SDK's client validates against it itself), an `inputSchema` listed
as it was given and enforced."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import AudioContent, EmbeddedResource, ImageContent, ResourceLink, TextContent

from tests.e2e.conftest import Server, mcp_client

pytestmark = pytest.mark.anyio

BASE = "/api/v1/admin/code-modules"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TOTAL = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"], "additionalProperties": False}
ADDRESS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}}, "required": ["name"],
    "additionalProperties": False,
}


def put(http: Any, name: str, source: str, **tool: Any) -> None:
    created = http.post(BASE, json={"id": name, "description": f"The tool {name}.", "draftContent": source,
                                    "tool": {"exposeInChat": True, **tool}})
    assert created.status_code == 201, created.text
    assert http.post(f"{BASE}/{name}/publish").status_code == 200


@pytest.fixture
def tools(server: Server) -> Server:
    with server.client() as http:
        put(http, "mixed", f"var PNG = '{PNG}';\nexports.run = function () {{ return [ai.content.text('see'), ai.content.image(PNG, 'image/png'),"
                           " ai.content.audio('UklGRg==', 'audio/wav'), ai.content.resource('test://r', {mimeType: 'text/plain', text: 'R'}),"
                           " ai.content.link('test://far', {name: 'far'})]; };")
        put(http, "counted", "exports.run = function (i) { return i.bad ? {total: 'x'} : ai.result([ai.content.text('2')], {total: 2}); };",
            inputParameters=[{"name": "bad", "type": "boolean"}], outputSchema=TOTAL)
        put(http, "addressed", "exports.run = function (i) { return 'hello ' + i.name + ' of ' + i.address.city; };", inputSchema=ADDRESS)
    return server


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_rich_results_and_schemas_through_the_sdk_client(tools: Server, mode: str) -> None:
    async with mcp_client(tools, mode=mode) as client:
        listing = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listing["counted"].output_schema == TOTAL
        assert listing["addressed"].input_schema == ADDRESS
        assert listing["mixed"].output_schema is None

        mixed = await client.call_tool("mixed", {})
        assert not mixed.is_error
        kinds = [type(item) for item in mixed.content]
        assert kinds == [TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink]
        assert mixed.content[1].data == PNG and mixed.content[1].mime_type == "image/png"
        assert mixed.content[3].resource.text == "R" and str(mixed.content[4].uri) == "test://far"

        counted = await client.call_tool("counted", {})
        assert not counted.is_error and counted.structured_content == {"total": 2}
        wrong = await client.call_tool("counted", {"bad": True})
        assert wrong.is_error and wrong.structured_content is None
        assert "outputSchema at $.total" in wrong.content[0].text

        hello = await client.call_tool("addressed", {"name": "Ada", "address": {"city": "London"}})
        assert hello.content[0].text == "hello Ada of London"
        refused = await client.call_tool("addressed", {"name": "Ada", "address": {}})
        assert refused.is_error and "input.address" in refused.content[0].text
