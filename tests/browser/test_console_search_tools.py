"""File Search tools in a browser (docs/kinds/file-search-tools.md, docs/console.md), as a person does
it: a tool made from the editor (a limit over its cap refused next to its field first), files
uploaded (chosen with the file input then sent with Upload, or dropped on the drop zone) with the
progress bar, no false error after an upload and the list settling from Processing to Ready on its
own, each document's page (its type in words, its text a page at a time, its chunks, why it
failed), the Test panel docked beside the settings running each capability and keeping its last
inputs, a document deleted, a capability switched off; screenshots of each main page in both
themes at both widths."""

from __future__ import annotations

import re
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import assert_accessible, shots, sign_in
from tests.documents import docx_with_table, encrypted_pdf, two_page_pdf

GUIDE = "# Zebra care\n\nZebras graze at dawn and rest at noon. <script>alert('x')</script> & <b>stripes</b>.\n"
NOTES = "Field notes\n\nA herd of zebras crossed the river at dusk; the foals stayed close.\n"
DROP = """([name, text]) => {
  const data = new DataTransfer();
  data.items.add(new File([text], name, { type: "text/plain" }));
  return data;
}"""
NO_FILE = "Choose or drop at least one file."
RAW = re.compile(r"\b(READY|PROCESSING|FAILED|FILE_SEARCH|application/|text/markdown|text/plain|R\d{1,2}\b)")


def new_tool(page, name: str) -> None:
    """Makes a File Search tool through its New page."""
    page.goto("/console/search-tools")
    page.get_by_role("link", name="New File Search tool").click()
    page.wait_for_url("**/console/search-tools/new")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Description", exact=True).fill("Care guides for the zebra house")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/search-tools/{name}")


def choose_and_upload(page, files: list[dict]) -> None:
    page.get_by_label("Files to upload").set_input_files(files=files)
    page.get_by_role("button", name="Upload", exact=True).click()


def fact(page, term: str):
    """The definition a page's facts give for `term` (a <dt> and its <dd>)."""
    return page.locator(f"dl.facts dt:text-is('{term}') + dd")


def accessible_in_both_themes(page, where: str) -> None:
    """axe-core finds nothing in the light theme nor in the dark one (the system's setting followed)."""
    try:
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            assert_accessible(page, f"{where} ({scheme})")
    finally:
        page.emulate_media(color_scheme="light")


def no_raw_words(page) -> None:
    """What a person reads on the page holds no raw state, media type or rule code."""
    text = page.locator("main").inner_text()
    found = RAW.findall(text)
    assert not found, f"raw words on the page: {found}"


