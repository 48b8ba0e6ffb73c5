// The Create page and the module page's workspace: CodeMirror on the Source (tall, resizable, full
// screen), Ctrl/Cmd+S saves, Ctrl/Cmd+Enter runs Test, a warning before leaving unsaved changes,
// Publish that saves first, the parameter rows, the tool switch, the live name check's aria-invalid,
// the docked Test panel (a form or JSON, the last input kept, an error linked to its line and marked
// in the gutter, "Save as example"), and the conflict dialog (B7). Loaded with editor.js (which imports it); it acts only on the pages that have these forms.
// CodeMirror itself comes after the page's load event (editor_loader.js): until then the Source is its textarea.
import { afterLoad, codeMirror } from "./editor_loader.js";

let dirty = false;
let edits = 0; // bumped by each change, so that a save answered after a later change leaves the page dirty

const byId = (id) => document.getElementById(id);
const editorForm = () => byId("editor-form");
const createForm = () => byId("create-form");

let marked = false; // a Test's syntax error is marked in the editor

function changed() {
  edits += 1;
  if (marked) {
    // The mark was the last run's: the code changed under it, so it goes (the next run says anew).
    marked = false;
    const source = byId("content");
    if (source) codeMirror().then((cm) => cm.clearMarks(source));
  }
  if (!dirty) {
    dirty = true;
    const status = byId("save-status");
    if (status) status.textContent = "Unsaved changes";
  }
  pending();
}

// -- Publish: safe and one step. Unsaved edits are something to publish: the button turns on with
// the editor's first change, and a click saves the draft (Save's checks, its errors shown where
// Save shows them) and then opens the review. Until the review's body arrives the button is busy.
let publishAfterSave = false;

function pending() {
  const button = byId("publish-button");
  if (!button) return;
  button.disabled = false;
  const reason = byId("publish-reason");
  if (reason) reason.textContent = dirty ? reason.dataset.unsaved : "";
}

function busy(element, on) {
  if (!element) return;
  if (on) element.setAttribute("aria-busy", "true");
  else element.removeAttribute("aria-busy");
}

function openPublish() {
  const dialog = byId("publish-dialog");
  if (!dialog || dialog.open) return;
  busy(byId("publish-button"), true);
  dialog.showModal();
  dialog.dispatchEvent(new CustomEvent("console:opened", { bubbles: true }));
}

function publish() {
  const button = byId("publish-button");
  if (!button || button.disabled) return;
  if (!dirty) {
    openPublish();
    return;
  }
  const form = editorForm();
  if (form && !form.checkValidity()) {
    // Save would refuse it too: the browser points at the field, and nothing is sent.
    const status = byId("save-status");
    if (status) status.textContent = "Not saved: a field needs an answer. Nothing was published.";
    form.reportValidity();
    return;
  }
  publishAfterSave = true;
  busy(button, true);
  save();
}

function save() {
  const form = editorForm() || createForm();
  if (form) form.requestSubmit();
}

function runTest() {
  const form = byId("test-form");
  if (!form) return;
  syncFromFields();
  form.requestSubmit();
}

// -- the workspace: a tall editor the person resizes (drag the bar under it, or Up/Down on it) and
// puts in full screen (the button, Ctrl/Cmd+Shift+F; Escape leaves).
const STEP = 32;
const BIG_STEP = 160;

function editorHost() {
  return byId("source-field")?.querySelector(".editor-host");
}

// The chosen height lives in a constructed stylesheet (which the CSP allows, as it does CodeMirror's),
// never in a style attribute (which it blocks).
let heightSheet = null;

function setEditorHeight(px) {
  const host = editorHost();
  const bar = document.querySelector("[data-editor-resize]");
  if (!host || !bar) return;
  const height = Math.round(Math.min(Number(bar.getAttribute("aria-valuemax")), Math.max(Number(bar.getAttribute("aria-valuemin")), px)));
  if (!heightSheet) {
    heightSheet = new CSSStyleSheet();
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, heightSheet];
  }
  heightSheet.replaceSync(`#source-field .editor-host { --editor-height: ${height}px; }`);
  bar.setAttribute("aria-valuenow", String(height));
  bar.setAttribute("aria-valuetext", `${height} pixels`);
}

