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
  const published = publishAfterSave;
  publishAfterSave = false;
  busy(byId("publish-button"), false);
  const status = byId("save-status");
  if (!status) return;
  status.textContent = (event.detail.xhr?.status === 412
    ? "Not saved: a newer version was saved meanwhile."
    : "Not saved: see the message above.") + (published ? " Nothing was published." : "");
});

// The review's body arrived (or its request failed): the Publish button is no longer busy.
document.addEventListener("htmx:afterRequest", (event) => {
  if (event.detail.elt?.id === "publish-dialog") busy(byId("publish-button"), false);
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
  if (target.id === "save-status" && publishAfterSave) {
    // The draft is saved (the fragment swapped in its Publish button and review): now the review.
    publishAfterSave = false;
    openPublish();
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
    if (diff) mountDiff(diff);
  }
});

// After every module of the bundle has run (editor.js imports this one before its own body runs).
document.addEventListener("DOMContentLoaded", setUp);
