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
  const { host, root } = isolated("editor-host");
  const view = new EditorView({
    root,
    parent: root,
    state: EditorState.create({
      doc: textarea.value,
      extensions: [
        shortcuts,
        basicSetup,
        consoleTheme("14rem"),
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
  const readOnly = [EditorState.readOnly.of(true), EditorView.editable.of(false), basicSetup, consoleTheme("0"), javascript()];
  const { host, root } = isolated("diff-host");
  element.appendChild(host);
  return new MergeView({ a: { doc: a, extensions: readOnly }, b: { doc: b, extensions: readOnly }, parent: root, root });
}

// CodeMirror writes its styles into a <style> element in a document, which the CSP (style-src
// 'self', no 'unsafe-inline') blocks; in a shadow root it adopts a constructed stylesheet instead,
// which the CSP allows. So each editor lives in a shadow root of its own host element (no <style>
// or <link> in it, so that axe-core's CSSOM pass has nothing inline to copy either).
function isolated(className) {
  const host = document.createElement("div");
  host.className = className;
  const root = host.attachShadow({ mode: "open" });
  return { host, root };
}

// The console's look inside the shadow root (console.css does not reach it): sizes, the monospace
// font and the same visible focus ring as every other field.
const consoleTheme = (minHeight) => EditorView.theme({
  "&": { maxHeight: "36rem", backgroundColor: "#ffffff", color: "#1b1f24" },
  "&.cm-focused": { outline: "3px solid #f0b400", outlineOffset: "2px" },
  ".cm-scroller": { minHeight, fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" },
});

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

// The Create page and the module page's editor (acts only where their forms are).
import "./module_editor.js";
