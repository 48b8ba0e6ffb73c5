"""The console's organizations (docs/tenants.md) without a browser: the operator's token opens the
organizations' pages and nothing inside a tenant, a tenant's tokens never open the operator's;
every operator form needs this origin and the session's CSRF token; a suspended organization's
session sees one clear page everywhere (and still signs out), a deleted one's is signed out, a
token past its rate gets a 429 page; each form's refusals are shown by their fields."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from entrypoints.web import create_app
from infrastructure.settings import Settings
from tests.conftest import wire
from tests.helpers import ADMIN_TOKEN, expect, page_csrf, same_origin, sign_in_console, unique_id

OPERATOR_TOKEN = "tso_test-operator-token"
TENANTS = "/api/v1/operator/tenants"
MODULES = "/api/v1/admin/code-modules"
PAGES = "/console/operator/tenants"
# Every page inside a tenant that the navigation offers.
TENANT_PAGES = ("/console/modules", "/console/tools", "/console/api-tools", "/console/search-tools", "/console/playground",
                "/console/plans", "/console/agents", "/console/profiles", "/console/servers", "/console/tokens",
                "/console/secrets", "/console/audit", "/console/modules/new")
SUSPENDED = "Your organization is suspended"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN)


@pytest.fixture
def operator_api(app: FastAPI) -> TestClient:
    return TestClient(app, headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"})


def signed_in(app: FastAPI, token: str = ADMIN_TOKEN, next: str = "/console/modules") -> tuple[TestClient, str]:
    """A new browser-like client signed in with `token`, and its CSRF token (from the page `next`)."""
    client = TestClient(app)
    return client, sign_in_console(client, token, next=next)


def _tenant(operator_api: TestClient, **quotas: int) -> tuple[str, str]:
    """A new organization and its first admin token."""
    tenant = unique_id("org").replace("_", "-")
    created = expect(operator_api.post(TENANTS, json={"id": tenant, "name": f"Org {tenant}", "quotas": quotas or None}), 201).json()
    return tenant, created["adminToken"]


def _post(client: TestClient, path: str, csrf: str | None, **form: str):  # noqa: ANN202
    if csrf is not None:
        form["csrf_token"] = csrf
    return client.post(path, data=form, headers=same_origin(client), follow_redirects=False)


def _errors(html: str) -> dict[str, str]:
    """Each field's error message, by the id of the field it is tied to."""
    return {m.group(1): re.sub(r"<[^>]+>", " ", m.group(2)).strip() for m in re.finditer(r'<p class="error" id="([^"]+)-error">(.*?)</p>', html, re.S)}


# -- who opens which pages ---------------------------------------------------------------------------


