"""The module page as a workspace (issue 31, points 1, 3, 8 and 12 for code modules), as a person
uses it with the keyboard and the mouse: Publish saves unsaved edits and opens the review in one
step, and is off (with the reason) while nothing is pending; each module is made through the New
page, never over REST."""

from __future__ import annotations

from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in


def _name(prefix: str = "w") -> str:
    return f"{prefix}{uuid4().hex[:8]}"


def create_through_the_new_page(page, name: str, description: str, source: str) -> None:  # noqa: ANN001
    """Signs in on the New page and creates the module by keyboard, as a person does."""
    sign_in(page, then="/console/modules/new")
    page.get_by_label("Name").fill(name)
    page.get_by_text("✓ free").wait_for()
    page.get_by_label("What it does").fill(description)
    page.get_by_role("textbox", name="Source").focus()
    page.keyboard.type(source)
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(f"**/console/modules/{name}")


def type_at_the_end(page, text: str) -> None:  # noqa: ANN001
    page.get_by_role("textbox", name="Source").focus()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)


def test_publish_saves_unsaved_edits_then_opens_the_review_and_is_off_while_nothing_is_pending(page, console_server) -> None:  # noqa: ANN001
    name = _name()
    create_through_the_new_page(page, name, "Says hello", "exports.run = () => 'hello';")
    publish = page.get_by_role("button", name="Publish", exact=True)
    expect(publish).to_be_enabled()  # never published: the draft is pending

    # the first publish, by keyboard: the review (its checks and the diff), then Publish version 1
    publish.focus()
    page.keyboard.press("Enter")
    review = page.get_by_role("dialog", name=f"Publish {name}")
    expect(review.get_by_role("button", name="Publish version 1")).to_be_visible()
    expect(publish).not_to_have_attribute("aria-busy", "true")
    assert_accessible(page, "the publish review")
    review.get_by_role("button", name="Publish version 1").click()
    page.wait_for_load_state()

    # nothing pending now: Publish is off and says why
    publish = page.get_by_role("button", name="Publish", exact=True)
    expect(publish).to_be_disabled()
    expect(page.get_by_text("Nothing to publish: the published version is current.")).to_be_visible()
    expect(publish).to_have_accessible_description("Nothing to publish: the published version is current.")
    assert_accessible(page, "the module page with nothing to publish")
    shots(page, "module-publish-nothing-pending")

    # an edit, not saved: Publish turns on at once and says it saves first
    type_at_the_end(page, " // and goodbye")
    expect(publish).to_be_enabled()
    expect(page.get_by_text("Publish saves your changes first.")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Unsaved changes")).to_be_visible()

    # one click: the draft is saved, then the review opens on it (no refusal, no Reload link)
    page.get_by_role("button", name="Publish", exact=True).click()
    review = page.get_by_role("dialog", name=f"Publish {name}")
    expect(review.get_by_role("button", name="Publish version 2")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="Draft saved")).to_be_attached()
    expect(review.get_by_text("and goodbye").first).to_be_attached()  # the diff shows the saved edit
    expect(review.get_by_role("link", name="Reload the module")).to_have_count(0)
    assert_accessible(page, "the publish review after the save")
    shots(page, "module-publish-review-after-save")
    review.get_by_role("button", name="Publish version 2").click()
    page.wait_for_load_state()
    expect(page.get_by_role("button", name="Publish", exact=True)).to_be_disabled()
    with console_server.client() as api:
        module = api.get(f"/api/v1/admin/code-modules/{name}").json()
    assert module["published"]["version"] == 2 and module["published"]["content"].endswith("// and goodbye")


