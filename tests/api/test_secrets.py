"""Secrets over REST and in the console (docs/kinds/index.md, docs/console.md): created, listed, rotated, described and
deleted; refused while a tool refers to one; each tenant's own; and a value that never comes back
out: not in an event, the audit export, a log line, an answer or a page.

The tools that refer to secrets here are the tests' example kind (`tests/kinds/constant.py`), whose
constant `{"secret": id}` refers to a secret and whose call answers the SHA-256 of its value."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

import pytest
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient

from api.kinds import KindPlugin
from console.toast import COOKIE, read_cookie
from application.kinds.base import Tools
from domain.callers import token_digest
from domain.catalog import ToolEntry
from domain.errors import SecretUnreadable
from domain.ports import ExecutionResult
from entrypoints.compose import bootstrap
from entrypoints.kinds import DEFAULT_KINDS
from entrypoints.web import create_app
from infrastructure.audit import export_chunks, verify
from application.principals import ADMIN, Principal
from infrastructure.settings import Settings
from tests.console.test_console_others import console, post
from tests.helpers import ADMIN_TOKEN, expect, unique_id
from tests.kinds.constant import ConstantKind, router as constants_router

SECRETS = "/api/v1/admin/secrets"
CONSTANTS = "/api/v1/admin/constants"
VALUE = "correct horse battery staple 7f3a"
NEW_VALUE = "rotated value 9c1e, never echoed"


class SecretConstantKind(ConstantKind):
    """A constant whose value `{"secret": id}` refers to a secret; a call answers its value's SHA-256."""

    def secrets_used(self, tenant: str) -> Mapping[str, Sequence[str]]:
        used: dict[str, list[str]] = {}
        for constant in self.constants(tenant):
            if isinstance(constant.value, dict) and "secret" in constant.value:
                used.setdefault(constant.value["secret"], []).append(constant.name)
        return used

    def call(self, tenant: str, entry: ToolEntry, arguments: Any, context: dict[str, Any], tools: Tools, depth: int) -> ExecutionResult:
        reference = super().call(tenant, entry, arguments, context, tools, depth).output
        assert self.deps.secrets is not None
        value = self.deps.secrets.value(tenant, reference["secret"])
        return ExecutionResult(output=hashlib.sha256(value.encode()).hexdigest())


WITH_SECRET_CONSTANTS = (*DEFAULT_KINDS, KindPlugin(SecretConstantKind, routers=(constants_router,)))


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


@pytest.fixture
def client(settings: Settings, shared_sandbox: Any) -> Iterator[TestClient]:
    app = create_app(bootstrap(settings, sandbox=shared_sandbox, kinds=WITH_SECRET_CONSTANTS))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as test_client:
        yield test_client


def uses(client: TestClient, secret_id: str) -> str:
    """A tool (a constant) that refers to the secret; answers its name."""
    name = unique_id("uses")
    expect(client.post(CONSTANTS, json={"id": name, "description": "uses a secret", "value": {"secret": secret_id},
                                        "exposeInChat": True}), 201)
    return name


def call(client: TestClient, tool: str) -> Any:
    return client.post(f"/api/v1/tools/{tool}/call", json={"input": {}})


def test_a_secret_is_created_listed_rotated_described_deleted_and_created_again(client: TestClient) -> None:
    created = expect(client.post(SECRETS, json={"id": "weather-key", "value": VALUE, "description": "the weather API"}), 201).json()
    assert set(created) == {"id", "description", "fingerprint", "createdAt", "createdBy", "updatedAt", "updatedBy", "usedBy"}
    assert created["id"] == "weather-key" and created["createdBy"] == "admin" and created["usedBy"] == []
    assert len(created["fingerprint"]) == 16 and created["fingerprint"] != sha(VALUE)[:16]
    assert expect(client.get(SECRETS), 200).json() == [created]
    assert expect(client.get(f"{SECRETS}/weather-key"), 200).json() == created
    # rotate: a new fingerprint, the description kept
    rotated = expect(client.put(f"{SECRETS}/weather-key", json={"value": NEW_VALUE}), 200).json()
    assert rotated["fingerprint"] != created["fingerprint"] and rotated["description"] == "the weather API"
    assert rotated["createdAt"] == created["createdAt"] and rotated["updatedAt"] > created["updatedAt"]
    # describe: the fingerprint kept
    described = expect(client.put(f"{SECRETS}/weather-key", json={"description": "weather, v2"}), 200).json()
    assert described["fingerprint"] == rotated["fingerprint"] and described["description"] == "weather, v2"
    # the same again records nothing
    expect(client.put(f"{SECRETS}/weather-key", json={"value": NEW_VALUE, "description": "weather, v2"}), 200)
    expect(client.delete(f"{SECRETS}/weather-key"), 204)
    assert client.get(f"{SECRETS}/weather-key").status_code == 404
    assert expect(client.get(SECRETS), 200).json() == []
    # created again on the same history, with the first value's fingerprint again
    again = expect(client.post(SECRETS, json={"id": "weather-key", "value": VALUE}), 201).json()
    assert again["fingerprint"] == created["fingerprint"] and again["description"] == ""
    events = expect(client.get(f"{SECRETS}/weather-key/history"), 200).json()["events"]
    assert [e["type"] for e in events] == ["Created", "Rotated", "DescriptionChanged", "Deleted", "Recreated"]
    assert [e["data"].get("fingerprint") for e in events] == [created["fingerprint"], rotated["fingerprint"], None, None,
                                                                created["fingerprint"]]
    assert all(events[i]["previousHash"] == events[i - 1]["hash"] for i in range(1, len(events)))