function setUpResize() {
  const bar = document.querySelector("[data-editor-resize]");
  const host = editorHost();
  if (!bar || !host) return;
  bar.setAttribute("aria-valuenow", String(Math.round(host.getBoundingClientRect().height)));
  bar.addEventListener("keydown", (event) => {
    const now = host.getBoundingClientRect().height;
    const change = { ArrowUp: -STEP, ArrowDown: STEP, PageUp: -BIG_STEP, PageDown: BIG_STEP }[event.key];
    if (change !== undefined) {
      event.preventDefault();
      setEditorHeight(now + change);
    } else if (event.key === "Home" || event.key === "End") {
      event.preventDefault();
      setEditorHeight(Number(bar.getAttribute(event.key === "Home" ? "aria-valuemin" : "aria-valuemax")));
    }
  });
  bar.addEventListener("pointerdown", (event) => {
    event.preventDefault();
    bar.setPointerCapture(event.pointerId);
    const startY = event.clientY;
    const startHeight = host.getBoundingClientRect().height;
    const move = (moved) => setEditorHeight(startHeight + moved.clientY - startY);
    const stop = () => {
      bar.removeEventListener("pointermove", move);
      bar.removeEventListener("pointerup", stop);
      bar.removeEventListener("pointercancel", stop);
    };
    bar.addEventListener("pointermove", move);
    bar.addEventListener("pointerup", stop);
    bar.addEventListener("pointercancel", stop);
  });
}

// Full screen is a workspace: the Source field and the docked Test panel side by side (stacked on a
// narrow window) over the whole window, with the Save button and its status; the rest of the page is
// made inert meanwhile (as behind a modal), so that Tab goes between the editor, Test and the buttons
// only. The button, Ctrl/Cmd+Shift+F or Escape leaves it.
let inerted = [];

function fullScreen(on) {
  const field = byId("source-field");
  const button = byId("full-screen");
  if (!field || !button) return;
  const workspace = field.closest(".workspace") ?? field;
  const next = on ?? !workspace.classList.contains("is-full-screen");
  workspace.classList.toggle("is-full-screen", next);
  field.classList.toggle("is-full-screen", next);
  document.documentElement.classList.toggle("editor-full-screen", next);
  for (const element of inerted) element.inert = false;
  inerted = [];
  if (next) {
    // Every sibling of the workspace and of each of its ancestors up to <body>, except the toasts'
    // live region (a Save's toast is still heard) and what is inert already.
    for (let node = workspace; node && node !== document.body; node = node.parentElement) {
      for (const sibling of node.parentElement?.children ?? []) {
        if (sibling === node || sibling.inert || sibling.id === "toasts" || ["SCRIPT", "TEMPLATE"].includes(sibling.tagName)) continue;
        sibling.inert = true;
        inerted.push(sibling);
      }
    }
  }
  button.setAttribute("aria-pressed", String(next));
  button.textContent = next ? "Leave full screen" : "Full screen";
  const source = byId("content");
  (source?.editorView ?? source)?.focus();
}

// -- the Test panel: the input as a form built from the saved parameters, or as JSON (the JSON
// field is what is sent, kept in step with the form); the last input kept per module.
const storageKey = () => {
  const panel = byId("test-panel");
  return panel ? `toolsmith.test.${panel.dataset.module}` : null;
};

function fieldValue(field) {
  const type = field.dataset.type;
  if (type === "boolean") return field.checked;
  const text = field.value.trim();
  if (text === "") return undefined;
  if (type === "integer" || type === "decimal") return Number(text);
  if (type === "array" || type === "object") {
    try { return JSON.parse(text); } catch { return text; } // as typed: the check names it
  }
  return field.value;
}

function syncFromFields() {
  const fields = byId("test-fields");
  const input = byId("test-input");
  if (!fields || !input || fields.hidden) return;
  const given = {};
  for (const field of fields.querySelectorAll("[data-arg]")) {
    const value = fieldValue(field);
    if (value !== undefined) given[field.dataset.arg] = value;
  }
  input.value = JSON.stringify(given, null, 2);
  remember();
}

function syncToFields() {
  const fields = byId("test-fields");
  const input = byId("test-input");
  if (!fields || !input) return true;
  let given;
  try { given = JSON.parse(input.value || "{}"); } catch { return false; }
  if (given === null || typeof given !== "object" || Array.isArray(given)) return false;
  for (const field of fields.querySelectorAll("[data-arg]")) {
    const value = given[field.dataset.arg];
    if (field.dataset.type === "boolean") field.checked = value === true;
    else if (value === undefined || value === null) field.value = "";
    else field.value = typeof value === "object" ? JSON.stringify(value) : String(value);
  }
  return true;
}

