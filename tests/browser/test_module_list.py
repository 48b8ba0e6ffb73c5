"""The module list in Chromium: 25 modules made over REST (tools and libraries, some published, some
importing others), filtered by search, state, role and used-by with the keyboard alone, facet
counts, ordering, page 2, a reloaded URL showing the same view, the form without JavaScript, and
the list at 390 px wide with no sideways scrolling."""

from __future__ import annotations

import re
from uuid import uuid4

import pytest

from tests.browser.conftest import ADMIN_TOKEN, assert_accessible, shot, sign_in

BASE = "/api/v1/admin/code-modules"
SOURCE = "exports.run = () => 1; exports.x = 1;"
LIBRARIES = 12
TOOLS = 13
PUBLISHED_LIBRARIES = 5
PUBLISHED_TOOLS = 3


@pytest.fixture(scope="module")
def prefix(console_server) -> str:  # noqa: ANN001
    """25 modules whose ids start with a prefix of this module's own (the server is shared):
    libraries lib00–lib11 (lib00–lib04 published), tools tool00–tool12 (tool00–tool02 published);
    tool00 imports lib00 and lib01, tool01 imports lib00."""
    p = f"l{uuid4().hex[:6]}"
    imports = {0: [f"{p}_lib00", f"{p}_lib01"], 1: [f"{p}_lib00"]}
    with console_server.client() as http:
        def make(module_id: str, description: str, *, tool: bool, uses: list[str], publish: bool) -> None:
            body = {"id": module_id, "description": description, "draftContent": SOURCE, "draftImports": uses}
            if tool:
                body["tool"] = {"tags": ["listing"]}
            made = http.post(BASE, json=body)
            assert made.status_code == 201, made.text
            if publish:
                published = http.post(f"{BASE}/{module_id}/publish")
                assert published.status_code == 200, published.text

        for i in range(LIBRARIES):
            make(f"{p}_lib{i:02d}", f"Helpers for {'dates' if i % 2 else 'money'}, library {i:02d}", tool=False, uses=[],
                 publish=i < PUBLISHED_LIBRARIES)
        for i in range(TOOLS):
            make(f"{p}_tool{i:02d}", f"Answers about {'dates' if i % 2 else 'money'}, tool {i:02d}", tool=True,
                 uses=imports.get(i, []), publish=i < PUBLISHED_TOOLS)
    return p


def _rows(page) -> list[str]:  # noqa: ANN001
    """The names of the rows shown (each row's header cell)."""
    return page.locator("tbody").get_by_role("rowheader").all_inner_texts()


def _status(page):  # noqa: ANN001, ANN202
    return page.get_by_role("status").filter(has_text="module")


