"""People through the REST API (docs/users.md): `/api/v1/admin/users` creates (with a password or by
invitation), lists by pages, reads, changes (If-Match), disables, enables and deletes; admins only,
auditors read; another tenant's person is a 404; bad input is a problem naming the field. Every
change names who made it; a person's own token and session name the person; the request rate
counts the person whatever they come through; and no answer, event or export holds a password or
its hash."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from domain.users import actor_of, users_id
from infrastructure import audit
from tests.helpers import ADMIN_TOKEN, OPERATOR_TOKEN, expect, same_origin

USERS = "/api/v1/admin/users"
PASSWORD = "correct horse battery staple"


def _user(api: TestClient, email: str = "ada@example.com", **fields: Any) -> dict[str, Any]:
    body = {"email": email, "name": "Ada Lovelace", "role": "admin", "password": PASSWORD, **fields}
    return expect(api.post(USERS, json=body), 201).json()


def _token(api: TestClient, role: str) -> str:
    return expect(api.post("/api/v1/admin/tokens", json={"name": f"a {role}", "role": role}), 201).json()["token"]


def _fields(answer: Any) -> list[str]:
    return [e["field"] for e in answer.json().get("errors", [])]


def test_create_get_change_disable_enable_delete(api: TestClient) -> None:
    made = _user(api, email="  Ada@Example.COM ", locale="fr-ch")
    assert made["email"] == "ada@example.com" and made["locale"] == "fr-CH" and made["status"] == "active"
    assert made["invitation"] is None and made["createdBy"] == "admin"
    assert not any(k in made for k in ("password", "hash", "passwordHash"))
    read = expect(api.get(f"{USERS}/{made['id']}"), 200)
    etag = read.headers["ETag"]
    changed = expect(api.patch(f"{USERS}/{made['id']}", json={"name": "Ada King", "role": "auditor"},
                               headers={"If-Match": etag}), 200).json()
    assert changed["name"] == "Ada King" and changed["role"] == "auditor"
    # The ETag read before the change is stale now: 412.
    assert api.patch(f"{USERS}/{made['id']}", json={"name": "Ada"}, headers={"If-Match": etag}).status_code == 412
    assert expect(api.post(f"{USERS}/{made['id']}/disable"), 200).json()["status"] == "disabled"
    assert expect(api.post(f"{USERS}/{made['id']}/enable"), 200).json()["status"] == "active"
    expect(api.delete(f"{USERS}/{made['id']}"), 204)
    assert api.get(f"{USERS}/{made['id']}").status_code == 404
    # Its email is free again.
    _user(api)


def test_list_pages_by_cursor(api: TestClient) -> None:
    for i in range(5):
        _user(api, email=f"p{i}@example.com", name=f"P {i}", role="auditor")
    seen, url = [], f"{USERS}?limit=2"
    while url:
        answer = expect(api.get(url), 200)
        seen += [u["email"] for u in answer.json()]
        link = answer.headers.get("Link")
        url = re.match(r"<([^>]+)>", link).group(1) if link else ""
    assert seen == [f"p{i}@example.com" for i in range(5)]
    assert api.get(f"{USERS}?cursor=!!").status_code == 400


@pytest.mark.parametrize(("body", "field"), [
    ({"email": "not an email"}, "email"),
    ({"email": "ada@"}, "email"),
    ({"password": "short"}, "password"),
    ({"role": "owner"}, "role"),
    ({"role": "caller", "usageProfile": "nope"}, "usageProfile"),
    ({"role": "admin", "usageProfile": "nope"}, "usageProfile"),
    ({"locale": "english please"}, "locale"),
    ({"locale": "xx-YY"}, "locale"),
    ({"name": "   "}, "name"),
    ({"email": 7}, "email"),
    ({"extra": 1}, "extra"),
])
def test_bad_input_names_the_field(api: TestClient, body: dict[str, Any], field: str) -> None:
    answer = api.post(USERS, json={"email": "bad@example.com", "name": "B", "role": "admin", "password": PASSWORD, **body})
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert field in _fields(answer)
    assert PASSWORD not in answer.text


def test_an_email_is_taken_once(api: TestClient) -> None:
    _user(api)
    assert api.post(USERS, json={"email": "ADA@example.com", "name": "X", "role": "admin", "password": PASSWORD}).status_code == 409


def test_a_caller_has_a_usage_profile(api: TestClient) -> None:
    expect(api.post("/api/v1/admin/usage-profiles", json={"id": "support", "allowedTools": [], "allowedTags": []}), 201)
    made = _user(api, role="caller", usageProfile="support")
    assert made["usageProfile"] == "support"
    # Made an admin, the profile goes.
    assert expect(api.patch(f"{USERS}/{made['id']}", json={"role": "admin"}), 200).json()["usageProfile"] is None


def test_auditors_read_and_callers_nothing(api: TestClient, app: FastAPI) -> None:
    made = _user(api)
    auditor = TestClient(app, headers={"Authorization": f"Bearer {_token(api, 'auditor')}"})
    assert auditor.get(USERS).status_code == 200
    assert auditor.get(f"{USERS}/{made['id']}").status_code == 200
    assert auditor.post(USERS, json={"email": "x@example.com", "name": "X", "role": "admin", "password": PASSWORD}).status_code == 403
    assert auditor.post(f"{USERS}/{made['id']}/disable").status_code == 403
    assert auditor.delete(f"{USERS}/{made['id']}").status_code == 403
    assert auditor.patch(f"{USERS}/{made['id']}", json={"name": "Y"}).status_code == 403
    caller = TestClient(app, headers={"Authorization": f"Bearer {_token(api, 'caller')}"})
    assert caller.get(USERS).status_code == 403
    operator = TestClient(app, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
    assert operator.get(USERS).status_code == 403
    assert TestClient(app).get(USERS).status_code == 401


def test_another_tenants_person_is_not_found(api: TestClient, app: FastAPI) -> None:
    operator = TestClient(app, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
    other = expect(operator.post("/api/v1/operator/tenants", json={"id": "other", "name": "Other"}), 201).json()
    theirs = TestClient(app, headers={"Authorization": f"Bearer {other['adminToken']}"})
    mine = _user(api)
    ghost = "0123456789abcdef"
    for method, path, body in (("GET", "", None), ("PATCH", "", {"name": "X"}), ("POST", "/disable", None),
                               ("POST", "/enable", None), ("POST", "/invitation", None), ("DELETE", "", None)):
        crossed = theirs.request(method, f"{USERS}/{mine['id']}{path}", json=body)
        unknown = theirs.request(method, f"{USERS}/{ghost}{path}", json=body)
        assert crossed.status_code == unknown.status_code == 404, (method, path)
        assert crossed.json()["detail"].replace(mine["id"], ghost) == unknown.json()["detail"]
    assert theirs.get(USERS).json() == []
    # The same email is free in the other tenant.
    assert theirs.post(USERS, json={"email": "ada@example.com", "name": "A", "role": "admin", "password": PASSWORD}).status_code == 201
    assert expect(api.get(f"{USERS}/{mine['id']}"), 200).json()["name"] == "Ada Lovelace"


def test_an_invitation_sets_the_password_once(api: TestClient, app: FastAPI) -> None:
    made = expect(api.post(USERS, json={"email": "bob@example.com", "name": "Bob", "role": "auditor"}), 201).json()
    assert made["status"] == "invited" and made["invitation"]["code"].startswith("tsi_")
    assert made["invitation"]["url"].startswith("/console/invitation?code=")
    code = made["invitation"]["code"]
    # The code is never shown again.
    assert code not in api.get(f"{USERS}/{made['id']}").text and code not in api.get(USERS).text
    browser = TestClient(app)
    page = browser.get(made["invitation"]["url"])
    assert page.status_code == 200 and "Bob" in page.text
    short = browser.post("/console/invitation", data={"code": code, "password": "short", "confirm": "short"}, headers=same_origin(browser))
    assert "at least 12 characters" in short.text
    done = browser.post("/console/invitation", data={"code": code, "password": PASSWORD, "confirm": PASSWORD},
                        headers=same_origin(browser), follow_redirects=False)
    assert done.status_code == 303
    assert expect(browser.get("/console/"), 200).url.path == "/console/modules"  # signed in
    assert expect(api.get(f"{USERS}/{made['id']}"), 200).json()["status"] == "active"
    # Used once.
    again = TestClient(app).post("/console/invitation", data={"code": code, "password": PASSWORD, "confirm": PASSWORD},
                                 headers=same_origin(browser))
    assert again.status_code == 404
    # A new invitation replaces the one before.
    first = expect(api.post(f"{USERS}/{made['id']}/invitation"), 201).json()["code"]
    second = expect(api.post(f"{USERS}/{made['id']}/invitation"), 201).json()["code"]
    assert TestClient(app).get(f"/console/invitation?code={first}").status_code == 404
    assert TestClient(app).get(f"/console/invitation?code={second}").status_code == 200


def test_events_name_the_person_and_never_hold_a_password(api: TestClient, app: FastAPI) -> None:
    services = app.state.services
    made = _user(api)
    person = TestClient(app)
    signed = person.post("/console/sign-in/password", headers=same_origin(person), follow_redirects=False,
                         data={"organization": "default", "email": "ada@example.com", "password": PASSWORD})
    assert signed.status_code == 303, signed.text
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', person.get("/console/tokens").text).group(1)
    # A change in the console by the person names them, their id and how they came.
    expect(person.post("/console/profiles", data={"id": "support", "allowedTags": "", "csrf_token": csrf},
                       headers=same_origin(person), follow_redirects=False), 303)
    profile = expect(api.get("/api/v1/admin/usage-profiles/support"), 200).json()
    assert actor_of(profile["createdBy"]) == {"user": made["id"], "name": "Ada Lovelace", "via": "console"}
    # The store, the vault's table and a whole export hold neither the password nor its hash.
    stored = [repr(e.__dict__) for e in services.store.stored_events(users_id("default"))]
    assert stored and not any(PASSWORD in s or "$argon2" in s for s in stored)
    out = io.BytesIO()
    audit.export(services.store, out)
    exported = out.getvalue().decode()
    assert "PasswordSet" in exported and PASSWORD not in exported and "$argon2" not in exported
    credential = services.users._credential("default", made["id"])["hash"]
    assert credential.startswith("$argon2id$") and credential not in exported
    # The tenant's own export (the admin's download) holds its people's events, and no credential.
    tenants = expect(api.get("/api/v1/admin/audit/export"), 200).text
    assert "UserAdded" in tenants and "PasswordSet" in tenants and "ada@example.com" in tenants
    assert PASSWORD not in tenants and "$argon2" not in tenants
    # The hash is at rest only encrypted (the vault's table).
    with services.store.recorder.datastore.transaction(commit=False) as cursor:
        cursor.execute("SELECT * FROM toolsmith_secrets")
        rows = repr(cursor.fetchall())
    assert "argon2" not in rows and PASSWORD not in rows


def test_a_disabled_or_deleted_persons_session_ends_at_once(api: TestClient, app: FastAPI) -> None:
    made = _user(api)
    person = TestClient(app)
    expect(person.post("/console/sign-in/password", headers=same_origin(person), follow_redirects=False,
                       data={"organization": "default", "email": "ada@example.com", "password": PASSWORD}), 303)
    assert person.get("/console/tokens", follow_redirects=False).status_code == 200
    expect(api.post(f"{USERS}/{made['id']}/disable"), 200)
    assert person.get("/console/tokens", follow_redirects=False).status_code in (303, 401)
    expect(api.post(f"{USERS}/{made['id']}/enable"), 200)
    assert person.get("/console/tokens", follow_redirects=False).status_code == 200
    expect(api.delete(f"{USERS}/{made['id']}"), 204)
    assert person.get("/console/tokens", follow_redirects=False).status_code in (303, 401)


def _signed_in(app: FastAPI, email: str = "ada@example.com", password: str = PASSWORD) -> tuple[TestClient, str]:
    """A browser-like client signed in as a person, and its pages' CSRF token."""
    person = TestClient(app)
    expect(person.post("/console/sign-in/password", headers=same_origin(person), follow_redirects=False,
                       data={"organization": "default", "email": email, "password": password}), 303)
    return person, re.search(r'name="csrf-token" content="([^"]+)"', person.get("/console/account").text).group(1)