def test_a_file_search_tool_is_made_filled_searched_and_trimmed(page, console_server) -> None:
    name = f"guides{uuid4().hex[:6]}"
    sign_in(page, then="/console/search-tools")
    expect(page.get_by_role("navigation", name="Console").get_by_role("link", name="File Search tools")).to_have_attribute("aria-current", "page")
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
    no_raw_words(page)
    accessible_in_both_themes(page, "the File Search tool editor with a refusal")
    shots(page, "search-tool-editor-refused")

    results.fill("5")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/search-tools/{name}")
    expect(page.get_by_role("status").filter(has_text="Created")).to_be_visible()
    expect(page.get_by_role("heading", name=f"File Search tool {name}")).to_be_visible()
    documents = page.get_by_role("region", name="Documents", exact=True)
    expect(documents).to_contain_text("No document yet.")

    # a Markdown file chosen with the file input, then sent with Upload: the progress bar full, no error
    zone = page.get_by_role("group", name="Upload documents")
    status = zone.get_by_role("status")
    page.get_by_label("Files to upload").set_input_files(
        files=[{"name": "guide.md", "mimeType": "text/markdown", "buffer": GUIDE.encode()}])
    expect(status).to_have_text("1 file chosen: press Upload to send it.")
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(status).to_contain_text("Uploaded 1 file (guide.md)")
    expect(page.get_by_role("progressbar", name="Upload progress")).to_have_attribute("value", "100")
    expect(page.get_by_text(NO_FILE)).to_have_count(0)
    # a file dropped on the drop zone
    dropped = page.evaluate_handle(DROP, ["notes.txt", NOTES])
    zone.dispatch_event("dragover", {"dataTransfer": dropped})
    zone.dispatch_event("drop", {"dataTransfer": dropped})
    expect(status).to_contain_text("Uploaded 1 file (notes.txt)")

    # the list polls until both are ready, with their counts and their types in words
    guide = documents.get_by_role("row").filter(has_text="guide.md")
    notes = documents.get_by_role("row").filter(has_text="notes.txt")
    expect(guide).to_contain_text(re.compile(r"Ready\s+\d+ characters, 1 chunk"), timeout=30_000)
    expect(notes).to_contain_text(re.compile(r"Ready\s+\d+ characters, 1 chunk"), timeout=30_000)
    expect(documents).to_contain_text("2 documents: 2 ready, 0 processing, 0 failed.")
    expect(guide.get_by_role("cell", name="Markdown", exact=True)).to_be_visible()
    expect(notes.get_by_role("cell", name="Text", exact=True)).to_be_visible()
    expect(guide.locator("time")).to_have_text(re.compile(r"just now|seconds? ago|minutes? ago"))
    expect(page.get_by_text(NO_FILE)).to_have_count(0)
    no_raw_words(page)
    accessible_in_both_themes(page, "the File Search tool's page with its documents")
    shots(page, "search-tool-documents")

    # the Test panel, docked beside the settings: a search, the word marked, the markup shown as text
    panel = page.get_by_role("complementary", name="Test")
    expect(panel.get_by_label("Capability")).to_have_value("search")
    panel.get_by_label("Words to search for").fill("zebras script")
    panel.get_by_role("button", name="Run").click()
    first = panel.get_by_role("listitem").filter(has_text="guide.md")
    expect(first).to_contain_text("<script>alert('x')</script> & <b>stripes</b>")
    expect(first).to_contain_text(re.compile(r"score [\d.e-]+ · chunk"))
    expect(first.locator("mark").first).to_have_text(re.compile("^(Zebras|script)$"))
    expect(first.locator("mark")).to_have_count(3)
    expect(panel.get_by_role("listitem").filter(has_text="notes.txt").locator("mark")).to_have_text(["zebras"])
    assert page.evaluate("() => document.querySelectorAll('main script, main b').length") == 0
    expect(panel.get_by_role("status")).to_have_text("2 results for “zebras script”.")
    panel.get_by_text("The response as a model gets it").click()
    expect(panel.get_by_label("The response as JSON")).to_contain_text('"results"')
    box = panel.bounding_box()
    settings = page.get_by_role("region", name="Settings").bounding_box()
    assert box and settings and box["x"] > settings["x"] + settings["width"] - 1, "the Test panel is docked beside the settings"
    no_raw_words(page)
    accessible_in_both_themes(page, "the File Search tool's Test panel with search results")
    shots(page, "search-tool-search")

    # a document deleted from the list: said on the page and in a toast
    notes.get_by_role("button", name="Delete notes.txt").click()
    expect(notes).to_have_count(0)
    expect(status).to_have_text("Deleted the document notes.txt.")
    expect(page.locator("#toasts")).to_contain_text("Deleted the document notes.txt.")
    expect(documents).to_contain_text("1 document: 1 ready, 0 processing, 0 failed.")

    # a capability switched off: saved, live at once, no longer offered
    page.get_by_role("group", name="Fetch", exact=True).get_by_label("Offered to models").uncheck()
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/search-tools/{name}")
    expect(page.get_by_role("group", name="Fetch", exact=True).get_by_label("Offered to models")).not_to_be_checked()
    facts = page.get_by_role("definition").filter(has_text=f"{name}_search")
    expect(facts).to_have_text(f"{name}_search, {name}_find_text")
    expect(page.get_by_role("complementary", name="Test").get_by_label("Capability").locator("option:checked")).to_have_text("Search")
    expect(page.get_by_role("option", name="Fetch (not offered)")).to_have_count(1)

    # listed with its capabilities and its documents by state
    page.get_by_role("navigation", name="Console").get_by_role("link", name="File Search tools").click()
    page.wait_for_url("**/console/search-tools")
    row = page.get_by_role("row", name=re.compile(name))
    expect(row.get_by_role("cell", name="Search, Find text", exact=True)).to_be_visible()
    expect(row.get_by_role("cell", name="1 (1 ready)", exact=True)).to_be_visible()
    no_raw_words(page)
    accessible_in_both_themes(page, "the File Search tools list")
    shots(page, "search-tools")

    # its history names the documents
    row.get_by_role("link", name=re.compile("^History")).click()
    history = page.get_by_role("table")
    expect(history.get_by_role("row").filter(has_text="notes.txt").first).to_contain_text("admin")
    expect(history.get_by_role("row").filter(has_text="guide.md").first).to_contain_text("admin")


