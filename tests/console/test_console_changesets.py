"""The console's changesets (B6) and examples (B4) without a browser: the list's checkboxes and
"Publish selected", the review of the selected drafts (every check and example, a diff per module,
a message), a refused changeset naming every failing module, a published one naming its id and new
versions, the single publish's message, the history and the changesets page showing changeset and
message, and each example's result in the Test window; roles, CSRF and escaping."""

from __future__ import annotations

import json

import re

import pytest
from fastapi.testclient import TestClient

from tests.helpers import ADMIN_TOKEN, expect, unique_id
from tests.helpers import same_origin as _origin
from tests.helpers import sign_in_console as _signed_in

BASE = "/api/v1/admin/code-modules"
LIST = "/console/modules"
REVIEW = "/console/modules/publish-selected"
HTMX = {"HX-Request": "true"}
DATES_V1 = "exports.year = function (d) { return d.slice(0, 4); };"
DATES_V2 = "exports.yearOf = function (d) { return d.slice(0, 4); };"
REPORT = "exports.run = function (input) { return 'Report ' + dates.year(input.day); };"
DAY = {"inputParameters": [{"name": "day", "description": "a day", "required": True}]}
EVIL = "<script>alert(1)</script>"


@pytest.fixture
def admin(app, api) -> tuple[TestClient, str]:  # noqa: ANN001
    """A browser-like client (a cookie, no bearer token); the app's lifespan is `api`'s."""
    client = TestClient(app)
    return client, _signed_in(client, ADMIN_TOKEN)


@pytest.fixture
def auditor(app, api) -> tuple[TestClient, str]:  # noqa: ANN001
    secret = expect(api.post("/api/v1/admin/tokens", json={"name": "an auditor", "role": "auditor"}), 201).json()["token"]
    client = TestClient(app)
    return client, _signed_in(client, secret)


def _post(client: TestClient, csrf: str, path: str, *, htmx: bool = True, **fields: object):  # noqa: ANN202
    headers = {**_origin(client), **(HTMX if htmx else {})}
    return client.post(path, data={"csrf_token": csrf, **fields}, headers=headers, follow_redirects=False)


def _module(api: TestClient, module_id: str, content: str, *, publish: bool = True, **extra: object) -> None:
    expect(api.post(BASE, json={"id": module_id, "description": f"{module_id} does things", "draftContent": content, **extra}), 201)
    if publish:
        expect(api.post(f"{BASE}/{module_id}/publish"), 200)


def _report(dates: str, member: str = "year") -> str:
    return REPORT.replace("dates.year", f"{dates}.{member}")


def _seed_004(api: TestClient) -> tuple[str, str]:
    """Seed 004's dates and report, published; then `dates` renames `year` to `yearOf` and `report`
    switches to `dates.yearOf`, both as drafts."""
    dates, report = unique_id("dates"), unique_id("report")
    _module(api, dates, DATES_V1)
    _module(api, report, _report(dates), draftImports=[dates], tool=DAY)
    expect(api.put(f"{BASE}/{dates}", json={"draftContent": DATES_V2}), 200)
    expect(api.put(f"{BASE}/{report}", json={"draftContent": _report(dates, "yearOf")}), 200)
    return dates, report


def _review(client: TestClient, *ids: str, htmx: bool = True):  # noqa: ANN202
    return client.get(REVIEW, params=[("ids", i) for i in ids], headers=HTMX if htmx else {})


def _publish_fields(review_html: str) -> dict[str, object]:
    """The hidden fields of the review's Publish form: the ids and each one's version (If-Match)."""
    form = review_html.split(f'action="{REVIEW}"')[1].split("</form>")[0]
    fields: dict[str, object] = {"ids": re.findall(r'name="ids" value="([^"]+)"', form)}
    fields.update(dict(re.findall(r'name="(version_[^"]+)" value="(\d+)"', form)))
    return fields


