"""The console's API tool pages over HTTP (no browser; issue 16, docs/kinds/api-url-tools.md, docs/console.md): the list, the
editor's forms (create, refusals named next to their field with what was typed kept, edit, enable,
delete and its refusal), the Playground against a local API, and the history.

The local API listens on 127.0.0.1, which API URL tools reach only because the service allows its
`host:port` in `TOOLSMITH_EGRESS_ALLOW`."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from console.toast import COOKIE, read_cookie
from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.console.test_console_others import console, post
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect, unique_id
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"
PAGE = "/console/api-tools"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def client(tmp_path: Path, upstream: Upstream, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as rest:
        yield rest


@pytest.fixture
def admin(client: TestClient) -> TestClient:
    return console(client, ADMIN_TOKEN)


def weather_form(upstream: Upstream, name: str, **changes: str) -> list[tuple[str, str]]:
    """The editor's fields for a weather tool: a path and a query parameter, a fixed query value, a header."""
    fields = {
        "id": name, "description": "Current weather for a city", "tags": "weather, demo", "method": "GET",
        "urlTemplate": upstream.url + "/v1/weather/{city}{?units}",
        "param_a1_name": "city", "param_a1_type": "string", "param_a1_location": "path", "param_a1_required": "on",
        "param_a1_description": "the city",
        "param_b2_name": "units", "param_b2_type": "string", "param_b2_location": "query", "param_b2_default": "metric",
        "query_q1_name": "lang", "query_q1_value": "en",
        "header_h1_name": "X-Client", "header_h1_kind": "text", "header_h1_value": "toolsmith",
        "auth_type": "none", "response_maxOutputChars": "5000", "timeoutMillis": "10000", "exposeInChat": "on", "enabled": "on",
        **changes,
    }
    rows = [("param_row", "a1"), ("param_row", "b2"), ("query_row", "q1"), ("header_row", "h1")]
    return rows + [(k, v) for k, v in fields.items() if v is not None]


def weather_rest(upstream: Upstream, name: str, **extra: Any) -> dict[str, Any]:
    return {"id": name, "description": "Current weather", "tags": ["weather"], "urlTemplate": upstream.url + "/v1/weather/{city}",
            "parameters": [{"name": "city", "type": "string", "required": True, "location": "path"}], **extra}


def error_of(page: str, field_id: str) -> str:
    """The message shown next to the field `field_id` (the element its aria-describedby names)."""
    field = re.search(rf'<(?:input|textarea|select)[^>]*\bid="{re.escape(field_id)}"[^>]*>', page)
    assert field, f"no field {field_id}"
    assert 'aria-invalid="true"' in field.group(0), f"{field_id} is not marked invalid"
    message = re.search(rf'<p class="error" id="{re.escape(field_id)}-error">(.*?)</p>', page, re.S)
    assert message, f"no message next to {field_id}"
    assert f"{field_id}-error" in field.group(0)
    return html.unescape(message.group(1))


