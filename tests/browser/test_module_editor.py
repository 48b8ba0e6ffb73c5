"""Create a module, edit it, test it and save it in the browser (docs/kinds/code-modules.md): the live name check,
Ctrl+S and Ctrl+Enter, the tool section and its MCP preview, the conflict dialog (B7), V5's cut,
docs/kinds/code-modules.md format_currency, and an auditor's read-only page."""

from __future__ import annotations

import json
import re
from uuid import uuid4

from tests.browser.conftest import assert_accessible, shot, sign_in
from tests.browser.test_console_callers import listed_by_mcp

BASE = "/api/v1/admin/code-modules"


def unique() -> str:
    return f"m{uuid4().hex[:8]}"


def test_the_keyboard_journey_create_test_make_a_tool_publish_edit_compare_and_restore(page, console_server) -> None:
    name = unique()
    sign_in(page, then="/console/modules/new")
    assert_accessible(page, "the Create page")
    shot(page, "module-create")

    # an invalid name, then a valid one: the live check says both
    name_field = page.get_by_label("Name")
    name_field.focus()
    page.keyboard.type("1bad")
    status = page.get_by_role("status").filter(has_text="Must not start with a digit")
    status.get_by_text("Must not start with a digit").wait_for()
    assert "R1" not in status.inner_text()
    assert name_field.get_attribute("aria-invalid") == "true"
    page.keyboard.press("Control+A")
    page.keyboard.type(name)
    page.get_by_text("✓ free").wait_for()
    assert name_field.get_attribute("aria-invalid") == "false"

    # What it does, then the source typed into the editor; Ctrl+S saves the draft
    page.keyboard.press("Tab")
    page.keyboard.type("Doubles n")
    assert page.get_by_text("9 / 2,000 characters").is_visible()
    page.keyboard.press("Tab")
    page.keyboard.type("exports.run = (input) => ({ doubled: input.n * 2 });")
    page.keyboard.press("Control+S")
    page.wait_for_url(f"**/console/modules/{name}")
    assert page.get_by_role("heading", name=name, level=1).is_visible()
    assert page.get_by_text("Unpublished", exact=True).is_visible() and page.get_by_text("library", exact=True).is_visible()
    assert_accessible(page, "the module page")
    shot(page, "module-page")

    # edit the source by keyboard; Ctrl+S saves it over htmx
    source = page.get_by_role("textbox", name="Source")
    source.focus()
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("log('hello');")
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    saved = console_server.client().get(f"{BASE}/{name}").json()
    assert saved["draft"]["content"].endswith("log('hello');")

    # Ctrl+Enter runs the editor's code in the Test panel docked beside it
    source.focus()
    page.keyboard.press("Control+Enter")
    panel = page.get_by_role("region", name=f"Test {name}")
    panel.get_by_text('"doubled": null').wait_for()
    assert panel.get_by_text("hello").is_visible()
    # an input typed in the panel, run again with Ctrl+Enter
    panel.get_by_label("Input (JSON)").focus()
    page.keyboard.press("Control+A")
    page.keyboard.type('{"n": 21}')
    page.keyboard.press("Control+Enter")
    panel.get_by_text('"doubled": 42').wait_for()
    assert panel.get_by_text(re.compile(r"Time: [0-9.]+ ms")).is_visible()
    assert_accessible(page, "the Test panel with a result")
    shot(page, "module-test-panel")

    # make it a tool with an integer parameter, by keyboard
    page.get_by_role("switch", name="Call it as a tool").focus()
    page.keyboard.press("Space")
    add = page.get_by_role("button", name="Add a parameter")
    add.focus()
    page.keyboard.press("Enter")
    row = page.get_by_role("group", name="Parameter 1")
    assert row.get_by_label("Name").evaluate("e => e === document.activeElement")
    page.keyboard.type("n")
    page.keyboard.press("Tab")
    page.keyboard.type("The number to double")
    page.keyboard.press("Tab")
    page.keyboard.press("i")  # the type: integer
    assert row.get_by_label("Type").input_value() == "integer"
    page.keyboard.press("Tab")
    page.keyboard.press("Space")  # required
    assert row.get_by_label("Required").is_checked()
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    assert page.get_by_text("tool", exact=True).is_visible()
    preview = page.get_by_role("region", name="As an MCP client sees it")
    preview.get_by_text('"integer"').wait_for()
    shown = json.loads(preview.locator("pre").inner_text())
    assert shown["name"] == name and shown["description"] == "Doubles n"
    assert shown["inputSchema"]["properties"]["n"]["type"] == "integer"
    assert shown["inputSchema"]["required"] == ["n"]
    tool = console_server.client().get(f"{BASE}/{name}").json()["draft"]["tool"]
    assert tool["inputParameters"] == [{"name": "n", "description": "The number to double", "required": True, "type": "integer", "default": None}]
    assert_accessible(page, "the module page as a tool")
    shot(page, "module-page-tool")

    # publish through the review, by keyboard: the dry run passes, the diff is against nothing yet
    _keyboard(page, page.get_by_role("button", name="Publish", exact=True))
    review = page.get_by_role("dialog", name=f"Publish {name}")
    review.get_by_text("✓ works").wait_for()
    with page.expect_navigation():
        _keyboard(page, review.get_by_role("button", name="Publish version 1"))
    card = page.get_by_role("region", name="Published version", exact=True)
    card.get_by_text("admin", exact=True).wait_for()
    assert re.search(r"Version\s*1\b", card.inner_text())
    assert page.get_by_text("Published", exact=True).first.is_visible()

    # edit again: the draft now differs from version 1
    source = page.get_by_role("textbox", name="Source")
    source.focus()
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("// version two")
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()

    # the history, by keyboard: version 1 against the draft shows the edit
    with page.expect_navigation():
        _keyboard(page, card.get_by_role("link", name="History and versions"))
    page.get_by_label("Compare version").focus()
    page.keyboard.press("Home")  # version 1
    page.get_by_label("with", exact=True).focus()
    page.keyboard.press("End")  # the draft
    with page.expect_navigation():
        _keyboard(page, page.get_by_role("button", name="Compare", exact=True))
    diff = page.get_by_label(re.compile("^Unified diff of the code"))
    diff.get_by_text("+// version two").wait_for()
    shot(page, "journey-history-diff")

    # restore version 1 into the draft, by keyboard: it asks first, as a draft would be replaced
    _keyboard(page, page.get_by_role("button", name="Restore version 1 into the draft"))
    with page.expect_navigation():
        _keyboard(page, page.get_by_role("dialog", name="Replace the draft with version 1?").get_by_role("button", name="Replace the draft with version 1"))
    page.wait_for_url(f"**/console/modules/{name}")
    restored = console_server.client().get(f"{BASE}/{name}").json()
    assert restored["state"] == "DRAFT" and restored["draft"]["content"] == restored["published"]["content"]
    assert "// version two" not in page.get_by_role("textbox", name="Source").inner_text()