def test_the_list_has_a_checkbox_for_each_module_with_a_draft_and_publish_selected(admin, auditor, api) -> None:  # noqa: ANN001
    client, _ = admin
    dates, report = _seed_004(api)
    fresh, plain = unique_id("fresh"), unique_id("plain")
    _module(api, fresh, "exports.a = 1;", publish=False)
    _module(api, plain, "exports.a = 1;")
    page = client.get(LIST).text
    # a draft or a module never published: a checkbox of the Publish selected form; a published one: none
    for name in (dates, report, fresh):
        assert f'<input type="checkbox" class="pick" name="ids" value="{name}" form="publish-selected-form" aria-label="Select the draft of {name}"' in page
    assert f'value="{plain}" form="publish-selected-form"' not in page
    assert '<form id="publish-selected-form"' in page and ">Publish selected</button>" in page
    assert 'hx-get="/console/modules/publish-selected" hx-include="[data-changeset-pick]"' in page
    assert '<a href="/console/modules/changeset-history">Changesets</a>' in page
    # the results read themselves again after a changeset (the same view, the same filters)
    filtered = client.get(LIST, params={"search": dates}).text
    assert f'hx-get="/console/modules?search={dates}" hx-trigger="console:modules-changed from:body"' in filtered
    # an auditor sees no checkbox and no Publish selected, and may not open the review or publish
    reader, csrf = auditor
    read = reader.get(LIST).text
    assert "data-changeset-pick" not in read and "Publish selected" not in read and "changeset-dialog" not in read
    assert _review(reader, dates, report).status_code == 403
    assert _post(reader, csrf, REVIEW, htmx=False, ids=[dates, report]).status_code == 403
    assert api.get(f"{BASE}/{dates}").json()["state"] == "DRAFT"


