"""The console's shell in a browser (issue 31, points 4, 8, 10 and 11): the grouped sidebar and
the current page, its "Menu" disclosure at 390 px by keyboard, breadcrumbs, the theme switch
(remembered across a reload, following the system on "System"), a toast after a real action with
its Undo, a cold and a warm page load measured, and screenshots of the main pages in both themes
at 1440 and 390 px."""

from __future__ import annotations

import re
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, assert_no_horizontal_scroll, shots, sign_in
from tests.browser.test_console_callers import published_tool
from tests.browser.test_mcp_servers import attach, create_server

MAIN_PAGES = (("/console/modules", "modules"), ("/console/tools", "tools"), ("/console/servers", "servers"),
              ("/console/tokens", "tokens"), ("/console/audit", "audit"), ("/console/secrets", "secrets"),
              ("/console/profiles", "profiles"), ("/console/playground", "playground"))
LIGHT_SURFACE = "rgb(255, 255, 255)"
DARK_SURFACE = "rgb(17, 20, 24)"


def background(page) -> str:
    return page.evaluate("() => getComputedStyle(document.body).backgroundColor")


def test_the_sidebar_groups_the_pages_and_marks_the_current_one(page) -> None:
    sign_in(page, then="/console/tools")
    sidebar = page.get_by_role("navigation", name="Console")
    groups = {name: sidebar.get_by_role("list", name=name) for name in ("Build", "Connect", "Govern")}
    for group, links in (("Build", ["Tools", "Code modules", "Playground", "Changesets"]),
                         ("Connect", ["MCP servers", "Usage profiles", "Tokens", "Secrets"]),
                         ("Govern", ["Audit"])):
        for link in links:
            expect(groups[group].get_by_role("link", name=link, exact=True)).to_be_visible()
    expect(sidebar.get_by_role("link", name="Tools", exact=True)).to_have_attribute("aria-current", "page")

    # one line of links no more: each entry is on its own row, in one column beside the content
    boxes = [sidebar.get_by_role("link", name=n, exact=True).bounding_box() for n in ("Tools", "Code modules", "MCP servers")]
    assert boxes[0]["x"] == boxes[1]["x"] == boxes[2]["x"] and boxes[0]["y"] < boxes[1]["y"] < boxes[2]["y"]
    assert page.get_by_role("main").bounding_box()["x"] >= boxes[0]["x"] + boxes[0]["width"]

    sidebar.get_by_role("link", name="MCP servers").click()
    page.wait_for_url("**/console/servers")
    expect(sidebar.get_by_role("link", name="MCP servers")).to_have_attribute("aria-current", "page")
    expect(sidebar.locator("[aria-current]")).to_have_count(1)
    # a page deeper in a section is that section's: Changesets, not Code modules, though under /console/modules
    sidebar.get_by_role("link", name="Changesets").click()
    page.wait_for_url("**/console/modules/changeset-history")
    expect(sidebar.get_by_role("link", name="Changesets")).to_have_attribute("aria-current", "page")
    expect(sidebar.get_by_role("link", name="Code modules")).not_to_have_attribute("aria-current", "page")
    assert_accessible(page, "the shell at 1440 px")


