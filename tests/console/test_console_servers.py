"""An MCP server's console page over HTTP (no browser): several tools attached at once, answered in
place with a toast, detach's toast re-attaching, the clients' configurations (never a token in them)
and the check that lists the server's tools as a token or usage profile is offered them."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.console.test_console_others import ORIGIN, admin, auditor, module_tool, post  # noqa: F401 (fixtures)
from tests.helpers import expect, unique_id

HTMX = {"HX-Request": "true"}


def _server(client: TestClient, *tools: str) -> str:
    server = unique_id("server")
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": server, "tools": list(tools)}), 201)
    return server


def test_several_tools_are_attached_in_one_answer_with_a_toast(client: TestClient, admin: TestClient) -> None:
    first, second = module_tool(client), module_tool(client)
    server = _server(client)
    page = admin.get(f"/console/servers/{server}").text
    assert f'name="tool" value="{first}"' in page and f'name="tool" value="{second}"' in page
    answer = post(admin, f"/console/servers/{server}/tools", [("tool", first), ("tool", second)], headers=HTMX)
    assert answer.status_code == 200
    assert json.loads(answer.headers["hx-trigger"])["toast"]["text"] == f"Attached 2 tools: {first}, {second}."
    assert 'id="server-tools"' in answer.text
    # the section alone, which the page swaps in: not the whole page (its clients' configurations, the check, the shell)
    assert "<html" not in answer.text and "Connect a client" not in answer.text
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()["tools"] == [first, second]
    # attached tools are no longer choices; each row links to the tool's page, with its kind and state in words
    assert f'name="tool" value="{first}"' not in answer.text
    assert f'href="/console/modules/{first}"' in answer.text and "code module" in answer.text and "enabled" in answer.text


def test_nothing_checked_or_an_unknown_tool_is_said_in_words(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client)
    server = _server(client)
    empty = post(admin, f"/console/servers/{server}/tools", [], headers=HTMX)
    assert empty.status_code == 200 and "Choose at least one tool to attach." in empty.text
    unknown = post(admin, f"/console/servers/{server}/tools", [("tool", tool), ("tool", "no_such_tool")], headers=HTMX)
    assert "Not attached: no tool with id" in unknown.text and f"Attached {tool}." in unknown.text
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()["tools"] == [tool]


def test_detach_answers_in_place_with_an_undo_that_attaches_again(client: TestClient, admin: TestClient) -> None:
    tool = module_tool(client)
    server = _server(client, tool)
    answer = post(admin, f"/console/servers/{server}/tools/{tool}/detach", {}, headers=HTMX)
    toast = json.loads(answer.headers["hx-trigger"])["toast"]
    assert toast["text"] == f"Detached {tool}." and toast["undo"] == {"url": f"/console/servers/{server}/tools", "label": "Undo",
                                                                      "fields": {"tool": tool}}
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()["tools"] == []
    undone = post(admin, toast["undo"]["url"], toast["undo"]["fields"])
    assert undone.status_code == 303 and undone.headers["location"] == f"/console/servers/{server}"
    assert expect(client.get(f"/api/v1/admin/mcp-servers/{server}"), 200).json()["tools"] == [tool]


def test_the_client_configurations_hold_the_url_and_a_placeholder(client: TestClient, admin: TestClient) -> None:
    server = _server(client)
    page = admin.get(f"/console/servers/{server}").text
    url = f"{ORIGIN}/mcp/{server}"
    for words in ("claude_desktop_config.json", "mcp-remote", ".vscode/mcp.json", "&#34;type&#34;: &#34;http&#34;",
                  "~/.cursor/mcp.json", "@modelcontextprotocol/inspector", "&lt;YOUR_TOKEN&gt;", url):
        assert words in page, words
    assert "tsk_" not in page


def test_the_check_lists_what_a_profile_is_offered_and_why_others_are_not(client: TestClient, admin: TestClient,
                                                                          auditor: TestClient) -> None:
    allowed, other = module_tool(client), module_tool(client)
    hidden = module_tool(client, exposeInChat=False)
    profile = unique_id("profile")
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": profile, "allowedTools": [allowed, hidden]}), 201)
    token = expect(client.post("/api/v1/admin/tokens", json={"name": "checker", "role": "caller", "usageProfile": profile}), 201).json()
    server = _server(client, allowed, other, hidden)
    page = admin.get(f"/console/servers/{server}").text
    assert f'value="token:{token["id"]}"' in page and token["token"] not in page
    answer = admin.get(f"/console/servers/{server}/check", params={"caller": f"token:{token['id']}"}, headers=HTMX)
    assert answer.status_code == 200
    assert "As checker (caller with the usage profile" in answer.text and "1 tool listed" in answer.text
    assert f"{other}</span>: the usage profile {profile} does not allow it." in answer.text
    assert f"{hidden}</span>: it is not callable in chat." in answer.text
    by_profile = admin.get(f"/console/servers/{server}/check", params={"caller": f"profile:{profile}"}, headers=HTMX).text
    assert "1 tool listed" in by_profile
    # an auditor checks by usage profile; tokens are the admins' (as the tokens page is)
    assert f"token:{token['id']}" not in auditor.get(f"/console/servers/{server}").text
    assert auditor.get(f"/console/servers/{server}/check", params={"caller": f"token:{token['id']}"}).status_code == 400
    # without htmx (no script), the server's page itself answers, with the check in place
    whole = auditor.get(f"/console/servers/{server}/check", params={"caller": f"profile:{profile}"}).text
    assert "1 tool listed" in whole and "<h1>MCP server" in whole and f'value="profile:{profile}" selected' in whole
    assert admin.get(f"/console/servers/{server}/check", params={"caller": "nobody"}).status_code == 400


def test_a_module_never_published_is_shown_and_checked_as_not_published(client: TestClient, admin: TestClient) -> None:
    name = unique_id("draft")
    expect(client.post("/api/v1/admin/code-modules", json={"id": name, "description": "a draft", "draftContent": "exports.run = () => 1;",
                                                           "tool": {"exposeInChat": True}}), 201)
    server = _server(client, name)
    page = admin.get(f"/console/servers/{server}").text
    assert f'href="/console/modules/{name}"' in page and "not published" in page
    profile = unique_id("profile")
    expect(client.post("/api/v1/admin/usage-profiles", json={"id": profile, "allowedTools": [name]}), 201)
    checked = admin.get(f"/console/servers/{server}/check", params={"caller": f"profile:{profile}"}, headers=HTMX).text
    assert "0 tools listed" in checked and f"{name}</span>: it is not published." in checked


def test_an_answer_shows_the_tools_as_they_stood_when_it_was_asked(client: TestClient, admin: TestClient) -> None:
    """Attach and detach read the tools' kinds and states as of the moment before their own write
    (which changes no tool): what others changed before it, the answer shows."""
    tool = module_tool(client)
    server = _server(client, tool)
    admin.get(f"/console/servers/{server}")  # the page read the catalog; nothing has read it since
    newer = module_tool(client)  # made by someone else, then the detach
    detached = post(admin, f"/console/servers/{server}/tools/{tool}/detach", {}, headers=HTMX)
    assert f'name="tool" value="{newer}"' in detached.text and f'name="tool" value="{tool}"' in detached.text
    expect(client.put(f"/api/v1/admin/code-modules/{tool}", json={"tool": {"enabled": False, "exposeInChat": True,
                                                                            "inputParameters": []}}), 200)
    expect(client.post(f"/api/v1/admin/code-modules/{tool}/publish"), 200)
    attached = post(admin, f"/console/servers/{server}/tools", [("tool", tool)], headers=HTMX)
    row = attached.text.split(f'href="/console/modules/{tool}"', 1)[1].split("</tr>", 1)[0]
    assert "disabled" in row and f'name="tool" value="{tool}"' not in attached.text
    assert f'name="tool" value="{newer}"' in attached.text