def test_the_operator_signs_in_to_the_organizations_and_sees_only_their_navigation(app: FastAPI) -> None:
    client = TestClient(app)
    # from a tenant page's sign-in (next=/console/modules) to the operator's home
    answer = client.post("/console/sign-in", data={"token": OPERATOR_TOKEN, "next": "/console/modules"},
                         headers=same_origin(client), follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == PAGES
    page = client.get(PAGES)
    assert page.status_code == 200 and "<h1>Organizations</h1>" in page.text
    nav = re.search(r'<nav aria-label="Console">(.*?)</nav>', page.text, re.S).group(1)
    assert 'href="/console/operator/tenants" aria-current="page"' in nav
    assert "/console/modules" not in nav and "/console/tokens" not in nav
    assert client.get("/console/", follow_redirects=False).headers["location"] == PAGES
    # the deployment's own organization is listed
    assert 'href="/console/operator/tenants/default"' in page.text


def test_the_operator_cannot_open_or_change_anything_inside_a_tenant(app: FastAPI, api: TestClient) -> None:
    operator, csrf = signed_in(app, OPERATOR_TOKEN, next=PAGES)
    for path in TENANT_PAGES:
        answer = operator.get(path, follow_redirects=False)
        assert answer.status_code == 403, path
        assert "manages the organizations and nothing inside them" in answer.text, path
        assert 'href="/console/operator/tenants">Back to the organizations' in answer.text
    # nor change anything, with a valid CSRF token
    issued = _post(operator, "/console/tokens", csrf, name="sneaky", role="admin")
    made = _post(operator, "/console/modules", csrf, id="by_operator", description="x", content="exports.run = () => 1;")
    assert issued.status_code == 403 and made.status_code == 403
    assert "sneaky" not in api.get("/api/v1/admin/tokens").text
    assert api.get(f"{MODULES}/by_operator").status_code == 404
    # a signed-in admin landing on an operator page is sent home instead
    admin = TestClient(app)
    answer = admin.post("/console/sign-in", data={"token": ADMIN_TOKEN, "next": PAGES}, headers=same_origin(admin), follow_redirects=False)
    assert answer.headers["location"] == "/console/modules"


@pytest.mark.parametrize("role", ["admin", "auditor"])
def test_a_tenants_admin_or_auditor_cannot_open_the_operators_pages(app: FastAPI, api: TestClient, operator_api: TestClient, role: str) -> None:
    token = ADMIN_TOKEN if role == "admin" else expect(api.post("/api/v1/admin/tokens", json={"name": "reader", "role": "auditor"}), 201).json()["token"]
    client, csrf = signed_in(app, token)
    for path in ("/console/operator", PAGES, f"{PAGES}/default"):
        answer = client.get(path, follow_redirects=False)
        assert answer.status_code == 403, path
        assert "Only the service's operator token opens the organizations' pages" in unescape(answer.text)
        assert "Organization default" not in answer.text
    refused = {
        "create": _post(client, PAGES, csrf, id="by-tenant", name="By a tenant"),
        "quotas": _post(client, f"{PAGES}/default/quotas", csrf, **{"quota-modules": "0"}),
        "suspend": _post(client, f"{PAGES}/default/suspend", csrf),
        "rename": _post(client, f"{PAGES}/default/name", csrf, name="Taken over"),
    }
    assert {name: a.status_code for name, a in refused.items()} == dict.fromkeys(refused, 403)
    assert operator_api.get(f"{TENANTS}/by-tenant").status_code == 404
    default = operator_api.get(f"{TENANTS}/default").json()
    assert default["name"] == "default" and not default["suspended"] and default["quotas"]["modules"] is None
    # the tenant's pages still work for it
    assert client.get("/console/modules").status_code == 200


# -- cross-site requests ----------------------------------------------------------------------------


def test_every_operator_form_needs_this_origin_and_the_sessions_csrf_token(app: FastAPI, operator_api: TestClient) -> None:
    tenant, _ = _tenant(operator_api)
    operator, csrf = signed_in(app, OPERATOR_TOKEN, next=PAGES)
    other_session = signed_in(app, OPERATOR_TOKEN, next=PAGES)[1]
    forms = {
        PAGES: {"id": "made-cross-site", "name": "x"},
        f"{PAGES}/{tenant}/quotas": {"quota-modules": "1"},
        f"{PAGES}/{tenant}/name": {"name": "Renamed cross-site"},
        f"{PAGES}/{tenant}/suspend": {},
        f"{PAGES}/{tenant}/delete": {},
    }
    for path, form in forms.items():
        for why, token, headers in (
            ("no CSRF token", None, same_origin(operator)),
            ("a wrong CSRF token", "guess", same_origin(operator)),
            ("another session's CSRF token", other_session, same_origin(operator)),
            ("a foreign Origin", csrf, {"Origin": "https://evil.example"}),
            ("Sec-Fetch-Site cross-site", csrf, {"Sec-Fetch-Site": "cross-site"}),
        ):
            data = {**form, **({"csrf_token": token} if token is not None else {})}
            answer = operator.post(path, data=data, headers=headers, follow_redirects=False)
            assert answer.status_code == 403, (path, why)
    # nothing changed
    assert operator_api.get(f"{TENANTS}/made-cross-site").status_code == 404
    record = operator_api.get(f"{TENANTS}/{tenant}").json()
    assert record["name"] == f"Org {tenant}" and not record["suspended"] and record["quotas"]["modules"] is None
    # the same forms with the token, from here, work (the header htmx sends counts as well)
    assert _post(operator, f"{PAGES}/{tenant}/name", csrf, name="Renamed here").status_code == 303
    htmx = operator.post(PAGES, data={"id": f"{tenant}-x", "name": "By htmx"},
                         headers={**same_origin(operator), "X-CSRF-Token": csrf, "HX-Request": "true"})
    assert htmx.status_code == 200 and 'id="created-token"' in htmx.text
    assert operator_api.get(f"{TENANTS}/{tenant}").json()["name"] == "Renamed here"


# -- the forms ----------------------------------------------------------------------------------------


def test_creating_an_organization_shows_its_first_admin_token_once(app: FastAPI, operator_api: TestClient) -> None:
    operator, csrf = signed_in(app, OPERATOR_TOKEN, next=PAGES)
    tenant = unique_id("new").replace("_", "-")
    answer = _post(operator, PAGES, csrf, id=tenant, name="New Org", **{"quota-modules": "5", "quota-storedBytes": "1,048,576"})
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    token = re.search(r'id="created-token" value="([^"]+)"', answer.text).group(1)
    assert "Copy its first admin token now: it will not be shown again." in answer.text
    assert f"Created the organization {tenant}." in answer.text
    record = operator_api.get(f"{TENANTS}/{tenant}").json()
    assert record["quotas"] == {"modules": 5, "tools": None, "documents": None, "storedBytes": 1048576}
    # the token signs in to its organization, and no page shows it again
    assert token not in operator.get(PAGES).text and token not in operator.get(f"{PAGES}/{tenant}").text
    admin, _ = signed_in(app, token)
    assert admin.get("/console/modules").status_code == 200


def test_the_create_forms_refusals_are_shown_by_their_fields(app: FastAPI, operator_api: TestClient) -> None:
    taken, _ = _tenant(operator_api)
    operator, csrf = signed_in(app, OPERATOR_TOKEN, next=PAGES)
    answer = _post(operator, PAGES, csrf, id="Not Valid!", name="", **{"quota-modules": "many", "quota-documents": "-2"})
    assert answer.status_code == 200 and "Some fields need a change." in answer.text
    found = _errors(answer.text)
    assert set(found) == {"id", "name", "quota-modules", "quota-documents"}
    assert found["quota-modules"].startswith("Modules: a whole number") and "empty for no limit" in found["quota-modules"]
    assert 'id="quota-modules" name="quota-modules" value="many"' in answer.text
    assert re.search(r'id="quota-documents"[^>]*aria-invalid="true" aria-describedby="quota-documents-error quota-documents-hint"', answer.text)
    assert 'id="created-token"' not in answer.text
    taken_answer = _post(operator, PAGES, csrf, id=taken, name="Again")
    assert "exists already" in _errors(taken_answer.text)["id"]


def test_an_organizations_page_sets_quotas_renames_and_shows_usage(app: FastAPI, operator_api: TestClient) -> None:
    tenant, token = _tenant(operator_api)
    tenant_api = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    expect(tenant_api.post(MODULES, json={"id": "weather", "description": "w", "draftContent": "exports.run = () => 1;"}), 201)
    operator, csrf = signed_in(app, OPERATOR_TOKEN, next=PAGES)
    page = operator.get(f"{PAGES}/{tenant}")
    assert page.status_code == 200 and f"Organization Org {tenant}" in page.text
    usage = re.search(r'<th scope="row">Modules</th>\s*<td>(.*?)</td>\s*<td>(.*?)</td>', page.text, re.S)
    assert usage.groups() == ("1", "no limit")
    # a refusal by its field, the other values kept as typed
    refused = _post(operator, f"{PAGES}/{tenant}/quotas", csrf, **{"quota-modules": "1", "quota-tools": "1.5"})
    assert refused.status_code == 200 and set(_errors(refused.text)) == {"quota-tools"}
    assert 'value="1.5"' in refused.text
    saved = _post(operator, f"{PAGES}/{tenant}/quotas", csrf, **{"quota-modules": "1", "quota-tools": ""})
    assert saved.status_code == 303
    page = operator.get(saved.headers["location"])
    assert f"Saved the quotas of {tenant}." in page.text and "reached" in page.text
    assert operator_api.get(f"{TENANTS}/{tenant}").json()["quotas"]["modules"] == 1
    # the quota holds for the tenant
    again = tenant_api.post(MODULES, json={"id": "second", "description": "s", "draftContent": "exports.run = () => 1;"})
    assert again.status_code == 409 and again.json()["code"] == "quota-exceeded"
    # rename, and its refusal
    assert "Name:" in _errors(_post(operator, f"{PAGES}/{tenant}/name", csrf, name="   ").text)["name"]
    assert _post(operator, f"{PAGES}/{tenant}/name", csrf, name="Acme Inc").status_code == 303
    assert "<h1>Organization Acme Inc</h1>" in operator.get(f"{PAGES}/{tenant}").text
    # an unknown organization
    assert operator.get(f"{PAGES}/no-such-org").status_code == 404


def test_delete_is_refused_while_the_organization_holds_something(app: FastAPI, operator_api: TestClient) -> None:
    tenant, token = _tenant(operator_api)
    tenant_api = TestClient(app, headers={"Authorization": f"Bearer {token}"})
    expect(tenant_api.post(MODULES, json={"id": "weather", "description": "w", "draftContent": "exports.run = () => 1;"}), 201)
    operator, csrf = signed_in(app, OPERATOR_TOKEN, next=PAGES)
    refused = _post(operator, f"{PAGES}/{tenant}/delete", csrf)
    assert refused.status_code == 409
    assert f"Not deleted: tenant {tenant!r} still holds 1 module; delete them first." in unescape(refused.text)
    expect(tenant_api.delete(f"{MODULES}/weather"), 204)
    done = _post(operator, f"{PAGES}/{tenant}/delete", csrf)
    assert done.status_code == 303 and done.headers["location"] == f"{PAGES}?deleted={tenant}"
    assert f"Deleted the organization {tenant}" in operator.get(done.headers["location"]).text
    # the own organization offers no delete
    assert f'action="{PAGES}/default/delete"' not in operator.get(f"{PAGES}/default").text


# -- a suspended, deleted or busy organization's sessions -----------------------------------------------


def test_a_suspended_organizations_session_sees_the_suspended_page_everywhere(app: FastAPI, operator_api: TestClient) -> None:
    tenant, token = _tenant(operator_api)
    admin, csrf = signed_in(app, token)
    expect(operator_api.put(f"{TENANTS}/{tenant}", json={"suspended": True}), 200)
    for path in ("/console/modules", "/console/tokens", "/console/secrets", "/console/"):
        answer = admin.get(path, follow_redirects=False)
        assert answer.status_code == 403, path
        assert "<h1>Organization suspended</h1>" in answer.text and SUSPENDED in answer.text
        assert '<nav aria-label="Console">' not in answer.text
    # a form is refused too, and an htmx request gets the message in the live region
    assert _post(admin, "/console/tokens", csrf, name="x", role="caller").status_code == 403
    htmx = admin.get("/console/modules", headers={"HX-Request": "true"})
    assert htmx.status_code == 403 and htmx.headers["hx-retarget"] == "#problem" and SUSPENDED in htmx.text
    # signing in again is refused with the message
    fresh = TestClient(app)
    refused = fresh.post("/console/sign-in", data={"token": token, "next": "/console/modules"}, headers=same_origin(fresh))
    assert refused.status_code == 403 and SUSPENDED in refused.text and 'aria-describedby="token-error"' in refused.text
    assert "toolsmith_session" not in fresh.cookies
    # resumed: the same session works again
    expect(operator_api.put(f"{TENANTS}/{tenant}", json={"suspended": False}), 200)
    assert admin.get("/console/modules").status_code == 200
    # suspended again: signing out still works (the page's form carries the session's CSRF token)
    expect(operator_api.put(f"{TENANTS}/{tenant}", json={"suspended": True}), 200)
    page = admin.get("/console/modules")
    form_csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    out = _post(admin, "/console/sign-out", form_csrf)
    assert out.status_code == 303 and out.headers["location"] == "/console/sign-in"
    assert admin.get("/console/modules", follow_redirects=False).headers["location"].startswith("/console/sign-in")


def test_a_deleted_organizations_session_is_signed_out(app: FastAPI, operator_api: TestClient) -> None:
    tenant, token = _tenant(operator_api)
    admin, _ = signed_in(app, token)
    expect(operator_api.delete(f"{TENANTS}/{tenant}"), 204)
    answer = admin.get("/console/modules", follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/console/sign-in")
    fresh = TestClient(app)
    refused = fresh.post("/console/sign-in", data={"token": token}, headers=same_origin(fresh))
    assert "That token is not valid" in refused.text


def test_a_tenants_admin_sees_only_its_own_organization(app: FastAPI, api: TestClient, operator_api: TestClient) -> None:
    expect(api.post(MODULES, json={"id": "default_only", "description": "d", "draftContent": "exports.run = () => 1;"}), 201)
    tenant, token = _tenant(operator_api)
    admin, _ = signed_in(app, token)
    assert "default_only" not in admin.get("/console/modules").text
    assert admin.get("/console/modules/default_only").status_code == 404
    assert "default_only" in signed_in(app)[0].get("/console/modules").text


@pytest.fixture
def slow_app(tmp_path: Path, shared_sandbox) -> Iterator[FastAPI]:  # noqa: ANN001
    """An app whose tokens may make 4 requests at once and then one every 100 s."""
    settings = Settings(data_dir=tmp_path / "slow", admin_token=ADMIN_TOKEN, operator_token=OPERATOR_TOKEN,
                        rate_per_second=0.01, rate_burst=4)
    application = create_app(wire(settings, shared_sandbox))
    with TestClient(application):
        yield application


def test_a_token_past_its_rate_gets_a_page_saying_when_to_retry(slow_app: FastAPI) -> None:
    client = TestClient(slow_app)
    answer = client.post("/console/sign-in", data={"token": ADMIN_TOKEN}, headers=same_origin(client), follow_redirects=False)
    assert answer.status_code == 303
    answers = [client.get("/console/secrets") for _ in range(4)]
    refused = answers[-1]
    assert [a.status_code for a in answers[:3]] == [200, 200, 200]
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert "<h1>Too many requests</h1>" in refused.text and "Try again in" in refused.text
    # the sign-in form says so as well
    again = client.post("/console/sign-in", data={"token": ADMIN_TOKEN}, headers=same_origin(client))
    assert again.status_code == 429 and "Try again in" in again.text
    assert page_csrf(answers[0].text)
