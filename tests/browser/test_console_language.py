"""The admin's language on every page (issue 31, point 2): no rule code and no raw value a person reads.

One of everything is made through the REST API (this test is about what the pages say, not how
things are made): code modules (one published, one with a draft), an API URL tool, a File Search
tool with a document, a plan, an agent, a usage profile, an MCP server, a caller token, a secret and,
as the operator, an organization. Then, signed in as a person would, the test walks the console:
every page the navigation leads to and every page those link to inside the console (each kind's
list, detail, new, history and Playground; servers, profiles, tokens, secrets, audit), and, signed
in with the operator token, the organizations' pages. On each page it reads the text a person sees
(and each dialog's text, open or not, and the title, aria-label, placeholder and alt attributes),
leaving out source code and JSON shown as such (`pre`, `code`, the editor, text areas), and collects
every rule code (R1–R16, V1–V5, B1–B7) and raw value (CODE, API_URL, FILE_SEARCH, DIRECT_TOOL,
ADMIN, CALLER, AUDITOR, isError, a bare true or false), and any other name for API URL tools or
File Search tools ("API tools", "File search"). It opens each dialog a visible button opens
and checks it with axe-core, as each page is. The test fails listing every page and what it showed.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

from playwright.sync_api import expect

from tests.browser.conftest import OPERATOR_TOKEN, assert_accessible, axe_violations, shots, sign_in

RULE_CODE = re.compile(r"(?<![\w'\"-])(R1[0-6]|R[1-9]|V[1-5]|B[1-7])(?![\w-])")
# One name for each thing: "API URL tools" and "File Search tools", never "API tools" or "File search".
OTHER_NAME = re.compile(r"\bAPI tools?\b|\bFile search\b|\ba API\b")
RAW_VALUE = re.compile(r"(?<![\w-])(CODE|API_URL|FILE_SEARCH|DIRECT_TOOL|ADMIN|CALLER|AUDITOR|isError|true|false)(?![\w-])")

# The text a person reads: rendered text nodes (a closed dialog's and a select's options too), the
# page's title and the attributes read out or shown; not code, JSON or what a person typed.
READ_TEXT = """() => {
  const skip = 'pre, code, .cm-editor, textarea, script, style, template, noscript';
  const found = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    const el = node.parentElement;
    const text = node.textContent.trim();
    if (!el || !text || el.closest(skip)) continue;
    if (el.checkVisibility() || el.closest('dialog') || el.closest('select'))
      found.push(text);
  }
  for (const el of document.querySelectorAll('[title], [aria-label], [placeholder], img[alt]'))
    for (const name of ['title', 'aria-label', 'placeholder', 'alt'])
      if (el.getAttribute(name) && !el.closest(skip)) found.push(el.getAttribute(name));
  found.push(document.title);
  return found;
}"""

# The same within one element (a dialog).
READ_TEXT_IN = """(selector) => {
  const skip = 'pre, code, .cm-editor, textarea, script, style, template, noscript';
  const root = document.querySelector(selector);
  const found = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node; (node = walker.nextNode());) {
    const el = node.parentElement;
    const text = node.textContent.trim();
    if (el && text && !el.closest(skip)) found.push(text);
  }
  for (const el of root.querySelectorAll('[title], [aria-label], [placeholder]'))
    for (const name of ['title', 'aria-label', 'placeholder'])
      if (el.getAttribute(name)) found.push(el.getAttribute(name));
  return found;
}"""

# Links not to follow: they leave the pages (sign out, downloads) or change something on a GET.
NOT_FOLLOWED = re.compile(r"sign-out|/export|/download|/static/|\.json$|/raw$")
MAX_PAGES = 70


def offences(texts: list[str]) -> list[str]:
    found = []
    for text in texts:
        for pattern in (RULE_CODE, RAW_VALUE, OTHER_NAME):
            for match in pattern.finditer(text):
                found.append(f"{match.group(0)!r} in {text[:160]!r}")
    return sorted(set(found))


def seed(server: Any, suffix: str, upstream_url: str) -> dict[str, str]:
    """One of everything, through the REST API; the names of what was made."""
    names = {k: f"{k}{suffix}" for k in ("mod", "lib", "weather", "docs", "plan", "agent", "profile", "server", "secret", "token")}
    with server.client() as rest:
        def made(answer: Any, status: int = 201) -> Any:
            assert answer.status_code == status, answer.text
            return answer

        made(rest.post("/api/v1/admin/code-modules", json={
            "id": names["lib"], "description": "Formats a number with two decimals",
            "draftContent": "exports.fixed = function (n) { return n.toFixed(2); };"}))
        made(rest.post(f"/api/v1/admin/code-modules/{names['lib']}/publish"), 200)
        made(rest.post("/api/v1/admin/code-modules", json={
            "id": names["mod"], "description": "Formats an amount as currency",
            "draftContent": f"exports.run = function (i) {{ return {{text: {names['lib']}.fixed(i.amount)}}; }};",
            "draftImports": [names["lib"]],
            "tool": {"inputParameters": [{"name": "amount", "type": "decimal", "required": True}], "exposeInChat": True, "tags": ["money"]}}))
        made(rest.post(f"/api/v1/admin/code-modules/{names['mod']}/publish"), 200)
        # a draft over the published version, so the pages show both
        made(rest.put(f"/api/v1/admin/code-modules/{names['mod']}", json={"description": "Formats an amount as currency, with a symbol"}), 200)
        made(rest.post("/api/v1/admin/secrets", json={"id": names["secret"], "value": "s3cret-value-for-the-test", "description": "the weather key"}))
        made(rest.post("/api/v1/admin/api-tools", json={
            "id": names["weather"], "description": "Current weather for a city", "urlTemplate": f"{upstream_url}/v1/weather/{{city}}",
            "parameters": [{"name": "city", "type": "string", "location": "path", "required": True}],
            "auth": {"type": "bearer", "secret": names["secret"]}}))
        made(rest.post("/api/v1/admin/search-tools", json={"id": names["docs"], "description": "Care guides for the zoo"}))
        made(rest.post(f"/api/v1/admin/search-tools/{names['docs']}/documents",
                       files=[("files", ("zebras.txt", b"Zebras eat grass. The zebra house opens at nine."))]), 202)
        made(rest.post("/api/v1/admin/plans", json={"id": names["plan"], "description": "Formats twice", "nodes": [{"toolName": names["mod"]}]}))
        made(rest.post("/api/v1/admin/agents", json={"id": names["agent"], "description": "The accountant", "allowedTools": [names["mod"]]}))
        made(rest.post("/api/v1/admin/usage-profiles", json={"id": names["profile"], "description": "Money tools", "allowedTools": [names["mod"]], "allowedTags": ["money"]}))
        made(rest.post("/api/v1/admin/mcp-servers", json={"id": names["server"], "description": "Finance", "tools": [names["mod"], names["weather"]]}))
        made(rest.post("/api/v1/admin/tokens", json={"name": names["token"], "role": "caller", "usageProfile": names["profile"]}))
    return names


def checked(page: Any, where: str, problems: dict[str, list[str]], *, within: str | None = None) -> None:
    """axe-core on the page (or a dialog), its violations kept with the page's other problems so that
    one run names every page's (the walk goes on)."""
    for violation in axe_violations(page, within=within):
        problems.setdefault(where, []).append(f"axe-core: {violation}")