def test_an_upload_shows_no_false_error_and_an_empty_one_says_what_to_do(page, console_server) -> None:
    name = f"uploads{uuid4().hex[:6]}"
    sign_in(page, then="/console/search-tools")
    new_tool(page, name)
    zone = page.get_by_role("group", name="Upload documents")
    status = zone.get_by_role("status")
    documents = page.get_by_role("region", name="Documents", exact=True)

    # Upload pressed with nothing chosen: the message, in the error's colour
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(status).to_have_text(NO_FILE)
    expect(status).to_have_class(re.compile(r"\berror\b"))

    # then a file chosen and sent: the error is gone for good, the document listed
    choose_and_upload(page, [{"name": "notes.txt", "mimeType": "text/plain", "buffer": NOTES.encode()}])
    expect(status).to_contain_text("Uploaded 1 file (notes.txt)")
    expect(status).not_to_have_class(re.compile(r"\berror\b"))
    expect(documents.get_by_role("row").filter(has_text="notes.txt")).to_contain_text("Ready", timeout=30_000)
    page.wait_for_timeout(1_500)  # the list's last poll and any late handler: still no error
    expect(page.get_by_text(NO_FILE)).to_have_count(0)
    # two files at once, then Upload: both listed, no error
    choose_and_upload(page, [{"name": "a.txt", "mimeType": "text/plain", "buffer": b"Alpha zebras at dawn."},
                             {"name": "b.txt", "mimeType": "text/plain", "buffer": b"Bravo zebras at noon."}])
    expect(status).to_contain_text("Uploaded 2 files (a.txt, b.txt)")
    expect(documents).to_contain_text("3 documents: 3 ready", timeout=30_000)
    expect(page.get_by_text(NO_FILE)).to_have_count(0)
    assert_accessible(page, "the File Search tool's page after uploads")

    # pressing Upload again with nothing new chosen still says what to do
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(status).to_have_text(NO_FILE)