def _persons_token(app: FastAPI, role: str = "admin") -> str:
    person, csrf = _signed_in(app)
    page = expect(person.post("/console/tokens", data={"name": f"ada's {role}", "role": role, "usageProfile": "", "csrf_token": csrf},
                              headers=same_origin(person)), 200).text
    return re.search(r'id="issued-secret" value="([^"]+)"', page).group(1)


def test_a_persons_token_is_theirs_capped_by_their_role_and_ends_with_them(api: TestClient, app: FastAPI) -> None:
    made = _user(api)
    token = _persons_token(app)
    theirs = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    expect(theirs.post("/api/v1/admin/usage-profiles", json={"id": "ops", "allowedTools": [], "allowedTags": []}), 201)
    record = expect(api.get("/api/v1/admin/usage-profiles/ops"), 200).json()
    assert actor_of(record["createdBy"]) == {"user": made["id"], "name": "Ada Lovelace", "via": "token"}
    assert len(app.state.services.users.tokens_of("default", made["id"])) == 1
    # Made an auditor, their admin token reads and changes nothing.
    expect(api.patch(f"{USERS}/{made['id']}", json={"role": "auditor"}), 200)
    assert theirs.get(USERS).status_code == 200
    assert theirs.post("/api/v1/admin/usage-profiles", json={"id": "ops2", "allowedTools": [], "allowedTags": []}).status_code == 403
    # Disabled, their token is no token; enabled, it works again; deleted, never again.
    expect(api.post(f"{USERS}/{made['id']}/disable"), 200)
    assert theirs.get(USERS).status_code == 401
    expect(api.post(f"{USERS}/{made['id']}/enable"), 200)
    assert theirs.get(USERS).status_code == 200
    expect(api.delete(f"{USERS}/{made['id']}"), 204)
    assert theirs.get(USERS).status_code == 401