def read_dialogs(page: Any, where: str, problems: dict[str, list[str]]) -> None:
    """Opens each dialog a button on the page opens (one in a closed `…` menu through its menu; the
    module page's Publish review), waits for what the dialog reads when it opens, reads it, checks it
    with axe-core and closes it."""
    buttons = page.locator("button[data-open-dialog], button[data-publish]")
    for i in range(buttons.count()):
        button = buttons.nth(i)
        menu = button.locator("xpath=ancestor::details[not(@open)]")
        if menu.count():
            menu.first.locator("summary").click()
        if not button.is_visible() or not button.is_enabled():
            continue
        target = button.get_attribute("data-open-dialog") or "publish-dialog"
        dialog = page.locator(f"dialog#{target}")
        name = f"{where}, dialog {button.inner_text().strip()!r}"
        button.click()
        expect(dialog).to_be_visible()
        page.wait_for_load_state("networkidle")
        page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")
        found = offences(page.evaluate(READ_TEXT_IN, f"dialog#{target}"))
        if found:
            problems.setdefault(name, []).extend(found)
        checked(page, name, problems, within=f"dialog#{target}")
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()


def walk(page: Any, starts: list[str], problems: dict[str, list[str]], *, keep: re.Pattern[str], seen: set[str],
         shoot: dict[str, str] | None = None) -> list[str]:
    """Visits `starts` and every console page they link to (within `keep`), breadth first; each page's
    offences go into `problems`; the pages named in `shoot` are saved as screenshots. The pages visited, in order."""
    queue = list(starts)
    visited = []
    while queue and len(visited) < MAX_PAGES:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        answer = page.goto(url)
        assert answer is not None and answer.status in (200,), f"{url} answered {answer.status if answer else None}"
        page.wait_for_load_state("networkidle")
        visited.append(url)
        found = offences(page.evaluate(READ_TEXT))
        if found:
            problems.setdefault(url, []).extend(found)
        checked(page, url, problems)
        if shoot and url in shoot:
            shots(page, shoot[url])
        read_dialogs(page, url, problems)
        for href in page.eval_on_selector_all("a[href]", "links => links.map(a => a.getAttribute('href'))"):
            parts = urlsplit(href)
            if parts.netloc or not parts.path.startswith("/console/") or NOT_FOLLOWED.search(parts.path):
                continue
            # one page per path (a list's filters and pages say what the list says), the Playground per tool
            target = parts.path + (f"?{parts.query}" if parts.path == "/console/playground" and parts.query.startswith("tool=") else "")
            if keep.search(target) and target not in seen and target not in queue:
                queue.append(target)
    return visited


