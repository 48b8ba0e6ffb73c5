"""Every channel out of an API URL tool's call is redacted (issue 28, findings 1 and 3): an API that
echoes the request back, through a post-processing module that logs the echo (and one that throws
it), must not show the tool's secret in any form it was sent in (raw, the base64 of a Basic
`user:pass`, percent-encoded with upper- or lower-case hex, form-encoded, an OAuth access token the
service obtained) in the REST call's output, logs or error, the Playground, MCP's
`_meta["toolsmith/logs"]` and content, or any line of the service's log."""

from __future__ import annotations

import base64
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.api.test_mcp_direct import call as mcp_call
from tests.api.test_mcp_direct import open_session
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"
MODULES = "/api/v1/admin/code-modules"
# Characters each encoding changes: a slash, a plus, a space, an ampersand, an equals sign, a quote.
KEY = 'sk-live/9f3c+a1 b&c=d"e-never-shown'
CLIENT_SECRET = "oauth client/secret+x y&z-never-shown"
USER = "svc"

# The module logs what the API echoed: as JSON (headers raw, the Basic header's base64, the bearer
# token), the request's path with lower-case hex, and its query form-encoded again (quote_plus).
LOGGING_MODULE = """exports.run = (r) => {
  const path = r.body.path;
  log(r.body);
  log(path.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  const form = (s) => encodeURIComponent(decodeURIComponent(s)).replace(/%20/g, '+');
  log((path.split('?')[1] || '').split('&').map((kv) => kv.split('=').map(form).join('=')).join('&'));
  return {echo: r.body};
};"""
THROWING_MODULE = "exports.run = (r) => { throw new Error(JSON.stringify(r.body)); };"

TOOLS_MADE = {
    "inheader": {"auth": {"type": "apiKey", "in": "header", "name": "X-Api-Key", "secret": "key"}},
    "inquery": {"auth": {"type": "apiKey", "in": "query", "name": "key", "secret": "key"}},
    "basic": {"auth": {"type": "basic", "username": USER, "secret": "key"}},
    "oauth": {"auth": {"type": "oauth2ClientCredentials", "tokenUrl": "{url}/token", "clientId": "client-1",
                       "clientSecret": "clientSecret"}},
}


def forms(upstream: Upstream) -> dict[str, str]:
    """Every form of the secrets an echo can hold, computed as a reader would try them."""
    found = {
        "raw": KEY,
        "JSON-escaped": json.dumps(KEY)[1:-1],
        "percent-encoded": quote(KEY, safe=""),
        "percent-encoded, lower-case hex": re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), quote(KEY, safe="")),
        "form-encoded": quote_plus(KEY, safe=""),
        "base64 of user:pass": base64.b64encode(f"{USER}:{KEY}".encode()).decode(),
        "base64 of user:pass, unpadded": base64.b64encode(f"{USER}:{KEY}".encode()).decode().rstrip("="),
        "client secret raw": CLIENT_SECRET,
    }
    for n, token in enumerate(upstream.tokens_issued):
        found[f"access token {n + 1}"] = token
    return found


def strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys included, as a reader of the answer sees them."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)


