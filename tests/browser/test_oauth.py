"""A newcomer's flow, with components nobody here wrote: the MCP Python SDK's own OAuth client
(`mcp.client.auth.OAuthClientProvider`) against a real `toolsmith serve` that has no token for it.
The client meets the 401, discovers the Protected Resource Metadata and the authorization server's,
registers (Dynamic Client Registration, or a Client ID Metadata Document on an https URL that
Toolsmith fetches through its egress), and sends the person's browser (Debian's Chromium, driven by
Playwright) to the consent page: sign in, look, press Allow. The browser is redirected to the
client's loopback callback (the consent page's CSP lets that form post lead there), the client
exchanges the code, lists the person's tools, and after its access token expires refreshes it and
lists them again. Then the Connected apps page lists the grant and revokes it.

The client runs in a thread of its own with its own event loop (Playwright's sync API runs one in
this thread); the two meet through queues: the authorization URL one way, the callback's code the other.
"""

from __future__ import annotations

import http.server
import json
import queue
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import trustme

from testing.launcher import Server, free_port
from tests.browser.conftest import ADMIN_TOKEN, CSP_LISTENER, Watch, assert_accessible, shots
from tests.tls import trusted_bundle

ACCESS_SECONDS = 4


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_: Any) -> None:
        return None


@dataclass
class Callback:
    """The client's loopback redirect URI: it takes one authorization response at a time."""

    port: int = field(default_factory=free_port)
    answers: queue.Queue[dict[str, str]] = field(default_factory=queue.Queue)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"


def serve_callback(callback: Callback) -> http.server.HTTPServer:
    class Handler(_Quiet):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            params = {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}
            callback.answers.put(params)
            body = b"<!doctype html><title>Done</title><p>You may close this window."
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.HTTPServer(("127.0.0.1", callback.port), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


@dataclass
class Documents:
    """An https host on 127.0.0.1 serving client metadata documents (its CA trusted by the server)."""

    port: int
    served: dict[str, bytes] = field(default_factory=dict)

    def url(self, name: str) -> str:
        return f"https://127.0.0.1:{self.port}/{name}"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def documents(ca: trustme.CA) -> Iterator[Documents]:
    port = free_port()
    found = Documents(port)

    class Handler(_Quiet):
        def do_GET(self) -> None:  # noqa: N802
            body = found.served.get(self.path.lstrip("/"))
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    server = http.server.HTTPServer(("127.0.0.1", port), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield found
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def oauth_server(tmp_path_factory: pytest.TempPathFactory, ca: trustme.CA, documents: Documents) -> Iterator[Server]:
    """A server whose public URL is its own, with short-lived access tokens, whose egress may reach
    the documents' host (and trusts its CA)."""
    base = tmp_path_factory.mktemp("oauth")
    port = free_port()
    env = {"TOOLSMITH_ADMIN_TOKEN": ADMIN_TOKEN, "TOOLSMITH_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "TOOLSMITH_OAUTH_ACCESS_TOKEN_SECONDS": str(ACCESS_SECONDS), "TOOLSMITH_EGRESS_ALLOW": f"127.0.0.1:{documents.port}",
           "SSL_CERT_FILE": str(trusted_bundle(ca, base))}
    server = Server(data_dir=base / "data", port=port, env=env, inherit_settings=False).start()
    server.token = ADMIN_TOKEN
    with server.client() as http:
        source = "exports.run = function (input) { return {said: 'hello ' + (input.text || '')}; };"
        tool = {"inputParameters": [{"name": "text", "type": "string", "required": False, "description": "a text"}],
                "exposeInChat": True}
        assert http.post("/api/v1/admin/code-modules", json={"id": "greet", "description": "Greets.", "draftContent": source,
                                                               "tool": tool}).status_code == 201
        assert http.post("/api/v1/admin/code-modules/greet/publish").status_code == 200
    yield server
    server.stop()


@dataclass
class Outcome:
    tools: list[str] = field(default_factory=list)
    tools_after_refresh: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    first_list_seconds: float = 0.0
    error: BaseException | None = None


def run_client(url: str, callback: Callback, authorizations: queue.Queue[str], outcome: Outcome,
               client_metadata_url: str | None) -> None:
    """The MCP SDK's client, OAuth and all, in this thread's own event loop."""
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

    class Memory:
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens
            outcome.tokens.append(tokens.access_token)

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    async def redirect(authorization_url: str) -> None:
        authorizations.put(authorization_url)

    async def answered() -> AuthorizationCodeResult:
        params = await anyio.to_thread.run_sync(lambda: callback.answers.get(timeout=90))
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    async def main() -> None:
        metadata = OAuthClientMetadata(client_name="SDK test client", redirect_uris=[callback.uri],
                                       grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                       token_endpoint_auth_method="none")
        provider = OAuthClientProvider(server_url=url + "/mcp", client_metadata=metadata, storage=Memory(),
                                       redirect_handler=redirect, callback_handler=answered,
                                       client_metadata_url=client_metadata_url)
        began = time.perf_counter()
        async with httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30, read=120)) as http:
            async with Client(streamable_http_client(url + "/mcp", http_client=http), mode="legacy",
                              read_timeout_seconds=120) as client:
                listed = await client.list_tools()
                outcome.first_list_seconds = time.perf_counter() - began
                outcome.tools = [tool.name for tool in listed.tools]
                await anyio.sleep(ACCESS_SECONDS + 1.5)  # past the access token's life: the next request refreshes it
                outcome.tools_after_refresh = [tool.name for tool in (await client.list_tools()).tools]

    try:
        anyio.run(main)
    except BaseException as error:  # noqa: BLE001 - reported by the test
        outcome.error = error


