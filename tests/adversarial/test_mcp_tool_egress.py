"""External MCP tools' outbound calls (issue 28, finding 12): the tools file's MCP tools, called as a
client calls them (`POST /api/v1/tools/<name>/call`) on a real server, each pointed somewhere an
outbound request must not go.

The rule (infrastructure/egress/policy.py, `DeclaredOrigin`): a call goes to the origin the admin
declared and nowhere else, its name resolved once per call and pinned; the declared addresses are
trusted as declared (the MCP server here is a sidecar on 127.0.0.1), but a cloud metadata
address never, whether the URL names it, its name resolves to it, or it rebinds to it. A redirect
off the declared origin (to another port of loopback, to metadata, to another scheme) is refused
and never connected to: a recording listener stands for the place it points. The tool's header
(`Authorization: Bearer ${ADVERSARIAL_TOOL_TOKEN}`) is sent to the declared server and never
shown back, even when that server quotes it in its answer.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import RedirectResponse

from tests.adversarial.conftest import TOOL_SECRET, Listener, Probe, start_probe
from tests.dns_server import DnsServer
from tests.helpers import free_port

HEADERS = {"Authorization": "Bearer ${ADVERSARIAL_TOOL_TOKEN}"}
NAMES = {"meta.test": [["169.254.169.254"]], "sidecar.test": [["127.0.0.1"]],
         # rebinding: the sidecar first, then the metadata address, in turn
         "flip.test": [["127.0.0.1"], ["169.254.169.254"]]}


def mcp_app(forbidden: Listener, port: int) -> Any:
    """The SDK's MCP server at /mcp, and `/bounce/<where>`: a 307 off the declared origin."""
    server = MCPServer("sidecar")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The Authorization header this call came with, quoted back (a careless server)."""
        return (ctx.headers or {}).get("authorization", "(none)")

    @server.tool(structured_output=False)
    def whoami_text(ctx: Context) -> str:
        """The same, as text content only."""
        return "you sent " + (ctx.headers or {}).get("authorization", "(none)")

    @server.tool()
    def whoami_encoded(ctx: Context) -> dict[str, str]:
        """The same, base64-, percent- and JSON-encoded."""
        sent = (ctx.headers or {}).get("authorization", "(none)")
        return {"base64": base64.b64encode(sent.encode()).decode(), "percent": quote(sent, safe=""), "json": json.dumps({"sent": sent})}

    # the sidecar answers by its address and by the test resolver's names for it (sidecar.test)
    app = server.streamable_http_app(transport_security=TransportSecuritySettings(
        allowed_hosts=[f"127.0.0.1:{port}", f"sidecar.test:{port}", f"flip.test:{port}", f"secure.test:{port}"]))
    bounces = {
        "loopback": f"http://127.0.0.1:{forbidden.port}/mcp",
        "localhost": f"http://localhost:{forbidden.port}/mcp",
        "metadata": "http://169.254.169.254/latest/meta-data/",
        "scheme": f"https://127.0.0.1:{port}/mcp",
    }

    async def routed(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/bounce/"):
            where = bounces[scope["path"].removeprefix("/bounce/")]
            return await RedirectResponse(where, status_code=307)(scope, receive, send)
        return await app(scope, receive, send)

    return routed


def serving(app: Any, port: int, **config: Any) -> Iterator[int]:
    """A fixture's body: `app` served by uvicorn on 127.0.0.1:`port` (`config`: uvicorn's, TLS)."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the MCP sidecar did not start within 10 s"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def sidecar(forbidden: Listener) -> Iterator[int]:
    """The MCP server's port, on 127.0.0.1."""
    port = free_port()
    yield from serving(mcp_app(forbidden, port), port)