def _keyboard(page, control) -> None:  # noqa: ANN001
    """Moves the focus to a control and presses Enter on it, as a keyboard user does."""
    control.focus()
    page.keyboard.press("Enter")


def test_leaving_with_unsaved_changes_asks_first_and_a_save_clears_it(page, console_server) -> None:
    name = unique()
    assert console_server.client().post(BASE, json={"id": name, "description": "d", "draftContent": "let a = 1;"}).status_code == 201
    sign_in(page, then=f"/console/modules/{name}")
    asked: list[str] = []

    def answer(dialog) -> None:  # noqa: ANN001
        asked.append(dialog.type)
        dialog.dismiss()  # stay on the page

    page.on("dialog", answer)
    page.get_by_role("textbox", name="Source").click()  # a click: the browser asks only after a gesture
    page.keyboard.press("Control+End")
    page.keyboard.type(" let b = 2;")
    page.get_by_role("status").filter(has_text="Unsaved changes").wait_for()
    page.close(run_before_unload=True)
    for _ in range(50):  # the page stays open while the question is up (it closes if none is asked)
        if asked:
            break
        page.wait_for_timeout(100)
    assert asked == ["beforeunload"] and not page.is_closed()
    # after a save, leaving asks nothing
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    with page.expect_event("close"):
        page.close(run_before_unload=True)
    assert asked == ["beforeunload"]