@pytest.mark.parametrize("registration", ["dynamic", "metadata-document"])
def test_the_sdk_client_discovers_registers_is_allowed_and_lists_and_refreshes(
        browser: Any, oauth_server: Server, documents: Documents, registration: str) -> None:
    callback = Callback()
    listening = serve_callback(callback)
    document_url = None
    if registration == "metadata-document":
        document_url = documents.url("sdk-client.json")
        documents.served["sdk-client.json"] = json.dumps({
            "client_id": document_url, "client_name": "SDK test client (metadata document)",
            "client_uri": f"https://127.0.0.1:{documents.port}/", "redirect_uris": [callback.uri],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none"}).encode()
    authorizations: queue.Queue[str] = queue.Queue()
    outcome = Outcome()
    client = threading.Thread(target=run_client, args=(oauth_server.url, callback, authorizations, outcome, document_url),
                              daemon=True)
    client.start()
    context = browser.new_context(base_url=oauth_server.url, viewport={"width": 1280, "height": 800})
    context.add_init_script(CSP_LISTENER)
    context.set_default_timeout(20_000)
    watch = Watch(origin=oauth_server.url)
    page = context.new_page()
    page.on("console", watch.console)
    page.on("pageerror", watch.page_error)
    try:
        authorization = authorizations.get(timeout=60)
        assert authorization.startswith(oauth_server.url + "/oauth/authorize?")
        page.goto(authorization)
        # Not signed in: the console's sign-in first, then back to the consent page.
        page.get_by_label("Token", exact=True).fill(ADMIN_TOKEN)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/console/oauth/consent?*")
        expected = "SDK test client (metadata document)" if document_url else "SDK test client"
        assert page.get_by_role("heading", level=1).inner_text() == f"Allow {expected} to use your tools?"
        assert "See and call the tools you may use" in page.inner_text("main")
        assert_accessible(page, "the consent page")
        shots(page, f"oauth-consent-{registration}")
        page.get_by_role("button", name="Allow", exact=True).click()
        page.wait_for_url(callback.uri + "?*")
        client.join(timeout=60)
        assert not client.is_alive(), "the SDK client did not finish"
        if outcome.error is not None:
            raise outcome.error
        assert outcome.tools == ["greet"] and outcome.tools_after_refresh == ["greet"]
        assert len(outcome.tokens) == 2 and outcome.tokens[0] != outcome.tokens[1], "the access token was not refreshed"
        print(f"first 401 to first tools/list ({registration}), a person's consent included: {outcome.first_list_seconds:.2f} s")

        # The grant is on the person's Connected apps page, and revoking it shuts the client out.
        page.goto("/console/oauth/grants")
        row = page.get_by_role("row").filter(has_text=expected)
        assert row.count() == 1
        assert_accessible(page, "the connected apps page")
        shots(page, f"oauth-grants-{registration}")
        row.get_by_role("button", name="Revoke").click()
        page.wait_for_url("**/console/oauth/grants")
        assert page.get_by_role("row").filter(has_text=expected).count() == 0
        import httpx

        refused = httpx.post(oauth_server.url + "/mcp", headers={"Authorization": f"Bearer {outcome.tokens[-1]}",
                                                                 "Accept": "application/json, text/event-stream"},
                             json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=10, trust_env=False)
        assert refused.status_code == 401 and 'error="invalid_token"' in refused.headers["www-authenticate"]
        assert not watch.problems, "\n".join(watch.problems)
    finally:
        context.close()
        listening.shutdown()
        listening.server_close()


def test_a_client_metadata_document_the_egress_may_not_reach_is_refused_with_a_message(
        browser: Any, oauth_server: Server) -> None:
    context = browser.new_context(base_url=oauth_server.url, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto("/console/sign-in")
        page.get_by_label("Token", exact=True).fill(ADMIN_TOKEN)
        page.get_by_role("button", name="Sign in").click()
        page.goto("/oauth/authorize?response_type=code&client_id=https%3A%2F%2F10.0.0.1%2Fclient.json"
                  "&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb&code_challenge=" + "a" * 43
                  + "&code_challenge_method=S256&state=x&resource=" + oauth_server.url + "%2Fmcp")
        assert page.get_by_role("heading", level=1).inner_text() == "This application's request cannot be answered"
        assert "could not be fetched" in page.inner_text("main")
        assert_accessible(page, "a refused authorization request")
        shots(page, "oauth-refused")
    finally:
        context.close()