def test_the_review_checks_the_drafts_together_dependencies_first_with_a_diff_each_and_a_message(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    dates, report = _seed_004(api)
    review = _review(client, report, dates)  # selected in any order
    assert review.status_code == 200 and "<html" not in review.text
    checks = review.text.split('id="changeset-checks-heading"')[1].split("</section>")[0]
    assert checks.index(f">{dates}</a>") < checks.index(f">{report}</a>")  # dependencies first
    assert checks.count("✓ works") == 2 and "would fail" not in checks and "Publishing is refused" not in review.text
    # a diff per module, dependencies first, with the single review's partial (unified text too)
    assert review.text.index(f'id="changeset-diff-{dates}"') < review.text.index(f'id="changeset-diff-{report}"')
    assert f"{dates}: published version 1 → the draft (version 2)" in review.text
    assert "-" + DATES_V1 in review.text and "+" + DATES_V2 in review.text
    assert "+" + _report(dates, "yearOf").replace("'", "&#39;") in review.text
    # the message and the button; the form carries each module's version (If-Match)
    assert '<label for="changeset-message">Message (optional)</label>' in review.text
    assert "Publish 2 modules as one changeset</button>" in review.text
    fields = _publish_fields(review.text)
    assert fields["ids"] == [dates, report]
    assert fields[f"version_{dates}"] == api.get(f"{BASE}/{dates}").headers["ETag"].strip('"')
    # nothing was published by the review
    assert api.get(f"{BASE}/{dates}").json()["published"]["version"] == 1


def test_each_draft_alone_is_refused_in_the_review_naming_the_module_it_breaks(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    dates, report = _seed_004(api)
    alone = _review(client, dates)
    assert alone.status_code == 200
    assert f'✗ would fail' in alone.text and "Publishing is refused" in alone.text
    alert = alone.text.split('class="problem" role="alert"')[1].split("</div>")[0]
    assert f'<a href="/console/modules/{report}">{report}</a>' in alert
    assert "as one changeset</button>" not in alone.text  # no button while a check fails
    assert "would fail" in _review(client, report).text


def test_a_changeset_published_names_its_id_and_new_versions_and_history_shows_it(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, report = _seed_004(api)
    fields = _publish_fields(_review(client, dates, report).text)
    done = _post(client, csrf, REVIEW, message=f"yearOf, with {EVIL}", **fields)
    assert done.status_code == 200, done.text
    triggers = json.loads(done.headers["HX-Trigger"])
    assert "console:modules-changed" in triggers  # the list reads itself again
    assert triggers["toast"]["text"] == "Published 2 modules together."  # and a toast says so
    changeset = re.search(r"Published changeset <a href=\"/console/modules/changeset-history\?id=(cs_\w+)\">", done.text).group(1)
    assert f'<a href="/console/modules/{dates}">{dates}</a> is at version 2' in done.text
    assert f'<a href="/console/modules/{report}">{report}</a> is at version 2' in done.text
    assert EVIL not in done.text and "&lt;script&gt;" in done.text
    # both at version 2, in the changeset, with the message
    for name in (dates, report):
        module = api.get(f"{BASE}/{name}").json()
        assert module["state"] == "PUBLISHED" and module["published"]["version"] == 2
        version = api.get(f"{BASE}/{name}/versions").json()[-1]
        assert version["changeset"] == changeset and version["message"] == f"yearOf, with {EVIL}"
    # the history: the Published entry and the version name the changeset (linked) and the message
    history = client.get(f"/console/modules/{report}/history").text
    link = f'<a href="/console/modules/changeset-history?id={changeset}">{changeset}</a>'
    assert f"Published with changeset {link}" in history and "Message: yearOf, with &lt;script&gt;" in history
    assert EVIL not in history
    # the changesets page lists it, and ?id= shows it alone
    one = client.get("/console/modules/changeset-history", params={"id": changeset})
    assert one.status_code == 200 and f"Changeset {changeset}" in one.text
    assert f"{dates} version 2</a>" in one.text and f"{report} version 2</a>" in one.text
    assert "yearOf, with &lt;script&gt;" in one.text and EVIL not in one.text
    assert changeset in client.get("/console/modules/changeset-history").text
    missing = client.get("/console/modules/changeset-history", params={"id": "cs_nothing"})
    assert missing.status_code == 404 and "No changeset cs_nothing" in missing.text
    # the list no longer offers them
    assert f'value="{dates}" form="publish-selected-form"' not in client.get(LIST).text


def test_a_refused_changeset_names_every_failing_module_and_publishes_nothing(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, report = _seed_004(api)
    # a third, unchanged importer that still calls dates.year
    summary = unique_id("summary")
    _module(api, summary, _report(dates).replace("Report", "Summary"), draftImports=[dates], tool=DAY)
    review = _review(client, dates, report)
    assert "as one changeset</button>" not in review.text
    assert f'<a href="/console/modules/{summary}">{summary}</a>' in review.text.split('role="alert"')[1]
    # posted anyway (or the graph moved on after the review): 422 naming every failing module
    refused = _post(client, csrf, REVIEW, ids=[dates], message="only dates")
    assert refused.status_code == 422
    assert "the changeset would break 2 modules; nothing was published" in refused.text
    for name in (report, summary):
        assert f'<li><a href="/console/modules/{name}">{name}</a> — ' in refused.text
    assert api.get(f"{BASE}/{dates}").json()["published"]["version"] == 1
    assert api.get(f"{BASE}/{report}").json()["published"]["version"] == 1


def test_a_stale_version_nothing_selected_and_no_draft_are_explained(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, report = _seed_004(api)
    fields = _publish_fields(_review(client, dates, report).text)
    # the draft changed after the review: 412, nothing published
    expect(api.put(f"{BASE}/{report}", json={"description": "changed meanwhile"}), 200)
    stale = _post(client, csrf, REVIEW, **fields)
    assert stale.status_code == 412 and "Publishing is refused" in stale.text and report in stale.text
    assert api.get(f"{BASE}/{dates}").json()["published"]["version"] == 1
    # nothing selected, a module without a draft, an unknown one: the review says why
    assert "Tick the drafts to publish in the list" in _review(client).text
    plain = unique_id("plain")
    _module(api, plain, "exports.a = 1;")
    assert "has no draft to publish" in _review(client, plain).text
    unknown = _review(client, "nobody_here")
    assert unknown.status_code == 200 and "nobody_here" in unknown.text and "Publishing is refused" in unknown.text
    # a message over 2,000 characters is refused, nothing published
    long = _post(client, csrf, REVIEW, message="x" * 2_001, ids=[dates, report])
    assert long.status_code == 400 and "at most 2,000 characters" in long.text
    assert api.get(f"{BASE}/{dates}").json()["published"]["version"] == 1


def test_without_javascript_the_review_is_a_page_and_publishing_leads_to_the_changeset(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, report = _seed_004(api)
    page = _review(client, dates, report, htmx=False)
    assert page.status_code == 200 and "<html" in page.text and "<h1>Publish the selected drafts</h1>" in page.text
    assert 'id="changeset-review"' in page.text and "Publish 2 modules as one changeset" in page.text
    done = _post(client, csrf, REVIEW, htmx=False, message="by form", **_publish_fields(page.text))
    assert done.status_code == 303 and done.headers["location"].startswith("/console/modules/changeset-history?id=cs_")
    shown = client.get(done.headers["location"])
    assert "by form" in shown.text and f"{dates} version 2" in shown.text
    # a refusal without JavaScript: the page again, with every failing module
    other = unique_id("other")
    _module(api, other, _report(dates, "yearOf"), draftImports=[dates], tool=DAY)
    expect(api.put(f"{BASE}/{dates}", json={"draftContent": DATES_V1}), 200)
    refused = _post(client, csrf, REVIEW, htmx=False, ids=[dates])
    assert refused.status_code == 422 and "<html" in refused.text and f'<a href="/console/modules/{other}">{other}</a>' in refused.text


def test_a_write_without_the_csrf_token_is_refused(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    dates, report = _seed_004(api)
    answer = client.post(REVIEW, data={"ids": [dates, report]}, headers=_origin(client))
    assert answer.status_code == 403
    assert api.get(f"{BASE}/{dates}").json()["state"] == "DRAFT"


def test_a_single_publish_keeps_its_message_and_the_history_shows_it(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    name = unique_id("single")
    _module(api, name, "exports.a = 1;")
    expect(api.put(f"{BASE}/{name}", json={"draftContent": "exports.a = 2;"}), 200)
    review = client.get(f"/console/modules/{name}/publish-review", headers=HTMX).text
    assert '<label for="publish-message">Message (optional)</label>' in review
    version = re.search(r'name="version" value="(\d+)"', review).group(1)
    too_long = _post(client, csrf, f"/console/modules/{name}/publish", version=version, message="y" * 2_001)
    assert too_long.status_code == 400 and "at most 2,000 characters" in too_long.text
    done = _post(client, csrf, f"/console/modules/{name}/publish", version=version, message=f"two, not {EVIL}")
    assert done.status_code == 200 and done.headers["HX-Redirect"] == f"/console/modules/{name}"
    versions = api.get(f"{BASE}/{name}/versions").json()
    assert versions[-1]["message"] == f"two, not {EVIL}" and versions[-1]["changeset"] is None
    history = client.get(f"/console/modules/{name}/history").text
    assert "Message: two, not &lt;script&gt;" in history and EVIL not in history
    assert "Published with changeset" not in history  # a single publish has none
    # an empty message is no message
    expect(api.put(f"{BASE}/{name}", json={"draftContent": "exports.a = 3;"}), 200)
    version = api.get(f"{BASE}/{name}").headers["ETag"].strip('"')
    assert _post(client, csrf, f"/console/modules/{name}/publish", version=version, message="  ").status_code == 200
    assert api.get(f"{BASE}/{name}/versions").json()[-1]["message"] is None


def _test_form(csrf: str, content: str, examples: str, input: str = '{"n": 2}') -> dict[str, object]:
    return {"csrf_token": csrf, "content": content, "description": "d", "tool": "on", "param_row": "0",
            "param_0_name": "n", "param_0_type": "integer", "param_0_required": "on", "examples": examples, "input": input}


def test_the_test_window_shows_each_examples_result_escaped(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    name = unique_id("twice")
    _module(api, name, "exports.run = (i) => i.n * 2;", publish=False,
            tool={"inputParameters": [{"name": "n", "type": "integer", "required": True}]})
    examples = (
        '[{"name": "double", "input": {"n": 2}, "output": 4},'
        f' {{"name": "wrong", "input": {{"n": 3}}, "output": "{EVIL}"}},'
        ' {"name": "throws", "input": {"n": 0}, "error": "runtime"}]'
    )
    content = "exports.run = (i) => { if (i.n === 0) throw new Error('zero <b>'); return i.n * 2; };"
    answer = client.post(f"/console/modules/{name}/test", data=_test_form(csrf, content, examples), headers={**_origin(client), **HTMX})
    assert answer.status_code == 200, answer.text
    assert "<h4 id=\"test-output-heading\">Output</h4>" in answer.text  # the run first
    section = answer.text.split('id="test-examples-heading"')[1]
    assert "✗ 1 of 3 examples fails" in section
    rows = re.findall(r"<tr>\s*<th scope=\"row\">(.*?)</th>\s*<td>(.*?)</td>\s*<td><code>(.*?)</code></td>\s*<td><code>(.*?)</code></td>", section, re.S)
    assert [(r[0], "passed" in r[1]) for r in rows] == [("double", True), ("wrong", False), ("throws", True)]
    assert rows[0][2:] == ("4", "4")
    assert rows[1][2:] == ("&#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;", "6")
    assert rows[2][2] == "an error of type runtime" and rows[2][3].startswith("an error of type runtime: ") and "zero &lt;b&gt;" in rows[2][3]
    assert EVIL not in answer.text
    # every example passing: said so; no examples: no section
    passing = client.post(f"/console/modules/{name}/test", data=_test_form(csrf, content, examples.split(", {")[0] + "]"),
                          headers={**_origin(client), **HTMX})
    assert "✓ All 1 example passes." in passing.text
    none = client.post(f"/console/modules/{name}/test", data=_test_form(csrf, content, ""), headers={**_origin(client), **HTMX})
    assert none.status_code == 200 and "test-examples-heading" not in none.text
    # an example whose input breaks the parameters: not run, the field named
    bad = client.post(f"/console/modules/{name}/test", data=_test_form(csrf, content, '[{"name": "bad", "input": {"n": "x"}, "output": 1}]'),
                      headers={**_origin(client), **HTMX})
    assert bad.status_code == 200 and "Not run" in bad.text and "tool.examples[0].input.n" in bad.text


def test_a_librarys_test_window_runs_its_importers_examples_with_the_draft_in_place(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, report = unique_id("dates"), unique_id("report")
    _module(api, dates, DATES_V1)
    _module(api, report, _report(dates), draftImports=[dates],
            tool={**DAY, "examples": [{"name": "leap", "input": {"day": "2024-02-29"}, "output": "Report 2024"}]})
    # the library's draft keeps `year` but changes its answer: report's example fails, named as report's
    changed = "exports.year = function (d) { return String(Number(d.slice(0, 4)) + 1); };"
    form = {"csrf_token": csrf, "content": changed, "description": "d", "input": ""}
    answer = client.post(f"/console/modules/{dates}/test", data=form, headers={**_origin(client), **HTMX})
    assert answer.status_code == 200, answer.text
    section = answer.text.split('id="test-examples-heading"')[1]
    assert f"every module that imports it ({report})" in section and "✗ 1 of 1 example fails" in section
    row = re.search(r"<tr>\s*<th scope=\"row\">leap</th>\s*<td>(.*?)</td>\s*<td>(.*?)</td>", section, re.S)
    assert row.group(1) == f'<a href="/console/modules/{report}">{report}</a>' and "✗ failed" in row.group(2)
    assert "&#34;Report 2025&#34;" in section
