// The CodeMirror island: CodeMirror 6 on a <textarea data-editor="javascript|json"> (the textarea
// stays the form's field and is kept in step), and merge views for [data-diff] elements. Built as a
// bundle of its own (dist/codemirror.js) that editor.js imports after the page's load event, so that
// its 0.5 MB is not fetched, compiled and run before the page is shown and usable (the textarea is
// the field meanwhile): see editor.js.
import { EditorView, basicSetup } from "codemirror";
import { keymap } from "@codemirror/view";
import { javascript } from "@codemirror/lang-javascript";
import { json } from "@codemirror/lang-json";
import { MergeView } from "@codemirror/merge";
import { Compartment, EditorState } from "@codemirror/state";
import { lintGutter, setDiagnostics } from "@codemirror/lint";
import { autocompletion } from "@codemirror/autocomplete";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { tags } from "@lezer/highlight";

const languages = { javascript, json };

export function mountEditor(shown, { onSave, onRun, onChange, onFullScreen } = {}) {
  // The form's field from now on is a hidden copy of the textarea, which takes its place: whatever
  // held the one shown until now (a script, an assistive tool, a test that found it before the
  // editor came) finds it gone from the page, and finds the editor.
  const textarea = shown.cloneNode(true);
  textarea.value = shown.value;
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
        themed(),
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
  // Typed into the textarea before CodeMirror came (it is the field until then): the editor takes
  // its text, and the focus and the caret where they were.
  const focused = document.activeElement === shown;
  const caret = Math.min(shown.selectionEnd ?? 0, view.state.doc.length);
  textarea.hidden = true;
  // Chromium fires `change` at a focused field whose text was typed into when it leaves the page
  // (at once, while it is still in the form): the text is the editor's now, nothing changed.
  const unchanged = (event) => event.stopPropagation();
  shown.addEventListener("change", unchanged);
  shown.replaceWith(textarea);
  shown.removeEventListener("change", unchanged);
  textarea.after(host);
  for (const field of [shown, textarea]) {
    field.editorView = view;
    field.focus = () => view.focus(); // focusing the field (by a reference kept from before) reaches the editor
  }
  mounted.add(view);
  if (focused) {
    view.dispatch({ selection: { anchor: caret } });
    view.focus();
  }
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
    EditorState.readOnly.of(true), EditorView.editable.of(false), basicSetup, diffTheme, highlight, themed(), javascript(),
    // Focusable, so that a keyboard can scroll a long text (a read-only pane is not editable).
    EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
  ];
  const { host, root } = isolated("diff-host");
  element.appendChild(host);
  const merge = new MergeView({
    a: { doc: a, extensions: pane(element.dataset.labelA || "Before") },
    b: { doc: b, extensions: pane(element.dataset.labelB || "After") },
    parent: root,
    root,
  });
  mounted.add(merge.a);
  mounted.add(merge.b);
  return merge;
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
// Syntax colours that follow the theme: a palette for the light surface and one for the dark, each
// colour at least 4.5:1 (WCAG AA) on the editor's background, its active line and the diff's
// tinted lines (tests/browser/test_module_workspace.py measures them). The palettes are custom
// properties set under CodeMirror's &light and &dark selectors, and which one holds follows the
// page's theme live (`themed`): the switch, or the system's setting when the admin chose System.
const palettes = EditorView.baseTheme({
  "&light": {
    "--syntax-keyword": "#a4262c", "--syntax-string": "#0a3069", "--syntax-number": "#0550ae", "--syntax-comment": "#57606a",
    "--syntax-function": "#6f42c1", "--syntax-property": "#8a4600", "--syntax-type": "#116329", "--syntax-invalid": "#b3261e",
  },
  "&dark": {
    "--syntax-keyword": "#ff8f86", "--syntax-string": "#a5d6ff", "--syntax-number": "#79c0ff", "--syntax-comment": "#9ba6b2",
    "--syntax-function": "#d2a8ff", "--syntax-property": "#ffb77a", "--syntax-type": "#7ee787", "--syntax-invalid": "#ff8f86",
  },
});
const highlight = [palettes, syntaxHighlighting(HighlightStyle.define([
  { tag: [tags.keyword, tags.operatorKeyword, tags.controlKeyword, tags.definitionKeyword, tags.moduleKeyword, tags.self], color: "var(--syntax-keyword)", fontWeight: "600" },
  { tag: [tags.string, tags.special(tags.string), tags.regexp, tags.escape], color: "var(--syntax-string)" },
  { tag: [tags.number, tags.bool, tags.null, tags.atom, tags.unit], color: "var(--syntax-number)" },
  { tag: [tags.comment, tags.lineComment, tags.blockComment, tags.docComment], color: "var(--syntax-comment)", fontStyle: "italic" },
  { tag: [tags.function(tags.variableName), tags.function(tags.propertyName), tags.function(tags.definition(tags.variableName))], color: "var(--syntax-function)" },
  { tag: [tags.propertyName, tags.definition(tags.propertyName)], color: "var(--syntax-property)" },
  { tag: [tags.typeName, tags.className, tags.namespace, tags.labelName], color: "var(--syntax-type)" },
  { tag: tags.invalid, color: "var(--syntax-invalid)" },
])), EditorView.theme({
  // What CodeMirror's base theme colours for a light page only (tooltips, panels, matches): the tokens instead.
  ".cm-tooltip": { backgroundColor: "var(--raised, #ffffff)", color: "var(--fg, #1a1f24)", border: "1px solid var(--line-strong, #8a949e)" },
  ".cm-tooltip-autocomplete ul li[aria-selected]": { backgroundColor: "var(--accent, #0a58ca)", color: "var(--accent-fg, #ffffff)" },
  ".cm-panels": { backgroundColor: "var(--sunken, #f3f5f7)", color: "var(--fg, #1a1f24)" },
  ".cm-panels.cm-panels-bottom": { borderTop: "1px solid var(--line, #c9d0d7)" },
  ".cm-textfield": { backgroundColor: "var(--surface, #ffffff)", color: "var(--fg, #1a1f24)", border: "1px solid var(--line-strong, #8a949e)" },
  ".cm-button": { backgroundImage: "none", backgroundColor: "var(--raised, #ffffff)", color: "var(--fg, #1a1f24)", border: "1px solid var(--line-strong, #8a949e)" },
  "&.cm-focused .cm-matchingBracket": { backgroundColor: "color-mix(in srgb, var(--ok, #1b6e36) 22%, transparent)", outline: "1px solid var(--ok, #1b6e36)" },
  "&.cm-focused .cm-nonmatchingBracket": { backgroundColor: "color-mix(in srgb, var(--danger, #b3261e) 22%, transparent)" },
  ".cm-searchMatch": { backgroundColor: "color-mix(in srgb, var(--warn, #7a4a00) 25%, transparent)", outline: "1px solid var(--warn, #7a4a00)" },
  ".cm-selectionMatch": { backgroundColor: "color-mix(in srgb, var(--accent, #0a58ca) 16%, transparent)" },
  ".cm-foldPlaceholder": { backgroundColor: "var(--sunken, #f3f5f7)", color: "var(--muted, #515b66)", border: "1px solid var(--line, #c9d0d7)" },
})];