def test_a_tool_reads_the_value_of_the_moment(client: TestClient) -> None:
    expect(client.post(SECRETS, json={"id": "api-token", "value": VALUE}), 201)
    tool = uses(client, "api-token")
    assert expect(call(client, tool), 200).json()["output"] == sha(VALUE)
    expect(client.put(f"{SECRETS}/api-token", json={"value": NEW_VALUE}), 200)
    # the very next call has the new value
    assert expect(call(client, tool), 200).json()["output"] == sha(NEW_VALUE)


def test_a_secret_in_use_is_not_deleted_and_names_its_tools(client: TestClient) -> None:
    expect(client.post(SECRETS, json={"id": "shared", "value": VALUE}), 201)
    first, second = uses(client, "shared"), uses(client, "shared")
    assert expect(client.get(f"{SECRETS}/shared"), 200).json()["usedBy"] == sorted([first, second])
    refused = client.delete(f"{SECRETS}/shared")
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["code"] == "secret-in-use" and problem["usedBy"] == sorted([first, second])
    assert first in problem["detail"] and second in problem["detail"]
    expect(client.delete(f"{CONSTANTS}/{first}"), 204)
    expect(client.delete(f"{CONSTANTS}/{second}"), 204)
    expect(client.delete(f"{SECRETS}/shared"), 204)


@pytest.mark.parametrize(("body", "field"), [
    ({"id": "has space", "value": VALUE}, "id"),
    ({"id": "", "value": VALUE}, "id"),
    ({"id": "x" * 65, "value": VALUE}, "id"),
    ({"id": "ok", "value": ""}, "value"),
    ({"id": "ok", "value": "é" * 4097}, "value"),  # 8,194 bytes
    ({"id": "ok", "value": VALUE, "description": "d" * 4001}, "description"),
    ({"id": "ok", "value": [VALUE]}, "value"),
    ({"id": "ok", "value": VALUE, "description": 7}, "description"),
    ({"id": "ok"}, "value"),
    ({"id": "ok", "value": VALUE, "valu": VALUE}, "valu"),
])
def test_a_bad_body_is_a_400_naming_the_field_and_never_the_value(client: TestClient, body: dict[str, Any], field: str) -> None:
    answer = client.post(SECRETS, json=body)
    assert answer.status_code == 400, answer.text
    assert field in [e["field"] for e in answer.json()["errors"]]
    assert VALUE not in answer.text and "éé" not in answer.text
    assert expect(client.get(SECRETS), 200).json() == []


def test_a_bad_rotation_is_a_400_and_changes_nothing(client: TestClient) -> None:
    created = expect(client.post(SECRETS, json={"id": "k", "value": VALUE}), 201).json()
    for body, field in (({"value": ""}, "value"), ({"value": "v" * 8193}, "value"), ({"description": "d" * 4001}, "description")):
        answer = client.put(f"{SECRETS}/k", json=body)
        assert answer.status_code == 400 and [e["field"] for e in answer.json()["errors"]] == [field]
    assert expect(client.get(f"{SECRETS}/k"), 200).json() == created


def test_an_unknown_or_taken_id(client: TestClient) -> None:
    for answer in (client.get(f"{SECRETS}/nope"), client.put(f"{SECRETS}/nope", json={"value": VALUE}),
                   client.delete(f"{SECRETS}/nope"), client.get(f"{SECRETS}/nope/history")):
        assert answer.status_code == 404 and answer.json()["code"] == "not-found"
    expect(client.post(SECRETS, json={"id": "k", "value": VALUE}), 201)
    taken = client.post(SECRETS, json={"id": "k", "value": NEW_VALUE})
    assert taken.status_code == 409 and taken.json()["code"] == "id-taken"