def test_ai_context_user_is_the_person_with_their_locale(api: TestClient, app: FastAPI) -> None:
    made = _user(api, locale="de-CH")
    source = "exports.run = function () { return ai.context(); };"
    expect(api.post("/api/v1/admin/code-modules", json={"id": "whoami", "description": "who calls", "draftContent": source,
                                                          "tool": {"inputParameters": []}}), 201)
    expect(api.post("/api/v1/admin/code-modules/whoami/publish"), 200)
    token = _persons_token(app)
    context = expect(TestClient(app, headers={"Authorization": f"Bearer {token}"}).post("/api/v1/tools/whoami/call", json={}), 200).json()["output"]
    assert context["user"] == {"id": made["id"], "name": "Ada Lovelace", "email": "ada@example.com", "roles": ["admin"],
                               "locale": "de-CH", "via": "token"}
    assert token not in repr(context)
    # A token of no one's is named as before.
    assert expect(api.post("/api/v1/tools/whoami/call", json={}), 200).json()["output"]["user"] == {
        "id": "admin", "roles": ["admin"], "locale": "en"}


def test_the_rate_counts_the_person_whatever_they_come_through(tmp_path: Any, shared_sandbox: Any) -> None:
    from entrypoints.web import create_app
    from infrastructure.settings import Settings
    from tests.conftest import wire

    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        rate_per_second=0.01, rate_burst=8)
    with TestClient(create_app(wire(settings, shared_sandbox))) as app_client:
        app = app_client.app
        admin = TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        _user(admin)
        # The person's eight: a session (its sign-in and a page), then two more sessions that each
        # issue a token (a sign-in, a page, the issue).
        person, _ = _signed_in(app)
        first = TestClient(app, headers={"Authorization": f"Bearer {_persons_token(app)}"})
        second = TestClient(app, headers={"Authorization": f"Bearer {_persons_token(app)}"})
        # The person's requests through two tokens and two sessions share one bucket: it is empty now.
        assert first.get(USERS).status_code == 429
        assert second.get(USERS).status_code == 429
        assert person.get("/console/account").status_code == 429
        # Another token's bucket is its own.
        assert admin.get(USERS).status_code == 200


