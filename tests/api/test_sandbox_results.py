"""What an admin sees of a result the sandbox cannot hand back as it is (issue 12, findings 2, 3, 7,
the result side): a deep result is a `result` error in a 200, never a 500; a NUL, a whole number
and a lone surrogate come back as the JSON of the JavaScript value."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.helpers import unique_id

BASE = "/api/v1/admin/code-modules"


@pytest.mark.parametrize("depth", [255, 300, 1_000])
def test_a_deep_result_is_a_result_error_not_a_500(client: TestClient, depth: int) -> None:
    source = f"exports.run = function () {{ var a = 1; for (var i = 0; i < {depth}; i++) a = [a]; return a; }};"
    response = client.post(f"{BASE}/test", json={"draftContent": source})
    assert response.status_code == 200, response.text
    assert response.json()["error"]["type"] == "result"
    assert client.post(f"{BASE}/test", json={"draftContent": "exports.run = () => 'alive';"}).json()["output"] == "alive"


def test_a_result_keeps_its_nul_its_integers_and_replaces_lone_surrogates(client: TestClient) -> None:
    source = "exports.run = function () { return ['a\\u0000b', 2**31, 2**53, 1.5, 'x\\ud800y', {'\\udc00': 1}]; };"
    response = client.post(f"{BASE}/test", json={"draftContent": source})
    assert response.status_code == 200, response.text
    assert '"a\\u0000b",2147483648,9007199254740992,1.5' in response.text.replace(" ", "")
    assert response.json()["output"] == ["a\x00b", 2147483648, 9007199254740992, 1.5, "x\ufffdy", {"\ufffd": 1}]


def test_publish_refuses_a_module_that_would_fail_only_in_calls(client: TestClient) -> None:
    # the module looks for the old check's helpers; finding none, it would exhaust its memory at
    # every call: the check must see it do so too
    sly = unique_id("sly")
    source = (
        "if (typeof $check === 'undefined' && Object.getOwnPropertyNames(globalThis).indexOf('$e') < 0) {"
        " var hog = []; while (true) hog.push('x'.repeat(1024 * 1024)); }\n"
        "exports.run = function () { return 1; };"
    )
    tool = {"memoryLimitMb": 16}
    assert client.post(BASE, json={"id": sly, "description": "d", "draftContent": source, "tool": tool}).status_code == 201, "create"
    response = client.post(f"{BASE}/{sly}/publish")
    assert response.status_code == 422, response.text
    assert "memory" in response.text


def test_publish_checks_with_the_publishers_context_as_a_call_of_theirs_would(client: TestClient) -> None:
    # the check's ai.context() is the publisher's, shaped as a call's: a module that misbehaves
    # only when a caller's context is there misbehaves in the check too
    sly = unique_id("sly")
    source = (
        "var me = ai.context();\n"
        "if (me.user && me.user.roles.length && me.tenant) { var hog = []; while (true) hog.push('x'.repeat(1024 * 1024)); }\n"
        "exports.run = function () { return 1; };"
    )
    assert client.post(BASE, json={"id": sly, "description": "d", "draftContent": source, "tool": {"memoryLimitMb": 16}}).status_code == 201
    assert client.post(f"{BASE}/{sly}/publish", params={"dryRun": "true"}).json()["wouldPublish"] is False
    response = client.post(f"{BASE}/{sly}/publish")
    assert response.status_code == 422 and "memory" in response.text, response.text
    # the same module, told apart by nothing, publishes and answers
    fair = unique_id("fair")
    source = "var me = ai.context();\nexports.run = function () { return [me.tenant, me.user.roles]; };"
    assert client.post(BASE, json={"id": fair, "description": "d", "draftContent": source, "tool": {}}).status_code == 201
    assert client.post(f"{BASE}/{fair}/publish").status_code == 200
    assert client.post(f"/api/v1/tools/{fair}/call", json={}).json()["output"] == ["default", ["admin"]]