def test_each_tenant_sees_only_its_own_secrets(client: TestClient) -> None:
    services = client.app.state.services  # type: ignore[attr-defined]
    services.authenticator.add(token_digest("other-tenant-token"), Principal(name="their admin", role=ADMIN, tenant="other"))
    theirs = TestClient(client.app, headers={"Authorization": "Bearer other-tenant-token"})
    expect(client.post(SECRETS, json={"id": "mine", "value": VALUE}), 201)
    # the other tenant finds nothing of it, and may take the same id for its own value
    assert expect(theirs.get(SECRETS), 200).json() == []
    for answer in (theirs.get(f"{SECRETS}/mine"), theirs.put(f"{SECRETS}/mine", json={"value": "x"}),
                   theirs.delete(f"{SECRETS}/mine"), theirs.get(f"{SECRETS}/mine/history")):
        assert answer.status_code == 404
    expect(theirs.post(SECRETS, json={"id": "mine", "value": NEW_VALUE}), 201)
    assert services.secrets.value("default", "mine") == VALUE
    assert services.secrets.value("other", "mine") == NEW_VALUE
    assert [s["id"] for s in expect(client.get(SECRETS), 200).json()] == ["mine"]


def test_an_auditor_lists_secrets_and_changes_none(client: TestClient) -> None:
    expect(client.post(SECRETS, json={"id": "k", "value": VALUE}), 201)
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "auditor", "role": "auditor"}), 201).json()
    auditor = TestClient(client.app, headers={"Authorization": f"Bearer {issued['token']}"})
    assert [s["id"] for s in expect(auditor.get(SECRETS), 200).json()] == ["k"]
    expect(auditor.get(f"{SECRETS}/k/history"), 200)
    assert auditor.post(SECRETS, json={"id": "k2", "value": VALUE}).status_code == 403
    assert auditor.put(f"{SECRETS}/k", json={"value": NEW_VALUE}).status_code == 403
    assert auditor.delete(f"{SECRETS}/k").status_code == 403


