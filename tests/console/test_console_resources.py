"""An admin's resource in the console (issue 33, 2): its address (one URI or a URI template), media
type and content (text, bytes or a module, one chosen), each refusal shown at its field with what
was typed kept; the same rules as REST, since every change goes through the kind."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from tests.helpers import expect, same_origin, sign_in_console

PAGES = "/console/resources"
API = "/api/v1/admin/resources"


def form(**fields: str) -> dict[str, str]:
    base = {"description": "A customer's card", "title": "", "tags": "", "addressKind": "template", "address": "crm://customers/{id}",
            "mimeType": "text/plain", "source": "text", "text": "Customer {{id}}", "blob": "", "module": ""}
    return {**base, **fields}


def test_a_resource_s_address_and_content_are_chosen_and_refused_at_their_fields(client: TestClient) -> None:
    admin = TestClient(client.app)
    csrf = sign_in_console(admin, next=PAGES)
    post = lambda url, data: admin.post(url, data={**data, "csrf_token": csrf}, headers=same_origin(admin), follow_redirects=False)  # noqa: E731
    new = expect(admin.get(f"{PAGES}/new"), 200).text
    assert 'id="addressKind-uri" name="addressKind" value="uri" checked' in new and 'id="source-text" name="source" value="text" checked' in new
    # a template without a variable: at the address, what was typed kept
    bad = post(PAGES, form(id="card", address="crm://customers"))
    assert re.search(r'id="address-error">uriTemplate: a template has at least one', bad.text), bad.text
    assert 'value="crm://customers"' in bad.text and 'id="addressKind-template" name="addressKind" value="template" checked' in bad.text
    # a placeholder the template does not have: at the text
    bad = post(PAGES, form(id="card", text="Customer {{name}}"))
    assert re.search(r'id="text-error">text: \{\{name\}\} names no variable', bad.text), bad.text
    expect(post(PAGES, form(id="card")), 303)
    page = admin.get(f"{PAGES}/card").text
    assert "A URI the template crm://customers/{id} matches." in page
    read = expect(post(f"{PAGES}/card/test", {"test_mode": "fields", "test_uri": "crm://customers/c7"}), 200).text
    assert "Customer c7" in read and 'value="crm://customers/c7"' in read
    wrong = expect(post(f"{PAGES}/card/test", {"test_mode": "fields", "test_uri": "crm://orders/1"}), 200).text
    assert 'id="test-error"' in wrong and "matches" in wrong
    draft = client.get(f"{API}/card").json()["draft"]
    assert draft["uriTemplate"] == "crm://customers/{id}" and draft["uri"] is None and draft["text"] == "Customer {{id}}"
    # bytes chosen: the text typed beside them is not saved
    version = str(client.get(f"{API}/card").json()["version"])
    expect(post(f"{PAGES}/card", form(addressKind="uri", address="crm://logo", mimeType="image/png", source="blob", blob="iVBORw0KGgo=",
                                      version=version)), 303)
    draft = client.get(f"{API}/card").json()["draft"]
    assert draft["uri"] == "crm://logo" and draft["uriTemplate"] is None and draft["blob"] == "iVBORw0KGgo=" and draft["text"] is None
    page = admin.get(f"{PAGES}/card").text
    assert 'id="source-blob" name="source" value="blob" checked' in page and 'value="crm://logo"' in page
    # no content for the chosen source: refused at that source's field
    version = str(client.get(f"{API}/card").json()["version"])
    empty = post(f"{PAGES}/card", form(source="module", version=version))
    assert re.search(r'id="module-error">text: give one of text, blob', empty.text), empty.text
