"""The console's lifecycle routes without a browser: the publish review and publish, the … menu's
discard, duplicate and delete, the history (timeline, compare, as of, restore): status codes,
roles (an auditor reads the history and sees no write control; its writes are 403), and escaping."""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta, timezone

import pytest
from fastapi.testclient import TestClient

from tests.helpers import ADMIN_TOKEN, expect
from tests.helpers import same_origin as _origin
from tests.helpers import sign_in_console as _signed_in, unique_id

BASE = "/api/v1/admin/code-modules"
HTMX = {"HX-Request": "true"}
DATES_V1 = "exports.year = function (d) { return d.slice(0, 4); };"
DATES_WITHOUT_YEAR = "exports.month = function (d) { return d.slice(5, 7); };"
REPORT = "exports.run = function (input) { return 'Report ' + dates.year(input.day); };"


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


def _module(api: TestClient, module_id: str, content: str, *, publish: bool = True, **extra: object) -> dict:
    expect(api.post(BASE, json={"id": module_id, "description": extra.pop("description", f"{module_id} does things"), "draftContent": content, **extra}), 201)
    if publish:
        expect(api.post(f"{BASE}/{module_id}/publish"), 200)
    return api.get(f"{BASE}/{module_id}").json()


def _etag(api: TestClient, module_id: str) -> str:
    return api.get(f"{BASE}/{module_id}").headers["ETag"].strip('"')


def _dates_and_report(api: TestClient) -> tuple[str, str]:
    """Seed 004's story: `report` imports `dates` and calls `dates.year`."""
    dates, report = unique_id("dates"), unique_id("report")
    _module(api, dates, DATES_V1)
    _module(api, report, REPORT.replace("dates.", f"{dates}."), draftImports=[dates],
            tool={"inputParameters": [{"name": "day", "description": "a day", "required": True}]})
    return dates, report


