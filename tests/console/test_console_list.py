"""The module list page without a browser: its filters, facet counts, ordering, paging and used-by
counts as a person reads them in the HTML, the htmx fragment, bad parameters, roles, and module
text shown as text (a description holding `<script>` is never markup)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.helpers import ADMIN_TOKEN, console_session, expect

BASE = "/api/v1/admin/code-modules"
LIST = "/console/modules"
SOURCE = "exports.run = () => 1; exports.x = 1;"


def _sign_in(app: FastAPI, token: str = ADMIN_TOKEN) -> TestClient:
    return console_session(app, token)[0]


@pytest.fixture
def admin(app: FastAPI) -> TestClient:
    return _sign_in(app)


def _make(api: TestClient, module_id: str, description: str = "", *, tool: bool = False, imports: list[str] = (),
          publish: bool = False) -> None:
    body = {"id": module_id, "description": description or f"The {module_id} module", "draftContent": SOURCE,
            "draftImports": list(imports)}
    if tool:
        body["tool"] = {"tags": ["t"]}
    expect(api.post(BASE, json=body), 201)
    if publish:
        expect(api.post(f"{BASE}/{module_id}/publish"), 200)


class Rows(HTMLParser):
    """The table's rows as a person reads them: each cell's text, and the links of the page."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.links: dict[str, str] = {}
        self.status: list[str] = []
        self._cell: list[str] | None = None
        self._in_body = False
        self._link: tuple[str, list[str]] | None = None
        self._in_status = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append([])
        elif tag in ("td", "th") and self._in_body:
            self._cell = []
        elif tag == "a":
            self._link = (found.get("href") or "", [])
        elif tag == "p" and found.get("role") == "status":
            self._in_status = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False
        elif tag in ("td", "th") and self._cell is not None and self._in_body:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "a" and self._link is not None:
            href, text = self._link
            self.links[" ".join("".join(text).split())] = href
            self._link = None
        elif tag == "p":
            self._in_status = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._link is not None:
            self._link[1].append(data)
        if self._in_status:
            self.status.append(data)


def _read(answer) -> Rows:  # noqa: ANN001
    assert answer.status_code == 200, answer.text[:500]
    parsed = Rows()
    parsed.feed(answer.text)
    return parsed


def _ids(answer) -> list[str]:  # noqa: ANN001
    return [row[0] for row in _read(answer).rows]


def _status(answer) -> str:  # noqa: ANN001
    return " ".join("".join(_read(answer).status).split())


def _world(api: TestClient) -> None:
    _make(api, "dates", "Date helpers", publish=True)
    _make(api, "money", "Formats money amounts", publish=True)
    _make(api, "report", "Yearly report", tool=True, imports=["dates", "money"], publish=True)
    _make(api, "summary", "Monthly summary", tool=True, imports=["dates"])
    _make(api, "counter", "Counts lines", tool=True)
    expect(api.put(f"{BASE}/money", json={"description": "Formats money amounts, better"}), 200)


def test_each_row_shows_what_it_does_its_state_role_and_used_by_count(admin: TestClient, api: TestClient) -> None:
    _world(api)
    page = _read(admin.get(LIST))
    assert page.rows == [
        ["counter", "Counts lines", "Unpublished", "tool", "0"],
        ["dates", "Date helpers", "Published", "library", "2 modules using dates"],
        ["money", "Formats money amounts, better", "Draft", "library", "1 module using money"],
        ["report", "Yearly report", "Published", "tool", "0"],
        ["summary", "Monthly summary", "Unpublished", "tool", "0"],
    ]
    # a count leads to the module's used-by section; the name to the module
    assert page.links["2 modules using dates"] == "/console/modules/dates#used-by"
    assert page.links["dates"] == "/console/modules/dates"
    assert _status(admin.get(LIST)) == "5 modules"
    # the counts agree with the module's own used-by list (the REST API's)
    assert api.get(f"{BASE}/dates").json()["usedBy"] == ["report", "summary"]


