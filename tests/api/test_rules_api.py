"""Each rule of docs/rules.md refused over HTTP with the status docs/rest-api.md gives it, as a client sees it."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.helpers import expect, unique_id

BASE = "/api/v1/admin/code-modules"
TOOL_SOURCE = "exports.run = function (input) { return input; };"


def create(client: TestClient, module_id: str | None = None, **fields: Any):
    body = {"id": unique_id() if module_id is None else module_id, "description": "a module", "draftContent": TOOL_SOURCE, **fields}
    return client.post(BASE, json=body)


def created(client: TestClient, module_id: str | None = None, **fields: Any) -> dict[str, Any]:
    response = create(client, module_id, **fields)
    assert response.status_code == 201, response.text
    return response.json()


def published(client: TestClient, module_id: str | None = None, **fields: Any) -> dict[str, Any]:
    module = created(client, module_id, **fields)
    response = client.post(f"{BASE}/{module['id']}/publish")
    assert response.status_code == 200, response.text
    return response.json()


def assert_problem(response, status: int, code: str, field: str | None = None, rule: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status and body["code"] == code and body["title"] and body["detail"]
    if field is not None:
        assert any(e["field"] == field and (rule is None or e["rule"] == rule) for e in body["errors"]), body
    return body


# -- R1: names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id",
    ["1abc", "a$b", "$", "class", "return", "null", "true", "let", "static", "yield", "implements", "x" * 65, "", "naïve", "a-b"],
)
def test_create_refuses_an_id_that_is_not_a_plain_identifier(client: TestClient, bad_id: str) -> None:
    body = assert_problem(create(client, bad_id), 400, "invalid-module", field="id", rule="R1")
    assert client.get(f"{BASE}/availability", params={"id": bad_id}).json() is False
    assert "R1" in body["detail"]


def test_an_id_of_64_characters_is_accepted(client: TestClient) -> None:
    module_id = "m" + "x" * 63
    assert created(client, module_id)["id"] == module_id


# -- R2: collisions ----------------------------------------------------------------------------


def test_create_refuses_an_id_already_taken_and_availability_says_so(client: TestClient) -> None:
    module = created(client)
    assert client.get(f"{BASE}/availability", params={"id": module["id"]}).json() is False
    assert_problem(create(client, module["id"]), 409, "id-taken")
    assert client.get(f"{BASE}/availability", params={"id": unique_id()}).json() is True


# -- R3, R4: description and limits ------------------------------------------------------------


def test_description_is_required_and_at_most_2000_characters(client: TestClient) -> None:
    assert_problem(create(client, description=""), 400, "invalid-module", field="description", rule="R3")
    assert_problem(create(client, description="   "), 400, "invalid-module", field="description", rule="R3")
    assert_problem(create(client, description="d" * 2001), 400, "invalid-module", field="description", rule="R3")
    assert created(client, description="d" * 2000)["description"] == "d" * 2000


def test_source_is_at_most_262144_characters(client: TestClient) -> None:
    padding = "//" + "x" * (262_144 - len(TOOL_SOURCE) - 3) + "\n"
    assert len(padding + TOOL_SOURCE) == 262_144
    assert created(client, draftContent=padding + TOOL_SOURCE)["draft"]["content"].endswith(TOOL_SOURCE)
    assert_problem(create(client, draftContent="/" + padding + TOOL_SOURCE), 400, "invalid-module", field="draftContent", rule="R4")


def _libraries(client: TestClient, count: int) -> list[str]:
    return [published(client, description="library", draftContent="exports.x = 1;")["id"] for _ in range(count)]


def test_at_most_20_imports(client: TestClient) -> None:
    names = _libraries(client, 21)
    assert created(client, draftImports=names[:20])["draft"]["imports"] == names[:20]
    assert_problem(create(client, draftImports=names), 400, "invalid-module", field="draftImports", rule="R4")


def test_at_most_20_tags_and_30_parameters(client: TestClient) -> None:
    tags = [f"t{i}" for i in range(21)]
    params = [{"name": f"p{i}"} for i in range(31)]
    assert created(client, tool={"tags": tags[:20]})["draft"]["tool"]["tags"] == tags[:20]
    assert_problem(create(client, tool={"tags": tags}), 400, "invalid-module", field="tool.tags", rule="R4")
    assert len(created(client, tool={"inputParameters": params[:30]})["draft"]["tool"]["inputParameters"]) == 30
    assert_problem(create(client, tool={"inputParameters": params}), 400, "invalid-module", field="tool.inputParameters", rule="R4")


def test_parameter_names_are_unique_identifiers(client: TestClient) -> None:
    twice = {"inputParameters": [{"name": "text"}, {"name": "text"}]}
    assert_problem(create(client, tool=twice), 400, "invalid-module", field="tool.inputParameters[1].name", rule="R4")
    bad = {"inputParameters": [{"name": "1text"}]}
    assert_problem(create(client, tool=bad), 400, "invalid-module", field="tool.inputParameters[0].name", rule="R1")


# -- R5: imports -------------------------------------------------------------------------------


def test_imports_must_name_existing_published_modules(client: TestClient) -> None:
    draft_only = created(client)["id"]
    assert_problem(create(client, draftImports=["nowhere"]), 400, "invalid-import", field="draftImports[0]", rule="R5")
    body = assert_problem(create(client, draftImports=[draft_only]), 400, "invalid-import", field="draftImports[0]", rule="R5")
    assert "not published" in body["detail"]


def test_a_module_cannot_import_itself(client: TestClient) -> None:
    module = published(client)
    response = client.put(f"{BASE}/{module['id']}", json={"draftImports": [module["id"]]})
    assert_problem(response, 400, "invalid-import", field="draftImports[0]", rule="R5")


def test_an_import_cycle_is_refused_at_save(client: TestClient) -> None:
    a = published(client, draftContent="exports.x = 1;")["id"]
    b = published(client, draftContent="exports.y = 1;", draftImports=[a])["id"]
    body = assert_problem(client.put(f"{BASE}/{a}", json={"draftImports": [b]}), 400, "import-cycle")
    assert body["cycle"][0] == body["cycle"][-1] and {a, b} <= set(body["cycle"])


def test_an_import_cycle_is_refused_again_at_publish(client: TestClient) -> None:
    # two published modules, each given a draft that imports the other: both drafts save,
    # because neither import is published yet, but only the first publish goes through
    a = published(client, draftContent="exports.x = 1;")["id"]
    b = published(client, draftContent="exports.y = 1;")["id"]
    assert client.put(f"{BASE}/{a}", json={"draftImports": [b]}).status_code == 200
    assert client.put(f"{BASE}/{b}", json={"draftImports": [a]}).status_code == 200
    assert client.post(f"{BASE}/{a}/publish").status_code == 200
    body = assert_problem(client.post(f"{BASE}/{b}/publish"), 422, "import-cycle")
    assert set(body["cycle"]) == {a, b}
    assert client.get(f"{BASE}/{b}").json()["published"]["imports"] == []


# -- R6, R7, R8: what importers see, draft and state ------------------------------------------


def test_states_follow_draft_and_publish(client: TestClient) -> None:
    module = created(client)
    assert module["state"] == "UNPUBLISHED" and module["published"] is None
    module = client.post(f"{BASE}/{module['id']}/publish").json()
    assert module["state"] == "PUBLISHED" and module["draft"] is None and module["published"]["version"] == 1
    assert module["published"]["publishedBy"] == "admin" and module["published"]["publishedAt"]
    module = client.put(f"{BASE}/{module['id']}", json={"description": "changed"}).json()
    assert module["state"] == "DRAFT" and module["draft"]["description"] == "changed"
    assert module["published"]["description"] == "a module"
    module = client.post(f"{BASE}/{module['id']}/publish").json()
    assert module["state"] == "PUBLISHED" and module["published"]["version"] == 2


def test_an_importer_runs_against_the_published_version_of_its_dependency(client: TestClient) -> None:
    lib = published(client, draftContent="exports.word = function () { return 'one'; };")["id"]
    tool = published(client, draftContent=f"exports.run = function () {{ return {lib}.word(); }};", draftImports=[lib], tool={})["id"]
    expect(client.put(f"{BASE}/{lib}", json={"draftContent": "exports.word = function () { return 'two'; };"}), 200)
    assert client.post(f"/api/v1/tools/{tool}/call", json={}).json()["output"] == "one"
    expect(client.post(f"{BASE}/{lib}/publish"), 200)
    assert client.post(f"/api/v1/tools/{tool}/call", json={}).json()["output"] == "two"


# -- R9: tool section --------------------------------------------------------------------------


@pytest.mark.parametrize(("timeout", "status"), [(99, 400), (100, 201), (10_000, 201), (10_001, 400)])
def test_timeout_is_between_100_and_10000(client: TestClient, timeout: int, status: int) -> None:
    response = create(client, tool={"timeoutMillis": timeout})
    assert response.status_code == status, response.text
    if status == 400:
        assert_problem(response, 400, "invalid-module", field="tool.timeoutMillis", rule="R9")


def test_tool_section_defaults(client: TestClient) -> None:
    tool = created(client, tool={"inputParameters": [{"name": "text", "required": True}]})["draft"]["tool"]
    assert tool["timeoutMillis"] == 3000 and tool["memoryLimitMb"] == 128
    assert tool["exposeInChat"] is False and tool["enabled"] is True and tool["style"] == "module"
    assert tool["inputParameters"][0]["type"] == "string"
    script = created(client, tool={"style": "script"})["draft"]["tool"]
    assert script["timeoutMillis"] == 5000


def test_a_parameter_type_outside_v1_is_refused(client: TestClient) -> None:
    response = create(client, tool={"inputParameters": [{"name": "n", "type": "float"}]})
    assert_problem(response, 400, "invalid-module", field="tool.inputParameters[0].type", rule="V1")


# -- R10: publish ------------------------------------------------------------------------------


def test_publish_without_a_draft_is_409(client: TestClient) -> None:
    module = published(client)
    assert_problem(client.post(f"{BASE}/{module['id']}/publish"), 409, "nothing-to-publish")


def test_publish_refuses_a_module_that_does_not_load(client: TestClient) -> None:
    module = created(client, draftContent="exports.run = function () { return ( };")
    body = assert_problem(client.post(f"{BASE}/{module['id']}/publish"), 422, "check-failed")
    assert body["failingModule"] == module["id"] and body["error"]["type"] == "syntax"
    assert client.get(f"{BASE}/{module['id']}").json()["state"] == "UNPUBLISHED"


def test_publish_refuses_a_tool_without_run(client: TestClient) -> None:
    module = created(client, draftContent="exports.other = 1;", tool={})
    body = assert_problem(client.post(f"{BASE}/{module['id']}/publish"), 422, "check-failed")
    assert body["error"]["type"] == "link" and "exports.run" in body["error"]["message"]


# -- R11: discard ------------------------------------------------------------------------------


def test_discard_is_refused_without_draft_or_when_never_published(client: TestClient) -> None:
    never = created(client)
    assert_problem(client.delete(f"{BASE}/{never['id']}/draft"), 409, "nothing-to-discard")
    module = published(client)
    assert_problem(client.delete(f"{BASE}/{module['id']}/draft"), 409, "nothing-to-discard")
    expect(client.put(f"{BASE}/{module['id']}", json={"description": "pending"}), 200)
    discarded = client.delete(f"{BASE}/{module['id']}/draft")
    assert discarded.status_code == 200
    assert discarded.json()["state"] == "PUBLISHED" and discarded.json()["description"] == "a module"


# -- R12: delete -------------------------------------------------------------------------------


def test_delete_is_refused_while_another_module_imports_it(client: TestClient) -> None:
    lib = published(client, draftContent="exports.x = 1;")["id"]
    user = published(client, draftImports=[lib])["id"]
    drafter = published(client)["id"]
    expect(client.put(f"{BASE}/{drafter}", json={"draftImports": [lib]}), 200)  # a draft import counts too
    body = assert_problem(client.delete(f"{BASE}/{lib}"), 409, "in-use")
    assert body["usedBy"] == {"modules": sorted([user, drafter]), "plans": [], "agents": []}
    assert client.get(f"{BASE}/{lib}/usage").json() == {"modules": sorted([user, drafter]), "plans": [], "agents": []}


def test_a_deleted_module_frees_its_id(client: TestClient) -> None:
    module = published(client)
    assert client.delete(f"{BASE}/{module['id']}").status_code == 204
    assert_problem(client.get(f"{BASE}/{module['id']}"), 404, "module-not-found")
    assert client.get(f"{BASE}/availability", params={"id": module["id"]}).json() is True
    again = created(client, module["id"], description="second life")
    assert again["state"] == "UNPUBLISHED" and again["description"] == "second life"


# -- R13: duplicate ----------------------------------------------------------------------------


def test_duplicate_copies_the_current_definition_under_a_new_id(client: TestClient) -> None:
    module = published(client, tool={"tags": ["x"]})
    expect(client.put(f"{BASE}/{module['id']}", json={"description": "the draft"}), 200)
    new_id = unique_id()
    response = client.post(f"{BASE}/{module['id']}/duplicate", json={"id": new_id})
    assert response.status_code == 201, response.text
    copy = response.json()
    assert copy["id"] == new_id and copy["state"] == "UNPUBLISHED"
    assert copy["draft"]["description"] == "the draft" and copy["draft"]["tool"]["tags"] == ["x"]
    assert_problem(client.post(f"{BASE}/{module['id']}/duplicate", json={"id": new_id}), 409, "id-taken")
    assert_problem(client.post(f"{BASE}/{module['id']}/duplicate", json={"id": "9x"}), 400, "invalid-module", field="id", rule="R1")
    assert_problem(client.post(f"{BASE}/nowhere/duplicate", json={"id": unique_id()}), 404, "module-not-found")


# -- unknown ids -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", ""), ("put", ""), ("post", "/publish"), ("delete", "/draft"), ("delete", ""), ("get", "/usage")],
)
def test_unknown_module_is_404(client: TestClient, method: str, path: str) -> None:
    kwargs = {"json": {"description": "x"}} if method == "put" else {}
    assert_problem(getattr(client, method)(f"{BASE}/nowhere{path}", **kwargs), 404, "module-not-found")
