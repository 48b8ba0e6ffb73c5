"""console.toast: a toast rides an htmx answer's HX-Trigger (merged with the triggers it has) or, for
an answer that leads to another page, a short-lived cookie read once on the next page."""

from __future__ import annotations

import json
from http.cookies import SimpleCookie

import pytest
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from console.toast import COOKIE, Undo, read_cookie, toast


def request(*, htmx: bool = False, scheme: str = "http") -> Request:
    headers = [(b"hx-request", b"true")] if htmx else []
    return Request({"type": "http", "method": "POST", "path": "/console/x", "headers": headers, "scheme": scheme,
                    "server": ("testserver", 80), "query_string": b""})


def cookie_of(response) -> SimpleCookie:
    jar = SimpleCookie()
    jar.load(response.headers["set-cookie"])
    return jar


def test_an_htmx_answer_in_place_carries_the_toast_in_hx_trigger() -> None:
    answer = toast(request(htmx=True), HTMLResponse("<p>ok</p>"), "Detached weather",
                   undo=Undo("/console/servers/s1/tools", label="Attach again", fields={"tool": "weather"}))
    assert "set-cookie" not in answer.headers
    assert json.loads(answer.headers["HX-Trigger"]) == {"toast": {
        "text": "Detached weather", "kind": "success",
        "undo": {"url": "/console/servers/s1/tools", "label": "Attach again", "fields": {"tool": "weather"}}}}


def test_the_toast_is_merged_with_the_triggers_an_answer_has() -> None:
    as_json = HTMLResponse("", headers={"HX-Trigger": json.dumps({"console:open-dialog": "review"})})
    merged = json.loads(toast(request(htmx=True), as_json, "Saved").headers["HX-Trigger"])
    assert merged == {"console:open-dialog": "review", "toast": {"text": "Saved", "kind": "success"}}
    as_names = HTMLResponse("", headers={"HX-Trigger": "saved, refreshed"})
    merged = json.loads(toast(request(htmx=True), as_names, "Saved", kind="info").headers["HX-Trigger"])
    assert merged == {"saved": None, "refreshed": None, "toast": {"text": "Saved", "kind": "info"}}


def test_non_ascii_text_is_escaped_in_the_header() -> None:
    answer = toast(request(htmx=True), HTMLResponse(""), "Published « météo » — v2")
    answer.headers["HX-Trigger"].encode("ascii")
    assert json.loads(answer.headers["HX-Trigger"])["toast"]["text"] == "Published « météo » — v2"


@pytest.mark.parametrize("answer", [
    RedirectResponse("/console/modules/m", status_code=303),
    HTMLResponse("", headers={"HX-Redirect": "/console/modules/m"}),
    HTMLResponse("", headers={"HX-Refresh": "true"}),
])
def test_an_answer_that_leaves_the_page_carries_the_toast_in_a_cookie(answer) -> None:
    sent = toast(request(htmx=True), answer, 'Restored "v3"; <b>not</b> markup',
                 undo=Undo("/console/modules/m/restore", fields={"version": "4"}))
    assert "HX-Trigger" not in sent.headers
    jar = cookie_of(sent)
    morsel = jar[COOKIE]
    assert morsel["path"] == "/console" and morsel["max-age"] == "60" and morsel["samesite"].lower() == "strict"
    assert not morsel["httponly"] and not morsel["secure"]
    # percent-encoded JSON: no quote, semicolon, comma or space in the cookie's value
    assert all(c.isalnum() or c in "%-._~" for c in morsel.value)
    assert read_cookie(morsel.value) == {"text": 'Restored "v3"; <b>not</b> markup', "kind": "success",
                                         "undo": {"url": "/console/modules/m/restore", "label": "Undo",
                                                  "fields": {"version": "4"}}}


def test_a_plain_form_post_uses_the_cookie_and_https_makes_it_secure() -> None:
    sent = toast(request(scheme="https"), RedirectResponse("/console/secrets", status_code=303), "Saved the secret")
    assert cookie_of(sent)[COOKIE]["secure"]


def test_long_text_is_cut_and_bad_input_refused() -> None:
    sent = toast(request(htmx=True), HTMLResponse(""), "x" * 1000)
    assert len(json.loads(sent.headers["HX-Trigger"])["toast"]["text"]) == 300
    with pytest.raises(ValueError, match="kind"):
        toast(request(htmx=True), HTMLResponse(""), "Saved", kind="loud")  # type: ignore[arg-type]
    for url in ("https://elsewhere.example/console/x", "//elsewhere.example/x", "/api/v1/x", "/console//x"):
        with pytest.raises(ValueError, match="console path"):
            Undo(url)
    assert read_cookie("not%20json") is None