def test_no_page_shows_a_rule_code_or_a_raw_value(page, console_server, upstream_api) -> None:
    names = seed(console_server, uuid4().hex[:6], upstream_api.url)
    problems: dict[str, list[str]] = {}
    seen: set[str] = set()

    sign_in(page, then="/console/modules")
    navigation = page.get_by_role("navigation", name="Console")
    starts = [a for a in navigation.locator("a[href^='/console/']").evaluate_all("links => links.map(a => a.getAttribute('href'))")]
    made = [f"/console/modules/{names['mod']}", f"/console/modules/{names['mod']}/history", f"/console/api-tools/{names['weather']}",
            f"/console/search-tools/{names['docs']}", f"/console/plans/{names['plan']}", f"/console/agents/{names['agent']}",
            f"/console/profiles/{names['profile']}", f"/console/servers/{names['server']}", f"/console/playground?tool={names['mod']}",
            "/console/rules"]
    # What this test made and the pages every kind has; other tests' records are left to their own tests.
    ours = "|".join(re.escape(n) for n in names.values())
    keep = re.compile(rf"^/console/[a-z-]+/?$|/new$|/edit$|({ours})(/|$|\?)|^/console/playground\?tool=({ours})$|^/console/audit|^/console/tokens")
    # the pages no other test owns (plans, agents, usage profiles, secrets), in both themes at both widths
    shoot = {"/console/plans": "plans", f"/console/plans/{names['plan']}": "plan", "/console/agents": "agents",
             f"/console/agents/{names['agent']}": "agent", "/console/profiles": "profiles",
             f"/console/profiles/{names['profile']}": "profile", "/console/secrets": "secrets", "/console/plans/new": "plan-new"}
    visited = walk(page, starts + made, problems, keep=keep, seen=seen, shoot=shoot)
    for must in made:
        assert must in visited, f"{must} was not visited (visited: {visited})"
    assert len(visited) >= 25, visited

    # what a person sees when the console refuses: a plan offered as a tool under a code module's name
    page.goto("/console/plans/new")
    page.get_by_label("Name", exact=True).fill(names["mod"])
    page.get_by_label("Description").fill("takes a name that is taken")
    page.get_by_label("Nodes").fill(names["weather"])
    page.get_by_label("Expose as a tool").check()
    page.get_by_role("button", name="Create").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("That name is taken.")
    expect(alert).to_contain_text(f"'{names['mod']}' is already used by")
    assert not offences([alert.inner_text()]), alert.inner_text()
    assert_accessible(page, "the plan form's refusal")
    shots(page, "language-refusal")

    # the operator's pages
    page.context.clear_cookies()
    sign_in(page, OPERATOR_TOKEN, then="/console/operator/tenants")
    tenant = f"org-{uuid4().hex[:6]}"
    page.get_by_label("Id", exact=True).fill(tenant)
    page.get_by_label("Name", exact=True).fill("Language test")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Organization Language test created")).to_be_visible()
    walk(page, ["/console/operator/tenants", f"/console/operator/tenants/{tenant}"], problems,
         keep=re.compile(rf"^/console/operator/tenants(/{re.escape(tenant)})?$"), seen=set(),
         shoot={"/console/operator/tenants": "organizations", f"/console/operator/tenants/{tenant}": "organization"})

    assert not problems, "pages show rule codes, raw values or another name for a kind, or fail axe-core:\n" + "\n".join(
        f"{where}: {'; '.join(found)}" for where, found in sorted(problems.items()))


