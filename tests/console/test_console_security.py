"""The console's security promises without a browser: the CSP on every response, the session
cookie's attributes, sign-in (a wrong token, a caller token, `next=`), sign-out and revocation
ending a session, the cross-site checks on every state-changing request, the auditor's 403, and
`/docs` with no inline script and no other host."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.helpers import ADMIN_TOKEN, expect
from tests.helpers import console_session as _signed_in
from tests.helpers import same_origin as _origin

BASE = "/api/v1/admin/code-modules"
TOKENS = "/api/v1/admin/tokens"
COOKIE = "toolsmith_session"


def _sign_in(client: TestClient, token: str, next: str = "/console/modules"):  # noqa: ANN202
    return client.post("/console/sign-in", data={"token": token, "next": next}, headers=_origin(client), follow_redirects=False)


def _issue(api: TestClient, role: str, name: str = "someone") -> dict[str, str]:
    return expect(api.post(TOKENS, json={"name": name, "role": role}), 201).json()


def _is_sign_in_redirect(answer) -> bool:  # noqa: ANN001
    return answer.status_code == 303 and answer.headers["location"].startswith("/console/sign-in")


# -- headers --------------------------------------------------------------------------------------


def test_every_response_carries_the_strict_csp(app: FastAPI, api: TestClient) -> None:
    admin, _ = _signed_in(app)
    answers = {
        "a console page": admin.get("/console/modules"),
        "the sign-in page": TestClient(app).get("/console/sign-in"),
        "/docs": api.get("/docs"),
        "an API JSON route": api.get(BASE),
        "an API problem": api.get(f"{BASE}/no_such_module"),
        "a console error page": admin.get("/console/modules", params={"state": "BOGUS"}),
        "a static asset": admin.get("/console/static/console.css"),
    }
    for where, answer in answers.items():
        policy = answer.headers.get("content-security-policy", "")
        directives = [d.strip() for d in policy.split(";")]
        assert "default-src 'self'" in directives, (where, policy)
        assert "script-src 'self'" in directives and "style-src 'self'" in directives, (where, policy)
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, (where, policy)
        assert answer.headers.get("x-content-type-options") == "nosniff", where
    assert answers["an API JSON route"].headers["content-type"].startswith("application/json")
    assert answers["a console error page"].status_code == 400


def _cookie_attributes(answer) -> list[str]:  # noqa: ANN001
    header = next(h for h in answer.headers.get_list("set-cookie") if h.startswith(f"{COOKIE}="))
    return [part.strip().lower() for part in header.split(";")]


def test_the_session_cookie_is_httponly_and_samesite_strict(app: FastAPI) -> None:
    attributes = _cookie_attributes(_sign_in(TestClient(app), ADMIN_TOKEN))
    assert "httponly" in attributes and "samesite=strict" in attributes and "path=/" in attributes
    assert any(a.startswith("max-age=") and int(a.split("=")[1]) > 0 for a in attributes)
    # over plain http the cookie cannot be Secure (the browser would never send it back)
    assert "secure" not in attributes


def test_the_session_cookie_is_secure_over_https(app: FastAPI) -> None:
    client = TestClient(app, base_url="https://testserver")
    answer = _sign_in(client, ADMIN_TOKEN)
    assert answer.status_code == 303
    attributes = _cookie_attributes(answer)
    assert "secure" in attributes and "httponly" in attributes and "samesite=strict" in attributes
    assert client.get("/console/modules").status_code == 200


def test_the_cookie_holds_no_token(app: FastAPI) -> None:
    client = TestClient(app)
    _sign_in(client, ADMIN_TOKEN)
    assert ADMIN_TOKEN not in client.cookies[COOKIE]


# -- sign-in ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["tsa_not-a-token", "", "   ", "x" * 5000])
def test_a_wrong_token_gets_the_form_again_with_a_clear_message(app: FastAPI, token: str) -> None:
    client = TestClient(app)
    answer = _sign_in(client, token)
    assert answer.status_code == 200
    assert "That token is not valid. Check it and try again." in answer.text
    assert 'aria-invalid="true"' in answer.text and 'aria-describedby="token-error"' in answer.text
    assert "Traceback" not in answer.text and "Exception" not in answer.text
    assert COOKIE not in client.cookies
    assert _is_sign_in_redirect(client.get("/console/modules", follow_redirects=False))


def test_a_caller_token_cannot_sign_in(app: FastAPI, api: TestClient) -> None:
    caller = _issue(api, "caller")["token"]
    # a valid token (the admin API refuses its role, 403, not an unknown token's 401)...
    assert TestClient(app, headers={"Authorization": f"Bearer {caller}"}).get(BASE).status_code == 403
    client = TestClient(app)
    answer = _sign_in(client, caller)
    assert answer.status_code == 200
    assert "This token cannot sign in to the console: it is a caller token" in answer.text
    assert COOKIE not in client.cookies
    assert _is_sign_in_redirect(client.get("/console/modules", follow_redirects=False))


def test_an_auditor_signs_in_and_sees_no_write_control(app: FastAPI, api: TestClient) -> None:
    auditor, _ = _signed_in(app, _issue(api, "auditor", "reader")["token"])
    page = auditor.get("/console/modules")
    assert page.status_code == 200 and '<span class="role">Auditor</span>' in page.text
    assert 'href="/console/modules/new"' not in page.text


@pytest.mark.parametrize("target", [
    "//evil.example", "https://evil.example", "https://evil.example/console/modules", "/\\evil.example",
    "///evil.example", "javascript:alert(1)", "evil.example", "/console\\..\\..\\evil.example",
])
def test_next_cannot_lead_to_another_host(app: FastAPI, target: str) -> None:
    form = TestClient(app).get("/console/sign-in", params={"next": target})
    assert 'name="next" value="/console/modules"' in form.text
    answer = _sign_in(TestClient(app), ADMIN_TOKEN, next=target)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/modules"


def test_next_leads_back_to_the_console_page_asked_for(app: FastAPI) -> None:
    asked = TestClient(app).get("/console/modules?state=DRAFT", follow_redirects=False)
    assert asked.status_code == 303
    assert asked.headers["location"] == "/console/sign-in?next=%2Fconsole%2Fmodules%3Fstate%3DDRAFT"
    answer = _sign_in(TestClient(app), ADMIN_TOKEN, next="/console/modules?state=DRAFT")
    assert answer.headers["location"] == "/console/modules?state=DRAFT"


def test_the_root_leads_to_the_console(app: FastAPI) -> None:
    root = TestClient(app).get("/", follow_redirects=False)
    assert root.status_code in (303, 307) and root.headers["location"] == "/console/"
    admin, _ = _signed_in(app)
    home = admin.get("/console/", follow_redirects=False)
    assert home.status_code == 303 and home.headers["location"] == "/console/modules"


@pytest.mark.parametrize("path", ["/console/", "/console/modules", "/console/modules/new", "/console/modules/anything"])
def test_pages_that_need_a_session_lead_to_sign_in(app: FastAPI, path: str) -> None:
    client = TestClient(app)
    answer = client.get(path, follow_redirects=False)
    assert _is_sign_in_redirect(answer)
    # htmx follows HX-Redirect (a 303 would be followed inside the XHR and swapped into the page)
    htmx = client.get(path, headers={"HX-Request": "true", "HX-Target": "results"}, follow_redirects=False)
    assert htmx.status_code == 204 and htmx.headers["hx-redirect"] == "/console/sign-in"
    # a session cookie that was tampered with is no session
    client.cookies.set(COOKIE, "forged.value.here")
    assert _is_sign_in_redirect(client.get(path, follow_redirects=False))


# -- ending a session -------------------------------------------------------------------------------


def test_sign_out_ends_the_session_and_its_cookie_no_longer_works(app: FastAPI) -> None:
    client, csrf = _signed_in(app)
    old = client.cookies[COOKIE]
    answer = client.post("/console/sign-out", data={"csrf_token": csrf}, headers=_origin(client), follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in"
    assert any(h.startswith(f"{COOKIE}=") and "max-age=0" in h.lower() for h in answer.headers.get_list("set-cookie"))
    # the old cookie, presented again (as a stolen copy would be), opens nothing
    replay = TestClient(app, cookies={COOKIE: old})
    assert _is_sign_in_redirect(replay.get("/console/modules", follow_redirects=False))
    # signing in again starts a new session
    again, _ = _signed_in(app)
    assert again.get("/console/modules").status_code == 200


def test_a_revoked_tokens_session_ends(app: FastAPI, api: TestClient) -> None:
    issued = _issue(api, "admin", "second admin")
    client, _ = _signed_in(app, issued["token"])
    assert client.get("/console/modules").status_code == 200
    expect(api.delete(f"{TOKENS}/{issued['id']}"), 204)
    assert _is_sign_in_redirect(client.get("/console/modules", follow_redirects=False))
    # and the token cannot start a new one
    assert "That token is not valid" in _sign_in(TestClient(app), issued["token"]).text


# -- cross-site requests ----------------------------------------------------------------------------


def _create(client: TestClient, module_id: str, headers: dict[str, str], csrf: str | None):  # noqa: ANN202
    form = {"id": module_id, "description": "made by a form", "content": "exports.run = () => 1;"}
    if csrf is not None:
        form["csrf_token"] = csrf
    return client.post("/console/modules", data=form, headers=headers, follow_redirects=False)


def test_a_state_changing_post_needs_the_csrf_token_and_this_origin(app: FastAPI, api: TestClient) -> None:
    client, csrf = _signed_in(app)
    same = _origin(client)
    refusals = {
        "no CSRF token": _create(client, "no_csrf", same, None),
        "a wrong CSRF token": _create(client, "wrong_csrf", same, "guess"),
        "another session's CSRF token": _create(client, "other_csrf", same, _signed_in(app)[1]),
        "a foreign Origin": _create(client, "foreign", {"Origin": "https://evil.example"}, csrf),
        "a foreign Origin on the same host, another scheme": _create(client, "scheme", {"Origin": "https://testserver"}, csrf),
        "Sec-Fetch-Site cross-site, no Origin": _create(client, "cross_site", {"Sec-Fetch-Site": "cross-site"}, csrf),
        "Sec-Fetch-Site same-site, no Origin": _create(client, "same_site", {"Sec-Fetch-Site": "same-site"}, csrf),
    }
    for why, answer in refusals.items():
        assert answer.status_code == 403, (why, answer.status_code, answer.text[:300])
        assert "Traceback" not in answer.text
    assert "another site" in refusals["a foreign Origin"].text
    assert "reload the page" in refusals["no CSRF token"].text
    # sign-out is state-changing too: refused from another site, and the session still works
    out = client.post("/console/sign-out", data={"csrf_token": csrf}, headers={"Origin": "https://evil.example"}, follow_redirects=False)
    assert out.status_code == 403 and client.get("/console/modules").status_code == 200
    # a cross-site sign-in (login CSRF) is refused as well
    assert TestClient(app).post("/console/sign-in", data={"token": ADMIN_TOKEN}, headers={"Origin": "https://evil.example"}).status_code == 403
    # nothing was created; the same request from this site with the token is accepted
    assert api.get(BASE).json()["total"] == 0
    made = _create(client, "made_here", same, csrf)
    assert made.status_code == 303, made.text[:300]
    assert [m["id"] for m in api.get(BASE).json()["collection"]] == ["made_here"]


def test_a_form_is_read_as_sent_and_one_beyond_starlettes_limits_is_a_400_in_words(app: FastAPI, api: TestClient) -> None:
    client, csrf = _signed_in(app)
    same = _origin(client)
    # what a person typed arrives as typed: non-ASCII, "+" and "&" in a value, a blank field, a repeated one
    description = "Zürich & Genève: 1 + 1 = 2 ✓"
    made = client.post("/console/modules", data={"csrf_token": csrf, "id": "typed", "description": description,
                                                 "content": "exports.run = () => 'a&b=c';", "imports": ["", ""]},
                       headers=same, follow_redirects=False)
    assert made.status_code == 303, made.text[:300]
    module = api.get(f"{BASE}/typed").json()
    assert module["description"] == description and module["draft"]["content"] == "exports.run = () => 'a&b=c';"
    # more than 1,000 fields, or a field over 1 MB: refused in words (never a 500), nothing made
    for fields in ([("csrf_token", csrf), ("id", "many")] + [("x", "1")] * 1001,
                   [("csrf_token", csrf), ("id", "large"), ("description", "x" * (1024 * 1024 + 1))]):
        answer = client.post("/console/modules", content=urlencode(fields), follow_redirects=False,
                             headers={**same, "Content-Type": "application/x-www-form-urlencoded"})
        assert answer.status_code == 400 and "Traceback" not in answer.text, answer.text[:300]
        assert "Maximum number of fields" in answer.text or "maximum size" in answer.text
    assert api.get(f"{BASE}/many").status_code == 404 and api.get(f"{BASE}/large").status_code == 404


def test_the_csrf_header_of_htmx_requests_is_accepted(app: FastAPI, api: TestClient) -> None:
    client, csrf = _signed_in(app)
    headers = {**_origin(client), "X-CSRF-Token": csrf, "HX-Request": "true"}
    answer = _create(client, "by_htmx", headers, None)
    assert answer.status_code in (200, 204, 303), answer.text[:300]
    assert api.get(f"{BASE}/by_htmx").status_code == 200


def test_an_auditors_post_is_403(app: FastAPI, api: TestClient) -> None:
    client, csrf = _signed_in(app, _issue(api, "auditor", "reader")["token"])
    answer = _create(client, "by_auditor", _origin(client), csrf)
    assert answer.status_code == 403
    assert "auditor" in answer.text and "can read but not change anything" in answer.text
    assert api.get(BASE).json()["total"] == 0
    # the Create page, a write control, is refused too
    assert client.get("/console/modules/new").status_code == 403


# -- /docs -----------------------------------------------------------------------------------------


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str | None] = []
        self.inline: list[str] = []
        self.links: list[str] = []
        self.styles = 0
        self.style_attributes = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "style" in found or any(name.startswith("on") for name in found):
            self.style_attributes += 1
        if tag == "script":
            self.scripts.append(found.get("src"))
            self._in_script = True
        elif tag == "link":
            self.links.append(found.get("href") or "")
        elif tag == "style":
            self.styles += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data)


def test_docs_have_no_inline_script_and_only_local_assets(app: FastAPI) -> None:
    client = TestClient(app)
    docs = client.get("/docs")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assets = _Assets()
    assets.feed(docs.text)
    assert assets.scripts and None not in assets.scripts, "every script has a src"
    assert assets.inline == [] and assets.styles == 0 and assets.style_attributes == 0
    for url in [*assets.scripts, *assets.links]:
        assert url.startswith("/console/static/"), url
        assert client.get(url).status_code == 200, url
    assert "cdn" not in docs.text.lower() and "http://" not in docs.text and "https://" not in docs.text
    # the schema the page loads is the service's own
    assert client.get("/openapi.json").status_code == 200


def test_console_pages_have_no_inline_script_or_style(app: FastAPI) -> None:
    admin, _ = _signed_in(app)
    for path in ("/console/modules", "/console/sign-in", "/console/modules/new"):
        assets = _Assets()
        assets.feed(admin.get(path).text)
        assert None not in assets.scripts and assets.inline == [], path
        assert assets.styles == 0 and assets.style_attributes == 0, path
        assert all(url.startswith("/console/static/") for url in [*assets.scripts, *assets.links]), path


def test_static_assets_are_sent_gzipped_to_a_browser_that_asks(app: FastAPI) -> None:
    client = TestClient(app)
    docs = client.get("/docs").text
    bundle = re.search(r'src="(/console/static/dist/swagger-ui-bundle\.js[^"]*)"', docs).group(1)
    compressed = client.get(bundle, headers={"Accept-Encoding": "gzip"})
    assert compressed.status_code == 200 and compressed.headers["content-encoding"] == "gzip"
    assert compressed.num_bytes_downloaded < len(compressed.content) / 2  # the bytes sent; httpx decoded them
    plain = client.get(bundle, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == compressed.content
