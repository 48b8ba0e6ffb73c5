"""The Playground's Run as over HTTP (issue 31): a call run as a usage profile or an issued token is
the call that caller makes on /mcp: refused, in words and with the chat's own text, when the profile
does not allow the tool or the tool is not callable in chat; run once it is allowed; never showing a
token back."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.console.test_console_others import admin, module_tool, post  # noqa: F401 - the fixture
from tests.helpers import expect, unique_id

PROFILES = "/api/v1/admin/usage-profiles"


def profile(client: TestClient, tools: list[str]) -> str:
    name = unique_id("profile")
    expect(client.post(PROFILES, json={"id": name, "description": "for the Playground", "allowedTools": tools, "allowedTags": []}), 201)
    return name


def test_run_as_a_usage_profile_is_refused_until_the_profile_allows_the_tool(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client)
    other = module_tool(client)
    stranger = profile(client, [other])
    page = admin.get(f"/console/playground?tool={tool}").text
    assert f'<option value="profile:{stranger}">Usage profile {stranger}</option>' in page
    refused = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": '{"n": 1}', "runAs": f"profile:{stranger}"})
    assert refused.status_code == 200
    assert "Refused" in refused.text and f"The usage profile {stranger} does not allow this tool" in refused.text
    assert f"offers no tool &#39;{tool}&#39; to this caller" in refused.text  # the chat's own words
    assert f'href="/console/profiles/{stranger}"' in refused.text
    friend = profile(client, [tool])
    ran = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": '{"n": 1}', "runAs": f"profile:{friend}"})
    assert "Succeeded" in ran.text and f"run as a caller with the usage profile {friend}" in ran.text
    assert '<pre class="output">2</pre>' in ran.text


def test_run_as_a_token_admits_it_and_never_shows_it(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client, exposeInChat=False)
    allowed = profile(client, [tool])
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "chat-bot", "role": "caller", "usageProfile": allowed}), 201).json()
    page = admin.get(f"/console/playground?tool={tool}").text
    assert f'value="token:{issued["id"]}"' in page and issued["token"] not in page
    refused = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": '{"n": 1}', "runAs": f"token:{issued['id']}"})
    assert "The tool is not callable in chat" in refused.text and issued["token"] not in refused.text
    expect(client.delete(f"/api/v1/admin/tokens/{issued['id']}"), 204)
    gone = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": '{"n": 1}', "runAs": f"token:{issued['id']}"})
    assert "That token no longer exists" in gone.text and "result-summary" not in gone.text
    unknown = post(admin, "/console/playground/run", {"tool": tool, "mode": "json", "raw": '{"n": 1}', "runAs": "profile:nobody"})
    assert "There is no usage profile nobody." in unknown.text
