"""Who may keep a copy of an answer (issue 28, finding 6): `Cache-Control: no-store` on every answer
to a bearer token or a session (each REST route of the OpenAPI document, each console page), and a
year's `immutable` only for a static file asked for under the hash of its bytes, which the pages'
links carry; any other static URL is revalidated. The CSP and gzip stay as they were."""

from __future__ import annotations

import hashlib
import re

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from console.pages import STATIC
from tests.helpers import OPERATOR_TOKEN, console_session, expect, sign_in_console, unique_id

MODULES = "/api/v1/admin/code-modules"
YEAR = "public, max-age=31536000, immutable"
ASSET = re.compile(r'(?:href|src)="(/console/static/([^"?]+)\?v=([0-9a-f]+))"')


def _module(api: TestClient) -> str:
    name = unique_id("cached")
    body = {"id": name, "description": "d", "draftContent": "exports.run = function (input) { return 1; };", "tool": {}}
    expect(api.post(MODULES, json=body), 201)
    expect(api.post(f"{MODULES}/{name}/publish"), 200)
    return name


def test_every_rest_route_of_the_openapi_document_answers_no_store(app: FastAPI, api: TestClient) -> None:
    name = _module(api)
    operator = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
    paths = api.get("/openapi.json").json()["paths"]
    walked = 0
    for path, operations in paths.items():
        url = re.sub(r"\{[^}]+\}", name, path)
        headers = operator if path.startswith("/api/v1/operator/") else {}
        for method in operations:
            # GET reads what the token may see; any other method is sent empty (refused or not, its answer is the token's)
            answer = api.request(method.upper(), url, headers=headers, json=None if method == "get" else {})
            assert answer.headers.get("cache-control") == "no-store", (method, url, answer.status_code, answer.headers.get("cache-control"))
            walked += 1
    assert walked >= 60, walked
    for url in ("/openapi.json", "/docs", "/api/v1/nowhere"):
        assert api.get(url).headers.get("cache-control") == "no-store", url


def test_every_console_page_answers_no_store(app: FastAPI, api: TestClient) -> None:
    name = _module(api)
    admin, _ = console_session(app)
    pages = sorted({route.path for route in iter_route_contexts(app.routes) if (route.path or "").startswith("/console/")
                    and "GET" in (route.methods or ()) and not route.path.startswith("/console/operator")})
    assert len(pages) >= 30, pages
    answered = 0
    for path in pages:
        answer = admin.get(re.sub(r"\{[^}]+\}", name, path), follow_redirects=False)
        assert answer.headers.get("cache-control") == "no-store", (path, answer.status_code, answer.headers.get("cache-control"))
        answered += answer.status_code == 200
    assert answered >= 15, answered  # the module's own pages among them: its editor, with its source
    # a fragment htmx asks for, the sign-in page (its CSRF token) and the operator's pages
    assert admin.get(f"/console/modules/{name}", headers={"HX-Request": "true"}).headers["cache-control"] == "no-store"
    assert TestClient(app).get("/console/sign-in").headers["cache-control"] == "no-store"
    operator = TestClient(app)
    sign_in_console(operator, OPERATOR_TOKEN, next="/console/operator/tenants")
    assert operator.get("/console/operator/tenants").headers["cache-control"] == "no-store"


def test_the_assets_a_page_links_to_carry_their_hash_and_are_immutable_and_still_gzipped(app: FastAPI, api: TestClient) -> None:
    admin, _ = console_session(app)
    html = admin.get(f"/console/modules/{_module(api)}").text + api.get("/docs").text
    links = ASSET.findall(html)
    assert {name for _, name, _ in links} >= {"dist/console.css", "dist/console.js", "dist/editor.js", "favicon.svg",
                                               "dist/swagger-ui-bundle.js", "dist/swagger-ui.css", "docs.js"}, links
    for url, name, version in links:
        assert version == hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:12], url
        answer = TestClient(app).get(url, headers={"Accept-Encoding": "gzip"})
        assert answer.status_code == 200, url
        assert answer.headers["cache-control"] == YEAR, url
        assert "default-src 'self'" in answer.headers["content-security-policy"], url
        if len(answer.content) >= 1024:
            assert answer.headers.get("content-encoding") == "gzip", url


def test_a_static_url_without_the_files_hash_is_revalidated_not_kept(app: FastAPI) -> None:
    client = TestClient(app)
    current = hashlib.sha256((STATIC / "console.css").read_bytes()).hexdigest()[:12]
    for url in ("/console/static/console.css", "/console/static/console.css?v=0123456789ab",
                f"/console/static/console.css?v={current}&v=0123456789ab"):
        answer = client.get(url)
        assert answer.status_code == 200 and answer.headers["cache-control"] == "no-cache", url
        # revalidation is cheap: the ETag answers 304, with the same policy
        again = client.get(url, headers={"If-None-Match": answer.headers["etag"]})
        assert again.status_code == 304 and again.headers["cache-control"] == "no-cache", url
    assert client.get(f"/console/static/console.css?v={current}").headers["cache-control"] == YEAR
    # a file that is not there is no copy to keep either, whatever its v
    assert client.get(f"/console/static/nothing.css?v={current}").headers["cache-control"] != YEAR
    assert client.get("/console/static/../pages.py?v=missing").status_code == 404


def test_the_codemirror_bundle_the_editor_imports_after_the_load_event_is_named_by_its_hash_and_kept(app: FastAPI) -> None:
    # editor.js (on the pages that edit code) imports CodeMirror's bundle after the page's load event, by
    # a URL its build wrote: the hash of that bundle's bytes, as a page's links carry it
    editor = (STATIC / "dist" / "editor.js").read_text()
    imported = re.findall(r"codemirror\.js\?v=([0-9a-f]+)", editor)
    current = hashlib.sha256((STATIC / "dist" / "codemirror.js").read_bytes()).hexdigest()[:12]
    assert imported == [current], imported
    answer = TestClient(app).get(f"/console/static/dist/codemirror.js?v={current}", headers={"Accept-Encoding": "gzip"})
    assert answer.status_code == 200 and answer.headers["cache-control"] == YEAR
    assert answer.headers.get("content-encoding") == "gzip"
    # CodeMirror is in its own bundle, not in editor.js, which the page waits for
    assert len(editor.encode()) * 10 < len((STATIC / "dist" / "codemirror.js").read_bytes())
