"""Seed 004 against a running `toolsmith serve`: its curl calls, its verification, dates and report."""

from __future__ import annotations

import json

import httpx

from tests.e2e.conftest import Server, printed_tokens
from tests.helpers import expect

BASE = "/api/v1/admin/code-modules"


def test_seed_curl_calls_create_and_publish_count_lines(server: Server) -> None:
    with server.client() as http:
        # curl -X POST …/code-modules -d '{…countLines…}'
        created = http.post(
            BASE,
            json={
                "id": "countLines",
                "description": "Counts the lines of a text",
                "draftContent": 'exports.run = function (input) { return input.text.split("\\n").length; };',
                "tool": {
                    "inputParameters": [{"name": "text", "description": "The text to count", "required": True}],
                    "timeoutMillis": 3000,
                    "exposeInChat": True,
                    "tags": ["text"],
                },
            },
        )
        assert created.status_code == 201, created.text
        assert created.json()["state"] == "UNPUBLISHED"
        # curl -X POST …/code-modules/countLines/publish
        published = http.post(f"{BASE}/countLines/publish")
        assert published.status_code == 200, published.text
        assert published.json()["state"] == "PUBLISHED" and published.json()["published"]["version"] == 1
        called = http.post("/api/v1/tools/countLines/call", json={"text": "one\ntwo\nthree"})
        assert called.json()["output"] == 3


def test_seed_verification_steps(server: Server) -> None:
    with server.client() as http:
        # 1. create echo and publish it
        source = "exports.run = function (input) { return input; };"
        assert http.post(BASE, json={"id": "echo", "description": "Echoes its input", "draftContent": source}).status_code == 201
        assert http.post(f"{BASE}/echo/publish").status_code == 200
        # 2. Test with {"hello": "world"}: the result is the same object
        tested = http.post(f"{BASE}/test", json={"id": "echo", "draftContent": source, "input": {"hello": "world"}}).json()
        assert tested["output"] == {"hello": "world"} and tested["error"] is None
        # 3. make it a tool callable in chat, save, publish: it is offered and runs as a tool
        saved = http.put(f"{BASE}/echo", json={"tool": {"exposeInChat": True}})
        assert saved.json()["state"] == "DRAFT"
        assert http.post("/api/v1/tools/echo/call", json={"hello": "world"}).status_code == 404  # not published as a tool yet
        assert http.post(f"{BASE}/echo/publish").json()["published"]["tool"]["exposeInChat"] is True
        assert http.post("/api/v1/tools/echo/call", json={}).json()["output"] == {}
        # a tool that declares no parameters takes none (its inputSchema is closed): an argument it
        # never declared is refused, naming it
        refused = http.post("/api/v1/tools/echo/call", json={"hello": "world"})
        assert refused.status_code == 400 and "input.hello" in refused.text, refused.text


def _module(http: httpx.Client, module_id: str, source: str, imports: list[str] = (), tool: bool = False) -> None:
    body = {"id": module_id, "description": module_id, "draftContent": source, "draftImports": list(imports)}
    if tool:
        body["tool"] = {"inputParameters": [{"name": "day", "required": True}]}
    assert http.post(BASE, json=body).status_code == 201
    assert http.post(f"{BASE}/{module_id}/publish").status_code == 200


def test_dates_and_report(server: Server) -> None:
    with server.client() as http:
        _module(http, "dates", "exports.year = function (d) { return d.slice(0, 4); };\nexports.prefix = 'Report ';")
        _module(
            http,
            "report",
            "exports.prefix = dates.prefix;\nexports.run = function (input) {\n  return 'Report ' + dates.year(input.day);\n};",
            ["dates"],
            tool=True,
        )
        assert http.post("/api/v1/tools/report/call", json={"day": "2024-05-06"}).json()["output"] == "Report 2024"

        # a draft of dates is not seen by report
        expect(http.put(f"{BASE}/dates", json={"draftContent": "exports.year = function (d) { return 'draft'; };\nexports.prefix = 'Report ';"}), 200)
        assert http.post("/api/v1/tools/report/call", json={"day": "2024-05-06"}).json()["output"] == "Report 2024"

        # a dates draft that drops `year` is refused at publish, naming report
        expect(http.put(f"{BASE}/dates", json={"draftContent": "exports.month = function (d) { return d.slice(5, 7); };\nexports.prefix = 'Report ';"}), 200)
        refused = http.post(f"{BASE}/dates/publish")
        assert refused.status_code == 422, refused.text
        problem = refused.json()
        assert problem["failingModule"] == "report" and "dates.year" in problem["error"]["message"]
        assert refused.headers["content-type"].startswith("application/problem+json")
        # report keeps running against dates version 1
        dates = http.get(f"{BASE}/dates").json()
        assert dates["state"] == "DRAFT" and dates["published"]["version"] == 1
        assert http.post("/api/v1/tools/report/call", json={"day": "2024-05-06"}).json()["output"] == "Report 2024"