def test_a_documents_page_shows_its_text_by_page_its_chunks_and_why_it_failed(page, console_server) -> None:
    name = f"library{uuid4().hex[:6]}"
    sign_in(page, then="/console/search-tools")
    new_tool(page, name)
    long_text = "\n\n".join(f"Paragraph {n}: zebras graze at dawn and rest at noon near the water hole." for n in range(400))
    choose_and_upload(page, [
        {"name": "report.pdf", "mimeType": "application/pdf", "buffer": two_page_pdf("okapi")},
        {"name": "annual.docx", "mimeType": "application/octet-stream", "buffer": docx_with_table("Savannah")},
        {"name": "long.txt", "mimeType": "text/plain", "buffer": long_text.encode()},
        {"name": "locked.pdf", "mimeType": "application/pdf", "buffer": encrypted_pdf("okapi", "secret")},
    ])
    documents = page.get_by_role("region", name="Documents", exact=True)
    expect(documents).to_contain_text("4 documents: 3 ready, 0 processing, 1 failed.", timeout=60_000)
    expect(documents.get_by_role("row").filter(has_text="annual.docx").get_by_role("cell", name="Word document", exact=True)).to_be_visible()
    expect(documents.get_by_role("row").filter(has_text="report.pdf").get_by_role("cell", name="PDF", exact=True)).to_be_visible()
    locked = documents.get_by_role("row").filter(has_text="locked.pdf")
    expect(locked).to_contain_text("The PDF is encrypted: it cannot be read without its password.")
    no_raw_words(page)

    # the PDF's page: what it is, its text a page at a time, its chunks with their page
    documents.get_by_role("link", name="report.pdf").click()
    page.wait_for_url(re.compile(r"/documents/\w+$"))
    expect(page.get_by_role("heading", name="report.pdf", level=1)).to_be_visible()
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs.get_by_role("link", name="File Search tools")).to_be_visible()
    expect(crumbs.get_by_role("link", name=name)).to_be_visible()
    expect(fact(page, "Type")).to_have_text("PDF")
    expect(fact(page, "State")).to_have_text("Ready")
    expect(fact(page, "Text")).to_contain_text(re.compile(r"on 2 pages, in \d+ chunk"))
    expect(fact(page, "Uploaded").locator("time")).to_have_text(re.compile(r"just now|seconds? ago|minutes? ago"))
    expect(fact(page, "MCP resource")).to_contain_text(re.compile(rf"toolsmith://search-tools/{name}/documents/[0-9a-f]{{20}}"))
    text = page.get_by_role("region", name=re.compile("^Extracted text"))
    expect(text).to_contain_text("Page 1 (1 of 2)")
    expect(text).to_contain_text("weather")
    expect(text).not_to_contain_text("okapi")
    text.get_by_role("link", name="Next").click()
    expect(text).to_contain_text("Page 2 (2 of 2)")
    expect(text).to_contain_text("okapi")
    expect(page).to_have_url(re.compile(r"part=2"))
    chunks = page.get_by_role("region", name="Chunks")
    expect(chunks.get_by_role("heading", name="Chunk 1")).to_be_visible()
    expect(chunks).to_contain_text(re.compile(r"Page 1 · characters 0 to \d+"))
    no_raw_words(page)
    accessible_in_both_themes(page, "a PDF's document page")
    shots(page, "search-document-pdf")

    # a long text: in parts, the jump to a part by its number
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name=name).click()
    page.get_by_role("region", name="Documents", exact=True).get_by_role("link", name="long.txt").click()
    text = page.get_by_role("region", name=re.compile("^Extracted text"))
    expect(text).to_contain_text(re.compile(r"Part 1 \(1 of [2-9]\)"))
    expect(text).to_contain_text("Paragraph 0:")
    expect(text).not_to_contain_text("Paragraph 399:")
    last = int(re.search(r"of (\d+)\)", text.inner_text()).group(1))
    text.get_by_label("Go to part").fill(str(last))
    text.get_by_label("Go to part").press("Enter")
    expect(text).to_contain_text(f"Part {last} ({last} of {last})")
    expect(text).to_contain_text("Paragraph 399:")
    chunks = page.get_by_role("region", name="Chunks")
    expect(chunks).to_contain_text(re.compile(r"Chunks 1 to 20 of \d+"))
    chunks.get_by_role("link", name="Next chunks").click()
    expect(chunks.get_by_role("heading", name="Chunk 21")).to_be_visible()
    accessible_in_both_themes(page, "a long text's document page")
    shots(page, "search-document-long")

    # the failed one: why, in a sentence, and what to do
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name=name).click()
    page.get_by_role("region", name="Documents", exact=True).get_by_role("link", name="Why, and what to do about locked.pdf").click()
    expect(page.get_by_role("heading", name="locked.pdf", level=1)).to_be_visible()
    why = page.get_by_role("region", name="Why it failed")
    expect(why).to_contain_text("The PDF is encrypted: it cannot be read without its password.")
    expect(why).to_contain_text("Remove its password")
    expect(fact(page, "State")).to_have_text("Failed")
    expect(page.get_by_role("region", name=re.compile("^Extracted text"))).to_have_count(0)
    no_raw_words(page)
    accessible_in_both_themes(page, "a failed document's page")
    shots(page, "search-document-failed")


