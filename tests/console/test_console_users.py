"""The people's console pages over HTTP (docs/users.md): the sign-in page's two forms, the list, adding
a person by invitation or with a password, a person's page (change with the version read, disable,
enable, a new invitation, delete; never one's own disable or delete), "Your account" (name, language,
password), what an auditor and a caller person may open, and the words every page uses."""

from __future__ import annotations

import re
from urllib.parse import unquote

from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.helpers import console_session, expect, page_csrf, same_origin

PASSWORD = "correct horse battery staple"
USERS = "/api/v1/admin/users"


def _api(app: FastAPI, token: str) -> TestClient:
    return TestClient(app, headers={"Authorization": f"Bearer {token}"})


def _person(app: FastAPI, email: str, password: str = PASSWORD) -> tuple[TestClient, str]:
    client = TestClient(app)
    answer = client.post("/console/sign-in/password", headers=same_origin(client), follow_redirects=False,
                         data={"organization": "default", "email": email, "password": password, "next": "/console/users"})
    assert answer.status_code == 303, answer.text
    return client, page_csrf(client.get("/console/account").text)


def _post(client: TestClient, path: str, csrf: str, **data: str) -> object:
    return client.post(path, data={**data, "csrf_token": csrf}, headers=same_origin(client), follow_redirects=False)


def _toast(answer: object) -> str:
    cookie = answer.headers.get("set-cookie", "")  # type: ignore[attr-defined]
    found = re.search(r"toolsmith_toast=([^;]+)", cookie)
    return unquote(found.group(1)) if found else ""


def test_the_sign_in_page_has_the_password_form_and_the_token_form(app: FastAPI) -> None:
    page = TestClient(app).get("/console/sign-in").text
    assert 'action="/console/sign-in/password"' in page and 'action="/console/sign-in"' in page
    assert re.search(r'id="organization"[^>]*value="default"', page)
    assert 'autocomplete="current-password"' in page
    assert 'value="acme"' in TestClient(app).get("/console/sign-in?organization=acme").text


def test_add_by_invitation_then_by_password_and_the_list(app: FastAPI) -> None:
    admin, csrf = console_session(app)
    invited = _post(admin, "/console/users", csrf, name="Bob Byte", email="bob@example.com", role="auditor",
                    usageProfile="", locale="en", how="invite")
    assert invited.status_code == 200 and "Invited Bob Byte" in _toast(invited)
    link = re.search(r'id="invitation-link" value="([^"]+)"', invited.text).group(1)
    assert link.startswith("http://testserver/console/invitation?code=tsi_default.")
    assert link not in admin.get("/console/users").text  # shown once
    added = _post(admin, "/console/users", csrf, name="Ada Lovelace", email="ada@example.com", role="admin",
                  usageProfile="", locale="fr", how="password", password=PASSWORD)
    assert added.status_code == 303 and added.headers["location"].startswith("/console/users/")
    assert "Added Ada Lovelace" in _toast(added)
    listing = admin.get("/console/users").text
    for words in ("Bob Byte", "bob@example.com", "Auditor", "Invited", "Ada Lovelace", "Admin", "Active", "Never"):
        assert words in listing, words
    assert "invited</span>" not in listing and "admin</td>" not in listing  # words, not raw values


def test_bad_fields_are_named_on_the_form(app: FastAPI) -> None:
    admin, csrf = console_session(app)
    answer = _post(admin, "/console/users", csrf, name="", email="not-an-email", role="admin", usageProfile="",
                   locale="klingon please", how="password", password="short")
    assert answer.status_code == 200
    for field in ("name", "email", "locale", "password"):
        assert f'id="{field}-error"' in answer.text, field
    assert not re.search(r"\bR1\b", answer.text) and "docs/users.md" not in answer.text  # (a token may hold "R1")
    _post(admin, "/console/users", csrf, name="Ada", email="ada@example.com", role="admin", usageProfile="", locale="en",
          how="password", password=PASSWORD)
    taken = _post(admin, "/console/users", csrf, name="Ada 2", email="ADA@example.com", role="admin", usageProfile="",
                  locale="en", how="password", password=PASSWORD)
    assert "already has this email" in taken.text


def test_a_persons_page_changes_disables_enables_reinvites_and_deletes(app: FastAPI) -> None:
    admin, csrf = console_session(app)
    made = expect(_api(app, "tsa_test-admin-token").post(USERS, json={"email": "ada@example.com", "name": "Ada", "role": "admin",
                                                                      "password": PASSWORD}), 201).json()
    page = f"/console/users/{made['id']}"
    text = admin.get(page).text
    version = re.search(r'name="version" value="(\d+)"', text).group(1)
    saved = _post(admin, page, csrf, name="Ada King", role="auditor", usageProfile="", locale="de-CH", version=version)
    assert saved.status_code == 303 and "Saved Ada King" in _toast(saved)
    stale = _post(admin, page, csrf, name="Ada", role="admin", usageProfile="", locale="en", version=version)
    assert stale.status_code == 409 and "changed this person after you opened the page" in stale.text
    disabled = _post(admin, f"{page}/disable", csrf)
    assert "Disabled Ada King" in _toast(disabled) and f"{page}/enable" in _toast(disabled)  # its Undo enables
    assert "Disabled" in admin.get(page).text
    assert "Enabled Ada King" in _toast(_post(admin, f"{page}/enable", csrf))
    again = _post(admin, f"{page}/invitation", csrf)
    assert again.status_code == 200 and 'id="invitation-link"' in again.text
    assert 'data-open-dialog="delete-dialog"' in admin.get(page).text and "Delete Ada King?" in admin.get(page).text
    deleted = _post(admin, f"{page}/delete", csrf)
    assert deleted.headers["location"] == "/console/users" and "Deleted Ada King" in _toast(deleted)
    assert admin.get(page).status_code == 404


