"""Prompts, a published kind (issue 33, 1): the code modules' lifecycle over REST (draft, test,
publish, discard, delete, history, versions, asOf, revert, changesets, If-Match, used-by, R2), and
the rules of a definition, each refusal naming its field."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.helpers import expect

PROMPTS = "/api/v1/admin/prompts"
GREETING = {"id": "greet", "description": "Greets someone", "title": "Greeting",
            "arguments": [{"name": "who", "description": "whom to greet", "required": True,
                           "completion": {"values": ["Ada", "Alan", "Grace"]}}],
            "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello to {{who}}."}}]}


def text_of(rendered: dict[str, Any]) -> str:
    return rendered["messages"][0]["content"]["text"]


def test_a_prompt_is_drafted_published_changed_reverted_and_deleted_with_its_history(client: TestClient) -> None:
    made = expect(client.post(PROMPTS, json=GREETING), 201)
    assert made.headers["ETag"] == '"1"' and made.json()["state"] == "UNPUBLISHED" and made.json()["published"] is None
    assert [p["id"] for p in expect(client.get(PROMPTS), 200).json()] == ["greet"]
    # the draft renders in a test; nothing is published yet
    tested = expect(client.post(f"{PROMPTS}/greet/test", json={"arguments": {"who": "Ada"}}), 200).json()
    assert text_of(tested) == "Say hello to Ada."
    assert client.post(f"{PROMPTS}/greet/test", json={"arguments": {"who": "Ada"}, "draft": False}).status_code == 404
    published = expect(client.post(f"{PROMPTS}/greet/publish", json={"message": "first"}, headers={"If-Match": '"1"'}), 200)
    assert published.json()["state"] == "PUBLISHED" and published.json()["published"]["version"] == 1
    assert published.json()["published"]["message"] == "first"
    # a stale If-Match is 412 and changes nothing
    changed = {"messages": [{"role": "user", "content": {"type": "text", "text": "Greet {{who}} warmly."}}]}
    assert client.put(f"{PROMPTS}/greet", json=changed, headers={"If-Match": '"1"'}).status_code == 412
    drafted = expect(client.put(f"{PROMPTS}/greet", json=changed, headers={"If-Match": published.headers["ETag"]}), 200).json()
    assert drafted["state"] == "DRAFT" and drafted["draft"]["description"] == "Greets someone"
    assert text_of(expect(client.post(f"{PROMPTS}/greet/test", json={"arguments": {"who": "Al"}, "draft": False}), 200).json()) \
        == "Say hello to Al."
    expect(client.delete(f"{PROMPTS}/greet/draft"), 200)
    assert client.delete(f"{PROMPTS}/greet/draft").status_code == 409  # no draft to discard
    expect(client.put(f"{PROMPTS}/greet", json=changed), 200)
    expect(client.post(f"{PROMPTS}/greet/publish"), 200)
    versions = expect(client.get(f"{PROMPTS}/greet/versions"), 200).json()["versions"]
    assert [(v["version"], v["messages"][0]["content"]["text"]) for v in versions] == [
        (1, "Say hello to {{who}}."), (2, "Greet {{who}} warmly.")]
    # asOf: as it stood at its first publish
    first = expect(client.get(f"{PROMPTS}/greet", params={"asOf": versions[0]["publishedAt"]}), 200).json()
    assert first["published"]["version"] == 1
    assert client.get(f"{PROMPTS}/greet", params={"asOf": "2024-05-06T10:00:00"}).status_code == 400
    # revert: version 1 becomes the draft again; publish it as version 3
    reverted = expect(client.post(f"{PROMPTS}/greet/revert", json={"version": 1}), 200).json()
    assert reverted["draft"]["messages"][0]["content"]["text"] == "Say hello to {{who}}."
    assert client.post(f"{PROMPTS}/greet/revert", json={"version": 9}).status_code == 404
    assert expect(client.post(f"{PROMPTS}/greet/publish"), 200).json()["published"]["version"] == 3
    expect(client.delete(f"{PROMPTS}/greet"), 204)
    assert client.get(f"{PROMPTS}/greet").status_code == 404
    events = expect(client.get(f"{PROMPTS}/greet/history"), 200).json()["events"]
    assert [e["type"] for e in events] == ["Created", "Published", "DraftChanged", "DraftDiscarded", "DraftChanged", "Published",
                                           "Reverted", "Published", "Deleted"]
    assert all(e["by"] == "admin" for e in events)
    # created again: the same aggregate's next life, versions going on
    expect(client.post(PROMPTS, json=GREETING), 201)
    assert expect(client.post(f"{PROMPTS}/greet/publish"), 200).json()["published"]["version"] == 4


def test_a_prompt_s_name_is_one_of_the_tenant_s_names_and_its_rules_name_the_field(client: TestClient) -> None:
    expect(client.post("/api/v1/admin/code-modules", json={"id": "counter", "description": "Counts",
                                                           "draftContent": "exports.run = () => 1;"}), 201)
    taken = client.post(PROMPTS, json={**GREETING, "id": "counter"})
    assert taken.status_code == 409 and "module" in taken.text
    expect(client.post(PROMPTS, json=GREETING), 201)
    assert client.post(PROMPTS, json=GREETING).status_code == 409
    module = client.post("/api/v1/admin/code-modules", json={"id": "greet", "description": "x", "draftContent": "exports.run = () => 1;"})
    assert module.status_code == 409 and "prompt" in module.text
    unknown = client.post(PROMPTS, json={**GREETING, "id": "bad", "messages": [
        {"role": "user", "content": {"type": "text", "text": "Hi {{who}} and {{whom}}"}}]})
    assert unknown.status_code == 400 and "messages[0].content.text" in unknown.text and "whom" in unknown.text
    neither = client.post(PROMPTS, json={"id": "bad", "description": "x"})
    assert neither.status_code == 400 and "messages" in neither.text
    role = client.post(PROMPTS, json={**GREETING, "id": "bad", "messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]})
    assert role.status_code in (400, 422) and "role" in role.text
    bad_id = client.post(PROMPTS, json={**GREETING, "id": "1 bad"})
    assert bad_id.status_code == 400 and "id" in bad_id.text


def test_a_template_of_a_thousand_placeholders_is_refused_at_once_and_the_service_keeps_serving(client: TestClient) -> None:
    text = "{{who}}" * 1_000
    refused = client.post(PROMPTS, json={**GREETING, "messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
    assert refused.status_code == 400
    assert "messages[0].content.text" in refused.text and "at most 200 placeholders" in refused.text
    expect(client.post(PROMPTS, json=GREETING), 201)
    assert expect(client.get(f"{PROMPTS}/greet"), 200).json()["id"] == "greet"


def test_a_changeset_publishes_every_draft_or_none(client: TestClient) -> None:
    expect(client.post(PROMPTS, json=GREETING), 201)
    expect(client.post(PROMPTS, json={**GREETING, "id": "greet2"}), 201)
    done = expect(client.post(f"{PROMPTS}/publish", json={"ids": ["greet", "greet2"], "message": "both"}), 200).json()
    assert [i["version"] for i in done["items"]] == [1, 1] and done["id"].startswith("cs_")
    # greet has no draft now: the changeset is refused whole, greet2 is not published again
    expect(client.put(f"{PROMPTS}/greet2", json={"title": "Other"}), 200)
    refused = client.post(f"{PROMPTS}/publish", json={"ids": ["greet2", "greet"]})
    assert refused.status_code == 409
    assert expect(client.get(f"{PROMPTS}/greet2"), 200).json()["state"] == "DRAFT"


def test_a_prompt_rendered_by_a_module_needs_the_module_published_and_used_by_names_its_servers(client: TestClient) -> None:
    rendered = {"id": "review", "description": "Asks for a review", "module": "reviewer",
                "arguments": [{"name": "code", "required": True}]}
    expect(client.post(PROMPTS, json=rendered), 201)
    refused = client.post(f"{PROMPTS}/review/publish")
    assert refused.status_code == 400 and "reviewer" in refused.text and "module" in refused.text
    expect(client.post("/api/v1/admin/code-modules", json={
        "id": "reviewer", "description": "Renders a review prompt",
        "draftContent": "exports.run = (i) => [{role: 'user', content: 'Review: ' + i.code}, "
                        "{role: 'assistant', content: {type: 'text', text: 'Sure.'}}];",
        "tool": {"inputParameters": [{"name": "code", "description": "the code", "required": True}]}}), 201)
    expect(client.post("/api/v1/admin/code-modules/reviewer/publish"), 200)
    expect(client.post(f"{PROMPTS}/review/publish"), 200)
    tested = expect(client.post(f"{PROMPTS}/review/test", json={"arguments": {"code": "x = 1"}, "draft": False}), 200).json()
    assert [(m["role"], m["content"]["text"]) for m in tested["messages"]] == [("user", "Review: x = 1"), ("assistant", "Sure.")]
    missing = client.post(f"{PROMPTS}/review/test", json={"arguments": {}})
    assert missing.status_code == 400 and "arguments.code" in missing.text
    expect(client.post("/api/v1/admin/mcp-servers", json={"id": "writing", "description": "Writing", "tools": ["review"]}), 201)
    assert expect(client.get(f"{PROMPTS}/review/usage"), 200).json() == {"servers": ["writing"], "usageProfiles": []}
    # the module is used by the prompt (R12): its used-by says so, and its delete is refused naming it
    assert expect(client.get("/api/v1/admin/code-modules/reviewer/usage"), 200).json()["prompts"] == ["review"]
    refused_delete = client.delete("/api/v1/admin/code-modules/reviewer")
    assert refused_delete.status_code == 409 and "used by prompt review (R12)" in refused_delete.text
    expect(client.delete(f"{PROMPTS}/review"), 204)
    assert "prompts" not in expect(client.get("/api/v1/admin/code-modules/reviewer/usage"), 200).json()
    expect(client.delete("/api/v1/admin/code-modules/reviewer"), 204)


def test_completions_come_from_a_published_module_and_a_failing_renderer_is_an_error_naming_it(client: TestClient) -> None:
    from tests.kinds.mcp import McpSession

    expect(client.post("/api/v1/admin/code-modules", json={
        "id": "cities", "description": "Completes city names",
        "draftContent": "exports.run = (i) => ['Paris', 'Porto', 'Prague', 'Oslo'].filter(c => c.startsWith(i.value));",
        "tool": {"inputParameters": [{"name": "argument", "description": "the argument", "required": True},
                                     {"name": "value", "description": "typed so far", "required": True},
                                     {"name": "context", "type": "object", "description": "the others", "required": True}]}}), 201)
    expect(client.post("/api/v1/admin/code-modules/cities/publish"), 200)
    expect(client.post("/api/v1/admin/code-modules", json={
        "id": "broken", "description": "Fails", "draftContent": "exports.run = () => { throw new Error('no words today'); };",
        "tool": {"inputParameters": [{"name": "city", "description": "a city", "required": True}]}}), 201)
    expect(client.post("/api/v1/admin/code-modules/broken/publish"), 200)
    expect(client.post(PROMPTS, json={"id": "trip", "description": "Plans a trip", "module": "broken",
                                       "arguments": [{"name": "city", "required": True, "completion": {"module": "cities"}}]}), 201)
    expect(client.post(f"{PROMPTS}/trip/publish"), 200)
    mcp = McpSession(client)
    completed = mcp.request("completion/complete", {"ref": {"type": "ref/prompt", "name": "trip"},
                                                     "argument": {"name": "city", "value": "P"}})
    assert completed["completion"]["values"] == ["Paris", "Porto", "Prague"]
    answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 7, "method": "prompts/get",
                                       "params": {"name": "trip", "arguments": {"city": "Oslo"}}}, headers=mcp.headers)
    error = answer.json()["error"]
    assert error["code"] == -32603 and "broken" in error["message"] and "no words today" in error["message"]
    missing = client.post("/mcp", json={"jsonrpc": "2.0", "id": 8, "method": "prompts/get", "params": {"name": "trip"}},
                          headers=mcp.headers).json()["error"]
    assert missing["code"] == -32602 and "'city'" in missing["message"]
