"""What the egress families share: a code module that fetches, an API URL tool made and called, an
external MCP tool called, each through a real server's REST API (`Probe.send`'s checks on every
answer), and each answering what the outbound request came to: an answer, or why it was refused."""

from __future__ import annotations

import secrets
from typing import Any

from tests.adversarial.conftest import Probe

API_TOOLS = "/api/v1/admin/api-tools"

FETCH = """exports.run = async function (input) {
  try { var r = await http.fetch(input.url, input.options || {}); return {status: r.status, url: r.url, text: r.text}; }
  catch (e) { return {refused: String(e && e.message)}; }
};"""

# What a refusal by a check says (never "could not connect": that is a connection attempted).
REFUSALS = ("address not allowed", "metadata address refused", "domain not allowed", "only http and https",
            "http needs an entry", "URLs with user info", "host must not end with a dot", "IPv4 address in non-standard form",
            "invalid URL", "not a host name", "brackets are for IPv6", "IPv6 zone identifiers")


def fetch(probe: Probe, url: str, *, timeout_millis: int = 3000, **options: Any) -> dict[str, Any]:
    """`http.fetch(url, options)` in a code module run by `POST /test`: `{status, url, text}` or `{refused}`."""
    answer = probe.test_call(FETCH, input={"url": url, "options": options}, timeout_millis=timeout_millis)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["error"] is None, result
    return result["output"]


def api_tool_call(probe: Probe, url: str, **config: Any) -> dict[str, Any]:
    """A new API URL tool calling `url`, called once through the Playground (`POST /{id}/test`):
    `{"saved": False, "detail"}` when the URL cannot be saved, else the call's answer (`output`,
    `error`, the request as sent)."""
    tool = f"probe_{secrets.token_hex(4)}"
    made = probe.send("POST", API_TOOLS, json={"id": tool, "description": "an egress probe", "urlTemplate": url, **config})
    if made.status_code == 400:
        return {"saved": False, "detail": made.json()["detail"]}
    assert made.status_code == 201, made.text
    called = probe.send("POST", f"{API_TOOLS}/{tool}/test", json={"arguments": {}}, deadline=40)
    assert called.status_code == 200, called.text
    return called.json()


def api_refusal(answer: dict[str, Any]) -> str:
    """Why the API URL tool's call did not go out: refused when saved, or an `egress` error."""
    if answer.get("saved") is False:
        return answer["detail"]
    error = answer.get("error")
    assert error is not None, f"the call went through: {answer}"
    assert error["type"] == "egress", error
    return error["message"]
