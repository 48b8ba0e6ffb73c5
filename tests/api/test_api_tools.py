"""API URL tools over REST (issue 16, docs/kinds/api-url-tools.md), against a local API that records what it saw.

The local API listens on 127.0.0.1, which API URL tools reach only because each test's service
allows its `host:port` in `TOOLSMITH_EGRESS_ALLOW`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN
from tests.helpers import expect as expect_status
from tests.upstream import Upstream, running

TOOLS = "/api/v1/admin/api-tools"


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    yield from running()


@pytest.fixture
def api(tmp_path: Path, upstream: Upstream, shared_sandbox: Any) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    with TestClient(create_app(wire(settings, shared_sandbox)), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        yield client


def weather(upstream: Upstream, **extra: Any) -> dict[str, Any]:
    return {
        "id": "weather",
        "description": "Current weather for a city",
        "tags": ["weather"],
        "urlTemplate": upstream.url + "/v1/weather/{city}{?units}",
        "parameters": [
            {"name": "city", "type": "string", "required": True, "location": "path", "description": "the city"},
            {"name": "units", "type": "string", "location": "query", "default": "metric"},
        ],
        **extra,
    }


def expect(response: Any, status: int) -> Any:
    """The JSON of a call that must answer `status`."""
    return expect_status(response, status).json()


def call(api: TestClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return expect(api.post(f"/api/v1/tools/{name}/call", json=arguments), 200)


def problem_fields(response: Any) -> list[str]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return [e["field"] for e in response.json().get("errors", [])]


# -- what works ------------------------------------------------------------------------------------


def test_a_weather_style_get_with_path_and_query_parameters(api: TestClient, upstream: Upstream) -> None:
    created = expect(api.post(TOOLS, json=weather(upstream)), 201)
    assert created["callType"] == "API_URL" and created["response"]["maxBytes"] == 1_048_576

    result = call(api, "weather", {"city": "Zürich", "units": "imperial"})

    assert result["error"] is None
    assert result["output"]["city"] == "Z%C3%BCrich" and result["output"]["units"] == "imperial"
    seen = upstream.last("/v1/weather/")
    assert seen.method == "GET" and seen.path == "/v1/weather/Z%C3%BCrich?units=imperial"
    # the catalog lists it with its kind and the schema of its parameters
    tools = expect(api.get("/api/v1/admin/tools"), 200)
    listed = next(t for t in tools if t["name"] == "weather")
    assert listed["callType"] == "API_URL"
    assert listed["inputSchema"]["required"] == ["city"]
    assert set(listed["inputSchema"]["properties"]) == {"city", "units"}


def test_a_post_with_a_nested_body_fixed_values_and_headers(api: TestClient, upstream: Upstream) -> None:
    tool = {
        "id": "search",
        "description": "Search orders",
        "method": "POST",
        "urlTemplate": upstream.url + "/echo",
        "parameters": [
            {"name": "status", "type": "string", "location": "body", "bodyPath": "filters.status", "required": True},
            {"name": "limit", "type": "integer", "location": "body", "bodyPath": "page.size"},
            {"name": "trace", "type": "string", "location": "header", "header": "X-Trace-Id"},
        ],
        "fixedBody": {"filters": {"tenant": "acme"}, "version": 2},
        "fixedQuery": {"api-version": "2024-01"},
        "headers": {"X-Client": "toolsmith"},
    }
    expect(api.post(TOOLS, json=tool), 201)

    result = call(api, "search", {"status": 'open", "admin": true', "limit": 5, "trace": "t-1"})

    seen = upstream.last("/echo")
    assert seen.method == "POST" and seen.path == "/echo?api-version=2024-01"
    # the value is a JSON string inside the object, never text spliced into the body
    assert seen.json == {"filters": {"tenant": "acme", "status": 'open", "admin": true'}, "version": 2, "page": {"size": 5}}
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["x-trace-id"] == "t-1" and seen.headers["x-client"] == "toolsmith"
    assert result["output"]["method"] == "POST"


def test_a_path_value_stays_one_segment_and_never_reaches_another_endpoint(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json=weather(upstream)), 201)
    for value in ("a/b", "%2e%2e", "?x=", "..%2F..%2Fadmin", "#frag", "a b", ".hidden", "...", "%00"):
        call(api, "weather", {"city": value})
    paths = [p for p in upstream.paths()]
    assert paths == [
        "/v1/weather/a%2Fb?units=metric",
        "/v1/weather/%252e%252e?units=metric",
        "/v1/weather/%3Fx%3D?units=metric",
        "/v1/weather/..%252F..%252Fadmin?units=metric",
        "/v1/weather/%23frag?units=metric",
        "/v1/weather/a%20b?units=metric",
        "/v1/weather/.hidden?units=metric",
        "/v1/weather/...?units=metric",
        "/v1/weather/%2500?units=metric",
    ]
    # `.` and `..` would be resolved away by any URL parser: refused before anything is sent
    for value in ("..", ".", ""):
        refused = api.post("/api/v1/tools/weather/call", json={"city": value})
        assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "input.city", refused.text
    assert len(upstream.seen) == len(paths)


def test_a_header_value_with_a_line_break_is_refused_before_any_connection(api: TestClient, upstream: Upstream) -> None:
    tool = {"id": "tracer", "description": "traces", "urlTemplate": upstream.url + "/echo",
            "parameters": [{"name": "trace", "type": "string", "location": "header", "header": "X-Trace"}]}
    expect(api.post(TOOLS, json=tool), 201)
    for value in ("a\r\nX-Admin: 1", "a\nb", "a\rb"):
        refused = api.post("/api/v1/tools/tracer/call", json={"trace": value})
        assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "input.trace"
    assert upstream.seen == []


def test_a_non_2xx_answer_is_an_error_result_naming_the_status(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json={"id": "broken", "description": "fails", "urlTemplate": upstream.url + "/status/503"}), 201)
    result = call(api, "broken", {})
    assert result["output"] is None
    assert result["error"]["type"] == "http"
    assert result["error"]["message"].startswith("the API answered 503: ")
    assert len(result["error"]["message"]) < 700  # the start of the body, not all of it


def test_jmespath_extraction_and_the_output_marker(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json=weather(upstream, response={"jmespath": "current.temp"})), 201)
    assert call(api, "weather", {"city": "Oslo"})["output"] == 21.5

    expect(api.post(TOOLS, json={"id": "longtext", "description": "long", "urlTemplate": upstream.url + "/text",
                                 "response": {"maxOutputChars": 1_000}}), 201)
    output = call(api, "longtext", {})["output"]
    assert output.startswith("plain plain")
    assert output.endswith("[output cut: 1000 of 60000 characters shown (maxOutputChars)]")
    assert len(output) < 1_100


def test_post_processing_by_a_published_code_module(api: TestClient, upstream: Upstream) -> None:
    module = {"id": "summarise", "description": "post-processes a weather answer",
              "draftContent": "exports.run = (r) => `${r.body.city}: ${r.body.current.temp} (HTTP ${r.status})`;",
              "tool": {"inputParameters": []}}
    expect(api.post("/api/v1/admin/code-modules", json=module), 201)
    # not published yet: refused when the tool is saved
    refused = api.post(TOOLS, json=weather(upstream, response={"module": "summarise"}))
    assert problem_fields(refused) == ["response.module"]
    expect(api.post("/api/v1/admin/code-modules/summarise/publish"), 200)
    expect(api.post(TOOLS, json=weather(upstream, response={"module": "summarise"})), 201)

    assert call(api, "weather", {"city": "Bern"})["output"] == "Bern: 21.5 (HTTP 200)"


def test_the_playground_shows_the_request_status_bytes_and_time(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json=weather(upstream, enabled=False)), 201)
    tested = expect(api.post(f"{TOOLS}/weather/test", json={"arguments": {"city": "Rome"}}), 200)
    assert tested["request"]["method"] == "GET"
    assert tested["request"]["url"] == upstream.url + "/v1/weather/Rome?units=metric"
    assert tested["status"] == 200 and tested["bytes"] > 50 and tested["durationMillis"] > 0
    assert tested["output"]["city"] == "Rome" and tested["error"] is None
    # disabled: the Playground runs it, a call does not
    refused = api.post("/api/v1/tools/weather/call", json={"city": "Rome"})
    assert refused.status_code == 404 and "disabled" in refused.json()["detail"]


def test_every_change_is_live_and_in_the_history(api: TestClient, upstream: Upstream) -> None:
    created = expect_status(api.post(TOOLS, json=weather(upstream)), 201)
    first = created.json()["updatedAt"]
    expect(api.put(f"{TOOLS}/weather", json=weather(upstream, urlTemplate=upstream.url + "/echo/{city}{?units}"),
                   headers={"If-Match": created.headers["ETag"]}), 200)
    assert call(api, "weather", {"city": "Lima"})["output"]["path"] == "/echo/Lima?units=metric"
    stale = api.put(f"{TOOLS}/weather", json=weather(upstream), headers={"If-Match": created.headers["ETag"]})
    assert stale.status_code == 412

    events = expect(api.get(f"{TOOLS}/weather/history"), 200)["events"]
    assert [e["type"] for e in events] == ["Created", "Changed"]
    assert events[1]["data"]["config"]["urlTemplate"].endswith("/echo/{city}{?units}")
    assert events[1]["previousHash"] == events[0]["hash"]
    as_of = expect(api.get(f"{TOOLS}/weather", params={"asOf": first}), 200)
    assert as_of["urlTemplate"].endswith("/v1/weather/{city}{?units}")

    assert api.delete(f"{TOOLS}/weather").status_code == 204
    assert api.get(f"{TOOLS}/weather").status_code == 404
    assert api.post("/api/v1/tools/weather/call", json={"city": "Lima"}).status_code == 404
    assert [e["type"] for e in expect(api.get(f"{TOOLS}/weather/history"), 200)["events"]] == ["Created", "Changed", "Deleted"]


def test_names_are_unique_across_kinds(api: TestClient, upstream: Upstream) -> None:
    expect(api.post("/api/v1/admin/code-modules", json={"id": "weather", "description": "w", "draftContent": "exports.run = () => 1;"}), 201)
    taken = api.post(TOOLS, json=weather(upstream))
    assert taken.status_code == 409 and "module" in taken.json()["detail"]
    expect(api.post(TOOLS, json=weather(upstream, id="forecast")), 201)
    again = api.post("/api/v1/admin/code-modules", json={"id": "forecast", "description": "f", "draftContent": "exports.run = () => 1;"})
    assert again.status_code == 409 and "API URL tool" in again.json()["detail"]


def test_egress_refuses_an_address_that_is_not_allowed(api: TestClient, upstream: Upstream) -> None:
    for name, url in (("intranet", "http://10.0.0.1/x"), ("metadata", "http://169.254.169.254/latest/{path}"),
                      ("plainhttp", "http://example.com/{path}")):
        params = [{"name": "path", "location": "path"}] if "{path}" in url else []
        expect(api.post(TOOLS, json={"id": name, "description": name, "urlTemplate": url, "parameters": params}), 201)
        result = call(api, name, {"path": "x"} if params else {})
        assert result["error"]["type"] == "egress", result
    assert upstream.seen == []


# -- bad input: a 400 naming the field, nothing saved ---------------------------------------------

BAD: list[tuple[str, dict[str, Any], str]] = [
    ("another host in a parameter", {"urlTemplate": "https://{host}/v1"}, "urlTemplate"),
    ("a port in a parameter", {"urlTemplate": "https://api.example.com:{port}/v1"}, "urlTemplate"),
    ("{+x}", {"urlTemplate": "https://api.example.com/{+x}", "parameters": [{"name": "x", "location": "path"}]}, "urlTemplate"),
    ("{#x}", {"urlTemplate": "https://api.example.com/a{#x}", "parameters": [{"name": "x", "location": "path"}]}, "urlTemplate"),
    ("{/x*}", {"urlTemplate": "https://api.example.com/a{/x*}", "parameters": [{"name": "x", "location": "path"}]}, "urlTemplate"),
    ("userinfo", {"urlTemplate": "https://user:pw@api.example.com/v1"}, "urlTemplate"),
    ("a non-http scheme", {"urlTemplate": "file:///etc/passwd"}, "urlTemplate"),
    ("gopher", {"urlTemplate": "gopher://api.example.com/x"}, "urlTemplate"),
    ("an unknown secret", {"urlTemplate": "https://api.example.com/v1", "auth": {"type": "bearer", "secret": "nope"}}, "auth.secret"),
    ("an unknown secret in a header", {"urlTemplate": "https://api.example.com/v1", "headers": {"X-Key": {"secret": "nope"}}}, "headers.X-Key"),
    ("a parameter named twice", {"urlTemplate": "https://api.example.com/{a}",
                                 "parameters": [{"name": "a", "location": "path"}, {"name": "a", "location": "path"}]}, "parameters[1].name"),
    ("a parameter missing from the template", {"urlTemplate": "https://api.example.com/v1",
                                               "parameters": [{"name": "a", "location": "path"}]}, "parameters[0].name"),
    ("a template variable that is not a parameter", {"urlTemplate": "https://api.example.com/{a}"}, "urlTemplate"),
    ("a header the model may not set", {"urlTemplate": "https://api.example.com/v1",
                                        "parameters": [{"name": "h", "location": "header", "header": "Authorization"}]}, "parameters[0].header"),
    ("X-Forwarded-For from the model", {"urlTemplate": "https://api.example.com/v1",
                                        "parameters": [{"name": "h", "location": "header", "header": "X-Forwarded-For"}]}, "parameters[0].header"),
    ("a header the operator sets", {"urlTemplate": "https://api.example.com/v1", "headers": {"X-Tenant": "a"},
                                    "parameters": [{"name": "h", "location": "header", "header": "x-tenant"}]}, "parameters[0].header"),
    ("a JMESPath that does not compile", {"urlTemplate": "https://api.example.com/v1", "response": {"jmespath": "foo[?"}}, "response.jmespath"),
    ("a post-processing module that does not exist", {"urlTemplate": "https://api.example.com/v1", "response": {"module": "nothere"}}, "response.module"),
    ("maxBytes out of range", {"urlTemplate": "https://api.example.com/v1", "response": {"maxBytes": 6 * 1_048_576}}, "response.maxBytes"),
    ("timeout out of range", {"urlTemplate": "https://api.example.com/v1", "timeoutMillis": 120_001}, "timeoutMillis"),
    ("too many redirects", {"urlTemplate": "https://api.example.com/v1", "maxRedirects": 4}, "maxRedirects"),
    ("maxOutputChars out of range", {"urlTemplate": "https://api.example.com/v1", "response": {"maxOutputChars": 0}}, "response.maxOutputChars"),
    ("a body path over a fixed value", {"urlTemplate": "https://api.example.com/v1", "method": "POST", "fixedBody": {"a": {"b": 1}},
                                        "parameters": [{"name": "x", "location": "body", "bodyPath": "a.b"}]}, "parameters[0].bodyPath"),
    ("a body on a GET", {"urlTemplate": "https://api.example.com/v1", "parameters": [{"name": "x", "location": "body"}]}, "parameters[0].location"),
    ("a query variable in a path expression", {"urlTemplate": "https://api.example.com/v1?a={a}",
                                               "parameters": [{"name": "a", "location": "query"}]}, "urlTemplate"),
    ("a header value with a line break", {"urlTemplate": "https://api.example.com/v1", "headers": {"X-A": "a\r\nX-B: 1"}}, "headers.X-A"),
    ("the event store's reserved shape in fixedBody", {"urlTemplate": "https://api.example.com/v1", "method": "POST",
                                                       "fixedBody": {"a": {"_type_": "x", "_data_": 1}}}, "fixedBody"),
    ("the event store's reserved shape in a default", {"urlTemplate": "https://api.example.com/v1", "method": "POST",
                                                       "parameters": [{"name": "o", "type": "object", "location": "body",
                                                                       "default": {"_type_": "x", "_data_": 1}}]}, "parameters[0].default"),
    ("an object in the path", {"urlTemplate": "https://api.example.com/{a}", "parameters": [{"name": "a", "location": "path", "type": "object"}]},
     "parameters[0].type"),
]


@pytest.mark.parametrize(("case", "tool", "field"), BAD, ids=[case for case, _, _ in BAD])
def test_bad_configurations_are_refused_naming_the_field(api: TestClient, case: str, tool: dict[str, Any], field: str) -> None:
    refused = api.post(TOOLS, json={"id": "bad", "description": "a bad tool", **tool})
    assert field in problem_fields(refused), refused.text
    assert api.get(f"{TOOLS}/bad").status_code == 404
    assert api.get(TOOLS).json() == []


def test_unknown_fields_and_bad_types_are_refused_by_the_schema(api: TestClient) -> None:
    refused = api.post(TOOLS, json={"id": "x", "urlTemplate": "https://api.example.com/v1", "bogus": 1})
    assert refused.status_code == 400 and "bogus" in refused.text
    refused = api.post(TOOLS, json={"id": "x", "urlTemplate": "https://api.example.com/v1", "method": "TRACE"})
    assert refused.status_code == 400 and "method" in refused.text


# -- caps, permissions and the audit ---------------------------------------------------------------


def test_a_50_mb_answer_stops_at_the_byte_cap_with_a_clear_error(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json={"id": "huge", "description": "50 MB", "urlTemplate": upstream.url + "/big",
                                 "response": {"maxBytes": 1_048_576}}), 201)
    result = call(api, "huge", {})
    assert result["output"] is None
    assert result["error"] == {"type": "response", "message": "response body larger than 1048576 bytes"}
    assert upstream.big_bytes_written < 50 * 1_048_576  # reading stopped: the rest was never sent


def test_a_slow_server_stops_at_the_timeout(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json={"id": "sluggish", "description": "slow", "urlTemplate": upstream.url + "/slow?seconds=3",
                                 "timeoutMillis": 500}), 201)
    result = call(api, "sluggish", {})
    assert result["error"]["type"] == "timeout"
    assert result["durationMillis"] < 2_000


def test_a_caller_reaches_an_api_tool_by_its_tag_or_name_only(api: TestClient, upstream: Upstream) -> None:
    expect(api.post(TOOLS, json=weather(upstream)), 201)
    expect(api.post(TOOLS, json={**weather(upstream), "id": "other", "tags": ["misc"]}), 201)
    for name, tools, tags in (("bytag", [], ["weather"]), ("byname", ["other"], []), ("bykind", [], ["api"])):
        expect(api.post("/api/v1/admin/usage-profiles", json={"id": name, "allowedTools": tools, "allowedTags": tags}), 201)
    tokens = {name: expect(api.post("/api/v1/admin/tokens", json={"name": name, "role": "caller", "usageProfile": name}), 201)["token"]
              for name in ("bytag", "byname", "bykind")}

    def status(token: str, tool: str) -> int:
        return api.post(f"/api/v1/tools/{tool}/call", json={"city": "Oslo"}, headers={"Authorization": f"Bearer {token}"}).status_code

    assert (status(tokens["bytag"], "weather"), status(tokens["bytag"], "other")) == (200, 404)
    assert (status(tokens["byname"], "weather"), status(tokens["byname"], "other")) == (404, 200)
    # every API URL tool carries its kind's tag, `api`
    assert (status(tokens["bykind"], "weather"), status(tokens["bykind"], "other")) == (200, 200)


def test_its_events_are_in_the_export_and_their_chain_verifies(tmp_path: Path, upstream: Upstream, shared_sandbox: Any) -> None:
    import io

    from infrastructure.audit import export, verify

    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, egress_allow=upstream.allow)
    services = wire(settings, shared_sandbox)
    with TestClient(create_app(services), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        expect(client.post(TOOLS, json=weather(upstream)), 201)
        expect(client.put(f"{TOOLS}/weather", json=weather(upstream, description="changed")), 200)
        out = io.BytesIO()
        export(services.store, out, tenant="default", kinds=services.toolbox.kinds)
        lines = out.getvalue().decode().splitlines()
        api_events = [line for line in lines if "ApiTool." in line]
        assert len(api_events) == 2 and all('"tenant":"default"' in line.replace(" ", "") for line in api_events)
        report = verify(services.store)
        assert report.intact and report.events >= 2


HOSTILE_ANSWERS = [
    ("/deep?n=15000", "response", None),  # nested deeper than Python's stack: text, then cut
    ("/deep?n=150", "response", "nested more than 100 levels"),
    ("/gzip-bomb", "response", "larger than 1048576 bytes"),
]


def test_hostile_answers_get_an_error_result_and_the_service_keeps_serving(api: TestClient, upstream: Upstream) -> None:
    for i, (path, _, _) in enumerate(HOSTILE_ANSWERS):
        expect(api.post(TOOLS, json={"id": f"hostile{i}", "description": path, "urlTemplate": upstream.url + path}), 201)
    deep = call(api, "hostile0", {})
    # not JSON Python can read: its text, cut at maxOutputChars with the marker
    assert deep["error"] is None and deep["output"].startswith("[[[[") and "(maxOutputChars)]" in deep["output"]
    assert "nested more than 100 levels" in call(api, "hostile1", {})["error"]["message"]
    assert call(api, "hostile2", {})["error"] == {"type": "response", "message": "response body larger than 1048576 bytes"}
    # bytes that are not UTF-8, a charset nobody knows: replaced, not a failure
    for i, path in enumerate(("/invalid-utf8", "/unknown-charset")):
        expect(api.post(TOOLS, json={"id": f"odd{i}", "description": path, "urlTemplate": upstream.url + path}), 201)
    assert call(api, "odd0", {})["output"] == {"text": "\ufffd\ufffd\ufffd("}
    assert call(api, "odd1", {})["output"].startswith("caf")
    expect(api.post(TOOLS, json=weather(upstream)), 201)
    assert call(api, "weather", {"city": "Oslo"})["output"]["city"] == "Oslo"
