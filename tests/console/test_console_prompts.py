"""Prompts in the console (issue 33, 1): the list, a new prompt's form, its page with its draft,
publish with a message, a test of the draft, a refused save with each message at its field, discard,
delete and the history; the same rules as REST, since every change goes through the kind."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from tests.helpers import expect, same_origin, sign_in_console

PAGES = "/console/prompts"
MESSAGES = [{"role": "user", "content": {"type": "text", "text": "Say hello to {{who}}."}}]
ARGUMENTS = [{"name": "who", "description": "whom to greet", "required": True}]


def form(**fields: str) -> dict[str, str]:
    base = {"description": "Greets someone", "title": "", "tags": "", "arguments": json.dumps(ARGUMENTS),
            "messages": json.dumps(MESSAGES), "module": ""}
    return {**base, **fields}


def test_a_prompt_is_made_published_tested_and_deleted_from_its_pages(client: TestClient) -> None:
    admin = TestClient(client.app)
    csrf = sign_in_console(admin, next=PAGES)
    post = lambda url, data: admin.post(url, data={**data, "csrf_token": csrf}, headers=same_origin(admin), follow_redirects=False)  # noqa: E731
    assert "No prompt yet" in admin.get(PAGES).text
    assert 'id="messages"' in expect(admin.get(f"{PAGES}/new"), 200).text
    # a placeholder that names no argument: refused at its field, what was typed kept
    bad = post(PAGES, form(id="greet", messages=json.dumps([{"role": "user", "content": {"type": "text", "text": "Hi {{whom}}"}}])))
    assert bad.status_code == 200 and "names no argument" in bad.text and "Hi {{whom}}" in bad.text
    made = post(PAGES, form(id="greet"))
    assert made.status_code == 303 and made.headers["location"] == f"{PAGES}/greet"
    page = expect(admin.get(f"{PAGES}/greet"), 200).text
    assert "<h1>prompt greet</h1>" in page and "not offered until published" in page and "Publish the draft" in page
    published = post(f"{PAGES}/greet/publish", {"message": "first words"})
    assert published.status_code == 303
    page = admin.get(f"{PAGES}/greet").text
    assert "version 1 is offered" in page and "first words" in page
    assert expect(client.get("/api/v1/admin/prompts/greet"), 200).json()["published"]["message"] == "first words"
    # a draft, tested before it is published
    expect(post(f"{PAGES}/greet", form(version=str(client.get("/api/v1/admin/prompts/greet").json()["version"]),
                                       messages=json.dumps([{"role": "user", "content": {"type": "text", "text": "Greet {{who}}!"}}]))),
           303)
    tested = expect(post(f"{PAGES}/greet/test", {"arguments": '{"who": "Ada"}'}), 200).text
    assert "Greet Ada!" in tested
    missing = expect(post(f"{PAGES}/greet/test", {"arguments": "{}"}), 200).text
    assert "the argument &#39;who&#39; is required" in missing
    # a save from a page opened before that change is refused (If-Match from the form)
    stale = post(f"{PAGES}/greet", form(version="1"))
    assert stale.status_code == 200 and "after you opened it" in stale.text
    expect(post(f"{PAGES}/greet/discard", {}), 303)
    assert client.get("/api/v1/admin/prompts/greet").json()["state"] == "PUBLISHED"
    listed = admin.get(PAGES).text
    assert f'href="{PAGES}/greet"' in listed and "published" in listed
    assert expect(post(f"{PAGES}/greet/delete", {}), 303).headers["location"] == PAGES
    history = expect(admin.get(f"{PAGES}/greet/history"), 200).text
    assert history.count('<th scope="row">') == 5  # created, published, draft changed, discarded, deleted