def words(page: str) -> str:
    """The page's text as a person reads it: no markup, spaces collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", page)))


def value_of(page: str, field_id: str) -> str:
    field = re.search(rf'<input[^>]*\bid="{re.escape(field_id)}"[^>]*>', page)
    assert field, f"no field {field_id}"
    found = re.search(r'value="([^"]*)"', field.group(0))
    return html.unescape(found.group(1)) if found else ""


def test_the_list_shows_each_tool_with_its_method_url_state_and_tags(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    expect(client.post(TOOLS, json=weather_rest(upstream, name, enabled=False, method="DELETE")), 201)
    page = admin.get(PAGE)
    assert page.status_code == 200
    assert '<a href="/console/api-tools">API URL tools</a>' in page.text.replace(' aria-current="page"', "")
    row = next(r for r in re.findall(r"<tr>(.*?)</tr>", page.text, re.S) if name in r)
    assert f'href="/console/api-tools/{name}"' in row
    assert "<code>DELETE</code>" in row and f"<code>{upstream.url}/v1/weather/{{city}}</code>" in row
    assert "<td>no</td>" in row and ">weather</a>" in row and " by admin" in row
    assert 'href="/console/api-tools/new"' in page.text
    # the catalog leads to the tool's own page
    assert f'href="/console/api-tools/{name}"' in admin.get("/console/tools", params={"search": name}).text


def test_a_tool_created_from_the_form_is_the_one_rest_shows(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    made = post(admin, PAGE, weather_form(upstream, name), page=f"{PAGE}/new")
    assert made.status_code == 303, made.text
    assert made.headers["location"] == f"{PAGE}/{name}"
    # said by a toast on the tool's page, whose Undo deletes it again
    said = read_cookie(made.cookies[COOKIE])
    assert said is not None and said["text"].startswith(f"Created {name}:") and said["undo"]["url"] == f"{PAGE}/{name}/delete"
    tool = expect(client.get(f"{TOOLS}/{name}"), 200).json()
    assert tool["urlTemplate"] == upstream.url + "/v1/weather/{city}{?units}"
    assert tool["tags"] == ["weather", "demo"] and tool["description"] == "Current weather for a city"
    assert tool["parameters"] == [
        {"name": "city", "description": "the city", "type": "string", "required": True, "location": "path"},
        {"name": "units", "description": "", "type": "string", "required": False, "location": "query", "default": "metric"},
    ]
    assert tool["fixedQuery"] == {"lang": "en"} and tool["headers"] == {"X-Client": "toolsmith"}
    assert tool["response"]["maxOutputChars"] == 5000 and tool["timeoutMillis"] == 10000 and tool["enabled"] is True
    # its page shows the form filled with what was saved
    page = admin.get(made.headers["location"]).text
    assert value_of(page, "urlTemplate") == tool["urlTemplate"]
    assert "city" in page and "metric" in page and "toolsmith" in page


def test_a_bad_template_is_named_next_to_its_field_and_the_form_keeps_what_was_typed(
        client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    typed = "ftp://example.com/{city}"
    answer = post(admin, PAGE, weather_form(upstream, name, urlTemplate=typed, description="kept as typed"), page=f"{PAGE}/new")
    assert answer.status_code == 200
    assert "Some fields need a change." in answer.text
    assert "URL template: must start with a literal http:// or https://" in error_of(answer.text, "urlTemplate")
    assert value_of(answer.text, "urlTemplate") == typed
    assert ">kept as typed</textarea>" in answer.text and value_of(answer.text, "param-a1-name") == "city"
    assert client.get(f"{TOOLS}/{name}").status_code == 404


def test_each_refusal_names_its_own_field(admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    answer = post(admin, PAGE, weather_form(
        upstream, name, urlTemplate=upstream.url + "/v1/weather/{city}", param_b2_default="", fixedBody="{not json",
        maxRedirects="many", auth_type="basic", auth_basic_username="a:b", auth_basic_secret="missing",
    ), page=f"{PAGE}/new").text
    # what could not be read as typed is named before any rule is checked
    assert "Fixed body: is not JSON" in error_of(answer, "fixedBody")
    assert "Redirects followed: must be a whole number" in error_of(answer, "maxRedirects")
    answer = post(admin, PAGE, weather_form(
        upstream, name, urlTemplate=upstream.url + "/v1/weather/{city}", auth_type="basic", auth_basic_username="a:b",
        auth_basic_secret="missing",
    ), page=f"{PAGE}/new").text
    assert "Parameter 2, name: the query parameter 'units' is missing from urlTemplate" in error_of(answer, "param-b2-name")
    assert "User name: must be a user name without ':'" in error_of(answer, "auth-basic-username")
    # the summary links each message to its field
    assert 'href="#param-b2-name"' in answer and 'href="#auth-basic-username"' in answer
    taken = post(admin, PAGE, weather_form(upstream, "bad name!"), page=f"{PAGE}/new").text
    assert error_of(taken, "id").startswith("Name: ")


def test_an_edit_is_saved_and_a_stale_form_is_refused(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    assert post(admin, PAGE, weather_form(upstream, name), page=f"{PAGE}/new").status_code == 303
    version = expect(client.get(f"{TOOLS}/{name}"), 200).json()["version"]
    fields = [(k, v) for k, v in weather_form(upstream, name, description="Weather, now in kelvin", version=str(version)) if k != "id"]
    saved = post(admin, f"{PAGE}/{name}", fields, page=f"{PAGE}/{name}")
    assert saved.status_code == 303 and saved.headers["location"] == f"{PAGE}/{name}"
    assert read_cookie(saved.cookies[COOKIE])["text"] == f"Saved {name}: the change is live at once."
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["description"] == "Weather, now in kelvin"
    # the same form again, read before that save: refused, and what was typed is kept
    stale = post(admin, f"{PAGE}/{name}", [(k, "typed again" if k == "description" else v) for k, v in fields], page=f"{PAGE}/{name}")
    assert stale.status_code == 200 and "Not saved: the tool changed meanwhile." in stale.text
    assert ">typed again</textarea>" in stale.text
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["description"] == "Weather, now in kelvin"


def test_disable_enable_and_delete_with_its_refusal(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    expect(client.post(TOOLS, json=weather_rest(upstream, name)), 201)
    disabled = post(admin, f"{PAGE}/{name}/enabled", {"enabled": "false"}, page=PAGE)
    assert disabled.status_code == 303
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["enabled"] is False
    assert ">Enable</button>" in admin.get(f"{PAGE}/{name}").text
    assert post(admin, f"{PAGE}/{name}/enabled", {"enabled": "true"}, page=PAGE).status_code == 303
    assert expect(client.get(f"{TOOLS}/{name}"), 200).json()["enabled"] is True
    # a plan names it: the delete is refused, and the page says why
    plan = unique_id("plan")
    expect(client.post("/api/v1/admin/plans", json={"id": plan, "description": "p", "nodes": [{"toolName": name}]}), 201)
    refused = post(admin, f"{PAGE}/{name}/delete", {}, page=PAGE)
    assert refused.status_code == 409
    assert "Not deleted:" in refused.text and plan in refused.text
    expect(client.delete(f"/api/v1/admin/plans/{plan}"), 204)
    deleted = post(admin, f"{PAGE}/{name}/delete", {}, page=PAGE)
    assert deleted.status_code == 303 and deleted.headers["location"] == PAGE
    assert client.get(f"{TOOLS}/{name}").status_code == 404
    assert read_cookie(deleted.cookies[COOKIE])["text"] == f"Deleted the API URL tool {name}."


def test_the_playground_runs_the_tool_against_the_api(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    assert post(admin, PAGE, weather_form(upstream, name), page=f"{PAGE}/new").status_code == 303
    page = admin.get(f"{PAGE}/{name}/playground").text
    # the arguments start from the parameters: each default, or an example of its type
    assert "&#34;city&#34;: &#34;&#34;" in page and "&#34;units&#34;: &#34;metric&#34;" in page
    ran = post(admin, f"{PAGE}/{name}/playground", {"arguments": '{"city": "Bern", "units": "imperial"}'}, page=PAGE)
    assert ran.status_code == 200
    text = words(ran.text)
    assert "Succeeded: status 200" in text
    assert f"GET {upstream.url}/v1/weather/Bern?units=imperial&lang=en" in text
    assert "<th scope=\"row\"><code>X-Client</code></th><td><code>toolsmith</code></td>" in ran.text
    assert re.search(r"\b94 bytes read, in [0-9.]+ ms", text)
    assert '"city": "Bern"' in text and '"temp": 21.5' in text
    seen = upstream.last("/v1/weather/")
    assert seen.path == "/v1/weather/Bern?units=imperial&lang=en"
    # arguments that break a rule are refused before anything is sent
    count = len(upstream.seen)
    refused = html.unescape(post(admin, f"{PAGE}/{name}/playground", {"arguments": '{"units": "x"}'}, page=PAGE).text)
    assert "city" in refused and 'aria-invalid="true"' in refused and len(upstream.seen) == count
    assert "The arguments are not JSON" in post(admin, f"{PAGE}/{name}/playground", {"arguments": "{oops"}, page=PAGE).text
    # an error answer is shown as an error, with its status
    expect(client.put(f"{TOOLS}/{name}", json={**weather_rest(upstream, name), "urlTemplate": upstream.url + "/status/{city}"}), 200)
    failed = words(post(admin, f"{PAGE}/{name}/playground", {"arguments": '{"city": "503"}'}, page=PAGE).text)
    assert "Error: status 503" in failed and '"error": "nope"' in failed


def test_the_playground_never_shows_a_secret(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    value = "s3cr3t-value-never-shown"
    expect(client.post("/api/v1/admin/secrets", json={"id": "echo-key", "value": value, "description": "for the echo"}), 201)
    name = unique_id("echo")
    expect(client.post(TOOLS, json={"id": name, "description": "echoes", "urlTemplate": upstream.url + "/echo", "headers": {"X-Key": {"secret": "echo-key"}},
                                    "auth": {"type": "bearer", "secret": "echo-key"}}), 201)
    editor = admin.get(f"{PAGE}/{name}").text
    assert value not in editor and value_of(editor, "auth-bearer-secret") == "echo-key"
    ran = post(admin, f"{PAGE}/{name}/playground", {"arguments": "{}"}, page=PAGE).text
    assert "Succeeded: status 200" in words(ran)
    assert upstream.last("/echo").headers["x-key"] == value  # it was sent
    assert value not in ran and "[secret]" in ran  # and never shown


def test_the_history_lists_each_change_with_who_and_when(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    expect(client.post(TOOLS, json=weather_rest(upstream, name)), 201)
    assert post(admin, f"{PAGE}/{name}/enabled", {"enabled": "false"}, page=PAGE).status_code == 303
    page = admin.get(f"{PAGE}/{name}/history")
    assert page.status_code == 200
    rows = re.findall(r"<tr>(.*?)</tr>", page.text, re.S)[1:]
    assert [re.search(r'<th scope="row">(\w+)</th>', r).group(1) for r in rows] == ["Changed", "Created"]
    assert all("<td>admin</td>" in r and "<time datetime=" in r for r in rows)
    assert f'href="/console/api-tools/{name}/history"' in admin.get(f"{PAGE}/{name}").text
    assert admin.get(f"{PAGE}/no-such-tool/history").status_code == 404


def test_an_auditor_reads_every_page_and_changes_nothing(client: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    expect(client.post(TOOLS, json=weather_rest(upstream, name)), 201)
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "an auditor", "role": "auditor"}), 201).json()
    auditor = console(client, issued["token"])
    for url in (PAGE, f"{PAGE}/{name}", f"{PAGE}/{name}/playground", f"{PAGE}/{name}/history"):
        page = auditor.get(url)
        assert page.status_code == 200, url
        assert page.text.count('method="post"') == 1, url  # signing out only
        assert "New API URL tool" not in page.text and ">Delete" not in page.text and ">Run<" not in page.text, url
    assert auditor.get(f"{PAGE}/new").status_code == 403
    assert post(auditor, f"{PAGE}/{name}/delete", {}, page=PAGE).status_code == 403
    assert post(auditor, f"{PAGE}/{name}/playground", {"arguments": '{"city": "x"}'}, page=PAGE).status_code == 403
    assert client.get(f"{TOOLS}/{name}").status_code == 200


def test_a_form_without_the_csrf_token_changes_nothing(client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    name = unique_id("weather")
    answer = admin.post(PAGE, data=dict(weather_form(upstream, name)), headers={"Origin": "http://testserver"}, follow_redirects=False)
    assert answer.status_code == 403
    assert client.get(f"{TOOLS}/{name}").status_code == 404


def test_the_tool_page_docks_a_test_panel_and_the_playground_shows_the_raw_response(
        client: TestClient, admin: TestClient, upstream: Upstream) -> None:
    value = "s3cr3t-raw-never-shown"
    expect(client.post("/api/v1/admin/secrets", json={"id": "raw-key", "value": value, "description": "for the echo"}), 201)
    name = unique_id("echo")
    expect(client.post(TOOLS, json={"id": name, "description": "echoes", "urlTemplate": upstream.url + "/echo",
                                    "headers": {"X-Key": {"secret": "raw-key"}}}), 201)
    editor = admin.get(f"{PAGE}/{name}").text
    assert 'id="test-heading">Test</h2>' in editor and f'hx-post="{PAGE}/{name}/playground"' in editor
    # the panel's request is the Playground page's: its #result is what the panel swaps in
    ran = post(admin, f"{PAGE}/{name}/playground", {"arguments": "{}"}, page=PAGE).text
    assert "Request sent upstream" in ran and "Raw response" in ran and 'class="raw-response"' in ran
    assert value not in ran and "[secret]" in ran
    # the one Playground of every kind shows the same for an API URL tool, through MCP's path
    every = post(admin, "/console/playground/run", {"tool": name, "mode": "json", "raw": "{}"}, page="/console/playground").text
    assert "Succeeded" in every and "Request sent upstream" in every and f"GET {upstream.url}/echo" in html.unescape(every)
    assert "Raw response" in every and value not in every
