// An MCP server's page (console/templates/servers/detail.html): the attach checklist's search and count,
// the clients' configuration tabs, and copying a configuration. Wired by data attributes (no inline
// script: the CSP has none) and by delegation, so the parts htmx swaps in work as the first ones did.

// The checklist: typing in [data-filter-choices] hides the choices whose words do not hold the text;
// checked ones stay shown. The count says how many are shown and how many are checked.
function countChoices(list) {
  const status = document.querySelector(`[data-choices-count="${list.id}"]`);
  if (!status) return;
  const items = [...list.querySelectorAll("li[data-choice]")];
  const shown = items.filter((item) => !item.hidden).length;
  const checked = list.querySelectorAll("input[type=checkbox]:checked").length;
  const tools = (n) => `${n} tool${n === 1 ? "" : "s"}`;
  status.textContent = `${shown === items.length ? tools(shown) : `${tools(shown)} of ${items.length}`} shown` +
    (checked ? `, ${checked} checked` : "");
}

document.addEventListener("input", (event) => {
  const field = event.target.closest?.("[data-filter-choices]");
  if (!field) return;
  const list = document.getElementById(field.dataset.filterChoices);
  if (!list) return;
  const words = field.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  for (const item of list.querySelectorAll("li[data-choice]")) {
    const checked = item.querySelector("input[type=checkbox]")?.checked;
    item.hidden = !checked && !words.every((word) => item.dataset.choice.includes(word));
  }
  countChoices(list);
});

document.addEventListener("change", (event) => {
  const list = event.target.closest?.("ul.checklist[id]");
  if (list) countChoices(list);
});

// Enter in the search field would submit the form with whatever is checked: it only filters.
document.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && event.target.closest?.("[data-filter-choices]")) event.preventDefault();
});

// Tabs (the WAI-ARIA tabs pattern): a click or Arrow/Home/End moves the selection; one panel shows.
function selectTab(tab) {
  const list = tab.closest("[role=tablist]");
  for (const other of list.querySelectorAll("[role=tab]")) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    const panel = document.getElementById(other.getAttribute("aria-controls"));
    if (panel) panel.hidden = !selected;
  }
}

document.addEventListener("click", (event) => {
  const tab = event.target.closest?.("[data-tabs] [role=tab]");
  if (tab) selectTab(tab);
});

document.addEventListener("keydown", (event) => {
  const tab = event.target.closest?.("[data-tabs] [role=tab]");
  if (!tab) return;
  const tabs = [...tab.closest("[role=tablist]").querySelectorAll("[role=tab]")];
  const at = tabs.indexOf(tab);
  const next = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: tabs.length - 1 }[event.key];
  if (next === undefined) return;
  event.preventDefault();
  const target = tabs[(next + tabs.length) % tabs.length];
  selectTab(target);
  target.focus();
});

// Copy a block's text ([data-copy-text] names it). Without the clipboard (an http page other than
// localhost, a refusal), the text is selected for the person to copy with their keys.
function selectText(element) {
  const range = document.createRange();
  range.selectNodeContents(element);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  element.focus();
}

document.addEventListener("click", (event) => {
  const button = event.target.closest?.("[data-copy-text]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copyText);
  const status = document.getElementById(button.dataset.status || "");
  if (!source) return;
  const say = (words) => { if (status) status.textContent = words; };
  const fallback = () => {
    selectText(source);
    say("Selected: press Ctrl+C (⌘C on a Mac) to copy");
  };
  if (!navigator.clipboard?.writeText) {
    fallback();
    return;
  }
  navigator.clipboard.writeText(source.textContent).then(() => say("Copied"), fallback);
});

// Progress while an attach, a detach or a check is on its way: the region it will replace says it is
// busy (aria-busy, dimmed by servers.css) until the answer is swapped in.
const BUSY = ["server-tools", "check-result"];
document.addEventListener("htmx:beforeRequest", (event) => {
  const target = event.detail?.target;
  if (target && BUSY.includes(target.id)) target.setAttribute("aria-busy", "true");
});
document.addEventListener("htmx:afterRequest", (event) => {
  const target = event.detail?.target;
  if (target && BUSY.includes(target.id)) target.removeAttribute("aria-busy");
});