def test_a_draft_saved_before_the_editor_came_stays_saved_when_it_comes(page, console_server) -> None:
    # On a slow machine CodeMirror arrives after the person typed into the Source's textarea and
    # saved: the editor taking the textarea's place is no change, and leaving asks nothing.
    name = unique()
    assert console_server.client().post(BASE, json={"id": name, "description": "d", "draftContent": "let a = 1;"}).status_code == 201
    held: list[object] = []
    page.route("**/static/dist/codemirror.js*", lambda route: held.append(route))
    asked: list[str] = []

    def answer(dialog) -> None:  # noqa: ANN001
        asked.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", answer)
    sign_in(page, then=f"/console/modules/{name}")
    page.get_by_role("textbox", name="Source").click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" let b = 2;")
    page.get_by_role("status").filter(has_text="Unsaved changes").wait_for()
    page.keyboard.press("Control+S")
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    assert page.locator(".cm-editor").count() == 0 and held  # the textarea took it all
    held[0].continue_()  # type: ignore[attr-defined]
    page.locator(".cm-editor").wait_for()
    assert "let b = 2;" in page.locator(".cm-content").inner_text()
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    with page.expect_event("close"):
        page.close(run_before_unload=True)
    assert asked == []
    saved = console_server.client().get(f"{BASE}/{name}").json()
    assert saved["draft"]["content"] == "let a = 1; let b = 2;"


def test_a_change_saved_elsewhere_opens_the_conflict_dialog_and_keep_mine_overwrites(page, console_server, watch) -> None:
    # the 412 answer is an error response by design: the browser and htmx log it
    watch.allowed_console += [re.compile(r"status of 412"), re.compile(r"Error Code 412 from /console/modules/")]
    name = unique()
    api = console_server.client()
    assert api.post(BASE, json={"id": name, "description": "Mine and theirs", "draftContent": "exports.run = () => 'original';"}).status_code == 201
    sign_in(page, then=f"/console/modules/{name}")

    # the page is open; someone changes the module over REST
    theirs = "exports.run = () => 'theirs';"
    assert api.put(f"{BASE}/{name}", json={"draftContent": theirs}).status_code == 200

    source = page.get_by_role("textbox", name="Source")
    source.focus()
    page.keyboard.press("Control+End")
    page.keyboard.type(" // mine")
    page.keyboard.press("Control+S")
    dialog = page.get_by_role("dialog", name="Someone saved a newer version")
    dialog.wait_for()
    assert dialog.get_by_role("textbox", name="Saved (newer) source").inner_text().strip() == theirs
    assert "// mine" in dialog.get_by_role("textbox", name="Your source").inner_text()
    assert page.get_by_role("status").filter(has_text="Not saved").is_visible()
    # the focus starts on Cancel: neither choice that loses work is one key press away
    assert dialog.get_by_role("button", name="Cancel").evaluate("b => b === document.activeElement")
    assert_accessible(page, "the conflict dialog")
    shot(page, "module-conflict-dialog")

    dialog.get_by_role("button", name="Keep mine (overwrite)").click()
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    assert not dialog.is_visible()
    assert api.get(f"{BASE}/{name}").json()["draft"]["content"] == "exports.run = () => 'original'; // mine"

    # another change elsewhere; this time Reload takes theirs and drops mine
    newest = "exports.run = () => 'newest';"
    assert api.put(f"{BASE}/{name}", json={"draftContent": newest}).status_code == 200
    source.focus()
    page.keyboard.press("Control+End")
    page.keyboard.type(" // dropped")
    page.keyboard.press("Control+S")
    dialog.wait_for()
    dialog.get_by_role("button", name="Reload (discard mine)").click()
    page.get_by_role("textbox", name="Source").get_by_text("newest").wait_for()
    assert page.get_by_role("textbox", name="Source").inner_text().strip() == newest
    assert api.get(f"{BASE}/{name}").json()["draft"]["content"] == newest


def test_output_over_128_kb_is_cut_with_a_notice(page, console_server) -> None:
    name = unique()
    api = console_server.client()
    assert api.post(BASE, json={"id": name, "description": "Big output", "draftContent": "exports.run = () => 'x'.repeat(300000);"}).status_code == 201
    sign_in(page, then=f"/console/modules/{name}")
    dialog = page.get_by_role("region", name=f"Test {name}")
    dialog.get_by_role("button", name="Run").click()
    dialog.get_by_text("Output cut at 128 KB (293 KB in all)").wait_for()
    assert len(dialog.locator("pre").first.inner_text()) == 131_072