function testMode(mode) {
  const fields = byId("test-fields");
  const json = byId("test-json");
  if (!fields || !json) return;
  if (mode === "form" && !syncToFields()) {
    // JSON that is not an object of arguments stays JSON: the form could not show it.
    byId("test-mode-json").checked = true;
    byId("test-input-hint").textContent = "The form shows a JSON object of arguments; fix the JSON to switch.";
    return;
  }
  fields.hidden = mode !== "form";
  json.hidden = mode === "form";
  const radio = byId(`test-mode-${mode}`);
  if (radio) radio.checked = true;
  remember();
}

function remember() {
  const key = storageKey();
  const input = byId("test-input");
  if (!key || !input) return;
  const mode = byId("test-mode-json")?.checked ? "json" : "form";
  try { localStorage.setItem(key, JSON.stringify({ input: input.value, mode })); } catch { /* storage off: nothing kept */ }
}

function setUpTestPanel() {
  const panel = byId("test-panel");
  const input = byId("test-input");
  if (!panel || !input) return;
  let kept = null;
  try { kept = JSON.parse(localStorage.getItem(storageKey()) || "null"); } catch { kept = null; }
  if (kept && typeof kept.input === "string") input.value = kept.input;
  if (byId("test-fields")) testMode(kept?.mode === "json" ? "json" : "form");
  panel.addEventListener("input", (event) => {
    if (event.target.closest("#test-fields")) syncFromFields();
    else if (event.target === input) remember();
  });
  panel.addEventListener("change", (event) => {
    if (event.target.matches("[data-test-mode]")) testMode(event.target.value);
    else if (event.target.closest("#test-fields")) syncFromFields();
  });
}

// "Save as example": the run's input and output join the tool's examples (B4), and the draft is saved.
function saveExample(button) {
  const box = button.closest(".save-example");
  const examples = byId("examples");
  const status = byId("save-status");
  if (!box || !examples) return;
  const name = (byId("example-name")?.value || "").trim();
  let list = [];
  if (examples.value.trim()) {
    try { list = JSON.parse(examples.value); } catch { list = null; }
  }
  if (!Array.isArray(list)) {
    if (status) status.textContent = "Not added: the Examples field is not a JSON list; fix it first.";
    examples.focus();
    return;
  }
  if (!name) {
    byId("example-name")?.focus();
    if (status) status.textContent = "Not added: give the example a name.";
    return;
  }
  list.push({ name, input: JSON.parse(box.dataset.exampleInput), output: JSON.parse(box.dataset.exampleOutput) });
  examples.value = JSON.stringify(list, null, 2);
  changed();
  button.disabled = true;
  button.textContent = `Added as “${name}”`;
  save();
}

function renumber() {
  const rows = document.querySelectorAll("#param-rows [data-param-row]");
  rows.forEach((row, index) => {
    for (const number of row.querySelectorAll("[data-param-number]")) number.textContent = String(index + 1);
  });
}

let nextRow = 0;

function addParameter() {
  const template = byId("param-template");
  const rows = byId("param-rows");
  if (!template || !rows) return;
  const existing = [...rows.querySelectorAll('input[name="param_row"]')].map((input) => Number(input.value));
  nextRow = Math.max(nextRow, existing.length ? Math.max(...existing) + 1 : 0);
  const html = template.innerHTML.replaceAll("__i__", String(nextRow)).replaceAll("__n__", "");
  nextRow += 1;
  rows.insertAdjacentHTML("beforeend", html);
  renumber();
  changed();
  rows.lastElementChild?.querySelector("input:not([type=hidden])")?.focus();
}

function removeParameter(button) {
  button.closest("[data-param-row]")?.remove();
  renumber();
  changed();
  document.querySelector("[data-add-param]")?.focus();
}

function countCharacters(textarea) {
  const target = byId(textarea.dataset.count);
  if (!target) return;
  const max = Number(textarea.getAttribute("maxlength") || 0);
  target.textContent = `${textarea.value.length.toLocaleString("en-US")} / ${max.toLocaleString("en-US")} characters`;
}