def assert_no_form_in(answer: Any, upstream: Upstream, where: str) -> None:
    """No form of a secret in any string of `answer` (a JSON value, or a text)."""
    leaks = {(name, text[:300]) for text in strings(answer) for name, form in forms(upstream).items() if form in text}
    assert not leaks, f"{where} shows the secret: " + "; ".join(f"{name} in {text!r}" for name, text in sorted(leaks))


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def api(tmp_path: Path, upstream: Upstream, shared_sandbox: Any) -> Iterator[TestClient]:
    """The admin's client on an app (an allowed MCP Host) with the secrets, the modules and one
    echoing tool per way of sending a credential, each as `<way>_logs` and `<way>_throws`."""
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    with TestClient(create_app(wire(settings, shared_sandbox)), base_url="http://127.0.0.1:8000",
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        for secret_id, value in (("key", KEY), ("clientSecret", CLIENT_SECRET)):
            expect(client.post("/api/v1/admin/secrets", json={"id": secret_id, "value": value, "description": secret_id}), 201)
        for module, source in (("echolog", LOGGING_MODULE), ("echothrow", THROWING_MODULE)):
            expect(client.post(MODULES, json={"id": module, "description": module, "draftContent": source,
                                              "tool": {"inputParameters": []}}), 201)
            expect(client.post(f"{MODULES}/{module}/publish"), 200)
        for way, extra in TOOLS_MADE.items():
            extra = json.loads(json.dumps(extra).replace("{url}", upstream.url))
            for suffix, module in (("logs", "echolog"), ("throws", "echothrow")):
                expect(client.post(TOOLS, json={"id": f"{way}_{suffix}", "description": way, "urlTemplate": upstream.url + "/echo",
                                                "response": {"module": module}, **extra}), 201)
        yield client


def sent_as_expected(upstream: Upstream) -> None:
    """The secret did go where it belongs, in each form: the test shows what the echo held."""
    seen = {s.path: s for s in upstream.seen if s.path.startswith("/echo")}
    headers = [s.headers for s in upstream.seen if s.path.startswith("/echo")]
    assert any(h.get("x-api-key") == KEY for h in headers)
    assert any(quote(KEY, safe="") in path for path in seen)
    assert any(h.get("authorization") == "Basic " + base64.b64encode(f"{USER}:{KEY}".encode()).decode() for h in headers)
    assert any(h.get("authorization") == f"Bearer {token}" for h in headers for token in upstream.tokens_issued)


@pytest.mark.parametrize("way", list(TOOLS_MADE))
def test_the_rest_calls_output_and_logs(api: TestClient, upstream: Upstream, way: str) -> None:
    answer = expect(api.post(f"/api/v1/tools/{way}_logs/call", json={}), 200).json()
    assert answer["error"] is None and len(answer["logs"]) == 3
    assert_no_form_in(answer, upstream, f"POST /call of {way}_logs")
    assert "[secret]" in answer["logs"][0] and "[secret]" in json.dumps(answer["output"])


@pytest.mark.parametrize("way", list(TOOLS_MADE))
def test_the_rest_calls_error_message(api: TestClient, upstream: Upstream, way: str) -> None:
    answer = expect(api.post(f"/api/v1/tools/{way}_throws/call", json={}), 200).json()
    assert answer["error"]["type"] == "runtime" and "[secret]" in answer["error"]["message"]
    assert_no_form_in(answer, upstream, f"POST /call of {way}_throws")


@pytest.mark.parametrize("way", list(TOOLS_MADE))
def test_the_playground(api: TestClient, upstream: Upstream, way: str) -> None:
    for suffix in ("logs", "throws"):
        tested = expect(api.post(f"{TOOLS}/{way}_{suffix}/test", json={"arguments": {}}), 200).json()
        assert tested["status"] == 200
        assert_no_form_in(tested, upstream, f"the Playground of {way}_{suffix}")


def test_mcp_meta_logs_and_error_content(api: TestClient, upstream: Upstream) -> None:
    session = open_session(api)
    for way in TOOLS_MADE:
        logged = mcp_call(api, session, f"{way}_logs", {}).json()["result"]
        assert logged.get("isError", False) is False
        assert len(logged["_meta"]["toolsmith/logs"]) == 3 and "[secret]" in logged["_meta"]["toolsmith/logs"][0]
        assert_no_form_in(logged, upstream, f"MCP tools/call of {way}_logs")
        thrown = mcp_call(api, session, f"{way}_throws", {}).json()["result"]
        assert thrown["isError"] is True and "[secret]" in thrown["content"][0]["text"]
        assert_no_form_in(thrown, upstream, f"MCP tools/call of {way}_throws")
    sent_as_expected(upstream)


def test_the_services_log(api: TestClient, upstream: Upstream, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    session = open_session(api)
    for way in TOOLS_MADE:
        for suffix in ("logs", "throws"):
            expect(api.post(f"/api/v1/tools/{way}_{suffix}/call", json={}), 200)
            expect(api.post(f"{TOOLS}/{way}_{suffix}/test", json={"arguments": {}}), 200)
            assert mcp_call(api, session, f"{way}_{suffix}", {}).status_code == 200
    sent_as_expected(upstream)
    for record in caplog.records:
        # the message and every field a formatter may write (`extra` included), as text
        assert_no_form_in([record.getMessage(), *(str(v) for v in record.__dict__.values())], upstream,
                          f"the service's log line {record.getMessage()!r}")
    # the module's lines are still in the service's log, redacted
    module_lines = [r for r in caplog.records if r.getMessage() == "module log"]
    assert len(module_lines) >= 3 * len(TOOLS_MADE) and all("[secret]" in r.logLine for r in module_lines[::3])
