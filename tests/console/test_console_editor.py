"""The console's Create page, module page, save and Test routes without a browser: status codes,
roles, escaping of module text, the live name check, the CSRF and If-Match checks, V5's cut."""

from __future__ import annotations

import html
import json
import re

import pytest
from fastapi.testclient import TestClient

from tests.helpers import ADMIN_TOKEN, expect
from tests.helpers import same_origin as _origin
from tests.helpers import sign_in_console as _signed_in

BASE = "/api/v1/admin/code-modules"


@pytest.fixture
def admin(app) -> tuple[TestClient, str]:  # noqa: ANN001
    client = TestClient(app)
    return client, _signed_in(client, ADMIN_TOKEN)


def _form(csrf: str, **fields: object) -> dict[str, object]:
    return {"csrf_token": csrf, **fields}


def _version(html: str) -> str:
    return re.search(r'id="version" name="version" value="(\d+)"', html).group(1)


def test_create_page_and_a_module_made_from_it(admin) -> None:  # noqa: ANN001
    client, csrf = admin
    assert client.get("/console/modules/new").status_code == 200
    answer = client.post("/console/modules", data=_form(csrf, id="counter", description="Counts lines", content="exports.run = () => 1;"),
                         headers=_origin(client), follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/modules/counter"
    page = client.get("/console/modules/counter")
    assert page.status_code == 200
    assert "Counts lines" in page.text and ">Unpublished<" in page.text
    assert 'id="test-panel"' in page.text and "Save draft" in page.text


def test_create_errors_are_shown_next_to_their_field_and_keep_what_was_typed(admin) -> None:  # noqa: ANN001
    client, csrf = admin
    answer = client.post("/console/modules", data=_form(csrf, id="1bad", description="", content="let kept = 1;"), headers=_origin(client))
    assert answer.status_code == 200
    assert "Must not start with a digit." in answer.text and "(R1)" not in answer.text
    assert re.search(r'id="id"[^>]*aria-invalid="true"', answer.text, re.S)
    assert "Is required." in answer.text and 'id="description-error"' in answer.text
    assert "let kept = 1;" in answer.text and 'value="1bad"' in answer.text
    # a name already taken: R2
    client.post("/console/modules", data=_form(csrf, id="taken", description="d", content=""), headers=_origin(client))
    again = client.post("/console/modules", data=_form(csrf, id="taken", description="d", content=""), headers=_origin(client))
    assert "Already used by a module: a name is taken once, across every kind of tool." in again.text


def test_the_availability_fragment_says_which_rule_or_that_the_name_is_free(admin) -> None:  # noqa: ANN001
    client, csrf = admin
    client.post("/console/modules", data=_form(csrf, id="dates", description="d", content=""), headers=_origin(client))

    def check(name: str) -> str:
        answer = client.get("/console/modules/availability", params={"id": name}, headers={"HX-Request": "true"})
        assert answer.status_code == 200
        return answer.text

    assert "✓ free" in check("report")
    assert "✗ Must not start with a digit" in check("1bad") and "R1" not in check("1bad")
    assert "Must not be empty" in check("")
    assert "Must not contain &#39;$&#39;" in check("a$b")
    assert "reserved word" in check("class")
    assert "Must be at most 64 characters" in check("x" * 65)
    assert "Already used by a module" in check("dates") and "R2" not in check("dates")


def test_a_description_holding_a_script_is_shown_as_text(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    expect(api.post(BASE, json={"id": "evil", "description": "<script>alert(1)</script>", "draftContent": "</textarea><script>x()</script>"}), 201)
    page = client.get("/console/modules/evil")
    assert page.status_code == 200
    assert "<script>alert(1)</script>" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "</textarea><script>x()" not in page.text


def test_save_with_the_version_read_then_a_stale_version_is_a_conflict(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    expect(api.post(BASE, json={"id": "tool1", "description": "v1", "draftContent": "exports.run = () => 1;"}), 201)
    version = _version(client.get("/console/modules/tool1").text)
    fields = _form(csrf, version=version, description="v2", content="exports.run = (i) => i.n * 2;", tool="on",
                   param_row="0", param_0_name="n", param_0_type="integer", param_0_required="on", timeoutMillis="2000")
    saved = client.post("/console/modules/tool1", data=fields, headers={**_origin(client), "HX-Request": "true"})
    assert saved.status_code == 200 and "Draft saved" in saved.text
    assert '&#34;type&#34;: &#34;integer&#34;' in saved.text and 'hx-swap-oob="true"' in saved.text
    module = api.get(f"{BASE}/tool1").json()
    assert module["draft"]["tool"]["inputParameters"][0]["type"] == "integer" and module["draft"]["tool"]["timeoutMillis"] == 2000
    # the same (now stale) version again: 412 with the newer text to compare
    stale = client.post("/console/modules/tool1", data={**fields, "content": "mine"}, headers={**_origin(client), "HX-Request": "true"})
    assert stale.status_code == 412
    assert stale.headers["HX-Retarget"] == "#conflict-region"
    assert 'id="conflict-dialog"' in stale.text and "exports.run = (i) =&gt; i.n * 2;" in stale.text and ">mine</textarea>" in stale.text


def test_save_without_the_csrf_token_is_refused(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    expect(api.post(BASE, json={"id": "m1", "description": "d", "draftContent": ""}), 201)
    answer = client.post("/console/modules/m1", data={"description": "changed"}, headers=_origin(client))
    assert answer.status_code == 403
    assert api.get(f"{BASE}/m1").json()["description"] == "d"


def test_an_auditor_reads_the_page_without_write_controls_and_cannot_write(app, api) -> None:  # noqa: ANN001
    expect(api.post(BASE, json={"id": "m1", "description": "d", "draftContent": "exports.run = () => 1;"}), 201)
    secret = expect(api.post("/api/v1/admin/tokens", json={"name": "audit", "role": "auditor"}), 201).json()["token"]
    client = TestClient(app)
    csrf = _signed_in(client, secret)
    page = client.get("/console/modules/m1")
    assert page.status_code == 200 and "exports.run = () =&gt; 1;" in page.text
    assert "Save draft" not in page.text and 'id="test-panel"' not in page.text and "data-focus-test" not in page.text
    assert client.get("/console/modules/new").status_code == 403
    for path in ("/console/modules/m1", "/console/modules/m1/test", "/console/modules"):
        answer = client.post(path, data=_form(csrf, id="m2", description="x", content="", input="{}"), headers=_origin(client))
        assert answer.status_code == 403, path
    assert api.get(f"{BASE}/m1").json()["description"] == "d"


def test_the_test_route_runs_the_unsaved_content_and_cuts_output_at_128_kb(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    expect(api.post(BASE, json={"id": "big", "description": "d", "draftContent": "exports.run = () => 1;"}), 201)
    headers = {**_origin(client), "HX-Request": "true"}
    small = client.post("/console/modules/big/test", data=_form(csrf, content="exports.run = (i) => ({twice: i.n * 2});", input='{"n": 21}'), headers=headers)
    assert small.status_code == 200 and '&#34;twice&#34;: 42' in small.text and "Time:" in small.text
    big = client.post("/console/modules/big/test", data=_form(csrf, content="exports.run = () => 'x'.repeat(300000);", input="{}"), headers=headers)
    assert "Output cut at 128 KB (293 KB in all)" in big.text
    broken = client.post("/console/modules/big/test", data=_form(csrf, content="exports.run = () => {\n  return (;\n};", input="{}"), headers=headers)
    assert "Syntax error" in broken.text and 'data-goto="2:' in broken.text and "line 2, column" in broken.text
    not_json = client.post("/console/modules/big/test", data=_form(csrf, content="exports.run = () => 1;", input="{nope"), headers=headers)
    assert "The input is not JSON" in not_json.text
    # nothing was saved
    assert api.get(f"{BASE}/big").json()["draft"]["content"] == "exports.run = () => 1;"


def test_an_unknown_module_is_a_404_page(admin) -> None:  # noqa: ANN001
    client, _ = admin
    assert client.get("/console/modules/nosuch").status_code == 404


def test_a_save_that_breaks_a_rule_names_the_field_in_the_problem_region(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    expect(api.post(BASE, json={"id": "m1", "description": "d", "draftContent": ""}), 201)
    fields = _form(csrf, description="d", content="", tool="on", param_row="0", param_0_name="1x", param_0_type="integer",
                   param_0_default="many", timeoutMillis="50")
    answer = client.post("/console/modules/m1", data=fields, headers={**_origin(client), "HX-Request": "true"})
    assert answer.status_code == 400 and answer.headers["HX-Retarget"] == "#problem"
    assert "tool.inputParameters[0].name: must not start with a digit" in answer.text
    assert "tool.timeoutMillis: must be between 100 and 10000, got 50" in answer.text
    assert api.get(f"{BASE}/m1").json()["draft"]["tool"] is None


def test_the_module_page_lists_what_uses_it_each_linked(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    # a published library, a module importing it, and a plan calling a tool
    expect(api.post(BASE, json={"id": "money", "description": "money helpers", "draftContent": "exports.cents = 100;"}), 201)
    expect(api.post(f"{BASE}/money/publish"), 200)
    expect(api.post(BASE, json={"id": "invoice", "description": "uses money", "draftImports": ["money"],
                                "draftContent": "exports.run = function () { return money.cents; };"}), 201)
    page = client.get("/console/modules/money")
    assert page.status_code == 200
    used_by = page.text[page.text.index('id="used-by"'):]
    used_by = used_by[:used_by.index("</section>")]
    assert 'Module <a href="/console/modules/invoice">invoice</a> imports it' in used_by
    # nothing uses the importer
    assert "Nothing uses it" in client.get("/console/modules/invoice").text


def test_examples_are_shown_in_the_tool_section_and_kept_by_a_save(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    examples = [{"name": "double", "input": {"n": 2}, "output": 4}]
    tool = {"inputParameters": [{"name": "n", "type": "integer", "required": True}], "examples": examples}
    expect(api.post(BASE, json={"id": "twice", "description": "d", "draftContent": "exports.run = (i) => i.n * 2;", "tool": tool}), 201)
    page = client.get("/console/modules/twice").text
    assert 'id="examples"' in page and "&#34;double&#34;" in page
    shown = json.loads(html.unescape(re.search(r'<textarea id="examples"[^>]*>(.*?)</textarea>', page, re.S).group(1)))
    assert shown == examples
    # A save posts the textarea back as shown: the examples stay, the description changes.
    fields = _form(csrf, version=_version(page), description="d2", content="exports.run = (i) => i.n * 2;", tool="on",
                   param_row="0", param_0_name="n", param_0_type="integer", param_0_required="on",
                   examples=json.dumps(shown))
    assert client.post("/console/modules/twice", data=fields, headers={**_origin(client), "HX-Request": "true"}).status_code == 200
    draft = api.get(f"{BASE}/twice").json()["draft"]
    assert draft["description"] == "d2" and draft["tool"]["examples"] == examples
    # Examples that are not JSON are refused naming the field; nothing is saved.
    broken = client.post("/console/modules/twice", data={**fields, "version": "", "examples": "[{nope"},
                         headers={**_origin(client), "HX-Request": "true"})
    assert broken.status_code == 400 and "tool.examples" in broken.text and "must be a JSON list of examples" in broken.text
    assert api.get(f"{BASE}/twice").json()["draft"]["tool"]["examples"] == examples
