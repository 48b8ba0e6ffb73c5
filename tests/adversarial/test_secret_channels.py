"""Secrets through every channel of an API URL tool's call, on the real service (issue 28, family:
secret channels; findings 1 and 3).

A local API echoes each request back (its path, so an API key in the query percent-encoded; its
headers, so an API key raw, a Basic header's base64 of `user:pass`, an OAuth access token the
service obtained). Each tool's answer goes through a published module that logs the echo three
ways (as JSON, with lower-case hex, form-encoded again) and returns it, or throws it as its error.
Every call is made through REST, the Playground and MCP; then no form of any secret (the suite's
scan looks for the raw, percent-encoded and base64 forms) may be in any answer (`Probe.send`), in
the server's log, in any event or in the export (`Probe.assert_no_secret_anywhere`), and the
module's lines are in the server's log, redacted. Traces are on, exported to a receiver in the
test: no form of a secret is in any span it receives either.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.adversarial.conftest import Probe, start_probe
from tests.otlp import Receiver, receiving
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"
MODULES = "/api/v1/admin/code-modules"
KEY = 'adv-key/7d1e+f0 g&h=i"j-never-shown'
CLIENT_SECRET = "adv-client/secret+k l&m-never-shown"
VERSION = "2025-11-25"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": VERSION}

LOGGING_MODULE = """exports.run = (r) => {
  const path = r.body.path;
  const form = (s) => encodeURIComponent(decodeURIComponent(s)).replace(/%20/g, '+');
  log(r.body);
  log(path.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  log((path.split('?')[1] || '').split('&').map((kv) => kv.split('=').map(form).join('=')).join('&'));
  return {echo: r.body};
};"""
THROWING_MODULE = "exports.run = (r) => { throw new Error(JSON.stringify(r.body)); };"


def ways(upstream: Upstream) -> dict[str, dict[str, Any]]:
    return {
        "inheader": {"type": "apiKey", "in": "header", "name": "X-Api-Key", "secret": "key"},
        "inquery": {"type": "apiKey", "in": "query", "name": "key", "secret": "key"},
        "basic": {"type": "basic", "username": "svc", "secret": "key"},
        "oauth": {"type": "oauth2ClientCredentials", "tokenUrl": upstream.url + "/token", "clientId": "client-1",
                  "clientSecret": "clientSecret"},
    }


@pytest.fixture(scope="module")
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    yield from receiving()


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory, upstream: Upstream, receiver: Receiver) -> Iterator[Probe]:
    # Traces on, exported to a receiver here: what the spans carry is a channel too (docs/observability.md).
    started = start_probe(tmp_path_factory.mktemp("secret-channels") / "data", TOOLSMITH_EGRESS_ALLOW=upstream.allow,
                          OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_BSP_SCHEDULE_DELAY="100")
    started.secrets += [KEY, CLIENT_SECRET]
    yield started
    started.close()


def made(answer: Any, status: int) -> Any:
    assert answer.status_code == status, answer.text
    return answer.json() if answer.content else None


def test_no_form_of_a_secret_leaves_any_channel(probe: Probe, upstream: Upstream, receiver: Receiver) -> None:
    for secret_id, value in (("key", KEY), ("clientSecret", CLIENT_SECRET)):
        made(probe.send("POST", "/api/v1/admin/secrets", json={"id": secret_id, "value": value, "description": secret_id}), 201)
    for module, source in (("echolog", LOGGING_MODULE), ("echothrow", THROWING_MODULE)):
        made(probe.send("POST", MODULES, json={"id": module, "description": module, "draftContent": source,
                                               "tool": {"inputParameters": []}}), 201)
        made(probe.send("POST", f"{MODULES}/{module}/publish"), 200)
    names = []
    for way, auth in ways(upstream).items():
        for suffix, module in (("logs", "echolog"), ("throws", "echothrow")):
            names.append(f"{way}_{suffix}")
            made(probe.send("POST", TOOLS, json={"id": names[-1], "description": way, "urlTemplate": upstream.url + "/echo",
                                                  "auth": auth, "response": {"module": module}}), 201)

    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "adversarial", "version": "1"}}}
    opened = probe.send("POST", "/mcp", json=initialize, headers=MCP_HEADERS)
    assert opened.status_code == 200, opened.text
    session = {**MCP_HEADERS, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
    assert probe.send("POST", "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session).status_code == 202

    redacted, answers = 0, []
    for n, name in enumerate(names):
        # every answer is scanned by `send` for every form of the key and the client secret
        called = made(probe.send("POST", f"/api/v1/tools/{name}/call", json={}), 200)
        tested = made(probe.send("POST", f"{TOOLS}/{name}/test", json={"arguments": {}}), 200)
        through_mcp = probe.send("POST", "/mcp", json={"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
                                                        "params": {"name": name, "arguments": {}}}, headers=session)
        assert through_mcp.status_code == 200, through_mcp.text
        for answer in (called, tested):
            if name.endswith("_logs"):
                assert answer["error"] is None and len(answer["logs"]) == 3, answer
            else:
                assert answer["error"]["type"] == "runtime", answer
        answers.append((name, str(called) + str(tested) + through_mcp.text))
        redacted += "[secret]" in answers[-1][1]
    assert redacted == len(names)  # each echo held the credential, replaced
    # the access tokens the service obtained are secrets too: in no answer, nor anywhere
    assert upstream.tokens_issued
    probe.secrets += upstream.tokens_issued
    for name, text in answers:
        probe.assert_no_secret_in(text, f"the answers about {name}")

    probe.assert_no_secret_anywhere()
    # nor in any span: each call's spans (the tool's, the outbound requests') were exported, and hold none
    receiver.wait_for(lambda found: {s["attributes"].get("toolsmith.tool") for s in found} >= set(names)
                      and sum(s["kind"] == 3 for s in found) >= 3 * len(names))
    probe.assert_no_secret_in(receiver.text, "the spans exported")
    assert upstream.url + "/echo" not in receiver.text and "key=" not in receiver.text  # no outbound URL, no query string
    module_lines = [line for line in probe.server.output.splitlines() if "module log" in line]
    assert module_lines and all("echolog" in line for line in module_lines)
    assert sum("[secret]" in line for line in module_lines) >= len(ways(upstream)), module_lines[:3]
    probe.assert_alive()