def test_the_review_names_the_importer_a_draft_would_break_and_publishing_is_refused(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, report = _dates_and_report(api)
    # the dates draft drops `year`, which report calls
    expect(api.put(f"{BASE}/{dates}", json={"draftContent": DATES_WITHOUT_YEAR}), 200)

    review = client.get(f"/console/modules/{dates}/publish-review", headers=HTMX)
    assert review.status_code == 200
    assert f'<a href="/console/modules/{report}">{report}</a>' in review.text
    assert "would fail" in review.text and "Publishing is refused" in review.text
    assert "Publish version" not in review.text  # no button when the dry run says it would fail
    # the diff: the published code against the draft, as text too
    assert "-" + html.escape(DATES_V1) in review.text and "+" + html.escape(DATES_WITHOUT_YEAR) in review.text

    # a publish posted anyway is refused with the failing module, linked, in the dialog
    refused = _post(client, csrf, f"/console/modules/{dates}/publish", version=_etag(api, dates))
    assert refused.status_code == 422
    assert f'Failing module: <a href="/console/modules/{report}">{report}</a>' in refused.text
    assert api.get(f"{BASE}/{dates}").json()["published"]["version"] == 1


def test_a_review_that_passes_offers_publish_and_publishing_leads_to_the_module(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, _ = _dates_and_report(api)
    expect(api.put(f"{BASE}/{dates}", json={"draftContent": DATES_V1 + "\n" + DATES_WITHOUT_YEAR}), 200)
    review = client.get(f"/console/modules/{dates}/publish-review", headers=HTMX)
    assert review.status_code == 200
    assert "Publish version 2" in review.text and "✓ works" in review.text
    version = re.search(r'name="version" value="(\d+)"', review.text).group(1)

    published = _post(client, csrf, f"/console/modules/{dates}/publish", version=version)
    assert published.status_code == 200
    assert published.headers["HX-Redirect"] == f"/console/modules/{dates}"
    assert api.get(f"{BASE}/{dates}").json()["published"]["version"] == 2
    # the Published card: status, version, who, the code behind a toggle
    card = client.get(f"/console/modules/{dates}").text.split('id="published-card-heading"')[1].split("</section>")[0]
    assert "Published, no draft pending" in card and "<dt>Version</dt><dd>2</dd>" in card
    assert "<dt>Published by</dt><dd>admin</dd>" in card and "<summary>Show the published code</summary>" in card
    # without htmx: a 303 to the module page; a stale version is refused (B7)
    again = _post(client, csrf, f"/console/modules/{dates}/publish", htmx=False, version=version)
    assert again.status_code in (409, 412)


def test_nothing_to_publish_and_a_stale_version_are_explained_in_the_dialog(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    name = unique_id("plain")
    _module(api, name, "exports.a = 1;")
    review = client.get(f"/console/modules/{name}/publish-review", headers=HTMX)
    assert review.status_code == 200 and "has no draft to publish" in review.text and "Publish version" not in review.text
    expect(api.put(f"{BASE}/{name}", json={"draftContent": "exports.a = 2;"}), 200)
    stale = _post(client, csrf, f"/console/modules/{name}/publish", version="1")
    assert stale.status_code == 412 and "Publishing is refused" in stale.text


def test_discard_draft_confirms_or_explains_r11(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    never = unique_id("never")
    _module(api, never, "exports.a = 1;", publish=False)
    body = client.get(f"/console/modules/{never}/discard-review", headers=HTMX)
    assert body.status_code == 200 and "was never published" in body.text and "Discard the draft</button>" not in body.text
    refused = _post(client, csrf, f"/console/modules/{never}/discard")
    assert refused.status_code == 409 and "never published" in refused.text

    name = unique_id("disc")
    _module(api, name, "exports.a = 1;")
    assert "has no draft" in client.get(f"/console/modules/{name}/discard-review", headers=HTMX).text
    expect(api.put(f"{BASE}/{name}", json={"draftContent": "exports.a = 2;"}), 200)
    body = client.get(f"/console/modules/{name}/discard-review", headers=HTMX)
    assert "Discard the draft</button>" in body.text
    version = re.search(r'name="version" value="(\d+)"', body.text).group(1)
    done = _post(client, csrf, f"/console/modules/{name}/discard", version=version)
    assert done.status_code == 200 and done.headers["HX-Redirect"] == f"/console/modules/{name}"
    assert api.get(f"{BASE}/{name}").json()["state"] == "PUBLISHED"


def test_a_module_a_prompt_and_a_resource_render_with_lists_them_and_cannot_be_deleted(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    renderer, prompt, resource = unique_id("render"), unique_id("review"), unique_id("card")
    _module(api, renderer, "exports.run = function (i) { return 'Review ' + i.code; };",
            tool={"inputParameters": [{"name": "code", "description": "the code", "required": True}]})
    expect(api.post("/api/v1/admin/prompts", json={"id": prompt, "description": "Asks for a review", "module": renderer,
                                                   "arguments": [{"name": "code", "required": True}]}), 201)
    expect(api.post("/api/v1/admin/resources", json={"id": resource, "description": "A card", "uriTemplate": "card://{code}",
                                                     "mimeType": "text/plain", "module": renderer}), 201)
    listed = [f'Prompt <a href="/console/prompts/{prompt}">{prompt}</a> is rendered or completed by it',
              f'Resource <a href="/console/resources/{resource}">{resource}</a> is rendered by it']
    page = client.get(f"/console/modules/{renderer}")
    used_by = page.text.split('id="used-by"')[1].split("</section>")[0]
    assert all(line in used_by for line in listed) and "Nothing uses it" not in used_by
    body = client.get(f"/console/modules/{renderer}/delete-review", headers=HTMX)
    assert all(line in body.text for line in listed)
    assert "cannot be deleted" in body.text and f"Delete {renderer}</button>" not in body.text
    refused = _post(client, csrf, f"/console/modules/{renderer}/delete", version=_etag(api, renderer))
    assert refused.status_code == 409 and all(line in refused.text for line in listed)
    assert api.get(f"{BASE}/{renderer}").status_code == 200


def test_delete_lists_what_uses_the_module_and_deletes_what_nothing_uses(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    dates, report = _dates_and_report(api)
    body = client.get(f"/console/modules/{dates}/delete-review", headers=HTMX)
    assert body.status_code == 200
    assert f'Module <a href="/console/modules/{report}">{report}</a> imports it' in body.text
    assert "cannot be deleted" in body.text and f"Delete {dates}</button>" not in body.text
    refused = _post(client, csrf, f"/console/modules/{dates}/delete", version=_etag(api, dates))
    assert refused.status_code == 409 and f'<a href="/console/modules/{report}">{report}</a>' in refused.text

    body = client.get(f"/console/modules/{report}/delete-review", headers=HTMX)
    assert f"Delete {report}</button>" in body.text
    done = _post(client, csrf, f"/console/modules/{report}/delete", htmx=False, version=_etag(api, report))
    assert done.status_code == 303 and done.headers["location"] == f"/console/modules/{report}/deleted"
    page = client.get(done.headers["location"])
    assert page.status_code == 200 and "was deleted" in page.text
    assert api.get(f"{BASE}/{report}").status_code == 404
    # its history stays, without write controls for a module that is gone
    history = client.get(f"/console/modules/{report}/history")
    assert history.status_code == 200 and "is deleted" in history.text and "Restore version" not in history.text


def test_duplicate_checks_the_name_and_makes_a_new_module(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    name = unique_id("orig")
    _module(api, name, "exports.a = 1;")
    check = f"/console/modules/{name}/duplicate-check"
    assert "Must not start with a digit" in client.get(check, params={"id": "1bad"}, headers=HTMX).text
    assert "Already used by" in client.get(check, params={"id": name}, headers=HTMX).text
    fresh = unique_id("copy")
    assert "is free" in client.get(check, params={"id": fresh}, headers=HTMX).text

    taken = _post(client, csrf, f"/console/modules/{name}/duplicate", id=name)
    assert taken.status_code == 422 and 'aria-invalid="true"' in taken.text and "Already used by" in taken.text
    assert not re.search(r"\bR2\b", taken.text)  # the rule's code is not shown (a token may hold the letters)
    made = _post(client, csrf, f"/console/modules/{name}/duplicate", id=fresh)
    assert made.headers["HX-Redirect"] == f"/console/modules/{fresh}"
    copy = api.get(f"{BASE}/{fresh}").json()
    assert copy["state"] == "UNPUBLISHED" and copy["draft"]["content"] == "exports.a = 1;"


def test_history_shows_the_timeline_compares_versions_and_restores_one_into_the_draft(admin, api) -> None:  # noqa: ANN001
    client, csrf = admin
    name = unique_id("hist")
    before = datetime.now(timezone.utc)
    _module(api, name, "exports.a = 1;", description="the first description")
    expect(api.put(f"{BASE}/{name}", json={"draftContent": "exports.a = 2;", "description": "the second description"}), 200)
    expect(api.post(f"{BASE}/{name}/publish"), 200)

    page = client.get(f"/console/modules/{name}/history")
    assert page.status_code == 200
    assert "Published version 1" in page.text and "Published version 2" in page.text and "Draft changed" in page.text
    assert "<time datetime=" in page.text
    compared = client.get(f"/console/modules/{name}/history", params={"a": "1", "b": "2"})
    assert "\n-exports.a = 1;\n+exports.a = 2;" in compared.text  # a unified diff, a line each
    assert "the first description" in compared.text and "the second description" in compared.text

    # as of an instant after the first publish: the first description
    first_at = api.get(f"{BASE}/{name}/versions").json()[0]["publishedAt"]
    at = datetime.fromisoformat(first_at).astimezone(timezone.utc).replace(tzinfo=None) + timedelta(microseconds=1)
    as_of = client.get(f"/console/modules/{name}/history", params={"at": at.isoformat()})
    section = as_of.text.split('id="as-of-result-heading"')[1].split("</section>")[0]
    assert "the first description" in section and "the second description" not in section
    before_any = client.get(f"/console/modules/{name}/history", params={"at": (before - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")})
    assert "did not exist at that instant" in before_any.text

    # restore version 1 into the draft
    assert f'value="{_etag(api, name)}"' in page.text
    restored = _post(client, csrf, f"/console/modules/{name}/restore", htmx=False, version=_etag(api, name), restore="1")
    assert restored.status_code == 303 and restored.headers["location"] == f"/console/modules/{name}"
    module = api.get(f"{BASE}/{name}").json()
    assert module["state"] == "DRAFT" and module["draft"]["content"] == "exports.a = 1;"
    assert "Version 1 restored into the draft" in client.get(f"/console/modules/{name}/history").text


def test_bad_history_parameters_are_explained_not_a_500(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    name = unique_id("bad")
    _module(api, name, "exports.a = 1;")
    page = client.get(f"/console/modules/{name}/history", params={"a": "99", "b": "nope", "at": "yesterday"})
    assert page.status_code == 200
    assert page.text.count('aria-invalid="true"') == 3
    assert "Give a date and time" in page.text and "Choose a published version" in page.text
    assert client.get("/console/modules/nobody_here/history").status_code == 404
    assert client.get("/console/modules/no-such/publish-review").status_code == 404


def test_an_auditor_reads_the_history_and_sees_no_write_control_and_its_writes_are_refused(auditor, api) -> None:  # noqa: ANN001
    client, csrf = auditor
    name = unique_id("aud")
    _module(api, name, "exports.a = 1;")
    history = client.get(f"/console/modules/{name}/history")
    assert history.status_code == 200 and "Published version 1" in history.text
    assert "Restore version" not in history.text
    page = client.get(f"/console/modules/{name}")
    assert page.status_code == 200 and "History and versions" in page.text
    for control in ("publish-dialog", "More actions", "Discard draft", "Delete code module", "Duplicate"):
        assert control not in page.text
    for path in ("publish-review", "discard-review", "delete-review"):
        assert client.get(f"/console/modules/{name}/{path}").status_code == 403
    for path, fields in (("publish", {}), ("discard", {}), ("delete", {}), ("duplicate", {"id": unique_id("x")}), ("restore", {"restore": "1"})):
        answer = _post(client, csrf, f"/console/modules/{name}/{path}", htmx=False, **fields)
        assert answer.status_code == 403, path
    assert api.get(f"{BASE}/{name}").status_code == 200


def test_a_write_without_the_csrf_token_is_refused(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    name = unique_id("csrf")
    _module(api, name, "exports.a = 1;")
    answer = client.post(f"/console/modules/{name}/delete", data={"version": _etag(api, name)}, headers=_origin(client))
    assert answer.status_code == 403
    assert api.get(f"{BASE}/{name}").status_code == 200


def test_module_text_in_the_history_the_card_and_the_review_is_escaped(admin, api) -> None:  # noqa: ANN001
    client, _ = admin
    name = unique_id("esc")
    evil = "<script>alert(1)</script>"
    _module(api, name, f"exports.a = '</pre>{evil}';", description=f"evil {evil}")
    expect(api.put(f"{BASE}/{name}", json={"draftContent": f"exports.a = '</textarea>{evil}';", "description": f"new {evil}"}), 200)
    pages = [
        client.get(f"/console/modules/{name}/history"),
        client.get(f"/console/modules/{name}/history", params={"a": "1", "b": "draft"}),
        client.get(f"/console/modules/{name}"),
        client.get(f"/console/modules/{name}/publish-review", headers=HTMX),
    ]
    for page in pages:
        assert page.status_code == 200
        assert evil not in page.text and "</textarea><script" not in page.text and "</pre><script" not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text


def test_a_discard_and_a_restore_toast_with_an_undo_that_puts_the_replaced_draft_back(admin, api) -> None:  # noqa: ANN001
    from console.toast import COOKIE, read_cookie

    client, csrf = admin
    name = unique_id("undo")
    _module(api, name, "exports.a = 1;")
    expect(api.put(f"{BASE}/{name}", json={"draftContent": "exports.a = 2;"}), 200)
    done = _post(client, csrf, f"/console/modules/{name}/discard", version=_etag(api, name))
    toast = read_cookie(done.cookies[COOKIE])
    assert toast is not None and "discarded" in toast["text"] and toast["undo"]["url"] == f"/console/modules/{name}/undo"
    assert api.get(f"{BASE}/{name}").json()["draft"] is None
    undone = _post(client, csrf, toast["undo"]["url"], htmx=False, **toast["undo"]["fields"])
    assert undone.status_code == 303 and "Undone" in read_cookie(undone.cookies[COOKIE])["text"]
    assert api.get(f"{BASE}/{name}").json()["draft"]["content"] == "exports.a = 2;"
    # a second Undo of the same discard is refused: the module moved on (412), nothing changes
    again = _post(client, csrf, toast["undo"]["url"], **toast["undo"]["fields"])
    assert again.status_code in (409, 412) and api.get(f"{BASE}/{name}").json()["draft"]["content"] == "exports.a = 2;"

    # a restore over the draft, undone: the draft is back
    restored = _post(client, csrf, f"/console/modules/{name}/restore", restore="1", version=_etag(api, name))
    toast = read_cookie(restored.cookies[COOKIE])
    assert "restored into the draft" in toast["text"] and api.get(f"{BASE}/{name}").json()["draft"]["content"] == "exports.a = 1;"
    _post(client, csrf, toast["undo"]["url"], **toast["undo"]["fields"])
    assert api.get(f"{BASE}/{name}").json()["draft"]["content"] == "exports.a = 2;"
    # an Undo that names no discard or restore is a clear 400, never a 500
    bad = _post(client, csrf, f"/console/modules/{name}/undo", version="1")
    assert bad.status_code == 400