def test_publish_with_an_edit_that_save_refuses_shows_the_error_and_opens_no_review(page, console_server, watch) -> None:  # noqa: ANN001
    import re

    watch.allowed_console += [re.compile(r"status of 4\d\d"), re.compile(r"Error Code 4\d\d from /console/modules/")]
    name = _name()
    create_through_the_new_page(page, name, "Says hello", "exports.run = () => 'hello';")
    page.get_by_label("What it does").fill("")  # What it does is required
    type_at_the_end(page, " // more")
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.get_by_role("status").filter(has_text="Not saved")).to_contain_text("Nothing was published.")
    expect(page.get_by_role("dialog", name=f"Publish {name}")).to_be_hidden()
    expect(page.get_by_role("button", name="Publish", exact=True)).not_to_have_attribute("aria-busy", "true")
    assert_accessible(page, "the module page with a refused save")


def test_the_workspace_editor_resizes_goes_full_screen_and_test_is_a_docked_panel_that_keeps_its_input(page, console_server) -> None:  # noqa: ANN001
    import re

    name = _name()
    create_through_the_new_page(page, name, "Doubles n", "exports.run = (input) => ({ twice: input.n * 2 });")
    # a tool with one integer parameter, saved: the Test panel's form has a field for it
    page.get_by_role("switch", name="Call it as a tool").check()
    page.get_by_role("button", name="Add a parameter").click()
    row = page.get_by_role("group", name="Parameter 1")
    row.get_by_label("Name").fill("n")
    row.get_by_label("Type").select_option("integer")
    row.get_by_label("Required").check()
    page.get_by_role("button", name="Save draft").click()
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    panel = page.get_by_role("region", name=f"Test {name}")
    expect(panel).to_be_visible()
    expect(page.get_by_role("dialog")).to_have_count(0)  # a panel, not a modal
    editor_box = page.locator(".editor-host").bounding_box()
    panel_box = panel.bounding_box()
    assert panel_box["x"] > editor_box["x"] + editor_box["width"] - 1, "at 1280 px Test is docked beside the editor"
    assert editor_box["height"] >= 400, "the editor is tall"

    # resize by keyboard: the bar under the editor, Down three times
    bar = page.get_by_role("separator", name="Editor height")
    before = page.locator(".editor-host").bounding_box()["height"]
    bar.focus()
    for _ in range(3):
        page.keyboard.press("ArrowDown")
    after = page.locator(".editor-host").bounding_box()["height"]
    assert abs(after - before - 96) <= 2
    expect(bar).to_have_attribute("aria-valuenow", str(round(after)))
    # and by mouse: drag the bar up 100 px
    box = bar.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2 - 100, steps=5)
    page.mouse.up()
    assert abs(page.locator(".editor-host").bounding_box()["height"] - (after - 100)) <= 2

    # full screen is a workspace: the editor and the Test panel side by side over the whole window,
    # the rest of the page out of reach; the button, then Escape; the shortcut, then the button again
    full = page.get_by_role("button", name="Full screen")
    full.click()
    leave = page.get_by_role("button", name="Leave full screen")
    expect(leave).to_have_attribute("aria-pressed", "true")
    space = page.locator(".workspace").bounding_box()
    assert space["width"] == 1280 and space["height"] == 800
    editor_box, panel_box = page.locator(".editor-host").bounding_box(), panel.bounding_box()
    assert panel_box["x"] >= editor_box["x"] + editor_box["width"] - 1, "Test is beside the editor in full screen"
    assert editor_box["height"] >= 600 and panel_box["y"] + panel_box["height"] <= 800 + 1
    expect(page.get_by_label("What it does")).to_be_hidden()
    expect(page.get_by_role("button", name="Save draft")).to_be_visible()
    assert page.evaluate("() => document.querySelector('nav, .sidebar, header')?.closest('[inert]') !== null")
    assert_accessible(page, "the editor in full screen")
    shots(page, "module-workspace-full-screen")
    # by keyboard: from the editor, Tab reaches Test's field (nothing of the page behind), and Run runs there
    page.get_by_role("textbox", name="Source").focus()
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("() => document.activeElement?.closest('#test-panel') !== null"):
            break
    assert page.evaluate("() => document.activeElement?.closest('#test-panel') !== null"), "Tab reaches the Test panel"
    page.keyboard.press("Escape")
    expect(page.get_by_role("button", name="Full screen")).to_have_attribute("aria-pressed", "false")
    page.get_by_role("textbox", name="Source").focus()
    page.keyboard.press("Control+Shift+F")
    expect(page.get_by_role("button", name="Leave full screen")).to_be_visible()
    page.get_by_role("button", name="Leave full screen").click()
    expect(page.get_by_role("button", name="Full screen")).to_be_visible()

    # Test with the form: n = 21
    panel.get_by_role("spinbutton", name=re.compile("^n")).fill("21")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_text('"twice": 42')).to_be_visible()
    assert_accessible(page, "the Test panel with a result")
    shots(page, "module-workspace-test-panel")
    # the JSON toggle shows the same input as JSON
    panel.get_by_role("radio", name="JSON").check()
    expect(panel.get_by_label("Input (JSON)")).to_have_value('{\n  "n": 21\n}')

    # Save as example: the input and the output join the tool's examples, and the draft is saved
    panel.get_by_role("button", name="Save as example").click()
    expect(panel.get_by_role("button", name="Added as “example_1”")).to_be_disabled()
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    with console_server.client() as api:
        examples = api.get(f"/api/v1/admin/code-modules/{name}").json()["draft"]["tool"]["examples"]
    assert examples == [{"name": "example_1", "input": {"n": 21}, "output": {"twice": 42}}]
    expect(page.get_by_role("textbox", name="Examples")).to_have_value(re.compile('"example_1"'))

    # a reload keeps the panel's last input and mode (per module, in the browser)
    page.reload()
    panel = page.get_by_role("region", name=f"Test {name}")
    expect(panel.get_by_role("radio", name="JSON")).to_be_checked()
    expect(panel.get_by_label("Input (JSON)")).to_have_value('{\n  "n": 21\n}')
    panel.get_by_role("radio", name="Form").check()
    expect(panel.get_by_role("spinbutton", name=re.compile("^n"))).to_have_value("21")

    # a syntax error: its line and column link to the editor, and the gutter marks the line
    type_at_the_end(page, "\nlet broken = ;")
    panel.get_by_role("button", name="Run").click()
    where = panel.get_by_role("link", name=re.compile(r"^line 2, column \d+$"))
    expect(where).to_be_visible()
    expect(panel.get_by_text("Syntax error")).to_be_visible()
    expect(page.locator(".cm-lint-marker-error")).to_have_count(1)
    page.get_by_role("textbox", name="Source").focus()
    page.keyboard.press("Control+Home")
    where.click()
    expect(page.locator(".cm-activeLine")).to_have_text("let broken = ;")
    expect(page.get_by_role("textbox", name="Source")).to_be_focused()
    assert_accessible(page, "the Test panel with a syntax error")
    shots(page, "module-workspace-syntax-error")
    # fixed, run again: the mark goes
    # (the line deleted, then typed: Chromium's own typing over a selection in an editable element
    # writes a style attribute, which the CSP blocks and the watch would report)
    page.keyboard.press("End")
    page.keyboard.press("Shift+Home")
    page.keyboard.press("Backspace")
    page.keyboard.type("let fixed = 1;")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_text('"twice": 42').first).to_be_visible()
    expect(page.locator(".cm-lint-marker-error")).to_have_count(0)