def test_a_module_importing_report_is_checked_too(server: Server) -> None:
    with server.client() as http:
        _module(http, "dates", "exports.year = function (d) { return d.slice(0, 4); };\nexports.prefix = 'Report ';")
        _module(http, "report", "exports.prefix = dates.prefix;\nexports.run = function (i) { return dates.year(i.day); };", ["dates"])
        # summary uses report's prefix when it loads: it breaks if dates' prefix stops being a string
        _module(http, "summary", "var label = report.prefix.trim();\nexports.run = function () { return label; };", ["report"], tool=False)
        expect(http.put(f"{BASE}/dates", json={"draftContent": "exports.year = function (d) { return d.slice(0, 4); };\nexports.prefix = null;"}), 200)
        refused = http.post(f"{BASE}/dates/publish")
        assert refused.status_code == 422, refused.text
        assert refused.json()["failingModule"] == "summary" and refused.json()["error"]["type"] == "runtime"
        # a compatible change publishes, and every importer was checked against it
        expect(http.put(f"{BASE}/dates", json={"draftContent": "exports.year = function (d) { return d.slice(0, 4); };\nexports.prefix = ' Yearly ';"}), 200)
        assert http.post(f"{BASE}/dates/publish").json()["published"]["version"] == 2


def test_restart_keeps_modules_states_list_and_facets(server: Server) -> None:
    with server.client() as http:
        _module(http, "dates", "exports.year = function (d) { return d.slice(0, 4); };")
        _module(http, "report", "exports.run = function (i) { return dates.year(i.day); };", ["dates"], tool=True)
        expect(http.post(BASE, json={"id": "draftOnly", "description": "never published", "draftContent": "exports.x = 1;"}), 201)
        expect(http.put(f"{BASE}/dates", json={"description": "pending change"}), 200)
        before = {
            "list": http.get(BASE).json(),
            "modules": {m: http.get(f"{BASE}/{m}").json() for m in ("dates", "report", "draftOnly")},
        }
    token = server.token
    first_start_output = server.output
    server.stop()
    server.start()
    with server.client(token) as http:
        after = {
            "list": http.get(BASE).json(),
            "modules": {m: http.get(f"{BASE}/{m}").json() for m in ("dates", "report", "draftOnly")},
        }
        assert http.post("/api/v1/tools/report/call", json={"day": "1999-12-31"}).json()["output"] == "1999"
    assert json.dumps(after, sort_keys=True) == json.dumps(before, sort_keys=True)
    assert after["list"]["facets"]["state"] == {"PUBLISHED": 1, "DRAFT": 1, "UNPUBLISHED": 1}
    # the admin token was printed on the first start only, and still works after the restart
    assert set(printed_tokens(first_start_output)) == {token}
    assert printed_tokens(server.output[len(first_start_output) :]) == []


def test_log_reaches_the_call_trace_and_the_service_log(server: Server) -> None:
    # docs/kinds/code-modules.md "Write the source" example logs before it counts
    source = (
        "exports.run = function (input) {\n"
        "  log('counting the lines of ' + input.text.length + ' characters');\n"
        "  return input.text.split('\\n').length + ' lines';\n"
        "};"
    )
    with server.client() as http:
        tool = {"inputParameters": [{"name": "text", "description": "The text to count", "required": True}]}
        expect(http.post(BASE, json={"id": "countLines", "description": "Counts lines", "draftContent": source, "tool": tool}), 201)
        expect(http.post(f"{BASE}/countLines/publish"), 200)
        result = http.post("/api/v1/tools/countLines/call", json={"text": "a\nb"}).json()
    assert result["output"] == "2 lines" and result["logs"] == ["counting the lines of 3 characters"]
    logged = [json.loads(line) for line in server.output.splitlines() if line.startswith("{")]
    assert any(e.get("codeModule") == "countLines" and e.get("logLine") == "counting the lines of 3 characters" and e["level"] == "info" for e in logged)
    assert server.token not in server.output.split("Data in", 1)[1]  # no token in any log line