def test_seed_000_format_currency_is_created_tested_run_from_the_playground_and_listed_over_mcp(page, console_server) -> None:
    name = f"format_currency_{uuid4().hex[:6]}"
    sign_in(page, then="/console/modules/new")
    page.get_by_label("Name").fill(name)
    page.get_by_text("✓ free").wait_for()
    page.get_by_label("What it does").fill("Formats an amount as US dollars")
    page.get_by_role("textbox", name="Source").fill("new Intl.NumberFormat('en-US', {style: 'currency', currency: 'USD'}).format(amount)")
    page.get_by_role("button", name="Save draft").click()
    page.wait_for_url(f"**/console/modules/{name}")

    page.get_by_role("switch", name="Call it as a tool").check()
    page.get_by_role("button", name="Add a parameter").click()
    row = page.get_by_role("group", name="Parameter 1")
    row.get_by_label("Name").fill("amount")
    row.get_by_label("Type").select_option("decimal")
    row.get_by_label("Required").check()
    page.get_by_label("Style").select_option("script")
    page.get_by_role("button", name="Save draft").click()
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()

    # the Test panel's form has the saved parameter: amount, a number
    panel = page.get_by_role("region", name=f"Test {name}")
    panel.get_by_role("spinbutton", name=re.compile(r"^amount")).fill("1234.5")
    panel.get_by_role("button", name="Run").click()
    panel.get_by_text('"$1,234.50"').wait_for()
    tool = console_server.client().get(f"{BASE}/{name}").json()["draft"]["tool"]
    assert tool["style"] == "script" and tool["inputParameters"][0]["type"] == "decimal"

    # publish it, then run it from the Playground: the same path as an MCP tools/call
    page.get_by_role("button", name="Publish", exact=True).click()
    review = page.get_by_role("dialog", name=f"Publish {name}")
    with page.expect_navigation():
        review.get_by_role("button", name="Publish version 1").click()
    page.goto(f"/console/playground?tool={name}")
    page.get_by_role("spinbutton", name=re.compile(r"^amount \(required\)")).fill("1234.5")
    page.get_by_role("button", name="Run").click()
    result = page.locator("#run-result-body")
    result.get_by_text("$1,234.50").wait_for()
    assert "Succeeded" in result.inner_text()  # the Playground says so in words (issue 31: no raw isError)
    shot(page, "playground-format-currency")

    # attach it to an MCP server made in the console: a real MCP SDK client lists it
    server = f"s{uuid4().hex[:8]}"
    page.goto("/console/servers/new")
    page.get_by_label("Name", exact=True).fill(server)
    page.get_by_label("Description").fill("docs/kinds/code-modules.md tools")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/servers/{server}*")
    page.get_by_role("checkbox", name=re.compile(rf"^{name}\b")).check()
    page.get_by_role("button", name=re.compile("^Attach")).click()
    attached = page.get_by_role("table", name=f"The tools attached to {server}")
    attached.get_by_role("row", name=re.compile(rf"^{name}\b")).wait_for()
    # not callable in chat yet: the server page says why MCP clients do not see it
    attached.get_by_text("not callable in chat").wait_for()
    assert name not in listed_by_mcp(console_server, server)
    page.goto(f"/console/modules/{name}")
    page.get_by_label("Callable in chat").check()
    page.get_by_role("button", name="Save draft").click()
    page.get_by_role("status").filter(has_text="Draft saved").wait_for()
    page.get_by_role("button", name="Publish", exact=True).click()
    with page.expect_navigation():
        page.get_by_role("dialog", name=f"Publish {name}").get_by_role("button", name="Publish version 2").click()
    assert name in listed_by_mcp(console_server, server)
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/console/modules/{name}")

    # usable at 390 px wide: nothing wider than the window
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.get_by_role("button", name="Save draft").is_visible()
    shot(page, "module-page-390px")


def test_an_auditor_sees_the_module_page_without_save_or_test(page, console_server) -> None:
    name = unique()
    api = console_server.client()
    assert api.post(BASE, json={"id": name, "description": "Read me", "draftContent": "exports.run = () => 1;"}).status_code == 201
    answer = api.post("/api/v1/admin/tokens", json={"name": f"auditor-{name}", "role": "auditor"})
    assert answer.status_code == 201, answer.text
    sign_in(page, answer.json()["token"], then=f"/console/modules/{name}")
    assert page.get_by_role("heading", name=name, level=1).is_visible()
    assert page.get_by_label("Source").input_value() == "exports.run = () => 1;"
    assert page.get_by_label("What it does").is_disabled()
    for control in ("Save draft", "Test", "Publish", "Add a parameter"):
        assert page.get_by_role("button", name=control).count() == 0, control
    assert_accessible(page, "the module page for an auditor")
    shot(page, "module-page-auditor")