def test_at_phone_width_the_sidebar_opens_behind_a_menu_button_by_keyboard(page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    sign_in(page, then="/console/secrets")
    menu = page.get_by_role("button", name="Menu")
    sidebar_link = page.get_by_role("navigation", name="Console").get_by_role("link", name="Tokens")
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(sidebar_link).to_be_hidden()
    # the content starts right under the bar: no wall of links before it
    assert page.get_by_role("heading", level=1).bounding_box()["y"] < 120
    assert_no_horizontal_scroll(page, "the secrets page at 390 px")

    # by keyboard from the top of the page: Skip to content, the brand, ..., Menu
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Toolsmith")).to_be_focused()
    for _ in range(3):  # past what the bar holds before it (the palette's button)
        page.keyboard.press("Tab")
        if menu.evaluate("e => e === document.activeElement"):
            break
    expect(menu).to_be_focused()
    page.keyboard.press("Enter")
    expect(menu).to_have_attribute("aria-expanded", "true")
    expect(sidebar_link).to_be_visible()
    expect(page.get_by_role("navigation", name="Console").get_by_role("link", name="Secrets")).to_have_attribute("aria-current", "page")
    assert_accessible(page, "the open menu at 390 px")
    shots(page, "shell-menu-open")
    page.keyboard.press("Tab")  # into the menu: its first link
    expect(page.get_by_role("navigation", name="Console").get_by_role("link", name="Tools", exact=True)).to_be_focused()
    page.keyboard.press("Escape")
    expect(menu).to_have_attribute("aria-expanded", "false")
    expect(menu).to_be_focused()
    expect(sidebar_link).to_be_hidden()
    # Space opens it too (a button), and following a link leads there with the menu closed again
    page.keyboard.press("Space")
    expect(sidebar_link).to_be_visible()
    sidebar_link.click()
    page.wait_for_url("**/console/tokens")
    expect(page.get_by_role("button", name="Menu")).to_have_attribute("aria-expanded", "false")


def test_breadcrumbs_lead_back_to_the_section(page) -> None:
    sign_in(page, then="/console/modules")
    page.goto("/console/modules/new")
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs.get_by_role("link", name="Code modules")).to_be_visible()
    expect(crumbs.locator("[aria-current=page]")).to_have_count(1)
    assert_accessible(page, "a page with breadcrumbs")
    crumbs.get_by_role("link", name="Code modules").click()
    page.wait_for_url("**/console/modules")
    # a section's own page has no trail
    expect(page.get_by_role("navigation", name="Breadcrumb")).to_have_count(0)


