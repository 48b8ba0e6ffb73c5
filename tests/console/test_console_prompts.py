"""Prompts in the console (issue 33, 1): the list, a new prompt's form, its page with its draft,
publish with a message, a test of the draft, a refused save with each message at its field, discard,
delete and the history; the same rules as REST, since every change goes through the kind. The
arguments and messages are rows of fields (added and removed by the server, without JavaScript);
the JSON view saves the whole definition."""

from __future__ import annotations

import json
import re

from fastapi.testclient import TestClient

from tests.helpers import expect, same_origin, sign_in_console

PAGES = "/console/prompts"
API = "/api/v1/admin/prompts"


def form(text: str = "Say hello to {{who}}.", **fields: str) -> dict[str, str]:
    """The structured form as a browser posts it: one argument row (a1) and one message row (m1)."""
    base = {"description": "Greets someone", "title": "", "tags": "", "module": "",
            "arg_row": "a1", "arg_a1_name": "who", "arg_a1_description": "whom to greet", "arg_a1_required": "on",
            "arg_a1_values": "", "arg_a1_completer": "",
            "msg_row": "m1", "msg_m1_role": "user", "msg_m1_text": text, "msg_m1_content": ""}
    return {**base, **fields}


def signed_in(client: TestClient):  # noqa: ANN201
    admin = TestClient(client.app)
    csrf = sign_in_console(admin, next=PAGES)
    return admin, lambda url, data: admin.post(url, data={**data, "csrf_token": csrf}, headers=same_origin(admin), follow_redirects=False)


def test_a_prompt_is_made_published_tested_and_deleted_from_its_pages(client: TestClient) -> None:
    admin, post = signed_in(client)
    assert "No prompt yet" in admin.get(PAGES).text
    new = expect(admin.get(f"{PAGES}/new"), 200).text
    assert 'id="messages"' in new and 'id="arguments"' in new and "Add an argument" in new
    # a placeholder that names no argument: refused at its message's text field, what was typed kept
    bad = post(PAGES, form(text="Hi {{whom}}", id="greet"))
    assert bad.status_code == 200 and "names no argument" in bad.text and "Hi {{whom}}" in bad.text
    assert re.search(r'<p class="error" id="msg-m1-text-error">[^<]*names no argument', bad.text)
    assert 'id="msg-m1-text" name="msg_m1_text"' in bad.text and 'aria-invalid="true"' in bad.text
    # an argument's name that is not one: at the argument's Name
    bad = post(PAGES, form(id="greet", arg_a1_name="2nd", text="Hi"))
    assert re.search(r'id="arg-a1-name-error">[^<]*a letter or _', bad.text), bad.text
    made = post(PAGES, form(id="greet"))
    assert made.status_code == 303 and made.headers["location"] == f"{PAGES}/greet"
    assert client.get(f"{API}/greet").json()["draft"]["arguments"] == [
        {"name": "who", "description": "whom to greet", "required": True, "completion": None}]
    page = expect(admin.get(f"{PAGES}/greet"), 200).text
    assert "<h1>prompt greet</h1>" in page and "not offered until published" in page and "Publish the draft" in page
    assert 'value="whom to greet"' in page and "Say hello to {{who}}." in page
    assert "no MCP server or usage profile names it" in page
    published = post(f"{PAGES}/greet/publish", {"message": "first words"})
    assert published.status_code == 303
    page = admin.get(f"{PAGES}/greet").text
    assert "version 1 is offered" in page and "first words" in page
    assert expect(client.get(f"{API}/greet"), 200).json()["published"]["message"] == "first words"
    # a draft, tested before it is published
    version = str(client.get(f"{API}/greet").json()["version"])
    expect(post(f"{PAGES}/greet", form(version=version, text="Greet {{who}}!")), 303)
    page = admin.get(f"{PAGES}/greet").text
    assert 'id="test-who" name="test_who"' in page  # one test field per argument
    tested = expect(post(f"{PAGES}/greet/test", {"test_mode": "fields", "test_who": "Ada"}), 200).text
    assert "Greet Ada!" in tested and 'id="test-who" name="test_who" value="Ada"' in tested
    missing = expect(post(f"{PAGES}/greet/test", {"test_mode": "fields", "test_who": ""}), 200).text
    assert "the argument &#39;who&#39; is required" in missing
    assert "Greet Grace!" in expect(post(f"{PAGES}/greet/test", {"arguments": '{"who": "Grace"}'}), 200).text  # or as JSON
    # a save from a page opened before that change is refused (If-Match from the form)
    stale = post(f"{PAGES}/greet", form(version="1"))
    assert stale.status_code == 200 and "after you opened it" in stale.text
    expect(post(f"{PAGES}/greet/discard", {}), 303)
    assert client.get(f"{API}/greet").json()["state"] == "PUBLISHED"
    listed = admin.get(PAGES).text
    assert f'href="{PAGES}/greet"' in listed and "published" in listed
    assert expect(post(f"{PAGES}/greet/delete", {}), 303).headers["location"] == PAGES
    history = expect(admin.get(f"{PAGES}/greet/history"), 200).text
    assert "is deleted; its history stays" in history
    assert history.count('<span class="hint">(event ') == 5  # created, published, draft saved, discarded, deleted
    assert "Published version 1" in history and "Draft discarded" in history