def test_an_admin_never_disables_or_deletes_themselves(app: FastAPI) -> None:
    made = expect(_api(app, "tsa_test-admin-token").post(USERS, json={"email": "ada@example.com", "name": "Ada", "role": "admin",
                                                                      "password": PASSWORD}), 201).json()
    ada, csrf = _person(app, "ada@example.com")
    page = f"/console/users/{made['id']}"
    text = ada.get(page).text
    assert "(you)" in text and f"{page}/disable" not in text and "delete-dialog" not in text
    assert _post(ada, f"{page}/disable", csrf).status_code == 409
    assert _post(ada, f"{page}/delete", csrf).status_code == 409
    assert ada.get("/console/account").status_code == 200


def test_your_account_changes_name_language_and_password(app: FastAPI) -> None:
    expect(_api(app, "tsa_test-admin-token").post(USERS, json={"email": "ada@example.com", "name": "Ada", "role": "auditor",
                                                               "password": PASSWORD}), 201)
    ada, csrf = _person(app, "ada@example.com")
    account = ada.get("/console/account").text
    assert "ada@example.com" in account and 'autocomplete="current-password"' in account
    assert '<a href="/console/account">Ada</a>' in ada.get("/console/tools").text  # the sidebar names the person
    saved = _post(ada, "/console/account", csrf, name="Ada L.", locale="it")
    assert "Saved your name and language" in _toast(saved)
    assert 'value="Ada L."' in ada.get("/console/account").text
    bad = _post(ada, "/console/account", csrf, name="Ada", locale="nope!")
    assert 'id="locale-error"' in bad.text
    wrong = _post(ada, "/console/account/password", csrf, currentPassword="not it", newPassword="a new long password",
                  confirmPassword="a new long password")
    assert "is not your current password" in wrong.text
    mismatch = _post(ada, "/console/account/password", csrf, currentPassword=PASSWORD, newPassword="a new long password",
                     confirmPassword="another long password")
    assert "are not the same" in mismatch.text
    short = _post(ada, "/console/account/password", csrf, currentPassword=PASSWORD, newPassword="short", confirmPassword="short")
    assert "at least 12 characters" in short.text
    done = _post(ada, "/console/account/password", csrf, currentPassword=PASSWORD, newPassword="a new long password",
                 confirmPassword="a new long password")
    assert "Changed your password" in _toast(done)
    _person(app, "ada@example.com", "a new long password")
    old = TestClient(app).post("/console/sign-in/password", headers=same_origin(ada),
                               data={"organization": "default", "email": "ada@example.com", "password": PASSWORD})
    assert "do not match" in old.text


def test_what_an_auditor_and_a_caller_person_may_open(app: FastAPI) -> None:
    api = _api(app, "tsa_test-admin-token")
    auditor_token = expect(api.post("/api/v1/admin/tokens", json={"name": "aud", "role": "auditor"}), 201).json()["token"]
    auditor, csrf = console_session(app, auditor_token)
    listing = auditor.get("/console/users")
    assert listing.status_code == 200 and "Add a person" not in listing.text
    assert _post(auditor, "/console/users", csrf, name="X", email="x@example.com", role="admin", how="invite").status_code == 403
    expect(api.post(USERS, json={"email": "cal@example.com", "name": "Cal", "role": "caller", "password": PASSWORD}), 201)
    caller = TestClient(app)
    landed = caller.post("/console/sign-in/password", headers=same_origin(caller), follow_redirects=False,
                         data={"organization": "default", "email": "cal@example.com", "password": PASSWORD, "next": "/console/tools"})
    assert landed.headers["location"] == "/console/account"
    account = caller.get("/console/account")
    assert account.status_code == 200 and 'href="/console/tools"' not in account.text  # no sidebar of the tenant's pages
    assert caller.get("/console/tools").status_code == 403
    assert caller.get("/console/users").status_code == 403
    assert caller.get("/console/", follow_redirects=False).headers["location"] == "/console/account"


def test_a_token_session_has_no_account(app: FastAPI) -> None:
    admin, csrf = console_session(app)
    assert "signed in with a token" in admin.get("/console/account").text
    assert _post(admin, "/console/account/password", csrf, currentPassword="x", newPassword="y" * 12, confirmPassword="y" * 12).status_code == 403


def test_the_sign_in_form_is_refused_cross_site(app: FastAPI) -> None:
    expect(_api(app, "tsa_test-admin-token").post(USERS, json={"email": "ada@example.com", "name": "Ada", "role": "admin",
                                                               "password": PASSWORD}), 201)
    answer = TestClient(app).post("/console/sign-in/password", headers={"Origin": "https://evil.example"}, follow_redirects=False,
                                  data={"organization": "default", "email": "ada@example.com", "password": PASSWORD})
    assert answer.status_code == 403 and "set-cookie" not in {k.lower() for k in answer.headers}


def test_a_wrong_token_marks_the_token_field(app: FastAPI) -> None:
    answer = TestClient(app).post("/console/sign-in", data={"token": "tsa_not-a-token"}, headers=same_origin(TestClient(app)))
    assert re.search(r'<input id="token"[^>]* required aria-invalid="true" aria-describedby="token-error">', answer.text)