def tools_file(sidecar: int) -> dict[str, Any]:
    def tool(name: str, url: str, remote: str = "add") -> dict[str, Any]:
        return {"name": name, "description": f"an MCP tool at {url}", "url": url, "remoteName": remote, "headers": HEADERS,
                "inputSchema": {"type": "object"}, "timeoutMillis": 5000}

    local = f"http://127.0.0.1:{sidecar}"
    return {"mcp": [
        tool("sidecar", f"{local}/mcp"),
        tool("sidecar_by_name", f"http://sidecar.test:{sidecar}/mcp"),
        tool("quotes_header", f"{local}/mcp", "whoami"),
        tool("quotes_header_text", f"{local}/mcp", "whoami_text"),
        tool("quotes_header_encoded", f"{local}/mcp", "whoami_encoded"),
        tool("metadata_ip", "http://169.254.169.254/mcp"),
        tool("metadata_ecs", "http://169.254.170.2/mcp"),
        tool("metadata_v6", "http://[fd00:ec2::254]/mcp"),
        tool("metadata_mapped", "http://[::ffff:169.254.169.254]/mcp"),
        tool("metadata_name", "http://metadata.google.internal/mcp"),
        tool("metadata_by_dns", f"http://meta.test:{sidecar}/mcp"),
        tool("rebinding", f"http://flip.test:{sidecar}/mcp"),
        tool("bounce_loopback", f"{local}/bounce/loopback"),
        tool("bounce_localhost", f"{local}/bounce/localhost"),
        tool("bounce_metadata", f"{local}/bounce/metadata"),
        tool("bounce_scheme", f"{local}/bounce/scheme"),
    ]}


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, sidecar: int, dns: DnsServer) -> Iterator[Probe]:
    running = start_probe(tmp_path_factory.mktemp("mcp-egress") / "data", tools_file(sidecar), TOOLSMITH_EGRESS_NAMESERVER=dns.address)
    yield running
    running.close()


def call(probe: Probe, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    answer = probe.send("POST", f"/api/v1/tools/{name}/call", json={"a": 40, "b": 2} if arguments is None else arguments, deadline=15)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.parametrize("name", ["sidecar", "sidecar_by_name"])
def test_the_declared_sidecar_is_reached(probe: Probe, name: str) -> None:
    # the control: the declared origin answers, by address and by a name of the test resolver
    result = call(probe, name)
    assert result["error"] is None and result["output"] == {"result": 42}, result
    probe.assert_alive()


@pytest.mark.parametrize("name", ["quotes_header", "quotes_header_text"])
def test_the_secret_header_is_sent_and_never_shown_back(probe: Probe, name: str) -> None:
    # `Probe.send` holds every answer to carrying no secret; the header did reach the server
    result = call(probe, name, {})
    assert result["error"] is None, result
    assert "Bearer [secret]" in str(result["output"]), result
    probe.assert_alive()


def test_the_secret_header_quoted_back_encoded_is_redacted_in_each_form(probe: Probe) -> None:
    result = call(probe, "quotes_header_encoded", {})
    assert result["error"] is None, result
    output = result["output"]
    sent = f"Bearer {TOOL_SECRET}"
    assert output["base64"] != base64.b64encode(sent.encode()).decode() and "[secret]" in output["base64"], output
    assert quote(TOOL_SECRET, safe="") not in output["percent"] and "[secret]" in output["percent"], output
    assert json.loads(output["json"]) == {"sent": "Bearer [secret]"}, output
    probe.assert_alive()


METADATA = ["metadata_ip", "metadata_ecs", "metadata_v6", "metadata_mapped", "metadata_name", "metadata_by_dns"]


@pytest.mark.parametrize("name", METADATA)
def test_a_tool_declared_at_a_metadata_address_is_refused_by_egress(probe: Probe, name: str) -> None:
    result = call(probe, name)
    assert result["output"] is None and result["error"] is not None, result
    message = result["error"]["message"]
    assert "refused by egress: metadata address refused" in message, message
    probe.assert_alive()


def test_a_name_rebinding_to_metadata_is_refused_on_the_call_it_rebinds(probe: Probe, dns: DnsServer) -> None:
    outcomes = []
    for _ in range(4):
        before = dns.lookups("flip.test")
        result = call(probe, "rebinding")
        assert dns.lookups("flip.test") == before + 1, "one call, one lookup: every connection of it goes to that answer"
        outcomes.append("reached" if result["error"] is None else result["error"]["message"])
    refused = [o for o in outcomes if "refused by egress: metadata address refused: flip.test resolves to 169.254.169.254" in o]
    assert (outcomes.count("reached"), len(refused)) == (2, 2), outcomes
    probe.assert_alive()


@pytest.mark.parametrize("name", ["bounce_loopback", "bounce_localhost", "bounce_metadata", "bounce_scheme"])
def test_a_redirect_off_the_declared_origin_is_never_followed(probe: Probe, forbidden: Listener, name: str) -> None:
    result = call(probe, name)
    assert result["output"] is None and result["error"] is not None, result
    message = result["error"]["message"]
    assert "not followed" in message, message  # the SDK's refusal; the transport would refuse it too
    assert "Authorization" not in message and "Bearer" not in message, message
    assert forbidden.connections == [], "the redirect's target was connected to"
    probe.assert_alive()


def test_no_secret_in_any_log_line_event_export_or_answer(probe: Probe) -> None:
    assert TOOL_SECRET in probe.secrets
    probe.assert_no_secret_anywhere()