def _refusal_seconds(client: TestClient, email: str, password: str) -> tuple[int, str, float]:
    import time

    started = time.perf_counter()
    answer = client.post("/console/sign-in/password", headers=same_origin(client),
                         data={"organization": "default", "email": email, "password": password})
    return answer.status_code, re.search(r'id="password-error"[^>]*>([^<]+)<', answer.text).group(1), time.perf_counter() - started


def test_an_unknown_email_and_a_wrong_password_get_the_same_answer_in_the_same_time(api: TestClient, app: FastAPI) -> None:
    _user(api)
    browser = TestClient(app)
    unknown = [_refusal_seconds(browser, f"nobody{i}@example.com", PASSWORD) for i in range(3)]
    wrong = [_refusal_seconds(browser, "ada@example.com", f"wrong password {i}") for i in range(3)]
    assert {(s, m) for s, m, _ in unknown} == {(s, m) for s, m, _ in wrong} == {
        (200, "That email and password do not match an account of this organization. Check them and try again.")}
    # Each refusal verifies one argon2id hash (a dummy one for an unknown email): tenths of a second, both.
    unknown_time, wrong_time = sorted(t for *_, t in unknown)[1], sorted(t for *_, t in wrong)[1]
    assert 0.5 < unknown_time / wrong_time < 2, (unknown_time, wrong_time)