def test_the_test_panel_runs_each_capability_and_keeps_its_last_inputs(page, console_server) -> None:
    name = f"panel{uuid4().hex[:6]}"
    sign_in(page, then="/console/search-tools")
    new_tool(page, name)
    choose_and_upload(page, [{"name": "report.pdf", "mimeType": "application/pdf", "buffer": two_page_pdf("okapi")},
                             {"name": "notes.txt", "mimeType": "text/plain", "buffer": NOTES.encode()}])
    expect(page.get_by_role("region", name="Documents", exact=True)).to_contain_text("2 ready", timeout=30_000)
    page.reload()  # the panel's document choice lists the ready documents
    panel = page.get_by_role("complementary", name="Test")

    # a search: the document, its page, the score and the matched words; the result links to its chunk
    panel.get_by_label("Words to search for").fill("okapi")
    panel.get_by_label("Words to search for").press("Enter")
    # (a new tool searches by words and by meaning: the page with the word comes first, the other
    # page of the same document may follow as a neighbour in meaning)
    result = panel.locator(".search-results > li").first
    expect(result).to_contain_text("report.pdf")
    expect(result).to_contain_text(re.compile(r"page 2 · score [\d.e-]+ · chunk"))
    expect(result.locator("mark")).to_have_text(["okapi"])
    # only the chosen capability's fields are shown
    expect(panel.get_by_label("Exact text to find")).to_be_hidden()
    # the chunks around a result, read in the panel itself
    result.get_by_role("link", name=re.compile("^Read around it")).click()
    expect(panel.get_by_label("Capability")).to_have_value("read_context")
    expect(panel.get_by_label("Chunk id")).to_have_value(re.compile(r"^\w+#1$"))
    expect(panel.get_by_role("status")).to_have_text(re.compile(r"^2 chunks around \w+#1\.$"))
    expect(panel.locator("li[aria-current='true']")).to_contain_text("okapi")
    panel.get_by_label("Capability").select_option("search")

    # find text: the exact phrase marked where it occurs
    panel.get_by_label("Capability").select_option(label="Find text (not offered)")
    expect(panel.get_by_label("Words to search for")).to_be_hidden()
    panel.get_by_label("Exact text to find").fill("herd of zebras")
    panel.get_by_role("button", name="Run").click()
    match = panel.get_by_role("listitem").filter(has_text="notes.txt")
    expect(match.locator("mark")).to_have_text(["herd of zebras"])
    expect(panel.get_by_role("status")).to_have_text("1 match for “herd of zebras”.")

    # fetch: a document's text, chosen by its name
    panel.get_by_label("Capability").select_option(label="Fetch")
    panel.get_by_label("Document", exact=True).select_option(label="notes.txt")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_label("The text read")).to_contain_text("A herd of zebras crossed the river")
    assert_accessible(page, "the Test panel after a fetch")

    # an input to fix: said in words, next to the panel's fields
    panel.get_by_label("Capability").select_option(label="Read context (not offered)")
    panel.get_by_label("Chunk id").fill("not a chunk")
    panel.get_by_role("button", name="Run").click()
    expect(panel.locator("#search-problem")).to_have_text(re.compile("^“not a chunk” is not a chunk id: a chunk id is a document's id"))
    expect(panel.get_by_role("status")).to_contain_text("Not run:")

    # the last inputs are kept: after a reload the panel is as it was left
    panel.get_by_label("Capability").select_option(label="Find text (not offered)")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_role("status")).to_have_text("1 match for “herd of zebras”.")
    page.reload()
    panel = page.get_by_role("complementary", name="Test")
    expect(panel.get_by_label("Capability")).to_have_value("find_text")
    expect(panel.get_by_label("Exact text to find")).to_have_value("herd of zebras")
    expect(panel.get_by_label("Exact text to find")).to_be_visible()
    no_raw_words(page)
    accessible_in_both_themes(page, "the Test panel with its inputs kept")

    # at 390 px the panel sits below the settings, nothing scrolls sideways
    page.set_viewport_size({"width": 390, "height": 800})
    box = panel.bounding_box()
    settings = page.get_by_role("region", name="Settings").bounding_box()
    assert box and settings and box["y"] >= settings["y"] + settings["height"] - 1, "the Test panel is below the settings"
    shots(page, "search-tool-test-panel")