def test_a_refusal_explained_by_a_rule_links_to_that_rule_s_explanation(page, console_server) -> None:  # noqa: ANN001
    """Seed 004's dates/report refusal and the delete refused while report imports dates: each says its
    rule in words with a Learn more link, which opens the rules page at that rule (docs/rules.md's anchor)."""
    dates, report = f"dates{uuid4().hex[:6]}", f"report{uuid4().hex[:6]}"
    with console_server.client() as api:
        base = "/api/v1/admin/code-modules"
        for module_id, body in ((dates, {"draftContent": "exports.year = (d) => d.slice(0, 4);"}),
                                (report, {"draftContent": f"exports.run = (input) => 'Report ' + {dates}.year(input.day);",
                                          "draftImports": [dates], "tool": {"inputParameters": [{"name": "day", "description": "The day"}]}})):
            assert api.post(base, json={"id": module_id, "description": f"{module_id} does things", **body}).status_code == 201
            assert api.post(f"{base}/{module_id}/publish").status_code == 200
        assert api.put(f"{base}/{dates}", json={"draftContent": "exports.month = (d) => d.slice(5, 7);"}).status_code == 200
    sign_in(page, then=f"/console/modules/{dates}")
    page.get_by_role("button", name="Publish", exact=True).click()
    review = page.get_by_role("dialog", name=f"Publish {dates}")
    expect(review.get_by_text("Publishing is refused")).to_be_visible()
    expect(review.get_by_text("The rule: publishing re-checks every module that imports this one.")).to_be_visible()
    learn = review.get_by_role("link", name="Learn more about the rule that publishing re-checks every module that imports this one")
    assert_accessible(page, "the refused review with its rule", within="#publish-dialog")
    learn.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/console/rules#r10")
    rule = page.locator("#r10")
    expect(rule.get_by_role("heading")).to_have_text("Publishing re-checks every module that imports this one")
    expect(rule).to_contain_text("nothing is published and the review names it")
    assert page.evaluate("() => document.querySelector(':target')?.id") == "r10"
    box = rule.bounding_box()
    assert 0 <= box["y"] < 800, "the page opens at the rule"
    assert not re.search(r"\b[RVB]\d{1,2}\b", page.locator("main").inner_text()), "no rule code on the rules page"
    assert_accessible(page, "the rules page")
    shots(page, "rules-page")

    # the delete refused while report imports dates: its rule, linked too
    page.goto(f"/console/modules/{dates}")
    page.get_by_text("…", exact=True).click()
    page.get_by_role("button", name="Delete code module").click()
    dialog = page.get_by_role("dialog", name=f"Delete {dates}")
    dialog.get_by_role("link", name="Learn more about the rule that something in use cannot be deleted").click()
    page.wait_for_url("**/console/rules#r12")
    expect(page.locator("#r12")).to_contain_text("cannot be deleted while another module imports it")