def test_a_lockout_after_the_failures_for_15_minutes_per_email(api: TestClient, app: FastAPI) -> None:
    _user(api)
    browser = TestClient(app)
    for _ in range(5):
        assert _refusal_seconds(browser, "ada@example.com", "not the password")[0] == 200
    # Locked: even the right password is refused, with when to try again.
    locked = browser.post("/console/sign-in/password", headers=same_origin(browser),
                          data={"organization": "default", "email": "ADA@example.com", "password": PASSWORD})
    assert locked.status_code == 429 and "locked for 15 minutes" in locked.text and int(locked.headers["Retry-After"]) > 800
    # An unknown email locks the same way (a lockout says nothing of who exists).
    for _ in range(5):
        _refusal_seconds(browser, "ghost@example.com", "guess")
    assert browser.post("/console/sign-in/password", headers=same_origin(browser),
                        data={"organization": "default", "email": "ghost@example.com", "password": "guess"}).status_code == 429
    # Another person is not locked.
    _user(api, email="grace@example.com", name="Grace")
    _signed_in(app, "grace@example.com")


def test_a_tenant_with_people_is_not_deleted(api: TestClient, app: FastAPI) -> None:
    operator = TestClient(app, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})
    other = expect(operator.post("/api/v1/operator/tenants", json={"id": "other", "name": "Other"}), 201).json()
    theirs = TestClient(app, headers={"Authorization": f"Bearer {other['adminToken']}"})
    person = expect(theirs.post(USERS, json={"email": "ada@example.com", "name": "A", "role": "admin", "password": PASSWORD}), 201).json()
    refused = operator.delete("/api/v1/operator/tenants/other")
    assert refused.status_code == 409 and "1 person" in refused.text
    expect(theirs.delete(f"{USERS}/{person['id']}"), 204)
    expect(operator.delete("/api/v1/operator/tenants/other"), 204)


def test_an_address_spraying_passwords_is_throttled(tmp_path: Any, shared_sandbox: Any) -> None:
    from entrypoints.web import create_app
    from infrastructure.settings import Settings
    from tests.conftest import wire

    settings = Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, auth_failures_per_minute=3)
    with TestClient(create_app(wire(settings, shared_sandbox))) as app_client:
        admin = TestClient(app_client.app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        _user(admin)
        browser = TestClient(app_client.app)
        for i in range(3):  # three emails, one wrong password each: no one email is locked
            assert _refusal_seconds(browser, f"guess{i}@example.com", "password1234")[0] == 200
        sprayed = browser.post("/console/sign-in/password", headers=same_origin(browser),
                               data={"organization": "default", "email": "ada@example.com", "password": PASSWORD})
        assert sprayed.status_code == 429 and "Too many failed sign-ins came from your address" in sprayed.text