def test_how_search_finds_passages_is_chosen_and_each_result_says_why(page, console_server) -> None:
    name = f"modes{uuid4().hex[:6]}"
    sign_in(page, then="/console/search-tools/new")
    # a new tool searches by words and meaning; a floor that is not a number is named next to its field
    modes = page.get_by_role("group", name="Search by")
    expect(modes.get_by_label("Words and meaning (hybrid)")).to_be_checked()
    expect(page.get_by_label("Fusion constant k")).to_have_value("60")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Description", exact=True).fill("Care guides for the zebra house")
    page.get_by_label("Lowest score kept").fill("high")
    page.get_by_role("button", name="Create").click()
    floor = page.get_by_label("Lowest score kept")
    expect(floor).to_have_attribute("aria-invalid", "true")
    expect(floor).to_have_accessible_description(re.compile(r"^Lowest score kept: must be a number"))
    expect(page.get_by_role("alert").filter(has_text="Some fields need a change.")).to_be_focused()
    no_raw_words(page)
    accessible_in_both_themes(page, "the File Search tool editor with a bad lowest score")
    floor.fill("")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"**/console/search-tools/{name}")
    choose_and_upload(page, [{"name": "guide.md", "mimeType": "text/markdown", "buffer": GUIDE.encode()},
                             {"name": "notes.txt", "mimeType": "text/plain", "buffer": NOTES.encode()}])
    expect(page.get_by_role("region", name="Documents", exact=True)).to_contain_text("2 ready", timeout=30_000)

    # words it holds: found by its words and by its meaning; the scores explained for the mode
    panel = page.get_by_role("complementary", name="Test")
    expect(panel.get_by_text("Searched by words and meaning (hybrid), as the settings say")).to_be_visible()
    panel.get_by_label("Words to search for").fill("zebras graze at dawn")
    panel.get_by_role("button", name="Run").click()
    first = panel.locator(".search-results > li").first
    expect(first).to_contain_text("guide.md")
    expect(first.locator(".found-by")).to_have_text("Found by its words and by its meaning.")
    expect(panel.locator("#search-scores")).to_contain_text("a score is the result's rank by its words and its rank by its meaning, fused, from 0 to 1")
    # a question in other words: found by meaning alone, nothing marked in it
    panel.get_by_label("Words to search for").fill("animals eating grass in the morning")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_role("status")).to_have_text(re.compile(r"^\d results? for “animals eating grass in the morning”\.$"))
    by_meaning = panel.locator(".search-results > li").filter(has_text="Found by its meaning")
    expect(by_meaning.first).to_be_visible()
    expect(by_meaning.first.locator("mark")).to_have_count(0)
    no_raw_words(page)
    accessible_in_both_themes(page, "the Test panel saying why each result was found")
    shots(page, "search-tool-why-found")

    # words only: the same question finds nothing, and the page says what holds by words
    page.get_by_role("group", name="Search by").get_by_label("Words only (lexical)").check()
    page.get_by_label("Passages per document at most").fill("99")
    page.get_by_role("button", name="Save").click()
    cap = page.get_by_label("Passages per document at most")
    expect(cap).to_have_attribute("aria-invalid", "true")
    expect(cap).to_have_accessible_description(re.compile(r"^Passages per document at most: .*50"))
    expect(page.get_by_role("group", name="Search by").get_by_label("Words only (lexical)")).to_be_checked()
    cap.fill("1")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/search-tools/{name}")
    expect(page.get_by_role("group", name="Search by").get_by_label("Words only (lexical)")).to_be_checked()
    expect(page.get_by_label("Passages per document at most")).to_have_value("1")
    panel = page.get_by_role("complementary", name="Test")
    expect(panel.get_by_text("Searched by words only (lexical), as the settings say")).to_be_visible()
    panel.get_by_label("Words to search for").fill("animals eating grass in the morning")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_role("status")).to_have_text("No passage matches “animals eating grass in the morning”.")
    expect(panel.locator("#search-no-match")).to_contain_text("no stemming")
    expect(panel.locator("#search-no-match")).not_to_contain_text("By meaning")
    panel.get_by_label("Words to search for").fill("zebras")
    panel.get_by_role("button", name="Run").click()
    expect(panel.locator(".found-by")).to_have_text(["Found by its words.", "Found by its words."])
    expect(panel.locator("#search-scores")).to_contain_text("BM25's relevance")
    no_raw_words(page)
    accessible_in_both_themes(page, "the Test panel of a tool searching by words only")
    shots(page, "search-tool-words-only")


