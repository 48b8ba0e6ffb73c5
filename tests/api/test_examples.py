"""Examples as contracts (docs/rules.md B4, issue 18): a tool module's examples are part of its
definition, `POST /test` runs and reports each, and a publish runs them for the module and for
every module importing it, with the new version in place, refusing (422) a change that keeps the
exports but changes an answer."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.helpers import expect

BASE = "/api/v1/admin/code-modules"
YEAR = "exports.year = function (d) { return Number(d.slice(0, 4)); };"
REPORT = "exports.run = function (i) { if (!i.day) throw new Error('no day'); return 'Report ' + dates.year(i.day); };"
PARAMS = [{"name": "day", "type": "string", "required": True}]


def report_tool(*examples: dict[str, Any]) -> dict[str, Any]:
    return {"inputParameters": PARAMS, "examples": list(examples)}


def seed(client: TestClient) -> None:
    expect(client.post(BASE, json={"id": "dates", "description": "dates", "draftContent": YEAR}), 201)
    expect(client.post(f"{BASE}/dates/publish"), 200)
    tool = report_tool({"name": "leap", "input": {"day": "2024-02-29"}, "output": "Report 2024"},
                       {"name": "missing", "input": {"day": ""}, "error": "runtime"})
    expect(client.post(BASE, json={"id": "report", "description": "report", "draftContent": REPORT, "draftImports": ["dates"],
                                   "tool": tool}), 201)
    expect(client.post(f"{BASE}/report/publish"), 200)


def test_examples_are_part_of_the_definition(client: TestClient) -> None:
    seed(client)
    module = expect(client.get(f"{BASE}/report"), 200).json()
    assert [e["name"] for e in module["published"]["tool"]["examples"]] == ["leap", "missing"]
    assert module["published"]["tool"]["examples"][1] == {"name": "missing", "input": {"day": ""}, "error": "runtime"}
    # A tool stored without examples, sent again as it is, records nothing new.
    expect(client.post(BASE, json={"id": "plain", "description": "p", "draftContent": "exports.run = () => 1;", "tool": {}}), 201)
    before = len(expect(client.get(f"{BASE}/plain/history"), 200).json()["events"])
    expect(client.put(f"{BASE}/plain", json={"tool": {}}), 200)
    assert len(expect(client.get(f"{BASE}/plain/history"), 200).json()["events"]) == before


def test_a_library_change_that_keeps_its_exports_but_changes_a_result_is_refused_naming_the_example(client: TestClient) -> None:
    seed(client)
    # Same export, another answer: the importer still loads, but its example now fails.
    expect(client.put(f"{BASE}/dates", json={"draftContent": "exports.year = function (d) { return Number(d.slice(0, 4)) + 1; };"}), 200)
    refused = client.post(f"{BASE}/dates/publish")
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["failingModule"] == "report" and problem["error"]["type"] == "example"
    message = problem["error"]["message"]
    assert "'leap'" in message and '"Report 2024"' in message and '"Report 2025"' in message
    # The dry run reports the same, and nothing was published.
    preview = expect(client.post(f"{BASE}/dates/publish", params={"dryRun": "true"}), 200).json()
    assert "example" in str(preview) and "leap" in str(preview)
    assert expect(client.get(f"{BASE}/dates"), 200).json()["published"]["version"] == 1

    # A change that keeps every example's answer is accepted.
    expect(client.put(f"{BASE}/dates", json={"draftContent": "exports.year = function (d) { return parseInt(d.substring(0, 4), 10); };"}), 200)
    assert expect(client.post(f"{BASE}/dates/publish"), 200).json()["published"]["version"] == 2


def test_a_modules_own_failing_example_refuses_its_publish(client: TestClient) -> None:
    tool = {"inputParameters": [{"name": "n", "type": "integer", "required": True}],
            "examples": [{"name": "double", "input": {"n": 2}, "output": 4}, {"name": "wrong", "input": {"n": 3}, "output": 7}]}
    expect(client.post(BASE, json={"id": "twice", "description": "t", "draftContent": "exports.run = (i) => i.n * 2;", "tool": tool}), 201)
    refused = client.post(f"{BASE}/twice/publish")
    assert refused.status_code == 422
    assert refused.json()["failingModule"] == "twice" and "'wrong'" in refused.json()["error"]["message"]
    assert "expected 7, got 6" in refused.json()["error"]["message"]


def test_post_test_runs_and_reports_each_example(client: TestClient) -> None:
    seed(client)
    tool = report_tool({"name": "leap", "input": {"day": "2024-02-29"}, "output": "Report 2024"},
                       {"name": "off", "input": {"day": "1999-01-01"}, "output": "Report 2000"},
                       {"name": "boom", "input": {"day": ""}, "error": "runtime"})
    answer = expect(client.post(f"{BASE}/test", json={"draftContent": REPORT, "draftImports": ["dates"], "tool": tool,
                                                      "input": {"day": "2020-01-01"}}), 200).json()
    assert answer["output"] == "Report 2020"
    reports = {e["name"]: e for e in answer["examples"]}
    assert reports["leap"]["passed"] and reports["boom"]["passed"]
    assert reports["off"] == {"module": None, "name": "off", "passed": False, "expected": {"output": "Report 2000"},
                              "actual": {"output": "Report 1999"}}


def test_post_test_of_a_library_runs_the_examples_of_its_importers_with_the_draft_in_place(client: TestClient) -> None:
    seed(client)
    answer = expect(client.post(f"{BASE}/test", json={
        "id": "dates", "draftContent": "exports.year = function (d) { return Number(d.slice(0, 4)) + 1; };"}), 200).json()
    reports = {(e["module"], e["name"]): e for e in answer["examples"]}
    assert set(reports) == {("report", "leap"), ("report", "missing")}
    assert reports[("report", "leap")]["passed"] is False
    assert reports[("report", "leap")]["actual"] == {"output": "Report 2025"}
    assert reports[("report", "missing")]["passed"] is True


def test_bad_examples_are_refused_naming_the_example_and_field(client: TestClient) -> None:
    def refused(*examples: Any) -> list[dict[str, Any]]:
        tool = {"inputParameters": PARAMS, "examples": list(examples)}
        answer = client.post(BASE, json={"id": "bad", "description": "b", "draftContent": REPORT, "tool": tool})
        assert answer.status_code == 400, answer.text
        return answer.json()["errors"]

    fields = {e["field"] for e in refused({"name": "a", "input": {"day": 5}, "output": "x"})}
    assert fields == {"tool.examples[0].input.day"}
    assert {e["field"] for e in refused({"name": "a", "input": {"day": "x"}, "output": 1, "error": "runtime"})} == {"tool.examples[0]"}
    assert {e["field"] for e in refused({"name": "a", "input": {"day": "x"}})} == {"tool.examples[0]"}
    assert {e["field"] for e in refused({"name": "a", "input": {"day": "x"}, "error": "oops"})} == {"tool.examples[0].error"}
    assert {e["field"] for e in refused({"name": "a", "input": {"day": "x"}, "output": 1},
                                        {"name": "a", "input": {"day": "y"}, "output": 2})} == {"tool.examples[1].name"}
    assert {e["field"] for e in refused({"name": "a", "input": {"day": "x"}, "output": 1, "note": "?"})} == {"tool.examples[0].note"}
    many = [{"name": f"e{i}", "input": {"day": "x"}, "output": i} for i in range(21)]
    assert {e["field"] for e in refused(*many)} == {"tool.examples"}
    assert {e["field"] for e in refused({"name": "a", "input": {"day": "x"}, "output": {"_type_": "t", "_data_": 1}})} == {
        "tool.examples[0].output"}
    # Nothing was recorded.
    expect(client.get(f"{BASE}/bad"), 404)
