"""A prompt's and a resource's history in the console (issue 33, 1 and 2), as a code module's: the
published versions with Restore into the draft (B1), a comparison of two versions or a version
and the draft, the item as of an instant (B2) and every event; several drafts published together
as one changeset from the list (B6), and the kind's changesets; used by (the MCP servers and usage
profiles that name it). Every change goes through the kind, so REST shows what the console did."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest
from fastapi.testclient import TestClient

from tests.helpers import expect, same_origin, sign_in_console

KINDS = {
    "prompts": ({"description": "Greets", "messages": [{"role": "user", "content": {"type": "text", "text": "Hello"}}]},
                {"messages": [{"role": "user", "content": {"type": "text", "text": "Good morning"}}]}, "Good morning"),
    "resources": ({"description": "A memo", "uri": "memo://motd", "mimeType": "text/plain", "text": "Hello"},
                  {"text": "Good morning"}, "Good morning"),
}


def signed_in(client: TestClient, next: str):  # noqa: ANN201
    admin = TestClient(client.app)
    csrf = sign_in_console(admin, next=next)
    return admin, lambda url, data: admin.post(url, data={**data, "csrf_token": csrf}, headers=same_origin(admin), follow_redirects=False)


@pytest.mark.parametrize("kind", KINDS)
def test_versions_compare_as_of_and_restore_into_the_draft(client: TestClient, kind: str) -> None:
    first, change, changed_text = KINDS[kind]
    api, pages = f"/api/v1/admin/{kind}", f"/console/{kind}"
    admin, post = signed_in(client, pages)
    expect(client.post(api, json={"id": "daily", **first}), 201)
    expect(client.post(f"{api}/daily/publish", json={"message": "the first"}), 200)
    time.sleep(0.01)
    before_change = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")
    time.sleep(0.01)
    expect(client.put(f"{api}/daily", json=change), 200)
    expect(client.post(f"{api}/daily/publish", json={"message": "the second"}), 200)

    history = expect(admin.get(f"{pages}/daily/history"), 200).text
    assert 'id="version-1"' in history and 'id="version-2"' in history and "the first" in history and "the second" in history
    # version 1 against version 2: the changed field, before and after
    compared = expect(admin.get(f"{pages}/daily/history", params={"a": "1", "b": "2"}), 200).text
    assert "Version 1 → version 2" in compared and 'class="tag-changed"' in compared and changed_text in compared
    assert expect(admin.get(f"{pages}/daily/history", params={"a": "1", "b": "9"}), 200).text.count("Choose a published version") == 1
    # as of an instant between the two: version 1 was offered
    past = expect(admin.get(f"{pages}/daily/history", params={"at": before_change}), 200).text
    shown = past[past.index('id="as-of-result"'):]
    assert "Published version 1" in shown and "Hello" in shown and changed_text not in shown.split("Timeline")[0]
    assert "did not exist at that instant" in admin.get(f"{pages}/daily/history", params={"at": "2001-01-01T00:00"}).text
    assert "Give a date and time" in admin.get(f"{pages}/daily/history", params={"at": "yesterday"}).text

    # restore version 1 into the draft (If-Match from the page: a stale one is refused)
    version = re.search(r'name="version" value="(\d+)"', history).group(1)
    assert post(f"{pages}/daily/revert", {"revert": "1", "version": "1"}).headers["location"] == f"{pages}/daily/history"
    restored = post(f"{pages}/daily/revert", {"revert": "1", "version": version})
    assert restored.status_code == 303 and restored.headers["location"] == f"{pages}/daily"
    item = client.get(f"{api}/daily").json()
    assert item["state"] == "DRAFT" and item["published"]["version"] == 2
    assert (item["draft"].get("text") or item["draft"].get("messages")[0]["content"]["text"]) == "Hello"
    history = admin.get(f"{pages}/daily/history").text
    assert "Version 1 restored into the draft" in history and 'value="draft" selected' in history
    assert "Replace the draft with version 2?" in history  # a draft now: restoring asks first
    assert admin.get(f"{pages}/nothing/history").status_code == 404


@pytest.mark.parametrize("kind", KINDS)
def test_drafts_published_together_as_one_changeset_from_the_list(client: TestClient, kind: str) -> None:
    first, _, _ = KINDS[kind]
    api, pages = f"/api/v1/admin/{kind}", f"/console/{kind}"
    admin, post = signed_in(client, pages)
    for name, uri in (("one", "memo://one"), ("two", "memo://two"), ("three", "memo://three")):
        expect(client.post(api, json={"id": name, **first, **({"uri": uri} if kind == "resources" else {})}), 201)
    listed = admin.get(pages).text
    assert 'name="ids" value="one"' in listed and "Publish together" in listed
    versions = {f"version_{n}": str(client.get(f"{api}/{n}").json()["version"]) for n in ("one", "two")}
    # nothing chosen: refused on the list
    refused = post(f"{pages}/publish-selected", {"message": "x"})
    assert refused.status_code == 409 and "choose the drafts to publish together" in refused.text
    # a stale list (If-Match per item): nothing published
    stale = post(f"{pages}/publish-selected", {"ids": ["one", "two"], "version_one": "99", "version_two": versions["version_two"]})
    assert stale.status_code == 409 and "Nothing published" in stale.text and client.get(f"{api}/one").json()["published"] is None
    together = post(f"{pages}/publish-selected", {"ids": ["one", "two"], **versions, "message": "both at once"})
    assert together.status_code == 303
    location = together.headers["location"]
    assert location.startswith(f"{pages}/changeset-history?id=cs_")
    changeset = client.get(f"{api}/one").json()["published"]["changeset"]
    assert changeset == client.get(f"{api}/two").json()["published"]["changeset"] and changeset in location
    assert client.get(f"{api}/three").json()["published"] is None
    shown = expect(admin.get(location), 200).text
    assert "both at once" in shown and "one version 1" in shown and "two version 1" in shown and "three" not in shown
    assert f"changeset-history?id={changeset}\">{changeset}</a>" in admin.get(f"{pages}/one/history").text
    assert changeset in admin.get(f"{pages}/changeset-history").text
    assert admin.get(f"{pages}/changeset-history", params={"id": "cs_nothing"}).status_code == 404


def test_a_prompt_s_page_names_the_servers_and_profiles_that_use_it(client: TestClient) -> None:
    first, _, _ = KINDS["prompts"]
    expect(client.post("/api/v1/admin/prompts", json={"id": "greeter", **first}), 201)
    expect(client.post("/api/v1/admin/prompts/greeter/publish", json={}), 200)
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": "front", "tools": ["greeter"]}), 201)
    admin, _ = signed_in(client, "/console/prompts")
    page = admin.get("/console/prompts/greeter").text
    used = page[page.index('id="used-by"'):page.index("</dd>", page.index('id="used-by"'))]
    assert 'href="/console/servers/front"' in used and "usage profiles" not in used


def test_a_module_field_suggests_the_tenant_s_tool_modules(client: TestClient) -> None:
    expect(client.post("/api/v1/admin/code-modules", json={"id": "lookup", "description": "Looks up",
                                                           "draftContent": "exports.run = (i) => 'x';", "tool": {"exposeInChat": True}}), 201)
    expect(client.post("/api/v1/admin/code-modules", json={"id": "helpers", "description": "A library",
                                                           "draftContent": "exports.x = 1;"}), 201)
    admin, _ = signed_in(client, "/console/prompts")
    for page in (admin.get("/console/prompts/new").text, admin.get("/console/resources/new").text):
        offered = page[page.index('<datalist id="tool-modules">'):page.index("</datalist>")]
        assert '<option value="lookup">' in offered and "helpers" not in offered
        assert 'list="tool-modules"' in page


def test_an_auditor_reads_every_page_of_both_kinds_without_a_write_control(client: TestClient) -> None:
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "an auditor", "role": "auditor"}), 201).json()
    auditor = TestClient(client.app)
    sign_in_console(auditor, token=issued["token"], next="/console/prompts")
    for kind, (first, change, _) in KINDS.items():
        api, pages, seen = f"/api/v1/admin/{kind}", f"/console/{kind}", f"seen_{kind}"  # one name across kinds (R2)
        expect(client.post(api, json={"id": seen, **first}), 201)
        expect(client.post(f"{api}/{seen}/publish", json={"message": "the first"}), 200)
        expect(client.put(f"{api}/{seen}", json=change), 200)
        for url in (pages, f"{pages}/{seen}", f"{pages}/{seen}/history", f"{pages}/{seen}/history?a=1&b=draft",
                    f"{pages}/changeset-history"):
            page = expect(auditor.get(url), 200).text
            assert page.count('method="post"') == 1, url  # signing out
            assert "Restore version" not in page and ">Publish together<" not in page and 'name="row"' not in page, url
        assert auditor.get(f"{pages}/new").status_code == 403
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', auditor.get(pages).text).group(1)
        for url, data in ((f"{pages}/{seen}/revert", {"revert": "1"}), (f"{pages}/publish-selected", {"ids": seen}),
                          (f"{pages}/{seen}", {"editor": "json", "json": "{}"})):
            assert auditor.post(url, data={**data, "csrf_token": csrf}, headers=same_origin(auditor),
                                follow_redirects=False).status_code == 403, url
        assert client.get(f"{api}/{seen}").json()["state"] == "DRAFT"
