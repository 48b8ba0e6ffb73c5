// The editor island: CodeMirror 6 on every <textarea data-editor="javascript|json"> (the textarea
// stays the form's field and is kept in step), and merge views for [data-diff] elements.
import { EditorView, basicSetup } from "codemirror";
import { keymap } from "@codemirror/view";
import { javascript } from "@codemirror/lang-javascript";
import { json } from "@codemirror/lang-json";
import { MergeView } from "@codemirror/merge";
import { EditorState } from "@codemirror/state";
// The lifecycle part's merge views (publish review, history), labelled.
import "./lifecycle.js";

const languages = { javascript, json };

export function mountEditor(textarea, { onSave, onRun, onChange } = {}) {
  const language = languages[textarea.dataset.editor] ?? javascript;
  const shortcuts = keymap.of([
    { key: "Mod-s", preventDefault: true, run: () => { onSave?.(); return true; } },
    { key: "Mod-Enter", preventDefault: true, run: () => { onRun?.(); return true; } },
  ]);
  const host = document.createElement("div");
  host.className = "editor-host";
  const view = new EditorView({
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        shortcuts,
        basicSetup,
        language(),
        EditorView.contentAttributes.of({ "aria-label": textarea.getAttribute("aria-label") || labelOf(textarea) }),
        EditorView.updateListener.of((update) => {
          if (update.docChanged) {
            textarea.value = update.state.doc.toString();
            onChange?.(textarea.value);
          }
        }),
      ],
    }),
  });
  host.appendChild(view.dom);
  textarea.hidden = true;
  textarea.after(host);
  textarea.editorView = view;
  return view;
}

export function setEditorText(textarea, text) {
  const view = textarea.editorView;
  textarea.value = text;
  if (view) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
}

export function mountDiff(element) {
  const a = element.querySelector("[data-diff-a]")?.value ?? "";
  const b = element.querySelector("[data-diff-b]")?.value ?? "";
  const readOnly = [EditorState.readOnly.of(true), EditorView.editable.of(false), basicSetup, javascript()];
  const view = new MergeView({ a: { doc: a, extensions: readOnly }, b: { doc: b, extensions: readOnly }, parent: element });
  return view;
}

function labelOf(textarea) {
  return (textarea.id && document.querySelector(`label[for="${textarea.id}"]`)?.textContent?.trim()) || "Code";
}

function mountAll(root = document) {
  for (const element of root.querySelectorAll("[data-diff]:not([data-mounted])")) {
    element.dataset.mounted = "true";
    mountDiff(element);
  }
}

document.addEventListener("DOMContentLoaded", () => mountAll());
document.addEventListener("htmx:afterSettle", (event) => mountAll(event.target));
