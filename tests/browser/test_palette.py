"""The Ctrl/⌘+K palette in Chromium, as a person uses it: Ctrl+K opens it, typing finds, the arrow keys
choose, Enter lands on the page (or runs the action), Escape closes it and focus returns; the shell's
Find button opens it for a mouse or a finger. axe-core on the page and the open dialog, both themes."""

from __future__ import annotations

from uuid import uuid4

from tests.browser.conftest import assert_accessible, shots, sign_in


def finder(page):  # noqa: ANN001, ANN201
    """The palette's combobox (the page has other comboboxes: selects)."""
    return page.get_by_role("dialog", name="Find anything").get_by_role("combobox")


def create_module(page, name: str) -> None:  # noqa: ANN001
    """Through the palette's "New code module", then the create form, as a person would."""
    page.keyboard.press("Control+k")
    combobox = finder(page)
    combobox.fill("new code")
    page.get_by_role("option", name="New code module").wait_for()
    page.keyboard.press("Enter")
    page.wait_for_url("**/console/modules/new")
    page.get_by_label("Name").fill(name)
    page.get_by_label("What it does").fill("Formats an amount as US dollars")
    page.get_by_role("textbox", name="Source").fill("exports.run = function (i) { return String(i.amount); };")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(f"**/console/modules/{name}")


def test_ctrl_k_finds_a_module_and_enter_opens_its_page(page) -> None:  # noqa: ANN001
    name = f"format_currency_{uuid4().hex[:6]}"
    sign_in(page, then="/console/tools")
    create_module(page, name)

    page.goto("/console/audit")
    page.keyboard.press("Control+k")
    dialog = page.get_by_role("dialog", name="Find anything")
    combobox = dialog.get_by_role("combobox")
    assert page.evaluate("() => document.activeElement.id") == "palette-input"
    # nothing typed: the pages and the actions
    dialog.get_by_role("option", name="Tools").first.wait_for()
    assert combobox.get_attribute("aria-expanded") == "true"
    # fuzzy-ish: its letters in order find it
    combobox.fill(f"fmtcurrency_{name[-6:]}")
    option = dialog.get_by_role("option", name=name)
    option.wait_for()
    assert "Code module" in option.inner_text()
    assert option.get_attribute("aria-selected") == "true"
    assert combobox.get_attribute("aria-activedescendant") == option.get_attribute("id")
    assert_accessible(page, "the palette with a result", within="#palette")
    shots(page, "palette-results")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/console/modules/{name}")
    assert page.get_by_role("dialog", name="Find anything").is_hidden()


def test_arrows_choose_escape_closes_and_returns_focus_and_the_find_button_opens_it(page) -> None:  # noqa: ANN001
    sign_in(page, then="/console/tools")
    page.keyboard.press("Control+k")
    combobox = finder(page)
    combobox.fill("server")
    dialog = page.get_by_role("dialog", name="Find anything")
    dialog.get_by_role("option", name="Audit Page", exact=True).wait_for(state="detached")  # the answer to "server" is in
    dialog.get_by_role("option", name="MCP servers Page", exact=True).wait_for()
    dialog.get_by_role("option", name="New MCP server").wait_for()
    options = dialog.get_by_role("option")
    first = options.nth(0)
    assert first.get_attribute("aria-selected") == "true"
    page.keyboard.press("ArrowDown")
    assert first.get_attribute("aria-selected") == "false" and options.nth(1).get_attribute("aria-selected") == "true"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")  # wraps to the last
    assert options.nth(options.count() - 1).get_attribute("aria-selected") == "true"
    # a typed name that matches nothing says so
    combobox.fill("zzzz-nothing-is-named-so")
    page.get_by_role("status").filter(has_text="Nothing is named like").wait_for()
    page.keyboard.press("Escape")
    assert page.get_by_role("dialog", name="Find anything").is_hidden()

    # the mouse: the shell's Find button, then a click on an option
    find = page.get_by_role("button", name="Find")
    find.click()
    dialog = page.get_by_role("dialog", name="Find anything")
    dialog.wait_for()
    assert_accessible(page, "the palette, opened by its button", within="#palette")
    page.keyboard.type("new server")
    dialog.get_by_role("option", name="New MCP server").click()
    page.wait_for_url("**/console/servers/new")
    assert_accessible(page, "the page the palette led to")


def test_the_palette_switches_the_theme_and_works_at_phone_width(page) -> None:  # noqa: ANN001
    sign_in(page, then="/console/tools")
    page.set_viewport_size({"width": 390, "height": 800})
    before = page.evaluate("() => document.documentElement.dataset.theme || (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light')")
    page.get_by_role("button", name="Find").click()
    page.keyboard.type("dark mode")
    page.get_by_role("option", name="Switch between light and dark mode").wait_for()
    shots(page, "palette-phone")
    page.keyboard.press("Enter")
    after = page.evaluate("() => document.documentElement.dataset.theme")
    assert after == ("light" if before == "dark" else "dark")
    # remembered by the shell's switch
    page.reload()
    assert page.evaluate("() => document.documentElement.dataset.theme") == after
    assert page.get_by_label("Theme").input_value() == after
    page.keyboard.press("Control+k")
    assert_accessible(page, f"the palette in the {after} theme", within="#palette")
    page.keyboard.press("Escape")