def _tab_to(page, element_id: str, limit: int = 40) -> None:  # noqa: ANN001
    """Presses Tab until the element has the focus (and fails if it never does)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement && document.activeElement.id") == element_id:
            return
    raise AssertionError(f"Tab never reached #{element_id}")


def test_filtering_by_keyboard_with_facets_used_by_and_paging(page, prefix) -> None:  # noqa: ANN001
    sign_in(page)
    assert_accessible(page, "the module list")

    # search by keyboard alone: Tab to the field, type; the results and the URL follow
    _tab_to(page, "search")
    page.keyboard.type(prefix)
    page.wait_for_url(re.compile(rf"search={prefix}"))
    _status(page).filter(has_text="25 modules match, page 1 of 2").wait_for()
    assert _rows(page) == [f"{prefix}_lib{i:02d}" for i in range(12)] + [f"{prefix}_tool{i:02d}" for i in range(8)]
    # the facets count the whole result, not the page
    facets = page.get_by_role("link", name=re.compile(r"^(Published|Draft|Unpublished|Tools|Libraries) \d+$"))
    assert sorted(facets.all_inner_texts()) == sorted(["Published 8", "Draft 0", "Unpublished 17", "Tools 13", "Libraries 12"])
    # each row: what it does, its state, its role, how many modules use it (linked to the module's used-by)
    row = page.get_by_role("row", name=re.compile(rf"^{prefix}_lib00 "))
    assert "Helpers for money, library 00" in row.inner_text() and "Published" in row.inner_text()
    used = row.get_by_role("link", name=f"2 modules using {prefix}_lib00")
    assert used.get_attribute("href") == f"/console/modules/{prefix}_lib00#used-by"
    assert page.get_by_role("row", name=re.compile(rf"^{prefix}_lib01 ")).get_by_role("link", name=f"1 module using {prefix}_lib01").is_visible()
    assert_accessible(page, "the module list, searched")
    shot(page, "modules-list")

    # state by keyboard: Tab to the select, a letter picks "Published"
    _tab_to(page, "state")
    page.keyboard.press("p")
    page.wait_for_url(re.compile(r"state=PUBLISHED"))
    _status(page).filter(has_text="8 modules match").wait_for()
    assert page.get_by_role("link", name="Tools 3").is_visible() and page.get_by_role("link", name="Libraries 5").is_visible()

    # role: libraries only, still by keyboard
    _tab_to(page, "role")
    page.keyboard.press("l")
    _status(page).filter(has_text="5 modules match").wait_for()
    assert _rows(page) == [f"{prefix}_lib{i:02d}" for i in range(5)]
    assert re.search(rf"search={prefix}&state=PUBLISHED&role=library", page.url)

    # a reloaded URL shows the same view: the form as it was, the same rows
    page.reload()
    assert page.get_by_label("Search").input_value() == prefix
    assert page.get_by_label("State").input_value() == "PUBLISHED" and page.get_by_label("Role").input_value() == "library"
    assert _rows(page) == [f"{prefix}_lib{i:02d}" for i in range(5)]
    _status(page).filter(has_text="5 modules match").wait_for()

    # used by: what tool00 uses, whatever the other filters were (Clear them first, by keyboard)
    page.get_by_role("link", name="Clear the filters").focus()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/console/modules$"))
    _tab_to(page, "usedBy")
    page.keyboard.type(f"{prefix}_tool00")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"usedBy={prefix}_tool00"))
    _status(page).filter(has_text="2 modules match").wait_for()
    assert _rows(page) == [f"{prefix}_lib00", f"{prefix}_lib01"]
    assert page.get_by_role("link", name="Show every module").is_visible()
    assert_accessible(page, "the module list filtered by used-by")

    # page 2 of the search, by its link; the URL reproduces it after a reload
    page.goto(f"/console/modules?search={prefix}")
    page.get_by_role("link", name="Next page").click()
    page.wait_for_url(re.compile(r"offset=20"))
    expected = [f"{prefix}_tool{i:02d}" for i in range(8, 13)]
    assert _rows(page) == expected
    assert page.get_by_text("21–25 of 25").is_visible()
    page.reload()
    assert _rows(page) == expected and page.get_by_label("Search").input_value() == prefix
    assert page.get_by_role("link", name="Previous page").is_visible()
    assert_accessible(page, "the module list, page 2")
    shot(page, "modules-list-page-2")


def test_ordering_by_a_column_header_and_by_the_select(page, prefix) -> None:  # noqa: ANN001
    sign_in(page, then=f"/console/modules?search={prefix}&role=tool")
    # the "What it does" header sorts by description; pressed again, it reverses
    header = page.get_by_role("columnheader", name="What it does")
    header.get_by_role("link").click()
    page.wait_for_url(re.compile(r"orderBy=description"))
    assert page.get_by_role("columnheader", name="What it does").get_attribute("aria-sort") == "ascending"
    assert _rows(page)[:2] == [f"{prefix}_tool01", f"{prefix}_tool03"]  # "Answers about dates, …" first
    page.get_by_role("columnheader", name="What it does").get_by_role("link").click()
    page.wait_for_url(re.compile(r"ascending=false"))
    assert page.get_by_role("columnheader", name="What it does").get_attribute("aria-sort") == "descending"
    assert _rows(page)[:2] == [f"{prefix}_tool12", f"{prefix}_tool10"]  # "…money, tool 12" first
    # the select does the same (it is what a phone-width screen, without headers, offers)
    page.get_by_label("Order by").select_option(label="State")
    page.wait_for_url(re.compile(r"orderBy=state"))
    _status(page).filter(has_text="13 modules match").wait_for()
    states = page.locator("tbody td[data-label=State]").all_inner_texts()
    assert states == sorted(states, reverse=True)  # still descending
    assert_accessible(page, "the module list ordered by state")


def test_the_filters_work_without_javascript(browser, console_server, prefix) -> None:  # noqa: ANN001
    context = browser.new_context(base_url=console_server.url, java_script_enabled=False, viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        sign_in(page, ADMIN_TOKEN)
        page.get_by_label("Search").fill(prefix)
        page.get_by_label("Role").select_option(label="Tools")
        page.get_by_label("State").select_option(label="Unpublished")
        page.get_by_role("button", name="Filter").click()
        page.wait_for_url(re.compile(rf"search={prefix}&state=UNPUBLISHED&role=tool"))
        assert _rows(page) == [f"{prefix}_tool{i:02d}" for i in range(3, 13)]
        assert page.get_by_text("10 modules match").is_visible()
        # the facet links are plain links too: the selected role's clears it
        page.get_by_role("link", name=re.compile(r"^Tools 10 \(selected")).click()
        page.wait_for_url(re.compile(rf"search={prefix}&state=UNPUBLISHED$"))
        assert page.get_by_text("17 modules match").is_visible()
        assert page.get_by_label("Role").input_value() == ""
    finally:
        context.close()


def test_the_list_at_390_px_has_no_sideways_scroll_and_its_controls_work(page, prefix) -> None:  # noqa: ANN001
    page.set_viewport_size({"width": 390, "height": 800})
    sign_in(page, then=f"/console/modules?search={prefix}")
    _status(page).filter(has_text="25 modules match").wait_for()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    # every filter is on screen, full width, and works
    for label in ("Search", "State", "Role", "Used by", "Order by", "Direction"):
        box = page.get_by_label(label).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, label
    # the rows are cards whose cells say what they are
    row = page.get_by_role("row", name=re.compile(rf"^{prefix}_lib00 "))
    cell = row.get_by_role("cell").filter(has=page.get_by_role("link", name=f"2 modules using {prefix}_lib00"))
    assert cell.evaluate("td => getComputedStyle(td, '::before').content") == '"Used by: "'
    assert page.locator("thead").is_hidden()
    page.get_by_label("Role").select_option(label="Libraries")
    _status(page).filter(has_text="12 modules match").wait_for()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    filter_button = page.get_by_role("button", name="Filter").bounding_box()
    assert filter_button["x"] + filter_button["width"] <= 390
    assert_accessible(page, "the module list at 390 px")
    shot(page, "modules-list-390px")


def test_the_role_column_its_badge_filter_and_facets_show_the_published_role_with_a_draft_s_beside_it(page, console_server) -> None:  # noqa: ANN001
    from playwright.sync_api import expect

    name = f"r{uuid4().hex[:8]}"
    with console_server.client() as http:  # a published library (the set-up; what is tested is done on the pages)
        assert http.post(BASE, json={"id": name, "description": "Rounds amounts", "draftContent": SOURCE}).status_code == 201
        assert http.post(f"{BASE}/{name}/publish").status_code == 200
    sign_in(page, then=f"/console/modules/{name}")
    # a draft that makes it a tool, saved by keyboard: the badge says what callers see, the draft's beside it
    page.get_by_role("switch", name="Call it as a tool").check()
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    expect(page.locator("#module-badges")).to_have_text("Draft library (draft: tool)")

    page.goto(f"/console/modules?search={name}")
    row = page.locator("tbody tr", has=page.get_by_role("link", name=name, exact=True))
    expect(row.locator("td[data-label='Role']")).to_have_text("library (draft: tool)")
    # the facets and the filter count and filter by the published role
    expect(page.get_by_role("link", name="Libraries 1")).to_be_visible()
    expect(page.get_by_role("link", name="Tools 0")).to_be_visible()
    page.get_by_label("Role").select_option("tool")
    _status(page).filter(has_text="No module").or_(_status(page).filter(has_text="0 modules")).wait_for()
    assert _rows(page) == []
    page.get_by_label("Role").select_option("library")
    _status(page).filter(has_text="1 module").wait_for()
    assert _rows(page) == [name]
    assert_accessible(page, "the module list with a draft's role beside the published one")
    shot(page, "modules-list-draft-role")

    # published through the review: now a tool everywhere
    page.goto(f"/console/modules/{name}")
    page.get_by_role("button", name="Publish", exact=True).click()
    page.get_by_role("dialog", name=f"Publish {name}").get_by_role("button", name="Publish version 2").click()
    expect(page.locator("#module-badges")).to_have_text("Published tool")
    page.goto(f"/console/modules?search={name}&role=tool")
    assert _rows(page) == [name]
    expect(page.locator("tbody tr", has=page.get_by_role("link", name=name, exact=True)).locator("td[data-label='Role']")).to_have_text("tool")