def test_toasts_after_publish_save_discard_and_restore_with_undo_restore_asks_first_and_the_small_ones(page, console_server) -> None:  # noqa: ANN001
    import re

    name = _name()
    create_through_the_new_page(page, name, "Counts", "exports.run = () => 1;")
    toasts = page.locator("#toasts")
    page.get_by_role("button", name="Publish", exact=True).click()
    page.get_by_role("dialog", name=f"Publish {name}").get_by_role("button", name="Publish version 1").click()
    expect(toasts).to_contain_text(f"Published version 1 of {name}.")

    # a saved edit: the toast says so
    type_at_the_end(page, " // two")
    page.keyboard.press("Control+S")
    expect(toasts).to_contain_text(f"Draft of {name} saved.")

    # the role shown is the published one; a draft that changes it is named beside it
    page.get_by_role("switch", name="Call it as a tool").check()
    # the timeout's hint follows the style: script's default is 5,000 ms
    expect(page.locator("#timeout-hint")).to_contain_text("3,000 ms")
    page.get_by_label("Style").select_option("script")
    expect(page.locator("#timeout-hint")).to_contain_text("5,000 ms")
    expect(page.get_by_label("Timeout (ms)")).to_have_attribute("placeholder", "5000")
    page.get_by_label("Style").select_option("module")
    page.get_by_role("button", name="Save draft").click()
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    expect(page.locator(".role-label")).to_have_text("library (draft: tool)")

    # the … menu closes when its item opens a dialog; discard, then Undo puts the draft back
    page.get_by_text("…", exact=True).click()
    page.get_by_role("button", name="Discard draft").click()
    dialog = page.get_by_role("dialog", name=f"Discard the draft of {name}")
    expect(dialog).to_be_visible()
    expect(page.locator("#lifecycle-menu details.menu")).not_to_have_attribute("open", "")
    dialog.get_by_role("button", name=re.compile("^Discard")).click()
    page.wait_for_load_state()
    expect(toasts).to_contain_text("is discarded")
    toasts.locator(".toast", has_text="is discarded").hover()  # kept while the pointer is on it (6 s otherwise)
    assert_accessible(page, "the page with the discard's toast")
    shots(page, "module-toast-discarded")
    expect(page.get_by_role("button", name="Publish", exact=True)).to_be_disabled()
    toasts.locator(".toast", has_text="is discarded").get_by_role("button", name="Undo").click()
    expect(toasts).to_contain_text("Undone: the draft is as it was.")
    expect(page.get_by_role("textbox", name="Source")).to_contain_text("// two")
    expect(page.get_by_role("switch", name="Call it as a tool")).to_be_checked()

    # the list's Role column: the published role, the draft's beside it
    page.goto(f"/console/modules?search={name}")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=name, exact=True))
    expect(row.get_by_role("cell").nth(2)).to_have_text("library (draft: tool)")  # What it does, State, Role

    # restore version 1 over the draft: it asks first (Cancel focused), then Undo puts the draft back
    page.goto(f"/console/modules/{name}/history")
    page.get_by_role("button", name="Restore version 1 into the draft").click()
    ask = page.get_by_role("dialog", name="Replace the draft with version 1?")
    expect(ask).to_contain_text("the draft's changes are lost")
    expect(ask.get_by_role("button", name="Cancel")).to_be_focused()
    assert_accessible(page, "the restore's question")
    page.keyboard.press("Enter")  # Cancel: nothing happens
    expect(ask).to_be_hidden()
    page.get_by_role("button", name="Restore version 1 into the draft").click()
    ask.get_by_role("button", name="Replace the draft with version 1").click()
    page.wait_for_url(f"**/console/modules/{name}")
    expect(toasts).to_contain_text("Version 1 of")
    expect(page.get_by_role("switch", name="Call it as a tool")).not_to_be_checked()
    toasts.locator(".toast", has_text="Version 1 of").get_by_role("button", name="Undo").click()
    expect(toasts).to_contain_text("Undone")
    expect(page.get_by_role("switch", name="Call it as a tool")).to_be_checked()
    expect(page.get_by_role("textbox", name="Source")).to_contain_text("// two")