def test_rows_are_added_and_removed_without_saving_and_completions_and_other_content_are_kept(client: TestClient) -> None:
    admin, post = signed_in(client)
    typed = form(id="ask", text="Ask {{who}} about {{topic}}")
    added = expect(post(PAGES, {**typed, "row": "add-arguments"}), 200).text
    assert client.get(f"{API}/ask").status_code == 404  # nothing saved
    keys = re.findall(r'name="arg_row" value="(\w+)"', added)
    assert len(keys) == 2 and keys[0] == "a1" and 'value="whom to greet"' in added and "Ask {{who}} about {{topic}}" in added
    assert f'id="arg-{keys[1]}-name" name="arg_{keys[1]}_name" value="" autocomplete="off" spellcheck="false" autofocus' in added
    second = {"arg_row": ["a1", "a2"], "arg_a2_name": "topic", "arg_a2_description": "", "arg_a2_values": "weather\nsports\n",
              "arg_a2_completer": ""}
    content = {"type": "resource", "resource": {"uri": "memo://{{topic}}", "text": "Notes on {{topic}}"}}
    messages = {"msg_row": ["m1", "m2"], "msg_m2_role": "assistant", "msg_m2_text": "", "msg_m2_content": json.dumps(content)}
    expect(post(PAGES, {**typed, **second, **messages}), 303)
    draft = client.get(f"{API}/ask").json()["draft"]
    assert draft["arguments"][1] == {"name": "topic", "description": "", "required": False, "completion": {"values": ["weather", "sports"]}}
    assert draft["messages"][1] == {"role": "assistant", "content": content}
    page = admin.get(f"{PAGES}/ask").text
    assert "weather\nsports</textarea>" in page and "memo://{{topic}}" in page
    # both completion values and a module: refused at the values; bad JSON content: at the content
    version = str(client.get(f"{API}/ask").json()["version"])
    both = post(f"{PAGES}/ask", {**typed, **second, "arg_a2_completer": "lookup", "version": version})
    assert re.search(r'id="arg-a2-values-error">[^<]*either', both.text), both.text
    broken = post(f"{PAGES}/ask", {**typed, **second, **messages, "msg_m2_content": "{not json", "version": version})
    assert re.search(r'id="msg-m2-content-error">[^<]*not JSON', broken.text), broken.text
    # a message removed: the form again without it, nothing saved
    removed = expect(post(f"{PAGES}/ask", {**typed, **second, **messages, "version": version, "row": "remove-messages:m2"}), 200).text
    assert 'name="msg_row" value="m2"' not in removed and 'name="msg_row" value="m1"' in removed
    assert len(client.get(f"{API}/ask").json()["draft"]["messages"]) == 2


def test_the_json_view_saves_the_whole_definition_and_refuses_at_the_json(client: TestClient) -> None:
    admin, post = signed_in(client)
    expect(post(PAGES, form(id="jsonic")), 303)
    page = admin.get(f"{PAGES}/jsonic").text
    assert 'id="json"' in page and "&#34;whom to greet&#34;" in page
    version = str(client.get(f"{API}/jsonic").json()["version"])
    bad = post(f"{PAGES}/jsonic", {"editor": "json", "version": version, "json": '{"description": "x", "colour": "red"}'})
    assert bad.status_code == 200 and re.search(r'id="json-error">json.colour: not a field of a prompt', bad.text)
    assert "&#34;colour&#34;: &#34;red&#34;" in bad.text  # what was typed, kept
    wrong = post(f"{PAGES}/jsonic", {"editor": "json", "version": version, "json": '{"messages": []}'})
    assert re.search(r'id="json-error">messages: give either messages', wrong.text), wrong.text
    good = {"description": "Greets in JSON", "messages": [{"role": "user", "content": {"type": "text", "text": "Hi {{who}}"}}]}
    expect(post(f"{PAGES}/jsonic", {"editor": "json", "version": version, "json": json.dumps(good)}), 303)
    draft = client.get(f"{API}/jsonic").json()["draft"]
    assert draft["description"] == "Greets in JSON" and draft["arguments"][0]["name"] == "who"
