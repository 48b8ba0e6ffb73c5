"""An admin's resources, a published kind (issue 33, 2: "the same lifecycle and audit as prompts"):
drafted, tested, published, discarded, deleted and made again over REST with the history, versions,
asOf, revert, changesets and If-Match of a prompt, R2's names, and R12: a module a resource renders
with is in use while the resource names it."""

from __future__ import annotations

from fastapi.testclient import TestClient

from tests.helpers import expect

RESOURCES = "/api/v1/admin/resources"
MODULES = "/api/v1/admin/code-modules"
MOTD = {"id": "motd", "description": "The message of the day", "uri": "memo://motd", "mimeType": "text/plain",
        "text": "Bring an umbrella."}


def read(client: TestClient, draft: bool = True) -> str:
    tested = expect(client.post(f"{RESOURCES}/motd/test", json={"draft": draft}), 200).json()
    return str(tested["contents"][0]["text"])


def test_a_resource_is_drafted_published_changed_reverted_and_deleted_with_its_history(client: TestClient) -> None:
    made = expect(client.post(RESOURCES, json=MOTD), 201)
    assert made.headers["ETag"] == '"1"' and made.json()["state"] == "UNPUBLISHED" and made.json()["published"] is None
    assert read(client) == "Bring an umbrella."
    unpublished = client.post(f"{RESOURCES}/motd/test", json={"draft": False})  # nothing published yet
    assert unpublished.status_code == 400 and unpublished.json()["errors"][0]["field"] == "draft"
    published = expect(client.post(f"{RESOURCES}/motd/publish", json={"message": "first"}, headers={"If-Match": '"1"'}), 200)
    assert published.json()["published"]["version"] == 1 and published.json()["published"]["message"] == "first"
    assert client.put(f"{RESOURCES}/motd", json={"text": "Sunshine."}, headers={"If-Match": '"1"'}).status_code == 412
    drafted = expect(client.put(f"{RESOURCES}/motd", json={"text": "Sunshine."}, headers={"If-Match": published.headers["ETag"]}), 200)
    assert drafted.json()["state"] == "DRAFT" and read(client) == "Sunshine." and read(client, draft=False) == "Bring an umbrella."
    expect(client.delete(f"{RESOURCES}/motd/draft"), 200)
    assert client.delete(f"{RESOURCES}/motd/draft").status_code == 409  # no draft to discard
    expect(client.put(f"{RESOURCES}/motd", json={"text": "Sunshine."}), 200)
    expect(client.post(f"{RESOURCES}/motd/publish"), 200)
    versions = expect(client.get(f"{RESOURCES}/motd/versions"), 200).json()["versions"]
    assert [(v["version"], v["text"]) for v in versions] == [(1, "Bring an umbrella."), (2, "Sunshine.")]
    first = expect(client.get(f"{RESOURCES}/motd", params={"asOf": versions[0]["publishedAt"]}), 200).json()
    assert first["published"]["version"] == 1 and first["published"]["text"] == "Bring an umbrella."
    reverted = expect(client.post(f"{RESOURCES}/motd/revert", json={"version": 1}), 200).json()
    assert reverted["draft"]["text"] == "Bring an umbrella."
    assert client.post(f"{RESOURCES}/motd/revert", json={"version": 9}).status_code == 404
    assert expect(client.post(f"{RESOURCES}/motd/publish"), 200).json()["published"]["version"] == 3
    expect(client.delete(f"{RESOURCES}/motd"), 204)
    assert client.get(f"{RESOURCES}/motd").status_code == 404
    events = expect(client.get(f"{RESOURCES}/motd/history"), 200).json()["events"]
    assert [e["type"] for e in events] == ["Created", "Published", "DraftChanged", "DraftDiscarded", "DraftChanged", "Published",
                                           "Reverted", "Published", "Deleted"]
    assert all(e["by"] == "admin" for e in events)
    expect(client.post(RESOURCES, json=MOTD), 201)  # the same aggregate's next life, versions going on
    assert expect(client.post(f"{RESOURCES}/motd/publish"), 200).json()["published"]["version"] == 4


def test_a_resource_s_name_is_one_of_the_tenant_s_names_and_a_changeset_publishes_all_or_none(client: TestClient) -> None:
    expect(client.post(MODULES, json={"id": "counter", "description": "Counts", "draftContent": "exports.run = () => 1;"}), 201)
    taken = client.post(RESOURCES, json={**MOTD, "id": "counter"})
    assert taken.status_code == 409 and "module" in taken.text
    expect(client.post(RESOURCES, json=MOTD), 201)
    module = client.post(MODULES, json={"id": "motd", "description": "x", "draftContent": "exports.run = () => 1;"})
    assert module.status_code == 409 and "resource" in module.text
    expect(client.post(RESOURCES, json={**MOTD, "id": "logo", "uri": "memo://logo"}), 201)
    done = expect(client.post(f"{RESOURCES}/publish", json={"ids": ["motd", "logo"], "message": "both"}), 200).json()
    assert [i["version"] for i in done["items"]] == [1, 1] and done["id"].startswith("cs_")
    expect(client.put(f"{RESOURCES}/logo", json={"text": "A logo."}), 200)
    assert client.post(f"{RESOURCES}/publish", json={"ids": ["logo", "motd"]}).status_code == 409  # motd has no draft
    assert expect(client.get(f"{RESOURCES}/logo"), 200).json()["state"] == "DRAFT"


def test_a_module_a_resource_renders_with_is_in_use_while_the_resource_names_it(client: TestClient) -> None:
    expect(client.post(MODULES, json={"id": "renderOrder", "description": "Renders an order",
                                      "draftContent": "exports.run = (i) => 'Order ' + i.order;",
                                      "tool": {"inputParameters": [{"name": "order", "description": "o", "required": True}]}}), 201)
    expect(client.post(f"{MODULES}/renderOrder/publish"), 200)
    expect(client.post(RESOURCES, json={"id": "order", "description": "An order", "uriTemplate": "crm://orders/{order}",
                                        "mimeType": "text/plain", "module": "renderOrder"}), 201)
    # the draft alone names it already, as a prompt's does
    assert expect(client.get(f"{MODULES}/renderOrder/usage"), 200).json()["resources"] == ["order"]
    expect(client.post(f"{RESOURCES}/order/publish"), 200)
    tested = expect(client.post(f"{RESOURCES}/order/test", json={"uri": "crm://orders/7", "draft": False}), 200).json()
    assert tested["contents"][0]["text"] == "Order 7"
    refused = client.delete(f"{MODULES}/renderOrder")
    assert refused.status_code == 409 and "used by resource order (R12)" in refused.text
    assert expect(client.post(f"{RESOURCES}/order/test", json={"uri": "crm://orders/8", "draft": False}), 200).json()[
        "contents"][0]["text"] == "Order 8"
    expect(client.delete(f"{RESOURCES}/order"), 204)
    assert "resources" not in expect(client.get(f"{MODULES}/renderOrder/usage"), 200).json()
    expect(client.delete(f"{MODULES}/renderOrder"), 204)