RULE_CODE = r"\b[RVB]\d{1,2}\b"
RAW_ENUM = r"\b(PUBLISHED|UNPUBLISHED|DRAFT|CODE|API_URL|FILE_SEARCH|DIRECT_TOOL|ADMIN)\b|isError"


def test_every_module_page_speaks_words_no_rule_code_or_raw_value_and_one_date_format(page, console_server) -> None:  # noqa: ANN001
    import re

    name = _name()
    create_through_the_new_page(page, name, "Counts", "exports.run = () => 1;")
    page.get_by_role("button", name="Publish", exact=True).click()
    page.get_by_role("dialog", name=f"Publish {name}").get_by_role("button", name="Publish version 1").click()
    page.wait_for_load_state()
    expect(page.get_by_role("button", name="Publish", exact=True)).to_be_disabled()
    type_at_the_end(page, " // edit")
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    # the live name check and a refused create speak words too
    for where in (f"/console/modules/{name}", f"/console/modules/{name}/history", "/console/modules",
                  "/console/modules/changeset-history", "/console/modules/new"):
        page.goto(where)
        text = page.locator("main").text_content()  # the words, not their CSS capitals
        assert not re.search(RULE_CODE, text), f"{where} shows a rule code: {re.search(RULE_CODE, text).group(0)}"
        assert not re.search(RAW_ENUM, text), f"{where} shows a raw value: {re.search(RAW_ENUM, text).group(0)}"
        # dates: one format, a <time> with its absolute moment in the title
        for moment in page.locator("main time").all():
            assert moment.get_attribute("datetime") and moment.get_attribute("title"), f"{where}: a date without the when filter"
    page.get_by_label("Name").fill("1bad")
    expect(page.get_by_text("Must not start with a digit")).to_be_visible()
    assert not re.search(RULE_CODE, page.locator("main").inner_text())
    page.get_by_label("Name").fill(name)
    expect(page.get_by_text("Already used by a module")).to_be_visible()
    assert not re.search(RULE_CODE, page.locator("main").inner_text())