def test_a_value_is_never_in_an_event_an_export_a_log_or_an_answer(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    answers = [
        client.post(SECRETS, json={"id": "k", "value": VALUE, "description": "d"}),
        client.post(SECRETS, json={"id": "k", "value": VALUE}),  # 409
        client.put(f"{SECRETS}/k", json={"value": NEW_VALUE}),
        client.get(SECRETS), client.get(f"{SECRETS}/k"), client.get(f"{SECRETS}/k/history"),
        client.put(f"{SECRETS}/k", json={"value": ""}),
        client.get("/api/v1/admin/audit/export"),
    ]
    tool = uses(client, "k")
    answers += [call(client, tool), client.delete(f"{SECRETS}/k")]
    services = client.app.state.services  # type: ignore[attr-defined]
    # every stored event, raw
    stored = b"".join(n.state for n in services.store.recorder.select_notifications(1, 1_000_000))
    assert b"fingerprint" in stored
    exported = b"".join(export_chunks(services.store)) + b"".join(
        export_chunks(services.store, tenant="default", kinds=services.toolbox.kinds))
    for secret in (VALUE, NEW_VALUE):
        assert secret.encode() not in stored
        assert secret.encode() not in exported
        assert all(secret not in a.text for a in answers)
        assert secret not in caplog.text
        assert all(secret not in str(r.__dict__) for r in caplog.records)


def test_secret_events_are_exported_with_their_tenant_and_verified(client: TestClient) -> None:
    services = client.app.state.services  # type: ignore[attr-defined]
    services.authenticator.add(token_digest("other-tenant-token"), Principal(name="their admin", role=ADMIN, tenant="other"))
    theirs = TestClient(client.app, headers={"Authorization": "Bearer other-tenant-token"})
    fingerprint = expect(client.post(SECRETS, json={"id": "ours", "value": VALUE}), 201).json()["fingerprint"]
    expect(client.put(f"{SECRETS}/ours", json={"value": NEW_VALUE}), 200)
    expect(theirs.post(SECRETS, json={"id": "theirs", "value": VALUE}), 201)
    import orjson

    ours = [orjson.loads(line) for chunk in export_chunks(services.store, tenant="default", kinds=services.toolbox.kinds)
            for line in chunk.splitlines()]
    secret_events = [e for e in ours if e.get("topic", "").startswith("domain.secrets:Secret.")]
    assert [(e["topic"].rpartition(".")[2], e["state"]["secret_id"]) for e in secret_events] == [("Created", "ours"), ("Rotated", "ours")]
    assert secret_events[0]["state"]["fingerprint"] == fingerprint
    report = verify(services.store)
    assert report.intact and report.aggregates >= 2


def test_a_value_stored_under_another_key_is_a_clear_error(settings: Settings, shared_sandbox: Any) -> None:
    app = create_app(bootstrap(settings, sandbox=shared_sandbox, kinds=WITH_SECRET_CONSTANTS))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as first:
        expect(first.post(SECRETS, json={"id": "k", "value": VALUE}), 201)
        tool = uses(first, "k")
    # the service starts again with a key that is not the one the value was encrypted with
    other = Settings(data_dir=settings.data_dir, admin_token=ADMIN_TOKEN, secret_key=Fernet.generate_key().decode())
    app = create_app(bootstrap(other, sandbox=shared_sandbox, kinds=WITH_SECRET_CONSTANTS))
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as second:
        answer = call(second, tool)
        assert answer.status_code == 503
        assert answer.json()["detail"].startswith("the secret 'k' cannot be decrypted with this service's TOOLSMITH_SECRET_KEY")
        assert "Traceback" not in answer.text and "gAAAA" not in answer.text  # no ciphertext (a Fernet token)
        # listing needs no key
        assert [s["id"] for s in expect(second.get(SECRETS), 200).json()] == ["k"]
        with pytest.raises(SecretUnreadable):
            app.state.services.secrets.value("default", "k")


# -- the console --------------------------------------------------------------------------------


def test_the_console_creates_rotates_and_deletes_without_showing_a_value(client: TestClient) -> None:
    admin = console(client, ADMIN_TOKEN)
    page = "/console/secrets"
    # a bad id: the form comes back with the id and description, never the value
    bad = post(admin, page, {"id": "bad id", "value": VALUE, "description": "for the weather"}, page=page)
    assert bad.status_code == 200 and "must be 1–64 letters" in bad.text
    assert VALUE not in bad.text and 'value="bad id"' in bad.text and 'value="for the weather"' in bad.text
    assert bad.headers["cache-control"] == "no-store"
    made = post(admin, page, {"id": "weather", "value": VALUE, "description": "for the weather"}, page=page)
    assert made.status_code == 303
    listed = admin.get(made.headers["location"]).text
    fingerprint = expect(client.get(f"{SECRETS}/weather"), 200).json()["fingerprint"]
    assert fingerprint in listed and VALUE not in listed
    said = read_cookie(made.cookies[COOKIE])  # a toast on the list says it, and never the value
    assert said is not None and said["text"] == "Created the secret weather." and VALUE not in unquote(made.headers["set-cookie"])
    # rotate from the dialog
    assert post(admin, f"{page}/weather/rotate", {"value": NEW_VALUE, "description": "for the weather"}, page=page).status_code == 303
    rotated = expect(client.get(f"{SECRETS}/weather"), 200).json()
    assert rotated["fingerprint"] != fingerprint
    assert client.app.state.services.secrets.value("default", "weather") == NEW_VALUE  # type: ignore[attr-defined]
    # in use: the delete is refused, naming the tool
    tool = uses(client, "weather")
    refused = post(admin, f"{page}/weather/delete", {}, page=page)
    assert refused.status_code == 409 and f"still used by {tool}" in refused.text and tool in refused.text
    expect(client.delete(f"{CONSTANTS}/{tool}"), 204)
    assert post(admin, f"{page}/weather/delete", {}, page=page).status_code == 303
    assert expect(client.get(SECRETS), 200).json() == []


def test_an_auditor_sees_the_secrets_page_without_controls(client: TestClient) -> None:
    expect(client.post(SECRETS, json={"id": "k", "value": VALUE, "description": "a key"}), 201)
    issued = expect(client.post("/api/v1/admin/tokens", json={"name": "auditor", "role": "auditor"}), 201).json()
    auditor = console(client, issued["token"])
    page = auditor.get("/console/secrets")
    assert page.status_code == 200 and "a key" in page.text
    assert page.text.count('method="post"') == 1  # signing out
    assert post(auditor, "/console/secrets", {"id": "k2", "value": VALUE}, page="/console/secrets").status_code == 403
    assert post(auditor, "/console/secrets/k/delete", {}, page="/console/secrets").status_code == 403
