// The Create page and the module page's editor: CodeMirror on the Source, Ctrl/Cmd+S saves,
// Ctrl/Cmd+Enter runs Test, a warning before leaving unsaved changes, the parameter rows, the tool
// switch, the live name check's aria-invalid, the Test window's reset on close, and the conflict
// dialog (B7). Loaded with editor.js (which imports it); it acts only on the pages that have these forms.
import { mountEditor, mountDiff } from "./editor.js";

let dirty = false;
let edits = 0; // bumped by each change, so that a save answered after a later change leaves the page dirty

const byId = (id) => document.getElementById(id);
const editorForm = () => byId("editor-form");
const createForm = () => byId("create-form");

function changed() {
  edits += 1;
  if (!dirty) {
    dirty = true;
    const status = byId("save-status");
    if (status) status.textContent = "Unsaved changes";
  }
}

function save() {
  const form = editorForm() || createForm();
  if (form) form.requestSubmit();
}

function runTest() {
  const dialog = byId("test-dialog");
  const form = byId("test-form");
  if (!dialog || !form) return;
  if (!dialog.open) dialog.showModal();
  form.requestSubmit();
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
  // htmx copies an old element's `style` attribute onto its swapped-in replacement while settling;
  // the CSP refuses any style attribute (even an empty one, as tools such as axe-core leave behind),
  // and the console sets none, so there is nothing to settle there.
  if (window.htmx) window.htmx.config.attributesToSettle = ["class", "width", "height"];
  const form = editorForm() || createForm();
  if (!form) return;
  for (const textarea of form.querySelectorAll("textarea[data-editor]")) {
    if (!textarea.editorView && !textarea.readOnly) mountEditor(textarea, { onSave: save, onRun: runTest, onChange: changed });
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
  const testDialog = byId("test-dialog");
  if (testDialog) {
    testDialog.addEventListener("close", () => {
      const result = byId("test-result");
      if (result) result.replaceChildren();
      const input = byId("test-input");
      if (input) input.value = input.defaultValue;
    });
  }
}

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
  } else if (event.key === "Enter" && byId("test-dialog")) {
    event.preventDefault();
    runTest();
  }
});

window.addEventListener("beforeunload", (event) => {
  if (!dirty) return;
  event.preventDefault();
  event.returnValue = "";
});

let editsAtSave = 0;

document.addEventListener("htmx:beforeRequest", (event) => {
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
  const status = byId("save-status");
  if (!status) return;
  status.textContent = event.detail.xhr?.status === 412
    ? "Not saved: a newer version was saved meanwhile."
    : "Not saved: see the message above.";
});

document.addEventListener("htmx:afterSettle", (event) => {
  const target = event.detail.target;
  if (!(target instanceof Element)) return;
  if (target.id === "id-status") {
    // The live name check: the field is invalid while its message says so.
    const field = byId("id");
    if (field) field.setAttribute("aria-invalid", target.querySelector("[data-invalid]") ? "true" : "false");
  }
  const dialog = target.querySelector("#conflict-dialog");
  if (dialog && !dialog.open) {
    dialog.showModal();
    const diff = dialog.querySelector("[data-conflict-diff]");
    if (diff) {
      const merge = mountDiff(diff);
      merge.a.contentDOM.setAttribute("aria-label", "Saved (newer) source");
      merge.b.contentDOM.setAttribute("aria-label", "Your source");
    }
  }
});

// After every module of the bundle has run (editor.js imports this one before its own body runs).
document.addEventListener("DOMContentLoaded", setUp);