function setUp() {
  const form = editorForm() || createForm();
  if (!form) return;
  // CodeMirror on the Source once the page has loaded (its textarea is the field until then), then
  // the bar that resizes it.
  const editors = [...form.querySelectorAll("textarea[data-editor]")].filter((textarea) => !textarea.readOnly);
  if (editors.length) {
    afterLoad(() => codeMirror().then((cm) => {
      for (const textarea of editors) {
        if (!textarea.editorView && textarea.isConnected) {
          cm.mountEditor(textarea, { onSave: save, onRun: runTest, onChange: changed, onFullScreen: byId("full-screen") ? () => fullScreen() : null });
        }
      }
      setUpResize();
      // When the editor is there (bench.console_browser reads it beside the page's load).
      performance.mark("toolsmith:editor-ready");
    }));
  }
  form.addEventListener("input", (event) => {
    if (event.target.dataset?.count) countCharacters(event.target);
    changed();
  });
  form.addEventListener("change", changed);
  // A plain form post (Create) leaves the page on purpose.
  if (form === createForm()) form.addEventListener("submit", () => { dirty = false; });
  const toolSwitch = byId("tool");
  const section = byId("tool-section");
  if (toolSwitch && section) toolSwitch.addEventListener("change", () => { section.hidden = !toolSwitch.checked; });
  setUpTestPanel();
  // The timeout's placeholder and hint name the chosen style's default (the server's table, once).
  const style = byId("style");
  if (style?.dataset.timeoutDefaults) {
    const defaults = JSON.parse(style.dataset.timeoutDefaults);
    style.addEventListener("change", () => {
      const value = defaults[style.value];
      if (value === undefined) return;
      const timeout = byId("timeoutMillis");
      if (timeout) timeout.placeholder = String(value);
      const shown = document.querySelector("[data-timeout-default]");
      if (shown) shown.textContent = value.toLocaleString("en-US");
    });
  }
}

// The … menu closes when one of its items opens a dialog (it would stay open behind it).
document.addEventListener("click", (event) => {
  const item = event.target instanceof Element ? event.target.closest("details.menu [data-open-dialog]") : null;
  if (!item) return;
  const menu = item.closest("details.menu");
  menu.open = false;
  // Its item is hidden now: the focus goes back to the menu's button when the dialog closes.
  byId(item.dataset.openDialog)?.addEventListener("close", () => menu.querySelector("summary")?.focus(), { once: true });
});

document.addEventListener("click", (event) => {
  const target = event.target;
  if (!(target instanceof Element)) return;
  if (target.closest("[data-add-param]")) {
    event.preventDefault();
    addParameter();
    return;
  }
  const remove = target.closest("[data-remove-param]");
  if (remove) {
    event.preventDefault();
    removeParameter(remove);
    return;
  }
  if (target.closest("[data-full-screen]")) {
    event.preventDefault();
    fullScreen();
    return;
  }
  if (target.closest("[data-focus-test]")) {
    event.preventDefault();
    const panel = byId("test-panel");
    panel?.scrollIntoView({ block: "nearest" });
    (byId("test-fields")?.hidden === false ? byId("test-fields").querySelector("[data-arg]") : byId("test-input"))?.focus();
    return;
  }
  const goto = target.closest("[data-goto]");
  if (goto) {
    event.preventDefault();
    const [line, column] = goto.dataset.goto.split(":").map(Number);
    const source = byId("content");
    if (source) codeMirror().then((cm) => cm.goTo(source, line, column));
    return;
  }
  const example = target.closest("[data-save-example]");
  if (example) {
    event.preventDefault();
    saveExample(example);
    return;
  }
  if (target.closest("[data-publish]")) {
    event.preventDefault();
    publish();
    return;
  }
  const keep = target.closest("[data-keep-mine]");
  if (keep) {
    // Overwrite: save again at the version that is current now.
    event.preventDefault();
    const version = byId("version");
    if (version) version.value = keep.dataset.keepMine;
    keep.closest("dialog")?.close();
    save();
    return;
  }
  if (target.closest("[data-reload-page]")) {
    event.preventDefault();
    dirty = false;
    // A fresh load (not reload(), which may restore the form as typed): the saved text and its version.
    window.location.replace(window.location.pathname);
  }
});

// Ctrl/Cmd+S and Ctrl/Cmd+Enter anywhere on the page (CodeMirror handles them itself inside the editor).
document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || !(event.ctrlKey || event.metaKey) || event.altKey) return;
  if ((event.key === "s" || event.key === "S") && (editorForm() || createForm())) {
    event.preventDefault();
    save();
  } else if (event.key === "Enter" && byId("test-form")) {
    event.preventDefault();
    runTest();
  } else if ((event.key === "f" || event.key === "F") && event.shiftKey && byId("full-screen")) {
    event.preventDefault();
    fullScreen();
  }
});