def test_filters_and_their_facet_counts(admin: TestClient, api: TestClient) -> None:
    _world(api)
    tools = admin.get(LIST, params={"role": "tool"})
    assert _ids(tools) == ["counter", "report", "summary"]
    links = _read(tools).links
    # the facets count the whole result; the selected one clears itself
    assert "Unpublished 2" in links and "Published 1" in links and "Draft 0" in links
    assert "Tools 3 (selected: select to show both)" in links and "Libraries 0" in links
    assert links["Tools 3 (selected: select to show both)"] == LIST
    assert links["Published 1"] == f"{LIST}?state=PUBLISHED&role=tool"
    assert _status(tools) == "3 modules match"

    assert _ids(admin.get(LIST, params={"state": "PUBLISHED"})) == ["dates", "report"]
    assert _ids(admin.get(LIST, params={"state": "DRAFT", "role": "library"})) == ["money"]
    assert _ids(admin.get(LIST, params={"search": "money"})) == ["money"]
    assert _ids(admin.get(LIST, params={"search": "  YEARLY  "})) == ["report"]
    # usedBy=X lists what X uses (not who uses X), with a way back
    used = admin.get(LIST, params={"usedBy": "report"})
    assert _ids(used) == ["dates", "money"]
    assert _read(used).links["Show every module"] == LIST
    assert _read(used).links["report"] == "/console/modules/report"
    assert _ids(admin.get(LIST, params={"usedBy": "report", "state": "DRAFT"})) == ["money"]
    nothing = admin.get(LIST, params={"search": "no such words"})
    assert _ids(nothing) == [] and "No module matches these filters." in nothing.text
    assert _read(nothing).links["Clear the filters"] == LIST


def test_the_form_shows_the_filters_of_the_url(admin: TestClient, api: TestClient) -> None:
    _world(api)
    html = admin.get(LIST, params={"search": "report", "state": "PUBLISHED", "role": "tool", "usedBy": "x",
                                   "orderBy": "state", "ascending": "false"}).text
    assert 'id="search" name="search" type="search" value="report"' in html
    assert '<option value="PUBLISHED" selected>' in html
    assert '<option value="tool" selected>' in html
    assert 'id="usedBy" name="usedBy" type="search" value="x"' in html
    assert '<option value="state" selected>' in html and '<option value="false" selected>' in html
    # the form works without JavaScript (a GET to the same URL) and with htmx (swaps the results, pushes the URL)
    assert 'method="get" action="/console/modules"' in html and 'hx-push-url="true"' in html


def test_ordering_by_each_column_and_both_directions(admin: TestClient, api: TestClient) -> None:
    _world(api)
    assert _ids(admin.get(LIST, params={"ascending": "false"})) == ["summary", "report", "money", "dates", "counter"]
    assert _ids(admin.get(LIST, params={"orderBy": "description"})) == ["counter", "dates", "money", "summary", "report"]
    by_role = [row[3] for row in _read(admin.get(LIST, params={"orderBy": "role"})).rows]
    assert by_role == sorted(by_role)
    by_state = _read(admin.get(LIST, params={"orderBy": "state", "ascending": "false"})).rows
    assert [row[2] for row in by_state] == ["Unpublished", "Unpublished", "Published", "Published", "Draft"]
    # the current column's header says how it is sorted and reverses it; another column's sorts by it
    html = admin.get(LIST, params={"orderBy": "description"}).text
    assert re.search(r'<th scope="col" aria-sort="ascending"><a href="/console/modules\?orderBy=description&amp;ascending=false">What it does', html)
    assert '<th scope="col"><a href="/console/modules?orderBy=state">State</a></th>' in html
    assert html.count("aria-sort=") == 1