def test_the_theme_switch_is_remembered_and_system_follows_the_system(page) -> None:
    page.emulate_media(color_scheme="light")
    sign_in(page, then="/console/tokens")
    theme = page.get_by_label("Theme")
    expect(theme).to_have_value("system")
    assert background(page) == LIGHT_SURFACE

    theme.select_option("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    assert background(page) == DARK_SURFACE
    assert_accessible(page, "the tokens page, dark theme chosen")
    # before the body is there (so before anything is painted) the chosen theme is on <html>
    page.add_init_script("""new MutationObserver((changes, observer) => {
        if (!document.body) return;
        window.themeWhenTheBodyCame = document.documentElement.dataset.theme || "none";
        observer.disconnect();
    }).observe(document, {childList: true, subtree: true});""")
    page.reload()
    expect(page.get_by_label("Theme")).to_have_value("dark")
    assert page.evaluate("() => window.themeWhenTheBodyCame") == "dark"
    assert background(page) == DARK_SURFACE  # chosen, whatever the system says
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Audit").click()
    page.wait_for_url("**/console/audit")
    assert background(page) == DARK_SURFACE

    page.get_by_label("Theme").select_option("light")
    page.emulate_media(color_scheme="dark")
    assert background(page) == LIGHT_SURFACE  # Light holds on a dark system

    page.get_by_label("Theme").select_option("system")
    expect(page.locator("html")).not_to_have_attribute("data-theme", re.compile("."))
    assert background(page) == DARK_SURFACE
    page.emulate_media(color_scheme="light")
    assert background(page) == LIGHT_SURFACE
    page.reload()
    expect(page.get_by_label("Theme")).to_have_value("system")
    page.emulate_media(color_scheme="dark")
    assert background(page) == DARK_SURFACE
    assert_accessible(page, "the audit page, system theme (dark)")


def test_a_toast_after_an_action_stays_while_read_closes_on_escape_and_its_undo_is_shown_once(page, console_server) -> None:
    tool = published_tool(console_server)  # what the server offers: made beforehand, not the point here
    server = f"s{uuid4().hex[:8]}"
    sign_in(page, then="/console/servers")
    create_server(page, server)
    # the create's own toast, closed by its ×: this test follows the attach's and the detach's
    page.locator("#toasts .toast", has_text=f"Created the MCP server {server}.").get_by_role("button", name="Dismiss").click()
    attach(page, tool)
    toasts = page.locator("#toasts")
    expect(toasts).to_have_attribute("role", "status")
    expect(toasts).to_have_attribute("aria-live", "polite")
    attached = toasts.get_by_text(re.compile(r"^Attached "))
    expect(attached).to_be_visible()
    # Escape closes it (focus is not in a dialog)
    page.keyboard.press("Escape")
    expect(attached).to_have_count(0)

    page.get_by_role("button", name=f"Detach {tool}").click()
    detached = toasts.get_by_text(f"Detached {tool}.")
    expect(detached).to_be_visible()
    box = toasts.locator(".toast").bounding_box()
    viewport = page.viewport_size
    assert box["x"] + box["width"] <= viewport["width"] and box["y"] + box["height"] <= viewport["height"]
    toasts.locator(".toast").hover()  # kept while the pointer is on it, through the checks (6 s otherwise)
    assert_accessible(page, "a toast with its Undo")
    shots(page, "shell-toast")
    # while the pointer is on it, it stays past its six seconds; it leaves six seconds after the pointer does
    toasts.locator(".toast").hover()
    page.wait_for_timeout(7000)
    expect(detached).to_be_visible()
    page.mouse.move(5, 5)
    expect(detached).to_have_count(0, timeout=8000)

    # again, and this time Undo, reached by keyboard: the answer's toast comes on the page it leads to, once
    page.get_by_role("button", name=f"Attach the checked tools").wait_for()
    attach(page, tool)
    again = toasts.locator(".toast").filter(has_text=f"Attached {tool}.")
    again.get_by_role("button", name="Dismiss").click()  # its ×
    expect(again).to_have_count(0)
    page.get_by_role("button", name=f"Detach {tool}").click()
    undo = toasts.locator(".toast", has_text=f"Detached {tool}.").get_by_role("button", name="Undo")
    undo.focus()
    page.evaluate("() => { window.beforeUndo = true; }")
    page.keyboard.press("Enter")
    expect(toasts.get_by_text(f"Attached {tool}.")).to_be_visible()
    assert page.evaluate("() => window.beforeUndo === undefined"), "the Undo's answer is shown on a page of its own"
    expect(toasts.get_by_text(f"Detached {tool}.")).to_have_count(0)
    assert "toolsmith_toast" not in page.evaluate("() => document.cookie")
    page.reload()
    page.get_by_role("heading", level=1).wait_for()
    expect(toasts.locator(".toast")).to_have_count(0)


def test_a_cold_and_a_warm_page_load(page, context) -> None:
    """The figures for the report (printed, not asserted: a shared machine's timings vary)."""
    sign_in(page, then="/console/modules")
    context.clear_cookies()
    sign_in(page, then="/console/tools")
    page.goto("about:blank")
    session = context.new_cdp_session(page)
    session.send("Network.clearBrowserCache")
    figures = {}
    for label in ("cold", "warm", "warm again"):
        page.goto("/console/tools")
        page.wait_for_load_state("load")
        figures[label] = page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0];"
            " const paint = performance.getEntriesByName('first-contentful-paint')[0];"
            " return {response: Math.round(n.responseEnd - n.startTime), dom: Math.round(n.domContentLoadedEventEnd - n.startTime),"
            " load: Math.round(n.loadEventEnd - n.startTime), paint: paint ? Math.round(paint.startTime) : null,"
            " resources: performance.getEntriesByType('resource').map(r => [r.name.split('/').pop().split('?')[0], Math.round(r.duration), r.transferSize])}; }")
    print("\npage loads of /console/tools (ms):", figures)
    # what makes a page: its HTML, one stylesheet, theme.js and console.js; no editor bundle, no font
    names = [name for name, _, _ in figures["cold"]["resources"]]
    assert "editor.js" not in names and not any(n.endswith((".woff", ".woff2", ".ttf")) for n in names)
    # warm: the versioned assets come from the browser's cache (nothing transferred)
    assert all(size == 0 for name, _, size in figures["warm"]["resources"] if name.endswith((".css", ".js"))), figures["warm"]


def test_the_main_pages_in_both_themes(page, watch) -> None:
    watch.allowed_console.append(re.compile(r"status of 404"))  # the page that is not there, on purpose
    # before signing in: the sign-in page has the shell's bar and no sidebar
    page.goto("/console/sign-in")
    expect(page.get_by_role("navigation", name="Console")).to_have_count(0)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        assert_accessible(page, f"sign-in ({scheme})")
    shots(page, "shell-sign-in")
    sign_in(page)
    page.goto("/console/modules/no-such-module-here")
    assert_accessible(page, "a page that is not there")
    shots(page, "shell-not-found")
    for path, name in MAIN_PAGES:
        page.goto(path)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert_accessible(page, f"{name} ({scheme})")
        shots(page, f"shell-{name}")