// Escape leaves the editor's full screen (before CodeMirror or a dialog sees it).
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || !byId("source-field")?.classList.contains("is-full-screen")) return;
  if (document.querySelector("dialog[open]")) return;
  // An open completion or search panel takes Escape first (CodeMirror closes it); the next one leaves.
  if (event.target.closest?.(".editor-host") && byId("content")?.editorView?.dom.querySelector(".cm-tooltip-autocomplete, .cm-panel.cm-search")) return;
  event.preventDefault();
  event.stopPropagation();
  fullScreen(false);
}, true);

window.addEventListener("beforeunload", (event) => {
  if (!dirty) return;
  event.preventDefault();
  event.returnValue = "";
});

let editsAtSave = 0;

document.addEventListener("htmx:beforeRequest", (event) => {
  if (event.detail.elt === byId("test-form")) {
    syncFromFields();
    busy(byId("test-run"), true);
  }
  if (event.detail.elt !== editorForm()) return;
  editsAtSave = edits;
  const status = byId("save-status");
  if (status) status.textContent = "Saving…";
});

document.addEventListener("htmx:afterRequest", (event) => {
  if (event.detail.elt !== editorForm()) return;
  if (event.detail.successful) {
    if (edits === editsAtSave) dirty = false;
    return;
  }
  const published = publishAfterSave;
  publishAfterSave = false;
  busy(byId("publish-button"), false);
  const status = byId("save-status");
  if (!status) return;
  status.textContent = (event.detail.xhr?.status === 412
    ? "Not saved: a newer version was saved meanwhile."
    : "Not saved: see the message above.") + (published ? " Nothing was published." : "");
});

// The review's body (or the Test's result) arrived, or its request failed: no longer busy.
document.addEventListener("htmx:afterRequest", (event) => {
  if (event.detail.elt?.id === "publish-dialog") busy(byId("publish-button"), false);
  if (event.detail.elt?.id === "test-form") busy(byId("test-run"), false);
});

// A dialog closed whose opener was replaced meanwhile (a save swaps the Publish button): the
// focus goes back to Publish rather than to the page's start.
document.addEventListener("close", (event) => {
  if (event.target?.id !== "publish-dialog") return;
  if (document.activeElement === document.body || !document.activeElement) byId("publish-button")?.focus();
}, true);

document.addEventListener("htmx:afterSettle", (event) => {
  const target = event.detail.target;
  if (!(target instanceof Element)) return;
  if (target.id === "save-status" && byId("test-panel")) {
    // The saved parameters' form swapped in again: shown as the person last chose (JSON if none).
    let kept = null;
    try { kept = JSON.parse(localStorage.getItem(storageKey()) || "null"); } catch { kept = null; }
    if (byId("test-fields")) testMode(kept?.mode === "json" ? "json" : "form");
    else if (byId("test-json")) byId("test-json").hidden = false;
  }
  if (target.id === "save-status" && publishAfterSave) {
    // The draft is saved (the fragment swapped in its Publish button and review): now the review.
    publishAfterSave = false;
    openPublish();
  }
  if (target.id === "test-result") {
    // A syntax error in this module's code: its line marked in the editor's gutter; else no mark.
    const source = byId("content");
    const at = target.querySelector("[data-error-at]");
    if (source && at) {
      const [line, column] = at.dataset.errorAt.split(":").map(Number);
      const message = target.querySelector("[data-error-message]")?.textContent || "Syntax error";
      codeMirror().then((cm) => cm.markError(source, line, column, message));
      marked = true;
    } else if (source) {
      codeMirror().then((cm) => cm.clearMarks(source));
    }
  }
  if (target.id === "id-status") {
    // The live name check: the field is invalid while its message says so.
    const field = byId("id");
    if (field) field.setAttribute("aria-invalid", target.querySelector("[data-invalid]") ? "true" : "false");
  }
  const dialog = target.querySelector("#conflict-dialog");
  if (dialog && !dialog.open) {
    dialog.showModal();
    const diff = dialog.querySelector("[data-conflict-diff]");
    if (diff) codeMirror().then((cm) => cm.mountDiff(diff));
  }
});

// After every module of the bundle has run.
document.addEventListener("DOMContentLoaded", setUp);