# Each coloured token of the editor against the editor's background: WCAG's contrast ratio of the
# computed colours (as axe-core computes it), one entry per colour with a token that has it.
_CONTRASTS = """() => {
  const editor = document.querySelector('#source-field .editor-host').shadowRoot.querySelector('.cm-editor');
  const rgb = (text) => text.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const background = getComputedStyle(editor).backgroundColor;
  const tokens = {};
  for (const span of editor.querySelectorAll('.cm-content .cm-line span')) {
    const colour = getComputedStyle(span).color;
    if (!(colour in tokens)) tokens[colour] = { text: span.textContent, ratio: ratio(rgb(colour), rgb(background)) };
  }
  return { background, luminance: lum(rgb(background)), tokens };
}"""

SOURCE = 'const rate = 0.25; exports.run = (input) => ({ total: Math.round(input.amount * rate), label: "total", ok: true }); // the total'


def test_the_editor_s_syntax_colours_follow_the_theme_switch_live_each_readable(page, console_server) -> None:  # noqa: ANN001
    create_through_the_new_page(page, _name("c"), "Colours of the code", SOURCE)
    theme = page.get_by_label("Theme")
    theme.select_option("light")
    light = page.evaluate(_CONTRASTS)
    assert light["luminance"] > 0.9
    assert len(light["tokens"]) >= 5, f"keywords, strings, numbers, comments and properties each have a colour: {light}"
    for colour, token in light["tokens"].items():
        assert token["ratio"] >= 4.5, f"{token['text']!r} in {colour} is {token['ratio']:.2f}:1 on the light editor"
    # the switch, without a reload: the editor turns dark, its tokens change colour and stay readable
    theme.select_option("dark")
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    dark = page.evaluate(_CONTRASTS)
    assert dark["luminance"] < 0.05, f"the editor is dark: {dark['background']}"
    assert not set(dark["tokens"]) & set(light["tokens"]), "every token's colour follows the theme"
    for colour, token in dark["tokens"].items():
        assert token["ratio"] >= 4.5, f"{token['text']!r} in {colour} is {token['ratio']:.2f}:1 on the dark editor"
    assert_accessible(page, "the module page, dark theme chosen")
    shots(page, "module-editor-colours")
    # System follows the system's setting, live as well
    theme.select_option("system")
    for scheme, expected in (("light", light), ("dark", dark)):
        page.emulate_media(color_scheme=scheme)
        for _ in range(40):  # the change event of the media query is dispatched after the emulation
            if set(page.evaluate(_CONTRASTS)["tokens"]) == set(expected["tokens"]):
                break
            page.wait_for_timeout(50)
        assert set(page.evaluate(_CONTRASTS)["tokens"]) == set(expected["tokens"]), f"System in a {scheme} system"
