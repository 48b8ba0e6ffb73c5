// The editor island: CodeMirror 6 on every <textarea data-editor="javascript|json"> (the textarea
// stays the form's field and is kept in step), and merge views for [data-diff] elements.
import { EditorView, basicSetup } from "codemirror";
import { keymap } from "@codemirror/view";
import { javascript } from "@codemirror/lang-javascript";
import { json } from "@codemirror/lang-json";
import { MergeView } from "@codemirror/merge";
import { EditorState } from "@codemirror/state";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { autocompletion } from "@codemirror/autocomplete";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { tags } from "@lezer/highlight";

const languages = { javascript, json };

export function mountEditor(textarea, { onSave, onRun, onChange, onFullScreen } = {}) {
  const language = languages[textarea.dataset.editor] ?? javascript;
  const shortcuts = keymap.of([
    { key: "Mod-s", preventDefault: true, run: () => { onSave?.(); return true; } },
    { key: "Mod-Enter", preventDefault: true, run: () => { onRun?.(); return true; } },
    { key: "Mod-Shift-f", preventDefault: true, run: () => { onFullScreen?.(); return Boolean(onFullScreen); } },
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
        // A completion's info box placed by its class alone: CodeMirror's default placement writes a
        // style attribute (style.cssText), which the CSP blocks.
        autocompletion({ positionInfo: () => ({ class: "cm-completionInfo-right" }) }),
        lintGutter(),
        editorTheme,
        highlight,
        language(),
        // tabindex as well as contenteditable: the scroller is a scrollable region, and axe-core (as
        // some assistive tools) counts only a tabindex as the focusable content it needs.
        EditorView.contentAttributes.of({ "aria-label": textarea.getAttribute("aria-label") || labelOf(textarea), tabindex: "0" }),
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

// A Test's error placed in the code: the line (and column) marked in the gutter and underlined, as
// CodeMirror's lint diagnostics; `clearMarks` takes them away (a later run that passed).
export function markError(textarea, line, column, message) {
  const view = textarea.editorView;
  if (!view) return;
  const doc = view.state.doc;
  const at = doc.line(Math.min(Math.max(1, line), doc.lines));
  const from = Math.min(at.from + Math.max(0, (column || 1) - 1), at.to);
  view.dispatch(setDiagnostics(view.state, [{ from, to: Math.max(from, at.to), severity: "error", message }]));
}

export function clearMarks(textarea) {
  const view = textarea.editorView;
  if (view) view.dispatch(setDiagnostics(view.state, []));
}

// Moves the editor's cursor to a line and column (1-based) and focuses it.
export function goTo(textarea, line, column) {
  const view = textarea.editorView;
  if (!view) return;
  const doc = view.state.doc;
  const at = doc.line(Math.min(Math.max(1, line), doc.lines));
  const pos = Math.min(at.from + Math.max(0, (column || 1) - 1), at.to);
  view.dispatch({ selection: { anchor: pos }, scrollIntoView: true });
  view.focus();
}

export function setEditorText(textarea, text) {
  const view = textarea.editorView;
  textarea.value = text;
  if (view) view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
}

// A read-only merge view of two texts (the element's <textarea data-diff-a> and data-diff-b), each
// pane named for assistive technology by data-label-a / data-label-b (CodeMirror's content element
// is a textbox and needs a name).
export function mountDiff(element) {
  const a = element.querySelector("[data-diff-a]")?.value ?? "";
  const b = element.querySelector("[data-diff-b]")?.value ?? "";
  const pane = (label) => [
    EditorState.readOnly.of(true), EditorView.editable.of(false), basicSetup, diffTheme, highlight, javascript(),
    // Focusable, so that a keyboard can scroll a long text (a read-only pane is not editable).
    EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
  ];
  const { host, root } = isolated("diff-host");
  element.appendChild(host);
  return new MergeView({
    a: { doc: a, extensions: pane(element.dataset.labelA || "Before") },
    b: { doc: b, extensions: pane(element.dataset.labelB || "After") },
    parent: root,
    root,
  });
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

// The console's look inside the shadow root (console.css does not reach it, but its custom
// properties are inherited, so the colours follow the light or dark theme): sizes, the monospace
// font and the same visible focus ring as every other field. The editor fills its host, whose
// height the page sets (tall, resizable, full screen: module_editor.js); a diff grows to 36rem.
const colours = {
  "&": { backgroundColor: "var(--surface, #ffffff)", color: "var(--fg, #1b1f24)" },
  "&.cm-focused": { outline: "3px solid var(--focus, #0b57d0)", outlineOffset: "2px" },
  ".cm-gutters": { backgroundColor: "var(--sunken, #f3f5f7)", color: "var(--muted, #4f5863)", borderColor: "var(--line, #c9d0d7)" },
  ".cm-activeLine": { backgroundColor: "color-mix(in srgb, var(--accent, #0b5cad) 8%, transparent)" },
  ".cm-activeLineGutter": { backgroundColor: "color-mix(in srgb, var(--accent, #0b5cad) 14%, transparent)" },
  ".cm-cursor": { borderLeftColor: "var(--fg, #1b1f24)" },
  ".cm-selectionBackground, &.cm-focused .cm-selectionBackground": { backgroundColor: "color-mix(in srgb, var(--accent, #0b5cad) 28%, transparent) !important" },
  ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace" },
};
// Syntax colours from the design system's text tokens (each AA on the surface, light or dark): in
// place of CodeMirror's default style, whose fixed colours are unreadable on the dark surface.
const highlight = syntaxHighlighting(HighlightStyle.define([
  { tag: [tags.keyword, tags.operatorKeyword, tags.controlKeyword, tags.definitionKeyword, tags.moduleKeyword], color: "var(--accent, #0a58ca)", fontWeight: "600" },
  { tag: [tags.string, tags.special(tags.string), tags.regexp], color: "var(--ok, #1b6e36)" },
  { tag: [tags.number, tags.bool, tags.null, tags.atom], color: "var(--warn, #7a4a00)" },
  { tag: [tags.comment, tags.lineComment, tags.blockComment], color: "var(--muted, #515b66)", fontStyle: "italic" },
  { tag: [tags.function(tags.variableName), tags.function(tags.propertyName)], color: "var(--fg, #1a1f24)", fontWeight: "600" },
  { tag: tags.invalid, color: "var(--danger, #b3261e)" },
]));
const editorTheme = EditorView.theme({ ...colours, "&": { ...colours["&"], height: "100%" }, ".cm-scroller": { ...colours[".cm-scroller"], overflow: "auto" } });
const diffTheme = EditorView.theme({ ...colours, "&": { ...colours["&"], maxHeight: "36rem" } });

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