def test_metadata_is_declared_given_at_upload_edited_on_its_page_and_filtered_in_the_test_panel(page, console_server) -> None:
    name = f"meta{uuid4().hex[:6]}"
    sign_in(page, then="/console/search-tools")
    new_tool(page, name)

    # the tool's keys: two rows offered, a third added with the button
    keys = page.get_by_role("group", name="Document metadata")
    keys.get_by_role("group", name="Metadata key 1").get_by_label("Key", exact=True).fill("department")
    second = keys.get_by_role("group", name="Metadata key 2")
    second.get_by_label("Key", exact=True).fill("year")
    second.get_by_label("Type").select_option(label="Number")
    keys.get_by_role("button", name="Add a key").click()
    third = keys.get_by_role("group", name="Metadata key 3")
    expect(third.get_by_label("Key", exact=True)).to_be_focused()
    third.get_by_label("Key", exact=True).fill("draft")
    third.get_by_label("Type").select_option(label="Yes or no")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(f"**/console/search-tools/{name}")
    keys = page.get_by_role("group", name="Document metadata")
    expect(keys.get_by_role("group", name="Metadata key 2").get_by_label("Key", exact=True)).to_have_value("draft")
    expect(keys.get_by_role("group", name="Metadata key 2").get_by_label("Type").locator("option:checked")).to_have_text("Yes or no")

    # an upload with its metadata, then one without
    page.get_by_text("Metadata for these files").click()
    given = page.locator("details.upload-metadata")
    given.get_by_label("department").fill("Care")
    given.get_by_label("year").fill("2024")
    choose_and_upload(page, [{"name": "guide.md", "mimeType": "text/markdown", "buffer": GUIDE.encode()}])
    status = page.get_by_role("group", name="Upload documents").get_by_role("status")
    expect(status).to_contain_text("Uploaded 1 file (guide.md)")
    given.get_by_label("department").fill("")
    given.get_by_label("year").fill("")
    choose_and_upload(page, [{"name": "notes.txt", "mimeType": "text/plain", "buffer": NOTES.encode()}])
    expect(status).to_contain_text("Uploaded 1 file (notes.txt)")
    documents = page.get_by_role("region", name="Documents", exact=True)
    expect(documents).to_contain_text("2 documents: 2 ready", timeout=30_000)

    # the document's page: its values edited, a bad one named next to its field
    documents.get_by_role("link", name="notes.txt").click()
    metadata = page.get_by_role("region", name="Metadata")
    metadata.get_by_label("department").fill("Field")
    metadata.get_by_label("year").fill("soon")
    metadata.get_by_label("draft").select_option(label="Yes")
    metadata.get_by_role("button", name="Save the metadata").click()
    metadata = page.get_by_role("region", name="Metadata")
    year = metadata.get_by_label("year")
    expect(year).to_have_attribute("aria-invalid", "true")
    expect(year).to_have_accessible_description(re.compile(r"year: must be a number"))
    expect(metadata.get_by_label("department")).to_have_value("Field")
    expect(page.get_by_role("alert")).to_be_focused()
    accessible_in_both_themes(page, "a document's metadata with a bad value")
    year.fill("2023")
    metadata.get_by_role("button", name="Save the metadata").click()
    expect(page.locator("#toasts")).to_contain_text("Saved the metadata of notes.txt.")
    metadata = page.get_by_role("region", name="Metadata")
    expect(metadata.get_by_label("year")).to_have_value("2023")
    expect(metadata.get_by_label("draft").locator("option:checked")).to_have_text("Yes")
    no_raw_words(page)
    accessible_in_both_themes(page, "a document's page with its metadata")
    shots(page, "search-document-metadata")

    # the Test panel's filter: a condition on the department; ordering offered for numbers only
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name=name).click()
    panel = page.get_by_role("complementary", name="Test")
    filters = panel.get_by_role("group", name="Filter by metadata")
    filters.get_by_label("Key of condition 1").select_option(label="department (text)")
    expect(filters.get_by_label("Compared in condition 1").locator("option[value='gt']")).to_be_disabled()
    filters.get_by_label("Value of condition 1").fill("Care")
    panel.get_by_label("Words to search for").fill("zebras")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_role("status")).to_have_text("1 result for “zebras” within the filter.")
    result = panel.locator(".search-results > li")
    expect(result).to_contain_text("guide.md")
    expect(result.locator(".result-metadata")).to_have_text("department: Care · year: 2024")
    # two conditions, either one; then no words: each passing document listed
    filters.get_by_label("Documents must pass").select_option(label="any of the conditions")
    filters.get_by_label("Key of condition 2").select_option(label="year (number)")
    filters.get_by_label("Compared in condition 2").select_option(label="is less than")
    filters.get_by_label("Value of condition 2").fill("2024")
    panel.get_by_label("Words to search for").fill("")
    panel.get_by_role("button", name="Run").click()
    expect(panel.get_by_role("status")).to_have_text("2 documents pass the filter.")
    expect(panel.locator(".found-by").first).to_have_text("Found by the filter alone (no words to search for).")
    no_raw_words(page)
    accessible_in_both_themes(page, "the Test panel with a metadata filter")
    shots(page, "search-tool-filter")
