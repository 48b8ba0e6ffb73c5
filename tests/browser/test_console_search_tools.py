"""File Search tools in a browser (docs/kinds/file-search-tools.md, docs/console.md): a tool made from the editor (a limit over
its cap refused next to its field first), two files uploaded (one picked with the file input, one
dropped on the drop zone) with the progress bar and the list settling from PROCESSING to READY
on its own, a search with the matching word marked and the document's markup shown as text, a
document deleted, a capability switched off; screenshots of each main page."""

from __future__ import annotations

import re
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shot, sign_in

GUIDE = "# Zebra care\n\nZebras graze at dawn and rest at noon. <script>alert('x')</script> & <b>stripes</b>.\n"
NOTES = "Field notes\n\nA herd of zebras crossed the river at dusk; the foals stayed close.\n"
DROP = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, { type: "text/plain" }));
  return data;
}"""


def test_a_file_search_tool_is_made_filled_searched_and_trimmed(page, console_server) -> None:
    name = f"guides{uuid4().hex[:6]}"
    sign_in(page, then="/console/search-tools")
    expect(page.get_by_role("navigation", name="Console").get_by_role("link", name="File search")).to_have_attribute("aria-current", "page")
    page.get_by_role("link", name="New File Search tool").click()
    page.wait_for_url("**/console/search-tools/new")
    expect(page.get_by_role("heading", name="New File Search tool")).to_be_visible()

    # a default over its cap: refused next to its field, what was typed kept
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Description", exact=True).fill("Care guides for the zebra house")
    page.get_by_label("Tags").fill("zoo")
    search = page.get_by_role("group", name="Search", exact=True)
    search.get_by_label("Results by default").fill("80")
    page.get_by_role("group", name="Find text", exact=True).get_by_label("Offered to models").check()
    page.get_by_role("button", name="Create").click()
    results = page.get_by_role("group", name="Search", exact=True).get_by_label("Results by default")
    expect(results).to_have_attribute("aria-invalid", "true")
    expect(results).to_have_accessible_description(re.compile(r"Search, results by default: must be an integer from 1 to"))
    expect(results).to_have_value("80")
    expect(page.get_by_role("alert").filter(has_text="Some fields need a change.")).to_be_focused()
    expect(page.get_by_role("group", name="Find text", exact=True).get_by_label("Offered to models")).to_be_checked()
    assert_accessible(page, "the File Search tool editor with a refusal")
    shot(page, "search-tool-editor-refused")

    results.fill("5")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/search-tools/{name}?created=1")
    expect(page.get_by_role("status").filter(has_text="Created")).to_be_visible()
    expect(page.get_by_role("heading", name=f"File Search tool {name}")).to_be_visible()
    documents = page.get_by_role("region", name="Documents", exact=True)
    expect(documents).to_contain_text("No document yet.")

    # a Markdown file picked with the file input: uploaded at once, the progress bar full
    page.get_by_label("Files to upload").set_input_files(
        files=[{"name": "guide.md", "mimeType": "text/markdown", "buffer": GUIDE.encode()}])
    status = page.get_by_role("group", name="Upload documents").get_by_role("status")
    expect(status).to_contain_text("Uploaded 1 file (guide.md)")
    expect(page.get_by_role("progressbar", name="Upload progress")).to_have_attribute("value", "100")
    # a file dropped on the drop zone
    dropped = page.evaluate_handle(DROP, ["notes.txt", NOTES])
    zone = page.get_by_role("group", name="Upload documents")
    zone.dispatch_event("dragover", {"dataTransfer": dropped})
    zone.dispatch_event("drop", {"dataTransfer": dropped})
    expect(status).to_contain_text("Uploaded 1 file (notes.txt)")

    # the list polls until both are ready, with their counts
    guide = documents.get_by_role("row").filter(has_text="guide.md")
    notes = documents.get_by_role("row").filter(has_text="notes.txt")
    expect(guide).to_contain_text(re.compile(r"READY\s+\d+ characters, 1 chunk"), timeout=30_000)
    expect(notes).to_contain_text(re.compile(r"READY\s+\d+ characters, 1 chunk"), timeout=30_000)
    expect(documents).to_contain_text("2 documents: 2 ready, 0 processing, 0 failed.")
    expect(guide).to_contain_text("text/markdown")
    assert_accessible(page, "the File Search tool's page with its documents")
    shot(page, "search-tool-documents")

    # a search: the word marked, the document's markup shown as text and never run
    page.get_by_label("Words to search for").fill("zebras script")
    page.get_by_role("button", name="Search", exact=True).click()
    found = page.get_by_role("region", name="Search the documents")
    first = found.get_by_role("listitem").filter(has_text="guide.md")
    expect(first).to_contain_text("<script>alert('x')</script> & <b>stripes</b>")
    expect(first.locator("mark").first).to_have_text(re.compile("^(Zebras|script)$"))
    expect(first.locator("mark")).to_have_count(3)
    expect(found.get_by_role("listitem").filter(has_text="notes.txt").locator("mark")).to_have_text(["zebras"])
    assert page.evaluate("() => document.querySelectorAll('main script, main b').length") == 0
    expect(found.get_by_role("status")).to_have_text("2 results for “zebras script”.")
    assert_accessible(page, "the File Search tool's search results")
    shot(page, "search-tool-search")

    # a document deleted from the list
    notes.get_by_role("button", name="Delete notes.txt").click()
    expect(notes).to_have_count(0)
    expect(status).to_have_text("Deleted the document notes.txt.")
    expect(documents).to_contain_text("1 document: 1 ready, 0 processing, 0 failed.")

    # a capability switched off: saved, live at once, no longer offered
    page.get_by_role("group", name="Fetch", exact=True).get_by_label("Offered to models").uncheck()
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/search-tools/{name}?saved=1")
    expect(page.get_by_role("group", name="Fetch", exact=True).get_by_label("Offered to models")).not_to_be_checked()
    facts = page.get_by_role("definition").filter(has_text=f"{name}_search")
    expect(facts).to_have_text(f"{name}_search, {name}_find_text")

    # listed with its capabilities and its documents by state
    page.get_by_role("navigation", name="Console").get_by_role("link", name="File search").click()
    page.wait_for_url("**/console/search-tools")
    row = page.get_by_role("row", name=re.compile(name))
    expect(row.get_by_role("cell", name="Search, Find text", exact=True)).to_be_visible()
    expect(row.get_by_role("cell", name="1: 1 ready", exact=True)).to_be_visible()
    assert_accessible(page, "the File Search tools list")
    shot(page, "search-tools")

    # its history names the documents
    row.get_by_role("link", name=re.compile("^History")).click()
    history = page.get_by_role("table")
    expect(history.get_by_role("row", name=re.compile("^DocumentRemoved"))).to_contain_text("admin")
    expect(history.get_by_role("row", name=re.compile("^DocumentAdded")).filter(has_text="guide.md")).to_contain_text("admin")