def test_paging_keeps_the_filters(admin: TestClient, api: TestClient) -> None:
    for i in range(45):
        _make(api, f"lib{i:02d}", f"Library number {i}", tool=i % 3 == 0)
    first = admin.get(LIST, params={"search": "library"})
    assert _ids(first) == [f"lib{i:02d}" for i in range(20)]
    assert _status(first) == "45 modules match, page 1 of 3"
    links = _read(first).links
    assert "Previous page" not in links and links["Next page"] == f"{LIST}?search=library&offset=20"
    assert "1–20 of 45" in first.text
    third = admin.get(LIST, params={"search": "library", "offset": 40})
    assert _ids(third) == [f"lib{i:02d}" for i in range(40, 45)]
    assert _status(third) == "45 modules match, page 3 of 3"
    assert "Next page" not in _read(third).links and _read(third).links["Previous page"] == f"{LIST}?search=library&offset=20"
    # a filter's facet link starts again at the first page
    assert "offset" not in _read(third).links["Tools 15"]
    # past the end: an empty page that leads back to the last one
    beyond = admin.get(LIST, params={"offset": 500})
    assert _ids(beyond) == [] and _read(beyond).links["Previous page"] == f"{LIST}?offset=40"


def test_the_htmx_filter_answers_the_results_fragment_only(admin: TestClient, api: TestClient) -> None:
    _world(api)
    fragment = admin.get(LIST, params={"role": "library"}, headers={"HX-Request": "true", "HX-Target": "results"})
    assert fragment.status_code == 200
    assert "<html" not in fragment.text and 'id="results"' in fragment.text
    assert 'id="results-count"' in fragment.text and "2 modules match" in fragment.text
    assert [row[0] for row in _read(fragment).rows] == ["dates", "money"]
    # htmx restoring its history, or any other htmx request, gets the whole page
    whole = admin.get(LIST, headers={"HX-Request": "true", "HX-Target": "results", "HX-History-Restore-Request": "true"})
    assert "<html" in whole.text and whole.text.count('id="results-count"') == 1


@pytest.mark.parametrize("params", [{"state": "BOGUS"}, {"role": "robot"}, {"orderBy": "secret"}, {"offset": "-1"},
                                    {"offset": "many"}, {"ascending": "sideways"}, {"search": "x" * 201}])
def test_bad_parameters_get_a_message_not_a_stack_trace(admin: TestClient, params: dict[str, str]) -> None:
    answer = admin.get(LIST, params=params)
    assert answer.status_code == 400
    assert "Bad request" in answer.text and "Traceback" not in answer.text
    assert next(iter(params)) in answer.text  # the message names the parameter


def test_module_text_is_shown_as_text(admin: TestClient, api: TestClient) -> None:
    hostile = '<script>alert(1)</script><img src=x onerror="alert(2)"> & "quotes"'
    _make(api, "hostile", hostile)
    html = admin.get(LIST).text
    assert "<script>alert(1)</script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&#34;alert(2)&#34;&gt; &amp; &#34;quotes&#34;" in html
    assert _read(admin.get(LIST)).rows[0][1] == hostile
    # and in what the filters echo back
    searched = admin.get(LIST, params={"search": '"><script>alert(3)</script>', "usedBy": "<b>x</b>"}).text
    assert "<script>alert(3)" not in searched and "<b>x</b>" not in searched
    assert "&#34;&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in searched


def test_an_auditor_reads_the_list_without_the_create_button(app: FastAPI, api: TestClient) -> None:
    _world(api)
    token = expect(api.post("/api/v1/admin/tokens", json={"name": "reader", "role": "auditor"}), 201).json()["token"]
    auditor = _sign_in(app, token)
    answer = auditor.get(LIST)
    assert _ids(answer) == ["counter", "dates", "money", "report", "summary"]
    assert "Create" not in _read(answer).links and 'href="/console/modules/new"' not in answer.text


def test_an_empty_list_invites_the_admin_to_create(admin: TestClient) -> None:
    answer = admin.get(LIST)
    assert "No module yet." in answer.text and _read(answer).links["Create the first one"] == "/console/modules/new"
    assert _status(answer) == "0 modules"