// Whether the page is dark now: the admin's choice on <html data-theme>, else the system's.
const systemDark = window.matchMedia("(prefers-color-scheme: dark)");
const pageIsDark = () => (document.documentElement.dataset.theme || (systemDark.matches ? "dark" : "light")) === "dark";
// Every editor and diff pane holds its dark flag in a compartment, reconfigured when the theme changes.
const darkness = new Compartment();
const mounted = new Set();
function themed() {
  return darkness.of(EditorView.darkTheme.of(pageIsDark()));
}
function followTheme() {
  const dark = pageIsDark();
  for (const view of mounted) {
    if (!view.dom.isConnected) { mounted.delete(view); continue; }
    if (view.state.facet(EditorView.darkTheme) !== dark) view.dispatch({ effects: darkness.reconfigure(EditorView.darkTheme.of(dark)) });
  }
}
new MutationObserver(followTheme).observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
systemDark.addEventListener("change", followTheme);

const editorTheme = EditorView.theme({ ...colours, "&": { ...colours["&"], height: "100%" }, ".cm-scroller": { ...colours[".cm-scroller"], overflow: "auto" } });
const diffTheme = EditorView.theme({ ...colours, "&": { ...colours["&"], maxHeight: "36rem" } });

function labelOf(textarea) {
  return (textarea.id && document.querySelector(`label[for="${textarea.id}"]`)?.textContent?.trim()) || "Code";
}
